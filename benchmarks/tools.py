"""Step time with 600 tools vs 1 tool (every env on tool 0), same num_envs, measured in one run.

The batched backend groups the 600 tools into 3 topology classes, so 600 tools cost the group
dispatch and the per-env model rows; the target is at most 5% slower than 1 tool.

    python -m benchmarks.tools [--num-envs 1024] [--repeats 5]
"""

from __future__ import annotations

import argparse
import logging

import gymnasium as gym
import numpy as np

import mjvec
from benchmarks._timing import interleaved_rates


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--num-envs", type=int, default=1024)
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--randomization", default="paper", choices=("paper", "none"))
    args = p.parse_args()
    logging.basicConfig(level=logging.WARNING)
    rand = None if args.randomization == "none" else args.randomization
    envs = {}
    for tools in (600, 1):
        env = gym.make_vec(mjvec.ENV_ID, num_envs=args.num_envs, num_tools=tools, randomization=rand)
        env.reset(seed=0)
        envs[tools] = env
    actions = np.random.default_rng(0).uniform(-1, 1, (8, args.num_envs, 29)).astype(np.float32)

    def block(env: gym.vector.VectorEnv) -> None:
        for k in range(args.steps):
            env.step(actions[k % 8])

    rates = interleaved_rates({t: (lambda e=e: block(e), args.steps * args.num_envs) for t, e in envs.items()},
                              args.repeats, desc="600 vs 1 tool")
    print(f"num_envs={args.num_envs}: 600 tools {rates[600]:,.0f} env-steps/s, 1 tool {rates[1]:,.0f} env-steps/s")
    print(f"step time 600 tools / 1 tool = {rates[1] / rates[600]:.3f} (target <= 1.05)")


if __name__ == "__main__":
    main()
