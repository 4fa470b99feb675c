"""Interleaved, repeated timing: every figure a benchmark prints is a ratio from one run."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from tqdm import tqdm


def interleaved_rates(cases: dict[str, tuple[Callable[[], float | None], int]], repeats: int = 5,
                      desc: str = "timing") -> dict[str, float]:
    """Median units/s of each case; case = (run one block, units of work per block).

    The cases run A, B, C, A, B, C, ... so that machine noise hits all of them alike. A block may
    return the seconds it wants counted (to leave its own set-up out); otherwise its wall time is.
    """
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for fn, _ in cases.values():
        fn()  # warm-up: first-call allocations, caches
    for _ in tqdm(range(repeats), desc=desc, leave=False):
        for name, (fn, units) in cases.items():
            t0 = time.perf_counter()
            counted = fn()
            elapsed = time.perf_counter() - t0 if counted is None else counted
            samples[name].append(units / elapsed)
    return {name: statistics.median(values) for name, values in samples.items()}
