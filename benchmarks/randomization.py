"""Cost of randomization: SimToolReal-v0 env-steps/s with the paper preset plus body-mass,
friction, damping and actuator-gain terms at every reset, divided by env-steps/s with no
randomization, measured in one run (interleaved, repeated, medians). Target >= 0.95.

Randomization changes the physics too (pushes, delayed actions, other masses and gains give other
motions and contacts), so the plain single-thread `mj_step` rate r1 is measured on each run's own
states (as in benchmarks/throughput.py): `physics content` = r1(on) / r1(off); the cost of the
randomization code itself is the raw ratio divided by it.

    python -m benchmarks.randomization [--num-envs 256] [--repeats 5]
"""

from __future__ import annotations

import argparse
import logging
import os

from benchmarks.throughput import Case, paired_rates
from mjvec.randomization import EventTerm

MODEL_TERMS = (
    EventTerm("body_mass", 0.8, 1.2, targets=("object",)),
    EventTerm("geom_friction", 0.8, 1.2, targets=("object_.*",)),
    EventTerm("dof_damping", 0.8, 1.2, targets=("iiwa14_joint_.*",)),
    EventTerm("actuator_kp", 0.8, 1.2, targets=(".*_act",)),
)
# Short episodes: many resets per step, so the reset-time model writes are exercised.
EPISODE_STEPS = 60


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--num-envs", type=int, default=256)
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args()
    logging.basicConfig(level=logging.WARNING)
    threads = len(os.sched_getaffinity(0))
    steps = max(4, 4096 // args.num_envs)
    cases = {
        "off": Case(args.num_envs, threads, steps, randomization=None, max_episode_steps=EPISODE_STEPS),
        "on": Case(args.num_envs, threads, steps, randomization="paper", terms=MODEL_TERMS,
                   max_episode_steps=EPISODE_STEPS),
    }
    rates = paired_rates({str(k): c for k, c in cases.items()}, args.repeats, desc="randomization on/off")
    raw = rates["e2e on"] / rates["e2e off"]
    content = rates["r1 on"] / rates["r1 off"]
    print(f"num_envs={args.num_envs}, threads={threads}: no randomization {rates['e2e off']:,.0f} env-steps/s; "
          f"paper preset + {len(MODEL_TERMS)} model-field reset terms {rates['e2e on']:,.0f} env-steps/s")
    print(f"plain mj_step r1 on the same states: off {rates['r1 off']:,.0f}/s, on {rates['r1 on']:,.0f}/s "
          f"(physics content ratio {content:.3f})")
    print(f"randomization on / off = {raw:.3f}; randomization code alone = {raw / content:.3f} (target >= 0.95)")


if __name__ == "__main__":
    main()
