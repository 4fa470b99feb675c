"""A broken warp kernel cache fails with a ConfigError naming the cache folder and the fix.

Each case runs in a child process with its own WARP_CACHE_PATH (warp reads it once, at start):
a folder that cannot be created (under /proc, a pseudo file system even root cannot write; a path
through a regular file) and a copy of the real cache whose compiled binaries are garbage. Before,
each stopped with warp's raw error (FileNotFoundError from os.makedirs, "Failed to load CPU module").
Oracle for the fix: the same child with the real cache builds and steps.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mujoco_warp")

ROOT = Path(__file__).resolve().parents[1]
CHILD = (
    "import gymnasium as gym, numpy as np, mjvec\n"
    "env = gym.make_vec('mjvec/Hopper-v5', num_envs=2, backend='warp', device='cpu', array_backend='numpy')\n"
    "env.reset(seed=0)\n"
    "env.step(np.zeros(env.action_space.shape, np.float32))\n"
    "env.close()\n"
    "print('stepped')\n"
)
FIX = "delete that folder (warp rebuilds it"


def _run(cache: str | None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MUJOCO_GL": os.environ.get("MUJOCO_GL", "osmesa")}
    if cache is not None:
        env["WARP_CACHE_PATH"] = cache
    return subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=300, env=env,
                          cwd=ROOT)


def _error_line(out: subprocess.CompletedProcess) -> str:
    assert out.returncode != 0 and "stepped" not in out.stdout, out.stdout
    return out.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize("where", ["proc", "through_a_file"])
def test_a_cache_folder_that_cannot_be_created_is_named(where, tmp_path):
    if where == "proc":
        cache = "/proc/mjvec-warp-cache"
    else:
        (tmp_path / "file").write_text("x")
        cache = str(tmp_path / "file" / "cache")
    line = _error_line(_run(cache))
    assert line.startswith("mjvec.errors.ConfigError: warp's kernel cache folder '"), line
    assert f"{cache}/" in line and "cannot be created" in line and FIX in line and "WARP_CACHE_PATH" in line, line


def test_a_corrupted_cache_is_named_with_the_fix(tmp_path):
    from mjvec.backends.warp.cache import check_kernel_cache, kernel_cache_dir

    check_kernel_cache()  # starts warp in this process: its cache folder is then known
    real = Path(kernel_cache_dir())
    binaries = list(real.rglob("*.o")) if real.is_dir() else []
    if not binaries:
        pytest.skip(f"no compiled warp kernels in {real} to corrupt yet (the Warp tests populate it)")
    copy = tmp_path / "cache"
    shutil.copytree(real.parent, copy)
    for binary in copy.rglob("*.o"):
        binary.write_bytes(b"not an object file" * 8)
    line = _error_line(_run(str(copy)))
    assert line.startswith("mjvec.errors.ConfigError: warp could not load a compiled kernel from its kernel cache "
                           f"folder '{copy / real.name}'"), line
    assert "the cache is corrupted" in line and FIX in line, line
    assert "stepped" in _run(None).stdout  # the intact cache: the same child builds and steps
