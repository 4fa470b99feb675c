"""The oracle tests again under other CPUs' arithmetic, each configuration in its own process.

A test that passes on one CPU only is a defect. numpy picks its SIMD kernels per CPU, OpenBLAS its
BLAS kernels, glibc its math functions; each choice can be forced on this machine:

- OPENBLAS_CORETYPE=Haswell / SkylakeX / Zen: the BLAS kernels of an AVX2 Intel CPU, an AVX-512
  one, an AMD one (SkylakeX's ddot fuses products where Haswell's does not);
- NPY_DISABLE_CPU_FEATURES: numpy without its AVX-512 kernels (an AVX2 CPU), and down to its
  baseline (x86-64-v2);
- GLIBC_TUNABLES=glibc.cpu.hwcaps=-FMA,-AVX2: the C library's math built without FMA, which glibc
  selects on a CPU without it (libmujoco calls it: the "glibc-no-fma" class of tests/digests.py).

Under each, the oracle tests below must pass: Gymnasium's own envs in lockstep (bit for bit), the
recorded digests, mjvec.portable's recorded outputs, all 600 tools vs each compiled alone, and the
CPU randomization matrix vs direct MjModel edits. Marked slow: CI runs it after the fast set.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
_NO_AVX512 = "X86_V4 AVX512_ICL AVX512_SPR"
CONFIGS = {
    "openblas-haswell": {"OPENBLAS_CORETYPE": "Haswell"},
    "openblas-skylakex": {"OPENBLAS_CORETYPE": "SkylakeX"},
    "openblas-zen": {"OPENBLAS_CORETYPE": "Zen"},
    "numpy-without-avx512": {"NPY_DISABLE_CPU_FEATURES": _NO_AVX512},
    "numpy-baseline": {"NPY_DISABLE_CPU_FEATURES": f"X86_V3 {_NO_AVX512}"},
    "glibc-without-fma": {"GLIBC_TUNABLES": "glibc.cpu.hwcaps=-FMA,-AVX2"},
}
ORACLES = [
    "tests/test_gym_mujoco.py",
    "tests/test_digest.py",
    "tests/test_digest_critic.py",
    "tests/test_portable.py",
    "tests/test_catalog_batched.py::test_all_600_tools_step_like_each_scene_compiled_alone[primitive]",
    "tests/test_dr_matrix.py::test_cpu_write_equals_direct_edit_and_mj_setconst",
]


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_oracles_pass_under_another_cpus_arithmetic(name: str) -> None:
    env = {**os.environ, **CONFIGS[name], "MUJOCO_GL": os.environ.get("MUJOCO_GL", "osmesa"), "TQDM_DISABLE": "1"}
    # "slow or not slow": the fast oracles and the slow sweeps named above alike.
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "slow or not slow", *ORACLES]
    result = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=1500)
    assert result.returncode == 0, f"{name} {CONFIGS[name]}:\n{result.stdout[-6000:]}\n{result.stderr[-2000:]}"
    assert " passed" in result.stdout.splitlines()[-1], result.stdout[-2000:]
