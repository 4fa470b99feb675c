"""Cost of randomization: SimToolReal-v0 env-steps/s with the paper preset plus body-mass,
friction, damping and actuator-gain terms at every reset, divided by env-steps/s with no
randomization, measured in one run (interleaved, repeated, medians). Target >= 0.95.

    python -m benchmarks.randomization [--num-envs 256] [--repeats 5]
"""

from __future__ import annotations

import argparse
import logging

import gymnasium as gym
import numpy as np

import mjvec
from benchmarks._timing import interleaved_rates
from mjvec.randomization import EventTerm, apply_randomization

MODEL_TERMS = (
    EventTerm("body_mass", 0.8, 1.2, targets=("object",)),
    EventTerm("geom_friction", 0.8, 1.2, targets=("object_.*",)),
    EventTerm("dof_damping", 0.8, 1.2, targets=("iiwa14_joint_.*",)),
    EventTerm("actuator_kp", 0.8, 1.2, targets=(".*_act",)),
)


def make(num_envs: int, randomized: bool) -> gym.vector.VectorEnv:
    env = gym.make_vec(mjvec.ENV_ID, num_envs=num_envs, randomization="paper" if randomized else None,
                       max_episode_steps=60)  # short episodes: many resets, so reset-time DR is exercised
    if randomized:
        env = apply_randomization(env, MODEL_TERMS)
    env.reset(seed=0)
    return env


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--num-envs", type=int, default=256)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args()
    logging.basicConfig(level=logging.WARNING)
    envs = {"off": make(args.num_envs, False), "on": make(args.num_envs, True)}
    actions = np.random.default_rng(0).uniform(-1, 1, (8, args.num_envs, 29)).astype(np.float32)

    def block(env: gym.vector.VectorEnv) -> None:
        for k in range(args.steps):
            env.step(actions[k % 8])

    rates = interleaved_rates({name: (lambda e=e: block(e), args.steps * args.num_envs) for name, e in envs.items()},
                              args.repeats, desc="randomization on/off")
    print(f"num_envs={args.num_envs}: no randomization {rates['off']:,.0f} env-steps/s; paper preset + "
          f"{len(MODEL_TERMS)} model-field reset terms {rates['on']:,.0f} env-steps/s")
    print(f"randomization on / off = {rates['on'] / rates['off']:.3f} (target >= 0.95)")


if __name__ == "__main__":
    main()
