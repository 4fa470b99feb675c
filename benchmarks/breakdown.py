"""Where one control step's time goes: each phase of `MjVecEnv.step` timed inside real steps.

For each task and (num_envs, threads), the env steps uniform random actions with autoresets while
every phase below is timed (perf_counter around the call, accumulated); repeats interleave the
configurations and the medians are printed. Phases, in step order:

- actions: the action transforms (action delay, ...) and the task's `_apply_action`;
- physics: the backend's step (`mujoco.batch` on the CPU backend; the pool's threads), less:
- rne_post: the CPU backend's mj_rnePostConstraint pass after the step, for the Gymnasium tasks
  that read contact forces (`mjvec.backends.cpu.rne_post`: in the batch's pool, else serial),
  where it runs as a pass of its own; fused into the step (the pool's default), it is physics;
- events: the lifecycle's per-step interval event (randomization wrappers' per-step draws and
  pushes that run after the physics);
- evaluate: the task's `_evaluate` (rewards, terminations, task state);
- resets: autoresets of the envs that finished (the task's `_reset_envs` and the backend's reset);
- observe: the task's `_observe` and the observation transforms (noise, delay, ...);
- other: the rest of `step` (validation, episode statistics, info assembly, output conversion).

"host" is everything but physics: serial Python/numpy work on the calling thread, which the
pool's other threads wait through. `e2e ceiling` = physics / step: the end-to-end efficiency the
step reaches if the physics itself runs at threads x r1 (benchmarks.throughput measures r1).

--draw-ahead-off adds, for each configuration, the same env with `mjvec.rng`'s draw-ahead blocks
off (AHEAD_REQUESTS = 1 while it steps): the step time saved by them, in the same run.

--floor adds the framework floor (`benchmarks/_floor_task.py`: a task whose hooks do next to
nothing and which never resets) at each size and thread count: its host time is what any task's
step pays beside the physics. Each row's `host budget for 0.90` is physics / 9, the host time
under which the step reaches 0.90 of its physics alone (with the physics at threads x r1, that is
e2e >= 0.90 of threads x r1); a task whose budget is below the floor's host time cannot reach
0.90 at that size by any change to its own task layer.

    python -m benchmarks.breakdown [--tasks SimToolReal-v0 mjvec/Ant-v5] [--num-envs 64 1024] [--threads 1 2]
        [--draw-ahead-off] [--floor]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
from tqdm import tqdm

import mjvec  # noqa: F401  (registers the tasks)
from benchmarks import _floor_task
from mjvec import rng as mjvec_rng

PHASES = ("actions", "physics", "rne_post", "events", "evaluate", "resets", "observe", "other")
# physics / step >= TARGET while host <= physics (1 / TARGET - 1): the end-to-end target.
TARGET = 0.90
TASK_OPTIONS: dict[str, dict[str, Any]] = {
    "SimToolReal-v0": {"randomization": "paper"},
    "CubeRotate-v0": {},
    "playground/Go1JoystickFlatTerrain-v0": {"randomization": "paper", "obs_mode": "asymmetric"},
    "mjvec/Ant-v5": {},
    "mjvec/Humanoid-v5": {},
}


class Timers:
    """Accumulated seconds per phase; `wrap` replaces an object's method by a timed one."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)

    def wrap(self, owner: Any, name: str, phase: str) -> None:
        inner: Callable = getattr(owner, name)
        seconds = self.seconds

        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                seconds[phase] += time.perf_counter() - start

        setattr(owner, name, timed)


def random_actions_env(env_id: str, num_envs: int, threads: int) -> tuple[Any, list[np.ndarray]]:
    """The task's env (`TASK_OPTIONS`), reset with seed 0, and 16 batches of uniform random actions
    (seeded) that a benchmark's steps cycle through."""
    env = gym.make_vec(env_id, num_envs=num_envs, num_threads=threads, **TASK_OPTIONS.get(env_id, {}))
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    space = env.action_space
    return env, [rng.uniform(space.low, space.high).astype(space.dtype) for _ in range(16)]


class Case:
    """One (task, num_envs, threads): the env with its phases wrapped, and its random actions."""

    def __init__(self, env_id: str, num_envs: int, threads: int, steps: int, ahead: int | None = None) -> None:
        self.label = (env_id, num_envs, threads)
        self.ahead = mjvec_rng.AHEAD_REQUESTS if ahead is None else ahead
        self.env, self.actions = random_actions_env(env_id, num_envs, threads)
        base = self.env.unwrapped
        self.timers = Timers()
        for owner, name, phase in ((base.transforms, "on_actions", "actions"), (base, "_apply_action", "actions"),
                                   (base.backend, "step", "physics"), (base.lifecycle, "fire_interval", "events"),
                                   (base, "_evaluate", "evaluate"), (base, "_reset_rows", "resets"),
                                   (base, "_task_obs", "observe"), (base.transforms, "on_observation", "observe")):
            self.timers.wrap(owner, name, phase)
        rne = getattr(getattr(base.backend, "_engine", None), "_rne", None)
        if rne is not None:
            self.timers.wrap(rne, "update", "rne_post")
        self.steps = steps
        self.samples: list[dict[str, float]] = []

    def run(self) -> None:
        """One block of steps; records each phase's ms per step (and the whole step's)."""
        self.timers.seconds.clear()
        default, mjvec_rng.AHEAD_REQUESTS = mjvec_rng.AHEAD_REQUESTS, self.ahead
        try:
            start = time.perf_counter()
            for i in range(self.steps):
                self.env.step(self.actions[i % len(self.actions)])
            total = time.perf_counter() - start
        finally:
            mjvec_rng.AHEAD_REQUESTS = default
        sample = {phase: 1e3 * self.timers.seconds[phase] / self.steps for phase in PHASES[:-1]}
        sample["physics"] -= sample["rne_post"]  # the host pass runs inside the backend's step
        sample["step"] = 1e3 * total / self.steps
        sample["other"] = sample["step"] - sum(sample[p] for p in PHASES[:-1])
        self.samples.append(sample)

    def medians(self) -> dict[str, float]:
        return {key: statistics.median(s[key] for s in self.samples) for key in (*PHASES, "step")}


def report(case: Case) -> str:
    m = case.medians()
    env_id, n, threads = case.label
    parts = " ".join(f"{phase} {m[phase]:.3f} ({m[phase] / m['step']:.0%})" for phase in PHASES)
    host = m["step"] - m["physics"]
    ahead = "" if case.ahead == mjvec_rng.AHEAD_REQUESTS else " draw-ahead off"
    return (f"{env_id} num_envs={n} threads={threads}{ahead}: step {m['step']:.3f} ms | {parts} | host {host:.3f} ms "
            f"= {host / m['step']:.0%} | e2e ceiling {m['physics'] / m['step']:.3f} | host budget for {TARGET:.2f} "
            f"{host_budget(m):.3f} ms")


def host_budget(medians: dict[str, float]) -> float:
    """The host ms per step under which physics / step reaches TARGET."""
    return medians["physics"] * (1.0 / TARGET - 1.0)


def main(argv: list[str] | None = None) -> list[Case]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", nargs="+", default=list(TASK_OPTIONS))
    parser.add_argument("--num-envs", nargs="+", type=int, default=[64, 1024])
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--steps", type=int, default=0, help="steps per block (0: about 30,000 env steps)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--draw-ahead-off", action="store_true", help="also each configuration without draw-ahead")
    parser.add_argument("--floor", action="store_true",
                        help="also the framework floor (a do-nothing task) at each size and thread count")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    aheads = (None, 1) if args.draw_ahead_off else (None,)
    tasks = [*args.tasks, _floor_task.register()] if args.floor else args.tasks
    cases = [Case(t, n, k, args.steps or max(20, 30_000 // n), a) for t in tasks for n in args.num_envs
             for k in args.threads for a in aheads]
    for case in cases:  # warm-up: first-call checks, caches, the first resets
        case.run()
        case.samples.clear()
    for _ in tqdm(range(args.repeats), desc="repeats (interleaved)"):
        for case in cases:
            case.run()
    for case in cases:
        print(report(case), flush=True)
    return cases


if __name__ == "__main__":
    main()
