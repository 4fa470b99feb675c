"""The success-tolerance curriculum of SimToolReal (the source's ``tolerance_curriculum``).

Rule, per control step (the source's order): first the step counter advances and, once at least
`interval` steps have passed since the last tightening (or since the start), the curriculum looks
at the mean over envs of each env's MOST RECENT finished episode's success count, an env that has
not finished an episode yet counting 0. If that mean is >= `min_successes` the tolerance is
multiplied by `decay` (floored at `minimum`) and the interval restarts; otherwise it looks again at
the next step. Then the step is evaluated with the (possibly new) tolerance, and the episodes that
finished in it are recorded for the next steps. So an episode's successes count from the step
after it ends, as in the source, where they are recorded when the env resets at the start of the
next step.

Shards. Under torchrun each process owns a slice of the envs (``env_id_offset``). Without a
reducer every process runs its own curriculum on its own envs. With a reducer (`Reducer`) the mean
is global: at each check the process's (sum of its envs' statistics, its env count) go through
``reducer(sum, count) -> (global sum, global count)``, an all-reduce (sum) over the processes. Every
process must then step in lockstep (the same number of steps from the same start), since the
reducer is a collective call made at the same steps in every process; all processes then take the
same decisions and keep the same tolerance.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from mjvec.errors import ConfigError

Reducer = Callable[[float, int], tuple[float, int]]


class ToleranceCurriculum:
    """The tolerance curriculum over `num_envs` envs (see the module docstring).

    Call `begin_step()` once per control step before the tolerance is used, and `finish(env_ids,
    successes)` with the episodes that finished in that step. `tolerance` is the current value,
    `last_successes` (num_envs,) each env's most recent finished episode's success count.
    """

    def __init__(self, num_envs: int, start: float, decay: float, minimum: float, interval: int,
                 min_successes: float, reducer: Reducer | None = None) -> None:
        self.start = float(start)
        self.decay = float(decay)
        self.minimum = float(minimum)
        self.interval = int(interval)
        self.min_successes = float(min_successes)
        self.tolerance = self.start
        self.steps = 0
        self.last_tightening = 0
        self.last_successes = np.zeros(int(num_envs))
        self._reducer: Reducer | None = None
        if reducer is not None:
            self.set_reducer(reducer)

    def set_reducer(self, reducer: Reducer) -> None:
        """Make the statistic global through `reducer` (an all-reduce of (sum, count)).

        Raises ConfigError if `reducer` is not callable, or if the curriculum has already stepped
        (shards that started apart would not agree on when to check).
        """
        if not callable(reducer):
            raise ConfigError(f"the curriculum reducer must be callable as reducer(sum, count), got {reducer!r}")
        if self.steps:
            raise ConfigError(
                f"the curriculum reducer must be set before the first step (this curriculum has stepped "
                f"{self.steps} times); set it right after building the env, before stepping"
            )
        self._reducer = reducer

    def local_stat(self) -> tuple[float, int]:
        """(sum of `last_successes`, number of envs) of this process's envs."""
        return float(self.last_successes.sum()), int(self.last_successes.size)

    def mean_successes(self) -> float:
        """The statistic the rule compares: global through the reducer if one is set."""
        total, count = self.local_stat()
        if self._reducer is not None:
            total, count = self._reducer(total, count)
            total, count = float(total), int(count)
            if count < 1:
                raise ConfigError(f"the curriculum reducer returned a count of {count}; it must return the "
                                  "sum over processes of the counts it was given (>= 1)")
        return total / count

    def begin_step(self) -> bool:
        """Advance one control step and apply the rule; returns True when the tolerance tightened."""
        self.steps += 1
        if self.steps - self.last_tightening < self.interval:
            return False
        if self.mean_successes() < self.min_successes:
            return False
        self.tolerance = max(min(self.tolerance * self.decay, self.start), self.minimum)
        self.last_tightening = self.steps
        return True

    def finish(self, env_ids: np.ndarray, successes: np.ndarray) -> None:
        """Record the success counts of the episodes of `env_ids` that finished in this step."""
        self.last_successes[env_ids] = successes
