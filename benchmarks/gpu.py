"""SimToolReal-v0 on the Warp backend: end-to-end env-steps/s vs the raw mujoco_warp step rate, with
and without ``deterministic=True``, device memory, time to first step, and run-to-run identity.

Parts (``--part``, repeatable; default: throughput and memory):

- throughput: for each N in --num-envs (600 tools by default), in one run, interleaved and repeated:
  - env[off|on]: `gym.make_vec("SimToolReal-v0", num_envs=N, backend="warp", device=D,
    deterministic=...)` stepped with random torch actions on D, the paper randomization on (the task
    layer runs in torch on D);
  - host_env: the same (deterministic off) with `task_namespace="numpy"` (the task layer in numpy
    on the host, the state copied both ways each step: what the device path saves);
  - backend[off|on]: `WarpBackend.step(frame_skip)` on the env's worlds (input scatter, output
    gather, failure restore);
  - raw[off|on]: graph replay of frame_skip x `mujoco_warp.step` on the same Models/Datas, nothing else;
  and prints each rate in env-steps/s with its ratio to raw, the task layer's share of env.step,
  and the deterministic cost (on/off). Every timed block ends with a device synchronisation.
- memory: device memory of an env with --tools tools vs 1 tool at the largest N (and with
  deterministic on, if asked), each built in a fresh subprocess (warp's CPU device: RSS growth).
- first-step: seconds from a fresh process's start to its first env step at the smallest N, and
  whether warp's kernel cache was cold (empty) or warm; run it twice to get both.
- determinism: two runs of the same seed and actions at the smallest N, deterministic off and on:
  how many values differ, next to what the backend declares (`capabilities.determinism`).

    python -m benchmarks.gpu                                 # GPU: 8192 and 16384 envs, 600 tools
    python -m benchmarks.gpu --device cpu --num-envs 256 --torch-threads 1   # smoke test on warp's CPU device
    python -m benchmarks.gpu --part determinism --num-envs 4096 --json out/det.json

`benchmarks/gpu_run.sh` runs every part on a lent GPU machine with time limits.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import _gpu_probes as probes
from benchmarks._timing import interleaved_rates

PARTS = ("throughput", "memory", "first-step", "determinism")
MODES = {"off": (False,), "on": (True,), "both": (False, True)}


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
        probes.sync(device)

    return run


def _label(deterministic: bool) -> str:
    return "on" if deterministic else "off"


def _bench_one(num_envs: int, args: argparse.Namespace) -> dict[str, Any]:
    import torch

    from mjvec.tasks.simtoolreal.config import SimToolRealConfig

    frame_skip = SimToolRealConfig().frame_skip
    envs, build_s = {}, {}
    for det in MODES[args.deterministic]:
        t0 = time.perf_counter()
        envs[_label(det)] = probes.make_env(num_envs, args.tools, args.device, deterministic=det)
        build_s[_label(det)] = time.perf_counter() - t0
    t0 = time.perf_counter()
    host_env = probes.make_env(num_envs, args.tools, args.device, task_namespace="numpy")
    build_s["host"] = time.perf_counter() - t0
    for env in (*envs.values(), host_env):
        env.reset(seed=0)
    first = next(iter(envs.values())).unwrapped.backend
    print(f"N={num_envs}: envs built in {', '.join(f'{k} {v:.1f} s' for k, v in build_s.items())} "
          f"({first.num_groups} variant groups)")
    block = max(1, args.steps)
    shape = (num_envs, *host_env.single_action_space.shape)
    actions = torch.as_tensor(np.random.default_rng(0).uniform(-1, 1, shape), dtype=torch.float32, device=args.device)

    def repeat(fn: Any) -> Any:
        def run() -> None:
            for _ in range(block):
                fn()
            probes.sync(args.device)

        return run, block * num_envs

    cases = {"host_env": repeat(lambda: host_env.step(actions))}
    for mode, env in envs.items():
        backend = env.unwrapped.backend
        cases[f"env[{mode}]"] = repeat(lambda env=env: env.step(actions))
        cases[f"backend[{mode}]"] = repeat(lambda backend=backend: backend.step(frame_skip))
        cases[f"raw[{mode}]"] = repeat(_raw_runner(backend, frame_skip, args.device))
    rates = interleaved_rates(cases, repeats=args.repeats, desc=f"N={num_envs}")
    out: dict[str, Any] = {"num_envs": num_envs, "tools": args.tools, "groups": first.num_groups,
                           "steps_per_block": block, "repeats": args.repeats, "build_s": build_s, "rates": rates}
    for mode in envs:
        r_raw = rates[f"raw[{mode}]"]
        out[mode] = {"env_to_raw": rates[f"env[{mode}]"] / r_raw, "backend_to_raw": rates[f"backend[{mode}]"] / r_raw,
                     "task_share": 1 - rates[f"env[{mode}]"] / rates[f"backend[{mode}]"]}
        print(f"  deterministic={mode}: raw mujoco_warp.step x{frame_skip} (graph replay) {r_raw:,.0f} env-steps/s")
        for name, label in (("backend", f"WarpBackend.step({frame_skip})"), ("env", "env.step, task on the device")):
            rate = rates[f"{name}[{mode}]"]
            print(f"    {label:<38} {rate:,.0f} env-steps/s; ratio to raw {rate / r_raw:.3f}")
        print(f"    task-layer share of env.step: {out[mode]['task_share']:.1%}")
    if "off" in envs:
        r_host = rates["host_env"]
        out["host"] = {"env_to_raw": r_host / rates["raw[off]"], "task_share": 1 - r_host / rates["backend[off]"],
                       "device_to_host": rates["env[off]"] / r_host}
        print(f"  env.step, task on the host (numpy): {r_host:,.0f} env-steps/s; ratio to raw "
              f"{out['host']['env_to_raw']:.3f}; task share {out['host']['task_share']:.1%}; device/host "
              f"{out['host']['device_to_host']:.2f}x")
    if len(envs) == 2:
        out["deterministic_cost"] = {name: rates[f"{name}[on]"] / rates[f"{name}[off]"] for name in ("env", "raw")}
        print(f"  deterministic on/off: env {out['deterministic_cost']['env']:.3f}, "
              f"raw {out['deterministic_cost']['raw']:.3f}")
    for env in (*envs.values(), host_env):
        env.close()
    return out


def _probe(name: str, args: argparse.Namespace, **kw: Any) -> dict[str, Any]:
    """Run one probe of benchmarks._gpu_probes in a fresh process; its JSON result."""
    cmd = [sys.executable, "-m", "benchmarks.gpu", "--probe", name, "--device", args.device,
           "--probe-args", json.dumps(kw), *(["--verbose"] if args.verbose else [])]
    if args.torch_threads is not None:
        cmd += ["--torch-threads", str(args.torch_threads)]
    done = subprocess.run(cmd, capture_output=True, text=True, env=os.environ.copy())
    if done.returncode != 0:
        raise RuntimeError(f"probe {name} {kw} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _memory(args: argparse.Namespace) -> list[dict[str, Any]]:
    n = max(args.num_envs)
    runs = [(args.tools, False), (1, False)] + ([(args.tools, True)] if True in MODES[args.deterministic] else [])
    results = [_probe("memory", args, tools=t, num_envs=n, device=args.device, deterministic=d) for t, d in runs]
    many, one = results[0], results[1]
    what = "GPU memory" if many["kind"] == "device" else "resident memory growth (CPU device)"
    print(f"{what} at N={n}: {many['tools']} tools {many['bytes'] / 2**20:,.0f} MiB, "
          f"1 tool {one['bytes'] / 2**20:,.0f} MiB, ratio {many['bytes'] / max(one['bytes'], 1):.3f}")
    if len(results) == 3:
        print(f"  {args.tools} tools with deterministic=True: {results[2]['bytes'] / 2**20:,.0f} MiB")
    return results


def _first_step(args: argparse.Namespace) -> dict[str, Any]:
    n = min(args.num_envs)
    result = _probe("first-step", args, num_envs=n, tools=args.tools, device=args.device, deterministic=False)
    print(f"time to first step, N={n}, {args.tools} tools, {'cold' if result['cold'] else 'warm'} kernel cache "
          f"({result['cached_modules_before']} -> {result['cached_modules_after']} modules in "
          f"{result['kernel_cache']}): {result['total_s']:.1f} s (imports {result['imports_s']:.1f} s, build "
          f"{result['build_s']:.1f} s, reset + step {result['reset_and_step_s']:.1f} s)")
    return result


def _determinism(args: argparse.Namespace) -> list[dict[str, Any]]:
    n = min(args.num_envs)
    results = []
    for det in MODES[args.deterministic]:
        r = _probe("determinism", args, num_envs=n, tools=args.tools, device=args.device, deterministic=det,
                   steps=args.determinism_steps)
        results.append(r)
        print(f"run-to-run, N={n}, deterministic={det} (declared {r['declared']!r}): {r['differing']} of "
              f"{r['values']} values differ ({r['envs_differing']} envs; first at step {r['first_step_differing']}), "
              f"max |diff| {r['max_abs_diff']:.3g}")
    return results


def _parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--num-envs", type=int, nargs="+", default=[8192, 16384])
    p.add_argument("--tools", type=int, default=600)
    p.add_argument("--steps", type=int, default=20, help="env steps per timed block")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--part", choices=PARTS, action="append", help="repeatable; default: throughput, memory")
    p.add_argument("--deterministic", choices=tuple(MODES), default="both",
                   help="deterministic=False, True or both (interleaved in one run)")
    p.add_argument("--determinism-steps", type=int, default=20)
    p.add_argument("--skip-memory", action="store_true", help="(with the default parts) leave memory out")
    p.add_argument("--json", type=Path, help="write the results here")
    p.add_argument("--torch-threads", type=int, default=None,
                   help="torch intra-op threads (warp's CPU device: 1 keeps torch off the cores warp steps on)")
    p.add_argument("--verbose", action="store_true", help="keep warp's module-load lines")
    p.add_argument("--probe", choices=tuple(probes.PROBES), help=argparse.SUPPRESS)
    p.add_argument("--probe-args", default="{}", help=argparse.SUPPRESS)
    return p.parse_args()


def main() -> None:
    args = _parse()
    if args.torch_threads is not None:
        import torch

        torch.set_num_threads(args.torch_threads)
    import warp as wp

    if not args.verbose:  # warp's init banner and per-module load lines are not results
        wp.config.log_level = wp.LOG_WARNING
    if args.probe:
        result = probes.PROBES[args.probe](**json.loads(args.probe_args))
        _write(args.json, result)
        print(json.dumps(result))
        return
    logging.basicConfig(level=logging.WARNING)
    parts = args.part or ["throughput", *([] if args.skip_memory else ["memory"])]
    print(f"SimToolReal-v0, backend=warp, device={args.device}, tools={args.tools}, parts={parts}")
    t0 = time.perf_counter()
    results: dict[str, Any] = {"args": {k: str(v) for k, v in vars(args).items()},
                               "machine": probes.machine(args.device)}
    if "first-step" in parts:
        results["first_step"] = _first_step(args)  # first: on a fresh machine this is the cold compile
    if "throughput" in parts:
        results["throughput"] = []
        for n in args.num_envs:
            results["throughput"].append(_bench_one(n, args))
            _write(args.json, results)  # what is measured so far survives a later failure
    if "memory" in parts:
        results["memory"] = _memory(args)
    if "determinism" in parts:
        results["determinism"] = _determinism(args)
    results["total_s"] = time.perf_counter() - t0
    _write(args.json, results)
    print(f"total {results['total_s']:.0f} s")


def _write(path: Path | None, results: dict[str, Any]) -> None:
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(results, indent=1, default=str))


if __name__ == "__main__":
    main()
