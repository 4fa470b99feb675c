"""Step time with 600 tools vs 1 tool (every env on tool 0), same num_envs, measured in one run.

Different tools are different physics (sizes, masses, contacts), so the script also measures the
plain single-thread `mj_step` rate r1 on each batch's own states (as benchmarks/throughput.py) and
separates the two: `physics content` = r1(1 tool) / r1(600 tools) is what plain MuJoCo would pay
for the tool mix; `batching overhead` = the step-time ratio divided by it. The target (at most 5%
slower with 600 tools) is about the overhead batching adds.

    python -m benchmarks.tools [--num-envs 1024] [--repeats 5]
"""

from __future__ import annotations

import argparse
import logging
import os

from benchmarks.throughput import Case, paired_rates


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--num-envs", type=int, default=1024)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--randomization", default="paper", choices=("paper", "none"))
    args = p.parse_args()
    logging.basicConfig(level=logging.WARNING)
    rand = None if args.randomization == "none" else args.randomization
    threads = len(os.sched_getaffinity(0))
    steps = max(4, 4096 // args.num_envs)
    cases = {tools: Case(args.num_envs, threads, steps, randomization=rand, num_tools=tools) for tools in (600, 1)}
    rates = paired_rates({str(k): c for k, c in cases.items()}, args.repeats, desc="600 vs 1 tool")
    step_ratio = rates["e2e 1"] / rates["e2e 600"]
    content = rates["r1 1"] / rates["r1 600"]
    print(f"num_envs={args.num_envs}, threads={threads}, randomization={args.randomization}: "
          f"600 tools {rates['e2e 600']:,.0f} env-steps/s, 1 tool {rates['e2e 1']:,.0f} env-steps/s")
    print(f"plain mj_step r1 on the same states: 600 tools {rates['r1 600']:,.0f}/s, 1 tool {rates['r1 1']:,.0f}/s "
          f"(physics content ratio {content:.3f})")
    print(f"step time 600 tools / 1 tool = {step_ratio:.3f}; batching overhead = {step_ratio / content:.3f} "
          "(target <= 1.05)")


if __name__ == "__main__":
    main()
