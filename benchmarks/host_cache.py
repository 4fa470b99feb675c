"""What the physics costs the host work after it: the same env's host work after the real physics,
back to back, and after stand-ins for the physics that either pause or empty the caches.

A step is the physics (milliseconds of MuJoCo on the pool's threads) then the host work on the
calling thread (`benchmarks.breakdown` times its phases). This benchmark asks how much of that host
time is the host work itself and how much is the state the physics leaves the caches in. For each
task and (num_envs, threads), one env steps uniform random actions in blocks, the modes
interleaved (their order alternates each repeat), medians:

- physics: the real step;
- warm: the backend's step replaced by a no-op that reports no failure (the state does not move):
  the host work back to back, its caches warm;
- pause: the no-op, then a loop on the calling thread that touches no memory, as long as the
  physics' median step (`spin`): the same pause without the physics' memory traffic;
- evict: the no-op, then one write pass over a buffer larger than the last-level cache: the caches
  emptied without the pause.

Host time is the step less the backend's step, less resets in every mode (in the stand-in modes
the state does not move, so envs reset only at the time limit; a reset also runs a forward, which
is physics): each mode times the same work, the actions, per-step events, evaluation, observation
and the rest of the step. Printed per configuration: the host microseconds per step of each mode
and its ratio to warm.

    python -m benchmarks.host_cache [--tasks SimToolReal-v0 mjvec/Hopper-v5] [--num-envs 64 256] [--threads 1 2]
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any

import numba
import numpy as np
from tqdm import tqdm

import mjvec  # noqa: F401  (registers the tasks)
from benchmarks.breakdown import TASK_OPTIONS, Timers, random_actions_env

MODES = ("physics", "warm", "pause", "evict")


@numba.njit(nogil=True, cache=False)
def _spin_kernel(iterations: int) -> float:
    x = 0.0
    for _ in range(iterations):
        x = x * 0.5 + 1.0  # a dependent chain in registers: the core busy, no memory touched
    return x


class Spin:
    """A register-only loop on the calling thread whose length is given in seconds (calibrated once)."""

    def __init__(self, calibration: int = 2_000_000) -> None:
        _spin_kernel(1)  # compile outside the calibration
        start = time.perf_counter()
        _spin_kernel(calibration)
        self.rate = calibration / max(time.perf_counter() - start, 1e-9)  # iterations per second

    def iterations(self, seconds: float) -> int:
        return max(0, round(seconds * self.rate))

    def __call__(self, seconds: float) -> None:
        _spin_kernel(self.iterations(seconds))


@contextlib.contextmanager
def restored(owner: Any, name: str) -> Iterator[None]:
    """Within: `owner.name` may be replaced (an instance attribute shadowing the class's); on leaving
    it is what it was, an instance attribute or none."""
    own = vars(owner)
    had, before = name in own, own.get(name)
    try:
        yield
    finally:
        if had:
            setattr(owner, name, before)
        elif name in vars(owner):
            delattr(owner, name)


@contextlib.contextmanager
def stand_in(backend: Any, after: Callable[[], None]) -> Iterator[None]:
    """Within: `backend.step` is a no-op reporting no failure that calls `after()` instead of the
    physics (the state does not move). The backend's own step is back on leaving."""
    failed = np.zeros(backend.num_envs, bool)

    def step(nstep: int, skip: np.ndarray | None = None) -> np.ndarray:
        after()
        return failed.copy()

    with restored(backend, "step"):
        backend.step = step
        yield


class Case:
    """One (task, num_envs, threads): its env, random actions, timers and per-mode samples."""

    def __init__(self, env_id: str, num_envs: int, threads: int, steps: int, spin: Spin, evict_mib: int) -> None:
        self.label = (env_id, num_envs, threads)
        self.env, self.actions = random_actions_env(env_id, num_envs, threads)
        self.base = self.env.unwrapped
        self.timers = Timers()
        self.timers.wrap(self.base, "_reset_rows", "resets")
        self.steps, self.spin = steps, spin
        self.buffer = np.zeros(evict_mib << 17)  # float64: evict_mib MiB
        self.samples: dict[str, list[float]] = {mode: [] for mode in MODES}
        self.physics_seconds: list[float] = []  # the backend's step, per control step, per physics block

    def _block(self) -> tuple[float, float]:
        """(seconds per step, of which resets) of one block of steps."""
        self.timers.seconds.clear()
        start = time.perf_counter()
        for i in range(self.steps):
            self.env.step(self.actions[i % len(self.actions)])
        return (time.perf_counter() - start) / self.steps, self.timers.seconds["resets"] / self.steps

    def _stand_in(self, mode: str) -> contextlib.AbstractContextManager:
        """The backend as `mode` runs it: its own step (physics) or a stand-in for it."""
        if mode == "physics":
            return contextlib.nullcontext()
        pause = statistics.median(self.physics_seconds) if self.physics_seconds else 0.0
        after = {"warm": lambda: None, "pause": lambda: self.spin(pause),
                 "evict": lambda: self.buffer.fill(1.0)}[mode]
        return stand_in(self.base.backend, after)

    def run(self, mode: str) -> None:
        """One block in `mode`; records its host microseconds per step, less the backend's step
        (the physics or its stand-in) and the resets."""
        backend = Timers()
        with restored(self.base.backend, "step"), self._stand_in(mode):
            backend.wrap(self.base.backend, "step", "backend")
            step, resets = self._block()
        seconds = backend.seconds["backend"] / self.steps
        if mode == "physics":
            self.physics_seconds.append(seconds)
        self.samples[mode].append(1e6 * (step - seconds - resets))

    def medians(self) -> dict[str, float]:
        return {mode: statistics.median(values) for mode, values in self.samples.items()}


def report(case: Case) -> str:
    m = case.medians()
    env_id, n, threads = case.label
    modes = " | ".join(f"{mode} {m[mode]:.0f} ({m[mode] / m['warm']:.2f}x warm)" for mode in MODES)
    return (f"{env_id} num_envs={n} threads={threads}: host us per step, less resets: {modes} | physics "
            f"{1e3 * statistics.median(case.physics_seconds):.3f} ms per step")


def main(argv: list[str] | None = None) -> list[Case]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", nargs="+", default=list(TASK_OPTIONS))
    parser.add_argument("--num-envs", nargs="+", type=int, default=[64, 256])
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--steps", type=int, default=0, help="steps per block (0: about 10,000 env steps)")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--evict-mib", type=int, default=64, help="the evict mode's buffer (MiB; above the LLC)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    spin = Spin()
    cases = [Case(t, n, k, args.steps or max(20, 10_000 // n), spin, args.evict_mib)
             for t in args.tasks for n in args.num_envs for k in args.threads]
    for case in cases:  # warm-up: first-call checks, caches, the first resets, the pause's length
        for mode in MODES:
            case.run(mode)
        case.samples = {mode: [] for mode in MODES}
    for r in tqdm(range(args.repeats), desc="repeats (interleaved)"):
        for case in cases:
            for mode in (MODES if r % 2 else MODES[::-1]):
                case.run(mode)
    for case in cases:
        print(report(case), flush=True)
    return cases


if __name__ == "__main__":
    main()
