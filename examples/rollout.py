"""A short SimToolReal-v0 rollout on the CPU backend: prints env-steps/s, writes a grid image.

    python examples/rollout.py --num-envs 64 --steps 300 --out out/rollout_grid.png

Random actions, the paper's randomization on (the default). The grid shows the first envs, each
with its own tool and its green goal ghost.
"""

from __future__ import annotations

import argparse
import logging
import os
import time
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "osmesa")  # headless; set MUJOCO_GL=egl for a GPU machine

import gymnasium as gym
import numpy as np
from tqdm import tqdm

import mjvec  # noqa: F401  (registers SimToolReal-v0)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--num-envs", type=int, default=64)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--num-threads", type=int, default=None)
    p.add_argument("--grid-envs", type=int, default=8)
    p.add_argument("--out", type=Path, default=Path("out/rollout_grid.png"))
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("mjvec").setLevel(logging.INFO)

    t0 = time.perf_counter()
    env = gym.make_vec("SimToolReal-v0", num_envs=args.num_envs, backend="cpu", num_threads=args.num_threads,
                       render_mode="rgb_array", record_episode_statistics=True)
    build_s = time.perf_counter() - t0
    obs, _ = env.reset(seed=args.seed)
    rng = np.random.default_rng(args.seed)
    returns, successes = [], 0
    t0 = time.perf_counter()
    for _ in tqdm(range(args.steps), desc="SimToolReal-v0 rollout"):
        obs, _, _, _, info = env.step(rng.uniform(-1, 1, env.action_space.shape).astype(np.float32))
        successes += int(np.sum(info["success"]))
        if "episode" in info:
            returns.extend(info["episode"]["r"][info["_episode"]].tolist())
    elapsed = time.perf_counter() - t0
    base = env.unwrapped
    print(f"{args.num_envs} envs x {args.steps} steps in {elapsed:.2f} s: "
          f"{args.num_envs * args.steps / elapsed:,.0f} env-steps/s "
          f"({base.backend.num_threads} threads, {base.backend.num_groups} tool topology groups, "
          f"built in {build_s:.1f} s)")
    print(f"episodes finished: {len(returns)}, goals reached: {successes}, obs finite: {bool(np.isfinite(obs).all())}")
    grid = base.render_grid(np.arange(min(args.grid_envs, args.num_envs)))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    from PIL import Image

    Image.fromarray(grid).save(args.out)
    print(f"wrote {args.out} ({grid.shape[1]}x{grid.shape[0]}, envs 0..{min(args.grid_envs, args.num_envs) - 1}, "
          f"tool ids {base.tool_ids[: args.grid_envs].tolist()})")
    env.close()


if __name__ == "__main__":
    main()
