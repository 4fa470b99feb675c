"""SimToolReal-v0 on the Warp backend: end-to-end env-steps/s vs the raw mujoco_warp step rate.

For each N in --num-envs (600 tools by default), in one run:
- env: `gym.make_vec("SimToolReal-v0", num_envs=N, backend="warp", device=D)` stepped with random
  torch actions on D, the paper randomization on (the task layer runs in torch on D);
- env (host task): the same with `task_namespace="numpy"` (the task layer in numpy on the host,
  the state copied both ways each step: what the device path saves);
- backend: `WarpBackend.step(frame_skip)` on the env's worlds (input scatter, output gather,
  failure restore);
- raw: graph replay of frame_skip x `mujoco_warp.step` on the same Models/Datas, nothing else;
and prints each rate in env-steps/s with its ratio to raw, and the task layer's share of env.step.
Every timed block ends with a device synchronisation.
Then device memory of a backend with --tools tools vs 1 tool at the largest N, each built in a
fresh subprocess.

    python -m benchmarks.gpu                                 # GPU: 8192 and 16384 envs, 600 tools
    python -m benchmarks.gpu --device cpu --num-envs 256 --torch-threads 1   # smoke test on warp's CPU device
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import time
from typing import Any

import numpy as np

from benchmarks._timing import interleaved_rates


def _scene(tools: int, num_envs: int) -> Any:
    from mjvec.backends.base import Scene
    from mjvec.tasks.simtoolreal.scene import scene_spec

    return Scene(tools, lambda v: scene_spec(v), num_envs, name="simtoolreal")


def _sync(device: str) -> None:
    import warp as wp

    wp.synchronize_device(device)


def _raw_runner(backend: Any, frame_skip: int, device: str) -> Any:
    """Replay, per group, a graph of frame_skip mujoco_warp.step calls on the backend's own worlds."""
    import mujoco_warp as mjw
    import warp as wp

    graphs = []
    with wp.ScopedDevice(device):
        for m, d, _ in backend.group_handles:
            with wp.ScopedCapture(device=device, force_module_load=False) as capture:
                for _ in range(frame_skip):
                    mjw.step(m, d)
            graphs.append(capture.graph)

    def run() -> None:
        for graph in graphs:
            wp.capture_launch(graph)
        _sync(device)

    return run


def _make_env(num_envs: int, tools: int, device: str, task_namespace: str | None = None) -> Any:
    import gymnasium as gym

    import mjvec  # noqa: F401  (registers SimToolReal-v0)

    return gym.make_vec("SimToolReal-v0", num_envs=num_envs, backend="warp", device=device, num_tools=tools,
                        task_namespace=task_namespace)


def _bench_one(num_envs: int, args: argparse.Namespace) -> None:
    import torch

    from mjvec.tasks.simtoolreal.config import SimToolRealConfig

    frame_skip = SimToolRealConfig().frame_skip
    t0 = time.perf_counter()
    env = _make_env(num_envs, args.tools, args.device)
    host_env = _make_env(num_envs, args.tools, args.device, task_namespace="numpy")
    env.reset(seed=0)
    host_env.reset(seed=0)
    backend = env.unwrapped.backend  # the WarpBackend the device task layer steps
    print(f"N={num_envs}: two envs built in {time.perf_counter() - t0:.1f} s ({backend.num_groups} variant groups)")
    block = max(1, args.steps)
    shape = (num_envs, *env.single_action_space.shape)
    actions = torch.as_tensor(np.random.default_rng(0).uniform(-1, 1, shape), dtype=torch.float32, device=args.device)
    raw = _raw_runner(backend, frame_skip, args.device)

    def repeat(fn: Any) -> Any:
        def run() -> None:
            for _ in range(block):
                fn()
            _sync(args.device)

        return run, block * num_envs

    cases = {
        "env": repeat(lambda: env.step(actions)),
        "host_env": repeat(lambda: host_env.step(actions)),
        "backend": repeat(lambda: backend.step(frame_skip)),
        "raw": repeat(raw),
    }
    rates = interleaved_rates(cases, repeats=args.repeats)
    r_raw = rates["raw"]
    print(f"  raw mujoco_warp.step x{frame_skip} (graph replay): {r_raw:,.0f} env-steps/s")
    for name, label in (("backend", f"WarpBackend.step({frame_skip})"), ("env", "env.step, task on the device"),
                        ("host_env", "env.step, task on the host (numpy)")):
        print(f"  {label:<40} {rates[name]:,.0f} env-steps/s; ratio to raw {rates[name] / r_raw:.3f}")
    # Share of an env step spent outside the physics step (observations, rewards, resets, wrappers).
    print(f"  task-layer share of env.step: device {1 - rates['env'] / rates['backend']:.1%}, "
          f"host {1 - rates['host_env'] / rates['backend']:.1%}; device/host {rates['env'] / rates['host_env']:.2f}x")
    env.close()
    host_env.close()


def _rss() -> int:
    """Resident memory of this process in bytes (Linux)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _memory_probe(tools: int, num_envs: int, device: str) -> dict:
    """Device memory used by one backend (built and stepped once) in this fresh process."""
    import warp as wp

    from mjvec.backends.warp import WarpBackend

    wp.init()
    dev = wp.get_device(device)
    if dev.is_cuda:
        import torch

        torch.zeros(1, device=str(dev))  # both CUDA contexts exist before the baseline
        wp.synchronize_device(dev)
        before = dev.total_memory - dev.free_memory
    else:
        before = _rss()
    backend = WarpBackend(_scene(tools, num_envs), device=device, progress=False)
    backend.step(2)
    if dev.is_cuda:
        wp.synchronize_device(dev)
        used = dev.total_memory - dev.free_memory - before
    else:
        used = _rss() - before
    return {"tools": tools, "num_envs": num_envs, "bytes": int(used), "kind": "device" if dev.is_cuda else "rss"}


def _memory(args: argparse.Namespace) -> None:
    n = max(args.num_envs)
    results = []
    for tools in (args.tools, 1):
        cmd = [sys.executable, "-m", "benchmarks.gpu", "--memory-probe", "--tools", str(tools),
               "--num-envs", str(n), "--device", args.device]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=os.environ.copy())
        results.append(json.loads(out.stdout.strip().splitlines()[-1]))
    many, one = results
    what = "GPU memory" if many["kind"] == "device" else "resident memory growth (CPU device)"
    print(f"{what} at N={n}: {many['tools']} tools {many['bytes'] / 2**20:,.0f} MiB, "
          f"1 tool {one['bytes'] / 2**20:,.0f} MiB, ratio {many['bytes'] / max(one['bytes'], 1):.2f}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--num-envs", type=int, nargs="+", default=[8192, 16384])
    p.add_argument("--tools", type=int, default=600)
    p.add_argument("--steps", type=int, default=20, help="env steps per timed block")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--skip-memory", action="store_true")
    p.add_argument("--torch-threads", type=int, default=None,
                   help="torch intra-op threads (warp's CPU device: 1 keeps torch off the cores warp steps on)")
    p.add_argument("--memory-probe", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.memory_probe:
        print(json.dumps(_memory_probe(args.tools, args.num_envs[0], args.device)))
        return
    logging.basicConfig(level=logging.WARNING)
    if args.torch_threads is not None:
        import torch

        torch.set_num_threads(args.torch_threads)
    print(f"SimToolReal-v0, backend=warp, device={args.device}, tools={args.tools}")
    t0 = time.perf_counter()
    for n in args.num_envs:
        _bench_one(n, args)
    if not args.skip_memory:
        _memory(args)
    print(f"total {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
