"""End-to-end throughput of a task on the CPU backend (SimToolReal-v0 by default) vs the physical
limit and vs the usual alternative, measured in one run (interleaved, repeated, medians).

- e2e: env-steps/s of `gym.make_vec(task)` (SimToolReal-v0: 600 tools, paper randomization; other
  tasks: their default build, no preset unless --randomization names one) with random actions and
  autoresets, at each num_envs and thread count;
- physics: the backend's time inside those same e2e steps (substeps/s);
- r1: single-thread plain `mujoco.mj_step` rate on the SAME physics: the sampled envs' states,
  controls and pushes recorded just before steps of each e2e block, replayed on each env's variant
  compiled alone (SimToolReal-v0: its tool's scene; others: the scene's ``make_variant``;
  benchmarks/_replay.py: the replays land bit-exactly on the batch's next state, and the script
  prints how many did; a preset that writes model fields makes them miss, since the variant alone
  has the unrandomized fields);
- L_cpu = threads x r1 / substeps (the task's frame_skip); efficiency = e2e / L_cpu;
- async (SimToolReal-v0 only): the same task code on one MjModel per tool and one MjData per env,
  one process per env under `gymnasium.vector.AsyncVectorEnv` (the standard Gymnasium way); ratio =
  our best e2e / its.

    python -m benchmarks.throughput [--quick] [--task CubeRotate-v0] [--num-envs 64 256 1024 4096] [--threads 1 2]

--quick (one config, under a minute) prints the end-to-end efficiency vs L_cpu as its last number.
"""

from __future__ import annotations

import argparse
import csv
import logging
import os
import statistics
import time
from pathlib import Path

import gymnasium as gym
import mujoco
import numpy as np

import mjvec
from benchmarks._replay import StepRecorder, replay_seconds, stepped_count
from benchmarks._timing import interleaved_rates
from benchmarks.plain_backend import make_plain_env
from mjvec.randomization import DomainRandomization
from mjvec.tasks.simtoolreal.scene import default_catalog, scene_spec

SAMPLE = 128
RECORDS = 8  # steps per e2e block whose physics r1 replays


class Case:
    """One (num_envs, threads) configuration: the env, its actions and a plain-mujoco sample.

    Every e2e block records the sampled envs' states before RECORDS of its steps (benchmarks/_replay.py);
    r1 replays the latest block's records in plain mujoco. The backend's time inside those same e2e
    blocks gives the physics share of the end-to-end step.
    """

    def __init__(self, num_envs: int, threads: int, steps: int, randomization: str | None = "paper",
                 num_tools: int = 600, terms: tuple = (), max_episode_steps: int | None = None,
                 task: str = mjvec.ENV_ID) -> None:
        tools = {"num_tools": num_tools} if task == mjvec.ENV_ID else {}
        self.env = gym.make_vec(task, num_envs=num_envs, num_threads=threads, randomization=randomization,
                                max_episode_steps=max_episode_steps, **tools)
        if terms:
            self.env = DomainRandomization(self.env, terms)
        self.env.reset(seed=0)
        self.n, self.threads, self.steps = num_envs, threads, steps
        base = self.env.unwrapped
        self.substeps = int(base.frame_skip)
        space = base.single_action_space
        rng = np.random.default_rng(0)
        if task == mjvec.ENV_ID:  # the draws of every earlier run of this benchmark
            self.actions = rng.uniform(-1, 1, (8, num_envs, 29)).astype(np.float32)
        else:
            self.actions = rng.uniform(space.low, space.high, (8, num_envs, *space.shape)).astype(space.dtype)
        self.k = 0
        ids = np.linspace(0, num_envs - 1, min(SAMPLE, num_envs)).astype(np.int64)
        self.recorder = StepRecorder(base.backend, ids)
        self.models = _replay_models(base, ids, task)
        self.datas = [mujoco.MjData(m) for m in self.models]
        self.physics_shares: list[float] = []
        self.exact = [0, 0]
        for _ in range(30):  # past the first drop: tools on the table, hands moving
            self.e2e()

    def e2e(self) -> None:
        rec = self.recorder
        rec.records.clear()
        rec.step_seconds = 0.0
        every = max(1, self.steps // RECORDS)
        t0 = time.perf_counter()
        for i in range(self.steps):
            if i % every == 0:
                rec.arm()
            self.env.step(self.actions[self.k % 8])
            self.k += 1
        self.physics_shares.append(rec.step_seconds / (time.perf_counter() - t0))

    def r1(self) -> float:
        """Seconds of plain single-thread mj_step replaying the latest e2e block's recorded steps."""
        seconds, exact = replay_seconds(self.recorder.records, self.models, self.datas, self.substeps)
        self.exact[0] += exact
        self.exact[1] += stepped_count(self.recorder.records)
        return seconds

    @property
    def r1_units(self) -> int:
        return len(self.models) * len(self.recorder.records) * self.substeps

    def start_timing(self) -> None:
        """Forget the physics shares and replay counts of the set-up blocks."""
        self.physics_shares.clear()
        self.exact = [0, 0]

    def physics_share(self) -> float:
        """Median fraction of an e2e block's wall time spent in the backend's step, since `start_timing`."""
        return statistics.median(self.physics_shares)


def _replay_models(base: object, ids: np.ndarray, task: str) -> list[mujoco.MjModel]:
    """Each sampled env's variant compiled alone (one compile per distinct variant)."""
    if task == mjvec.ENV_ID:
        catalog = default_catalog()
        variants = base.tool_ids[ids]  # type: ignore[attr-defined]
        compiled = {int(v): scene_spec(int(v), catalog=catalog).compile() for v in variants}
    else:
        scene = base.backend.scene  # type: ignore[attr-defined]
        variants = base.backend.variant_of_env[ids]  # type: ignore[attr-defined]
        compiled = {int(v): scene.make_variant(int(v)).compile() for v in variants}
    return [compiled[int(v)] for v in variants]


def paired_rates(cases: dict[str, Case], repeats: int, desc: str) -> dict[str, float]:
    """Interleaved medians of each case's end-to-end rate ("e2e NAME") and r1 ("r1 NAME")."""
    timed = {}
    for name, c in cases.items():
        c.start_timing()
        timed[f"e2e {name}"] = (c.e2e, c.steps * c.n)
        timed[f"r1 {name}"] = (c.r1, c.r1_units)
    return interleaved_rates(timed, repeats, desc=desc)


def async_rate(num_envs: int, steps: int, repeats: int) -> float:
    """Median env-steps/s of the plain alternative under AsyncVectorEnv (one process per env)."""
    env = gym.vector.AsyncVectorEnv([lambda g=g: make_plain_env(g) for g in range(num_envs)],
                                    context="fork", autoreset_mode=gym.vector.AutoresetMode.NEXT_STEP)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    actions = rng.uniform(-1, 1, (8, num_envs, 29)).astype(np.float32)

    def block() -> None:
        for k in range(steps):
            env.step(actions[k % 8])

    rate = interleaved_rates({"async": (block, steps * num_envs)}, repeats, desc=f"async {num_envs}")["async"]
    env.close()
    return rate


FULL = {"num_envs": [64, 256, 1024, 4096], "threads": [1, 2], "async_envs": [16, 64], "repeats": 5}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The options; --quick changes only the defaults, so an explicit --threads etc. still holds."""
    p = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()).replace("`", ""))
    p.add_argument("--quick", action="store_true",
                   help="one configuration (256 envs, all CPUs, 3 repeats, no async), under a minute")
    p.add_argument("--num-envs", type=int, nargs="+", help=f"(default: {FULL['num_envs']}; --quick: [256])")
    p.add_argument("--threads", type=int, nargs="+", help=f"(default: {FULL['threads']}; --quick: all CPUs)")
    p.add_argument("--async-envs", type=int, nargs="*", help=f"(default: {FULL['async_envs']}; --quick: none)")
    p.add_argument("--repeats", type=int, help=f"(default: {FULL['repeats']}; --quick: 3)")
    p.add_argument("--csv", type=Path, help="also write the per-configuration table here")
    p.add_argument("--task", default=mjvec.ENV_ID, help=f"a registered task (default: {mjvec.ENV_ID})")
    p.add_argument("--randomization", default=None,
                   help=f"its preset (default: 'paper' for {mjvec.ENV_ID}, none for the others)")
    args = p.parse_args(argv)
    if args.randomization is None and args.task == mjvec.ENV_ID:
        args.randomization = "paper"
    quick = {"num_envs": [256], "threads": [len(os.sched_getaffinity(0))], "async_envs": [], "repeats": 3}
    for name, value in (quick if args.quick else FULL).items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    return args


def main() -> None:
    args = parse_args()
    logging.basicConfig(level=logging.WARNING)
    results, rows = [], []
    for n in args.num_envs:
        for threads in args.threads:
            c = Case(n, threads, steps=max(4, 4096 // n), randomization=args.randomization, task=args.task)
            c.start_timing()
            rates = interleaved_rates({"e2e": (c.e2e, c.steps * n), "r1": (c.r1, c.r1_units)}, args.repeats,
                                      desc=f"{n} envs x {threads} thr")
            l_cpu = threads * rates["r1"] / c.substeps
            results.append((n, threads, rates, l_cpu))
            share = c.physics_share()
            # The backend's substeps/s inside e2e = e2e x substeps / share; against threads x r1:
            phys = rates["e2e"] * c.substeps / share / (threads * rates["r1"])
            print(f"{args.task} num_envs={n:5d} threads={threads}: e2e {rates['e2e']:9,.0f} env-steps/s | "
                  f"r1 {rates['r1']:8,.0f} steps/s | L_cpu {l_cpu:9,.0f} | physics share of e2e {share:.3f} | "
                  f"physics/(threads x r1) {phys:.3f} | e2e/L_cpu {rates['e2e'] / l_cpu:.3f} | "
                  f"replays bit-exact {c.exact[0]}/{c.exact[1]}",
                  flush=True)
            rows.append({"task": args.task, "num_envs": n, "threads": threads, "env_steps_per_s": round(rates["e2e"]),
                         "r1": round(rates["r1"]), "physics_share": round(share, 3),
                         "physics_vs_limit": round(phys, 3), "e2e_vs_L_cpu": round(rates["e2e"] / l_cpu, 3)})
            c.env.close()
    if args.csv is not None:
        with open(args.csv, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    best = max(results, key=lambda r: r[2]["e2e"])
    for n in args.async_envs if args.task == mjvec.ENV_ID else ():
        rate = async_rate(n, steps=20, repeats=max(2, args.repeats // 2))
        print(f"AsyncVectorEnv plain alternative, {n} envs (one process each): {rate:,.0f} env-steps/s; "
              f"best mjvec e2e ({best[0]} envs, {best[1]} threads) / it = {best[2]['e2e'] / rate:.2f}x")
    print(f"end-to-end efficiency e2e/L_cpu (num_envs={best[0]}, threads={best[1]}): {best[2]['e2e'] / best[3]:.3f}")


if __name__ == "__main__":
    main()
