"""Cost of randomization, measured in one run (interleaved, repeated, medians). Target >= 0.95.

Two ratios of SimToolReal-v0 env-steps/s, each against the same env with no randomization:
- paper: the paper's randomization (`randomization="paper"`, what the target is about) at the
  task's own episode length;
- stress: the paper preset plus body-mass, friction, damping and actuator-gain terms drawn at every
  reset, with episodes of EPISODE_STEPS steps (ten times the paper's reset rate), so the
  reset-time model writes (one `write_fields` batch and one recompute per reset event) weigh in.

Randomization changes the physics too (pushes, delayed actions, other masses and gains give other
motions and contacts), so the plain single-thread `mj_step` rate r1 is measured on each run's own
physics (as in benchmarks/throughput.py): `physics content` = r1(on) / r1(off); the cost of the
randomization code itself is the raw ratio divided by it.

    python -m benchmarks.randomization [--num-envs 256] [--repeats 7]
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
    p.add_argument("--repeats", type=int, default=7)
    args = p.parse_args()
    logging.basicConfig(level=logging.WARNING)
    threads = len(os.sched_getaffinity(0))
    steps = max(4, 4096 // args.num_envs)
    n = args.num_envs
    cases = {
        "off": Case(n, threads, steps, randomization=None),
        "paper": Case(n, threads, steps, randomization="paper"),
        "off, short episodes": Case(n, threads, steps, randomization=None, max_episode_steps=EPISODE_STEPS),
        "stress": Case(n, threads, steps, randomization="paper", terms=MODEL_TERMS, max_episode_steps=EPISODE_STEPS),
    }
    rates = paired_rates(cases, args.repeats, desc="randomization on/off")
    print(f"num_envs={n}, threads={threads}")
    stress = f"paper preset + {len(MODEL_TERMS)} model-field reset terms, {EPISODE_STEPS}-step episodes"
    for on, off, what in (("paper", "off", "paper preset"), ("stress", "off, short episodes", stress)):
        raw = rates[f"e2e {on}"] / rates[f"e2e {off}"]
        content = rates[f"r1 {on}"] / rates[f"r1 {off}"]
        target = " (target >= 0.95)" if on == "paper" else ""
        print(f"{what}: {rates[f'e2e {on}']:,.0f} vs {rates[f'e2e {off}']:,.0f} env-steps/s without randomization "
              f"= {raw:.3f}{target}; physics content r1 ratio {content:.3f}, so randomization code alone "
              f"{raw / content:.3f}")


if __name__ == "__main__":
    main()
