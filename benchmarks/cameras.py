"""Camera observations: depth frames/s and env-steps/s, ratios measured in one run (interleaved,
repeated, medians; `benchmarks._timing.interleaved_rates`).

CPU part (default), SimToolReal-v0 with one 64x64 depth camera ("table"), for each N in --num-envs
and T in --threads:

- plain: `gym.make_vec("SimToolReal-v0", num_envs=N, num_threads=T)`, no camera;
- depth: the same with ``cameras=CameraObs("depth", cameras=("table",))``: the camera rangefinder
  cast once per control step inside the batch's own step (its threads), frames into the uint8 ring;
- renderer: the plain env, then per env a depth frame from `mujoco.Renderer` (the plain
  alternative: one renderer per worker thread, T threads; each env's state into its tool's model,
  mj_kinematics + mj_camlight, update_scene, render): the depth frames/s of that loop alone.

It prints env-steps/s, depth frames/s, the camera's cost per step (depth vs plain), and the ratio
of the env's depth frames/s to the renderer loop's (target: >= 3x at equal threads). Then the
sensor cadence at the backend (`CpuBackend.step(frame_skip)` of the depth scene with MuJoCo's
sensors at every substep, as mj_step runs them, vs `sense(all)`: only the last substep), on
SimToolReal-v0 (2 substeps) and CubeRotate-v0 (5 substeps), and render_every=2 vs 1.

Warp part (``--warp``; `benchmarks/gpu_run.sh` runs it on a lent GPU): RGB and depth frames/s of
SimToolReal-v0's "table" camera at each N and resolution (``--sizes``, ``--resolutions``), the env
stepped with random device actions (frames/s = N x env-steps/s), next to the env without a camera.

    python -m benchmarks.cameras [--num-envs 64 256 1024] [--threads 1 2] [--tools 64] [--json out.json]
    python -m benchmarks.cameras --warp --device cuda:0 --sizes 4096 8192 --resolutions 64 128
"""

from __future__ import annotations

import argparse
import concurrent.futures
import functools
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._timing import interleaved_rates


def _make(num_envs: int, tools: int, threads: int | None, cameras: Any = None, **kw: Any) -> Any:
    import gymnasium as gym

    import mjvec

    extra = {} if cameras is None else {"cameras": cameras}
    return gym.make_vec(mjvec.ENV_ID, num_envs=num_envs, num_tools=min(tools, num_envs), randomization=None,
                        num_threads=threads, **extra, **kw)


def _block(fn: Any, count: int, sync: Any = None) -> Any:
    """A timed block: `fn()` `count` times (then `sync()`)."""
    def run() -> None:
        for _ in range(count):
            fn()
        if sync is not None:
            sync()
    return run


class RendererLoop:
    """Depth frames of every env with `mujoco.Renderer`, `threads` worker threads (one GL context each).

    env: the env whose states are drawn; scene: a scene whose variants have `camera` (each env's
    tool compiled alone, one model per tool: what each env runs on, no randomization here).
    """

    def __init__(self, env: Any, scene: Any, camera: str, size: int, threads: int) -> None:
        import mujoco

        base = env.unwrapped
        self._mujoco = mujoco
        self._backend = base.backend
        self._models = {int(v): scene.make_variant(int(v)).compile() for v in scene.used_variants}
        self._variant = scene.variant_of_env
        self._camera, self._size = camera, size
        self._local = threading.local()
        self._pool = concurrent.futures.ThreadPoolExecutor(threads) if threads > 1 else None
        self._chunks = np.array_split(np.arange(base.num_envs), threads)

    def _render(self, ids: np.ndarray) -> None:
        mj, local = self._mujoco, self._local
        if not hasattr(local, "cache"):
            local.cache = {}
        qpos = self._backend.qpos
        for i in ids:
            v = int(self._variant[i])
            if v not in local.cache:
                model = self._models[v]
                renderer = mj.Renderer(model, self._size, self._size)
                renderer.enable_depth_rendering()
                local.cache[v] = (model, mj.MjData(model), renderer)
            model, data, renderer = local.cache[v]
            data.qpos[:] = qpos[i]
            mj.mj_kinematics(model, data)
            mj.mj_camlight(model, data)
            renderer.update_scene(data, camera=self._camera)
            renderer.render()

    def __call__(self) -> None:
        if self._pool is None:
            self._render(self._chunks[0])
        else:
            list(self._pool.map(self._render, self._chunks))

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()


def cpu_part(args: argparse.Namespace) -> dict[str, Any]:
    from mjvec.envs.cameras import CameraObs

    camera = CameraObs("depth", cameras=("table",), size=(args.size, args.size))
    results: dict[str, Any] = {"size": args.size, "tools": args.tools, "rows": []}
    for n in args.num_envs:
        for t in args.threads:
            plain, depth = _make(n, args.tools, t), _make(n, args.tools, t, camera)
            for env in (plain, depth):
                env.reset(seed=0)
            loop = RendererLoop(plain, depth.unwrapped.backend.scene, "table", args.size, t)
            actions = np.random.default_rng(0).uniform(-1, 1, plain.action_space.shape)
            steps = max(1, args.steps)
            rates = interleaved_rates({
                "plain": (_block(functools.partial(plain.step, actions), steps), steps),
                "depth": (_block(functools.partial(depth.step, actions), steps), steps),
                "renderer": (_block(loop, steps), steps),
            }, repeats=args.repeats, desc=f"N={n} T={t}")
            row = {"num_envs": n, "threads": t, "plain_steps_s": rates["plain"] * n,
                   "depth_steps_s": rates["depth"] * n, "depth_frames_s": rates["depth"] * n,
                   "renderer_frames_s": rates["renderer"] * n,
                   "camera_ms_per_step": 1e3 * (1 / rates["depth"] - 1 / rates["plain"]),
                   "depth_vs_plain": rates["depth"] / rates["plain"],
                   "depth_vs_renderer": rates["depth"] / rates["renderer"]}
            results["rows"].append(row)
            print(f"N={n:5d} T={t}: plain {row['plain_steps_s']:9,.0f} env-steps/s | depth camera "
                  f"{row['depth_steps_s']:9,.0f} env-steps/s = {row['depth_frames_s']:9,.0f} frames/s "
                  f"({row['depth_vs_plain']:.2f}x plain; camera {row['camera_ms_per_step']:.1f} ms/step) | "
                  f"Renderer loop {row['renderer_frames_s']:8,.0f} frames/s | env depth / Renderer "
                  f"{row['depth_vs_renderer']:.2f}x", flush=True)
            loop.close()
            plain.close()
            depth.close()
    results["cadence"] = cadence_part(args)
    return results


def cadence_part(args: argparse.Namespace) -> dict[str, Any]:
    """The sensor stage at every substep (mj_step's) vs only the last (the camera layer's)."""
    import gymnasium as gym

    from mjvec.backends.cpu import CpuBackend
    from mjvec.envs.cameras import CameraObs

    n, t, out = args.cadence_envs, max(args.threads), {}
    for env_id, kw in (("SimToolReal-v0", {"num_tools": min(args.tools, args.cadence_envs), "randomization": None}),
                       ("CubeRotate-v0", {})):
        camera = CameraObs("depth", size=(args.size, args.size))
        last = gym.make_vec(env_id, num_envs=n, num_threads=t, cameras=camera, **kw)
        cadenced = gym.make_vec(env_id, num_envs=n, num_threads=t, cameras=camera, render_every=2, **kw)
        for env in (last, cadenced):
            env.reset(seed=0)
        frame_skip = last.unwrapped.frame_skip
        # Two backends over the depth scene, from the env's reset state: one never told a cadence (its
        # sensors run at every substep, as in mj_step), one sensing every env at the last substep only.
        env_backend = last.unwrapped.backend
        backend_every, backend_last = (CpuBackend(env_backend.scene, num_threads=t, progress=False) for _ in range(2))
        for backend in (backend_every, backend_last):
            backend.reset(np.arange(n), env_backend.qpos.copy(), env_backend.qvel.copy(), ctrl=env_backend.ctrl.copy())
        backend_last.sense(None)
        actions = np.random.default_rng(0).uniform(-1, 1, last.action_space.shape)
        steps = 2 * max(1, args.steps)  # even: every block holds as many render_every=2 frames
        rates = interleaved_rates({
            "every substep": (_block(functools.partial(backend_every.step, frame_skip), steps), steps),
            "last substep": (_block(functools.partial(backend_last.step, frame_skip), steps), steps),
            "env render_every=1": (_block(functools.partial(last.step, actions), steps), steps),
            "env render_every=2": (_block(functools.partial(cadenced.step, actions), steps), steps),
        }, repeats=args.repeats, desc=f"cadence {env_id}")
        out[env_id] = {"frame_skip": frame_skip, **{k: v * n for k, v in rates.items()},
                       "last_vs_every": rates["last substep"] / rates["every substep"],
                       "render_every_2_vs_1": rates["env render_every=2"] / rates["env render_every=1"]}
        print(f"{env_id} N={n} T={t} ({frame_skip} substeps): backend step with the camera at every substep "
              f"{rates['every substep'] * n:,.0f} env-steps/s, at the last substep only "
              f"{rates['last substep'] * n:,.0f} ({out[env_id]['last_vs_every']:.2f}x); env render_every=2 vs 1: "
              f"{out[env_id]['render_every_2_vs_1']:.2f}x", flush=True)
        for closing in (last, cadenced, backend_every, backend_last):
            closing.close()
    return out


def warp_part(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    from benchmarks import _gpu_probes as probes
    from mjvec.envs.cameras import CameraObs

    results: dict[str, Any] = {"device": args.device, "tools": args.tools, "rows": []}
    for n in args.sizes:
        plain = _make(n, args.tools, None, backend="warp", device=args.device)
        envs = {"plain": plain}
        for res in args.resolutions:
            for mode in ("rgb", "depth"):
                envs[f"{mode}{res}"] = _make(n, args.tools, None, CameraObs(mode, cameras=("table",), size=(res, res)),
                                             backend="warp", device=args.device)
        shape = (n, *plain.single_action_space.shape)
        actions = torch.as_tensor(np.random.default_rng(0).uniform(-1, 1, shape), dtype=torch.float32,
                                  device=args.device)
        for env in envs.values():
            env.reset(seed=0)
        sync = functools.partial(probes.sync, args.device)
        rates = interleaved_rates({name: (_block(functools.partial(env.step, actions), args.steps, sync),
                                          args.steps * n) for name, env in envs.items()},
                                  repeats=args.repeats, desc=f"warp N={n}")
        row = {"num_envs": n, **{f"{k}_frames_s": v for k, v in rates.items()}}
        results["rows"].append(row)
        print(f"N={n}: no camera {rates['plain']:,.0f} env-steps/s; " + "; ".join(
            f"{k} {v:,.0f} frames/s ({v / rates['plain']:.2f}x plain)" for k, v in rates.items() if k != "plain"),
            flush=True)
        for env in envs.values():
            env.close()
    return results


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--num-envs", type=int, nargs="+", default=[64, 256, 1024])
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--tools", type=int, default=64, help="tools in use (env g holds tool g %% tools)")
    p.add_argument("--size", type=int, default=64, help="the depth camera's side in pixels (CPU part)")
    p.add_argument("--steps", type=int, default=3, help="env steps per timed block")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--cadence-envs", type=int, default=256)
    p.add_argument("--warp", action="store_true", help="the Warp part instead of the CPU part")
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192])
    p.add_argument("--resolutions", type=int, nargs="+", default=[64, 128])
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args()
    os.environ.setdefault("MUJOCO_GL", "osmesa")
    t0 = time.perf_counter()
    results = warp_part(args) if args.warp else cpu_part(args)
    results["seconds"] = time.perf_counter() - t0
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
