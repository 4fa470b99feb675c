"""The parts of `benchmarks.gpu` that each run in a fresh process: device memory, time to first
step, and a run-to-run determinism check; plus what the machine is (versions, device).

Each returns a JSON-able dict; `benchmarks.gpu` calls them in a subprocess (`--probe NAME`) so a
process's memory and kernel loads are its own.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np

PROCESS_START = time.perf_counter()
PACKAGES = ("mjvec", "mujoco-core", "mujoco-warp", "warp-lang", "gymnasium", "torch", "numpy", "array-api-compat")


def _rss() -> int:
    """Resident memory of this process in bytes (Linux)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def kernel_cache_dir() -> Path:
    """Where warp keeps compiled kernels for this run (WARP_CACHE_PATH, else warp's default), as
    warp resolves it at init."""
    import warp as wp

    wp.init()
    return Path(wp.config.kernel_cache_dir)


def cached_modules(folder: Path) -> int:
    """Compiled warp modules in the cache folder (one sub-folder each)."""
    return sum(1 for p in folder.iterdir() if p.is_dir()) if folder.exists() else 0


def machine(device: str) -> dict[str, Any]:
    """Python, package versions, the warp device and (on CUDA) torch's view of it."""
    out: dict[str, Any] = {"python": platform.python_version(), "platform": platform.platform()}
    for name in PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    import torch
    import warp as wp

    wp.init()
    dev = wp.get_device(device)
    out["device"] = {"name": str(dev.name), "alias": str(dev.alias), "is_cuda": bool(dev.is_cuda)}
    if dev.is_cuda:
        out["device"].update(total_memory=int(dev.total_memory), arch=int(dev.arch),
                             torch_name=torch.cuda.get_device_name(torch.device(str(dev))),
                             torch_cuda=torch.version.cuda, mempool=bool(wp.is_mempool_enabled(dev)))
    out["cpu_count"] = os.cpu_count()
    out["torch_threads"] = torch.get_num_threads()
    out["kernel_cache"] = str(kernel_cache_dir())
    return out


def make_env(num_envs: int, tools: int, device: str, *, deterministic: bool = False, **kw: Any) -> Any:
    import gymnasium as gym

    import mjvec  # noqa: F401  (registers SimToolReal-v0)

    return gym.make_vec("SimToolReal-v0", num_envs=num_envs, backend="warp", device=device, num_tools=tools,
                        deterministic=deterministic, **kw)


def sync(device: str) -> None:
    import warp as wp

    wp.synchronize_device(device)


def _zeros(env: Any, device: str) -> Any:
    import torch

    return torch.zeros((env.num_envs, *env.single_action_space.shape), dtype=torch.float32, device=device)


def memory(tools: int, num_envs: int, device: str, deterministic: bool) -> dict[str, Any]:
    """Memory an env (paper preset, reset and stepped twice) takes in this fresh process: on CUDA the
    device's used memory (cudaMemGetInfo, every allocator and context), torch's and warp's pools;
    on warp's CPU device the growth of resident memory."""
    import torch
    import warp as wp

    wp.init()
    dev = wp.get_device(device)
    if dev.is_cuda:
        torch.zeros(1, device=str(dev))  # both CUDA contexts exist before the baseline
        sync(device)
        before = dev.total_memory - dev.free_memory
    else:
        before = _rss()
    env = make_env(num_envs, tools, device, deterministic=deterministic)
    env.reset(seed=0)
    for _ in range(2):
        env.step(_zeros(env, device))
    sync(device)
    out: dict[str, Any] = {"tools": tools, "num_envs": num_envs, "deterministic": deterministic}
    if dev.is_cuda:
        out.update(kind="device", bytes=int(dev.total_memory - dev.free_memory - before),
                   torch_allocated=int(torch.cuda.memory_allocated(str(dev))),
                   torch_reserved=int(torch.cuda.memory_reserved(str(dev))),
                   warp_mempool=int(wp.get_mempool_used_mem_current(dev)) if wp.is_mempool_enabled(dev) else None)
    else:
        out.update(kind="rss", bytes=int(_rss() - before))
    env.close()
    return out


def first_step(num_envs: int, tools: int, device: str, deterministic: bool) -> dict[str, Any]:
    """Seconds from this process's start (imports included) to the end of the first env step, and
    how many kernel modules the cache held before and after (0 before: a cold cache)."""
    import torch  # noqa: F401  (counted: a user's process imports it too)

    folder = kernel_cache_dir()
    cached_before = cached_modules(folder)
    t_import = time.perf_counter()
    env = make_env(num_envs, tools, device, deterministic=deterministic)
    t_built = time.perf_counter()
    env.reset(seed=0)
    env.step(_zeros(env, device))
    sync(device)
    t_step = time.perf_counter()
    env.close()
    return {"num_envs": num_envs, "tools": tools, "deterministic": deterministic, "kernel_cache": str(folder),
            "cached_modules_before": cached_before, "cached_modules_after": cached_modules(folder),
            "cold": cached_before == 0, "imports_s": t_import - PROCESS_START, "build_s": t_built - t_import,
            "reset_and_step_s": t_step - t_built, "total_s": t_step - PROCESS_START}


def _trajectory(num_envs: int, tools: int, device: str, deterministic: bool, steps: int) -> tuple[np.ndarray, str]:
    import torch

    env = make_env(num_envs, tools, device, deterministic=deterministic, max_episode_steps=max(2, steps // 2))
    obs, _ = env.reset(seed=7)
    gen = torch.Generator(device="cpu").manual_seed(0)
    rows = []
    for _ in range(steps):
        action = torch.rand((num_envs, *env.single_action_space.shape), generator=gen) * 2 - 1
        obs, reward, *_ = env.step(action.to(device))
        rows.append(torch.cat([obs, reward[:, None], env.unwrapped.backend.qpos], 1).cpu().numpy())
    level = env.unwrapped.backend.capabilities.determinism
    env.close()
    return np.stack(rows), level


def determinism(num_envs: int, tools: int, device: str, deterministic: bool, steps: int) -> dict[str, Any]:
    """Two runs of the same seed and actions (paper preset, autoresets): how many values differ and
    by how much (0 differing: bit-identical runs), next to what the backend declares."""
    a, level = _trajectory(num_envs, tools, device, deterministic, steps)
    b, _ = _trajectory(num_envs, tools, device, deterministic, steps)
    diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
    differing = (a != b) & ~(np.isnan(a) & np.isnan(b))
    per_step = differing.reshape(steps, -1).any(axis=1)
    return {"num_envs": num_envs, "tools": tools, "deterministic": deterministic, "steps": steps,
            "declared": level, "values": int(a.size), "differing": int(differing.sum()),
            "envs_differing": int(differing.any(axis=(0, 2)).sum()),
            "first_step_differing": int(np.argmax(per_step)) if per_step.any() else None,
            "max_abs_diff": float(np.nanmax(diff)) if diff.size else 0.0}


PROBES = {"machine": machine, "memory": memory, "first-step": first_step, "determinism": determinism}
