"""Recorded trajectory digests, and which machines they hold on.

A digest hashes a whole trajectory bit for bit. mjvec's own arithmetic (the task layer, the
randomization draws, `mjvec.portable`) gives the same bits on every CPU, whatever numpy's SIMD
dispatch or OpenBLAS's kernel. MuJoCo's does not quite: libmujoco calls the C library's `sin`,
`cos`, `exp`, `pow`, `atan2` ..., and glibc picks one of two builds of each at load time, an FMA
one on CPUs with fused multiply-add (every x86-64 CPU since Intel Haswell and AMD Piledriver) and
a plain one otherwise, whose last bits differ. So a digest is recorded per C-library math: the
`libm_class` of this process, found from what the C library itself returns (Python's `math` calls
the same functions), not from the CPU's name.

Recorded here: "glibc-fma" (glibc 2.36, any x86-64 CPU with FMA, with or without AVX-512) and
"glibc-no-fma" (the same glibc forced onto its plain builds with
GLIBC_TUNABLES=glibc.cpu.hwcaps=-FMA,-AVX2, which is the selection glibc makes on a CPU without
FMA; CPU backend only: warp compiles its CPU kernels for the host CPU, so its no-FMA code cannot be
emulated on an FMA host). On a C library with no recorded class the digest tests skip and say so;
`python -m tests.digests` prints this machine's class and digests to record.

The Warp digests depend on torch's CPU math too: on the Warp path the task layer runs in torch,
whose matrix products go to MKL and whose elementwise kernels follow ATen's SIMD level, both picked
from the CPU (MKL_CBWR or ATEN_CPU_CAPABILITY change a SimToolReal-v0 Warp digest). So a Warp digest
is recorded per (libm class, `torch_fingerprint`): what those kernels return for a fixed probe set.
The Warp digests recorded on an earlier machine could not be attributed to a fingerprint and were
dropped; on an unrecorded fingerprint the Warp digest tests skip and say so.
"""

from __future__ import annotations

import functools
import hashlib
import math
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

# What libmujoco imports from the C library's math (objdump -T), applied to a fixed probe set.
_LIBM = {
    "sin": math.sin, "cos": math.cos, "tan": math.tan, "exp": math.exp, "log": math.log,
    "asin": math.asin, "acos": math.acos, "cbrt": math.cbrt,
    "pow": lambda v: math.pow(abs(v) + 0.5, v), "atan2": lambda v: math.atan2(v, 1.0 - v),
}
LIBM_CLASSES = {
    "cd17c699a19ef0226bd0ab1c04504dc5": "glibc-fma",
    "81cff39d494cd1df9f97d909e940d94c": "glibc-no-fma",
}


@functools.cache
def libm_fingerprint() -> str:
    """A hash of the C library's results for the functions MuJoCo calls, 20,000 fixed inputs each
    (the FMA and plain builds of glibc 2.36 disagree on about 1 input in 1,500 per function)."""
    digest = hashlib.blake2b(digest_size=16)
    probe = [((k * 0.6180339887498949) % 1.0) * 20.0 - 10.0 for k in range(1, 20001)]
    for name in sorted(_LIBM):
        function = _LIBM[name]
        for v in probe:
            x = abs(v) + 1e-3 if name == "log" else (v / 10.0 if name in ("asin", "acos") else v)
            digest.update(float(function(x)).hex().encode())
    return digest.hexdigest()


def libm_class() -> str | None:
    """The recorded class of this process's C-library math, or None."""
    return LIBM_CLASSES.get(libm_fingerprint())


def update(digest: Any, value: Any) -> None:
    """Hash `value` (an array, or a dict of them by sorted key) with its dtype and shape."""
    if isinstance(value, dict):
        for key in sorted(value):
            digest.update(key.encode())
            update(digest, value[key])
    else:
        array = np.ascontiguousarray(np.asarray(value))
        digest.update(f"{array.dtype}{array.shape}".encode())
        digest.update(array.tobytes())


@functools.cache
def torch_fingerprint() -> str:
    """A hash of what torch's CPU kernels (MKL products, ATen's SIMD elementwise and reductions)
    return for a fixed probe set, in a fresh process (inside a test session the probe's bits were
    seen to differ from a fresh process's, cause not found; the machine's value is the fresh one)."""
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", "from tests.digests import _torch_probe; print(_torch_probe())"],
                          cwd=root, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip().splitlines()[-1]


def _torch_probe() -> str:
    import torch

    grid = torch.linspace(-3.0, 3.0, 6 * 29 * 29, dtype=torch.float32)
    a, b = torch.sin(grid * 1.7).reshape(6, 29, 29), torch.cos(grid * 0.3).reshape(6, 29, 29)
    outs = [a @ b, a[:, :3, :3] @ b[:, :3, :3], a.reshape(-1, 29) @ b[0], torch.exp(grid),
            torch.atan2(grid, grid + 0.5), torch.sqrt(grid.abs()), a.sum(-1), torch.linalg.vector_norm(a, dim=-1)]
    digest = hashlib.blake2b(digest_size=16)
    for out in outs:
        digest.update(out.contiguous().numpy().tobytes())
    return digest.hexdigest()


def expected(table: Mapping[Any, Mapping[str, str]], key: Any, torch_math: bool = False) -> str:
    """The digest recorded for `key` under this process's libm class (and, with torch_math, its
    `torch_fingerprint`: "glibc-fma+torch-<first 8 hex>"); skips (with the reason) where none is
    recorded."""
    cls = libm_class()
    if cls is None:
        pytest.skip(f"no digest recorded for this C library's math (fingerprint {libm_fingerprint()}, "
                    f"recorded: {sorted(LIBM_CLASSES.values())}); `python -m tests.digests` prints the ones to record")
    if torch_math:
        cls = f"{cls}+torch-{torch_fingerprint()[:8]}"
    if cls not in table[key]:
        pytest.skip(f"no digest recorded for {key} under {cls} (recorded: {sorted(table[key])})")
    return table[key][cls]


def main(tables: Mapping[str, tuple[Mapping[Any, Any], Callable[..., str]]]) -> None:
    """Print this machine's libm class and every digest (for recording)."""
    print(f"libm fingerprint {libm_fingerprint()} -> class {libm_class()}; "  # noqa: T201 (a recording tool)
          f"torch fingerprint {torch_fingerprint()[:8]}")
    for name, (table, compute) in tables.items():
        for key in sorted(table):
            print(name, key, compute(*key))  # noqa: T201


if __name__ == "__main__":
    from tests import test_digest, test_digest_critic

    main({"test_digest": (test_digest.EXPECTED, test_digest.trajectory_digest),
          "test_digest_critic": (test_digest_critic.EXPECTED, test_digest_critic.critic_digest)})
    sys.exit(0)
