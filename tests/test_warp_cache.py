"""A broken warp kernel cache fails with a ConfigError naming the cache folder and the fix.

Each case runs in a child process with its own WARP_CACHE_PATH (warp reads it once, at start):
a folder that cannot be created (under /proc, a pseudo file system even root cannot write; a path
through a regular file) and a copy of the real cache whose compiled binaries are garbage. Before,
each stopped with warp's raw error (FileNotFoundError from os.makedirs, "Failed to load CPU module").
Oracle for the fix: the same child with the real cache builds and steps.

A read-only cache (a read-only bind mount for root, chmod for a user): a warm one builds and steps
with nothing written (before: refused as "cannot be written" before warp was asked); a partial or
empty one, or one without its warp version's folder, is named with the missing module and the fix
(before: the same refusal, whose fix was to delete the folder).
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


READ_ONLY_FIX = "set WARP_CACHE_PATH to a writable folder, or fill this cache once where it can be written"


@pytest.fixture(scope="module")
def warm_cache() -> Path:
    """This process's warp kernel cache folder, once the child's env has run with it (so it holds
    every kernel the child needs)."""
    from mjvec.backends.warp.cache import check_kernel_cache, kernel_cache_dir

    assert "stepped" in _run(None).stdout
    check_kernel_cache()
    return Path(kernel_cache_dir())


def _warm_cache_copy(real: Path, tmp_path: Path) -> tuple[Path, Path]:
    """(WARP_CACHE_PATH, its version folder) of a copy of the warm cache `real`."""
    copy = tmp_path / "cache"
    shutil.copytree(real.parent, copy)
    return copy, copy / real.name


def _read_only(folder: Path) -> list[str]:
    """Make `folder` read-only for the child: chmod for a user (root writes through it), a read-only
    bind mount in the child's own mount namespace for root; the command prefix that runs the child
    there. Skips where neither is possible."""
    if os.geteuid() != 0:
        for path in (folder, *folder.rglob("*")):
            path.chmod(0o555 if path.is_dir() else 0o444)
        return []
    prefix = ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
              'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" "$1" && shift && exec "$@"', "sh", str(folder)]
    if shutil.which("unshare") is None or subprocess.run(
            [*prefix, "sh", "-c", f"! touch {folder}/probe 2>/dev/null"], capture_output=True).returncode != 0:
        pytest.skip("running as root without the rights to mount a read-only folder (unshare --mount)")
    return prefix


def _run_read_only(cache: Path, prefix: list[str]) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MUJOCO_GL": os.environ.get("MUJOCO_GL", "osmesa"),
           "WARP_CACHE_PATH": str(cache)}
    return subprocess.run([*prefix, sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=300,
                          env=env, cwd=ROOT)


@pytest.fixture
def writable_again(tmp_path):
    """Give the files back their write bits (chmod'ed read-only) so that tmp_path can be removed."""
    yield
    for path in (tmp_path, *tmp_path.rglob("*")):
        path.chmod(0o755 if path.is_dir() else 0o644)


def test_a_warm_read_only_cache_is_used(warm_cache, tmp_path, writable_again):
    """A read-only cache that holds every kernel (a shared cluster cache, a container layer) builds
    and steps, and nothing is written to it (before: refused as 'cannot be written')."""
    cache, _ = _warm_cache_copy(warm_cache, tmp_path)
    before = sorted(p.relative_to(cache) for p in cache.rglob("*"))
    out = _run_read_only(cache, _read_only(cache))
    assert "stepped" in out.stdout, out.stderr[-3000:]
    assert sorted(p.relative_to(cache) for p in cache.rglob("*")) == before


@pytest.mark.parametrize("content", ["partial", pytest.param("empty", marks=pytest.mark.slow),
                                     pytest.param("no_version_folder", marks=pytest.mark.slow)])
def test_a_read_only_cache_that_lacks_kernels_is_named_with_the_fix(content, warm_cache, tmp_path, writable_again):
    """A read-only cache missing the kernels of one mujoco_warp module (partial), all of them
    (empty), or even its warp version's folder: a ConfigError naming the folder (and the module
    warp had to compile) and the fix, not warp's raw OSError from a compile."""
    cache, version = _warm_cache_copy(warm_cache, tmp_path)
    removed = sorted(p for p in version.iterdir() if "reset_data" in p.name) if content == "partial" else []
    if content == "partial":
        assert removed, "no reset_data module in the warm cache"
        for path in removed:
            shutil.rmtree(path)
    else:
        shutil.rmtree(version)
        if content == "empty":
            version.mkdir()
    line = _error_line(_run_read_only(cache, _read_only(cache)))
    assert line.startswith(f"mjvec.errors.ConfigError: warp's kernel cache folder '{version}' cannot be "), line
    assert READ_ONLY_FIX in line, line
    if content == "no_version_folder":
        assert "cannot be created" in line and "holds no kernels of warp" in line, line
    else:
        assert "cannot be written" in line and "does not hold every kernel this env needs (module 'wp_" in line, line
    if content == "partial":
        assert any(line.split("(module '")[1].startswith(p.name.rsplit("_", 2)[0]) for p in removed), line
