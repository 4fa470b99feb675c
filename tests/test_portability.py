"""The oracle tests again under other CPUs' arithmetic, each CPU in its own process.

A test that passes on one CPU only is a defect. numpy picks its SIMD kernels per CPU, OpenBLAS its
BLAS kernels, glibc its math functions; each choice can be forced on this machine:

- OPENBLAS_CORETYPE: the BLAS kernels of another CPU (SkylakeX's ddot fuses products where
  Haswell's does not; numpy's OpenBLAS runs an AMD Zen on its Haswell kernels, as its
  `openblas_get_corename` says under OPENBLAS_CORETYPE=Zen, so the Haswell profile is Zen's too);
- NPY_DISABLE_CPU_FEATURES: numpy without its AVX-512 kernels (an AVX2 CPU), or without AVX2 as
  well, at its x86-64-v2 baseline;
- GLIBC_TUNABLES=glibc.cpu.hwcaps=-FMA,-AVX2: the C library's math built without FMA, which glibc
  selects on a CPU without it (libmujoco calls it: the "glibc-no-fma" class of tests/digests.py);
- NUMBA_CPU_NAME (with NUMBA_CPU_FEATURES empty: that CPU's own features): mjvec's compiled host
  kernels (`mjvec._jit`) generated for another CPU, as numba generates them on it.

Each profile below sets all four as one real CPU would (this machine, an AVX-512 Intel CPU with
AVX512_FP16, is the fast set's profile), so every value of every setting is in some profile. Under
each, the oracle tests below must pass: Gymnasium's own envs in lockstep (bit for bit), the
recorded digests, mjvec.portable's recorded outputs, the compiled kernels against the numpy
formulas they stand in for, and the CPU randomization matrix vs direct
MjModel edits. Their fast variants: the slow sweeps run more seeds and cells of the same
comparisons, on this machine. The 600 tools vs each compiled alone are not here: both sides of
that comparison are MuJoCo's C on the same generated specs in one process, so another CPU's
arithmetic cannot separate them (the digests pin the generated tools). Marked slow: CI runs it
after the fast set.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
_AVX512 = "X86_V4 AVX512_ICL AVX512_SPR"  # numpy's AVX-512 targets (AVX512_SKX is X86_V4)
PROFILES = {
    # An AVX-512 Intel server CPU before Ice Lake: SkylakeX BLAS, numpy's AVX512_SKX kernels only.
    "skylake-x": {"OPENBLAS_CORETYPE": "SkylakeX", "NPY_DISABLE_CPU_FEATURES": "AVX512_ICL AVX512_SPR",
                  "NUMBA_CPU_NAME": "skylake-avx512", "NUMBA_CPU_FEATURES": ""},
    # An AVX2 CPU (Intel Haswell to Comet Lake, AMD Zen 1-3): no AVX-512 anywhere.
    "haswell": {"OPENBLAS_CORETYPE": "Haswell", "NPY_DISABLE_CPU_FEATURES": _AVX512, "NUMBA_CPU_NAME": "haswell",
                "NUMBA_CPU_FEATURES": ""},
    # A CPU without FMA or AVX2 (Sandy Bridge, Ivy Bridge): numpy at its baseline, glibc's plain math.
    "sandy-bridge": {"OPENBLAS_CORETYPE": "Sandybridge", "NPY_DISABLE_CPU_FEATURES": f"X86_V3 {_AVX512}",
                     "GLIBC_TUNABLES": "glibc.cpu.hwcaps=-FMA,-AVX2", "NUMBA_CPU_NAME": "sandybridge",
                     "NUMBA_CPU_FEATURES": ""},
}
ORACLES = [
    "tests/test_gym_mujoco.py",
    "tests/test_digest.py",
    "tests/test_digest_critic.py",
    "tests/test_portable.py",
    "tests/test_rng.py::test_host_normals_are_the_box_muller_formula_bit_for_bit",
    "tests/test_jit.py",
    "tests/test_simtoolreal_kernels.py",
    "tests/test_go1_kernels.py",
    "tests/test_rotations_host.py",
    "tests/test_host_step_kernels.py",
    "tests/test_robustness.py::test_the_compiled_action_check_is_np_clip_and_refuses_the_same_rows",
    "tests/test_perception_dr.py::test_a_delay_queues_compiled_read_is_the_fancy_index",
    "tests/test_dr_matrix.py::test_cpu_write_equals_direct_edit_and_mj_setconst",
]


@pytest.mark.slow
@pytest.mark.parametrize("name", list(PROFILES))
def test_oracles_pass_under_another_cpus_arithmetic(name: str) -> None:
    env = {**os.environ, **PROFILES[name], "MUJOCO_GL": os.environ.get("MUJOCO_GL", "osmesa"), "TQDM_DISABLE": "1"}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *ORACLES]
    result = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, f"{name} {PROFILES[name]}:\n{result.stdout[-6000:]}\n{result.stderr[-2000:]}"
    assert " passed" in result.stdout.splitlines()[-1], result.stdout[-2000:]
