"""Interleaved, repeated timing: every figure a benchmark prints is a ratio from one run."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def interleaved_rates(cases: dict[str, tuple[Callable[[], None], int]], repeats: int = 5) -> dict[str, float]:
    """Median units/s of each case; case = (run one block, units of work per block).

    The cases run A, B, C, A, B, C, ... so that machine noise hits all of them alike.
    """
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for fn, _ in cases.values():
        fn()  # warm-up: first-call allocations, caches
    for _ in range(repeats):
        for name, (fn, units) in cases.items():
            t0 = time.perf_counter()
            fn()
            samples[name].append(units / (time.perf_counter() - t0))
    return {name: statistics.median(values) for name, values in samples.items()}
