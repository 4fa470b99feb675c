"""The success-tolerance curriculum of SimToolReal (the source's ``tolerance_curriculum``).

Rule, per control step (the source's order): first the step counter advances and, once at least
`interval` steps have passed since the last tightening (or since the start), the curriculum looks
at the mean over envs of each env's latest RECORDED success count, an env with none recorded yet
counting 0. If that mean is >= `min_successes` the tolerance is multiplied by `decay` (floored at
`minimum`) and the interval restarts; otherwise it looks again at the next step. Then the step is
evaluated with the (possibly new) tolerance. A count is recorded (`finish`) for an episode that
ends in a step, and at every reset of an env, as the source's reset_idx records its
prev_episode_successes: so an episode cut short by ``reset()``, a reset mask or a simulation error
counts too, and an episode's successes count from the step after it ends, as in the source.

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
from typing import Any

import numpy as np

from mjvec.errors import ConfigError
from mjvec.xp import Rows, namespace_of

Reducer = Callable[[Any, Any], tuple[Any, Any]]


class ToleranceCurriculum:
    """The tolerance curriculum over `num_envs` envs (see the module docstring).

    Call `begin_step()` once per control step before the tolerance is used, and `finish(rows,
    successes)` with the episodes that ended in that step and at each reset. `tolerance` is the
    current value, a 0-d array in the env's namespace (on a device it never leaves it: the rule runs
    as array ops), `last_successes` (num_envs,) each env's latest recorded success count.
    like: an array of the env's namespace and device (None: numpy on the host).
    """

    def __init__(self, num_envs: int, start: float, decay: float, minimum: float, interval: int,
                 min_successes: float, reducer: Reducer | None = None, like: Any = None) -> None:
        self.start = float(start)
        self.decay = float(decay)
        self.minimum = float(minimum)
        self.interval = int(interval)
        self.min_successes = float(min_successes)
        self._xp = np if like is None else namespace_of(like)
        device = None if like is None else like.device
        self.tolerance = self._xp.asarray(self.start, dtype=self._xp.float64, device=device)
        self.steps = 0
        self.last_tightening = self._xp.asarray(0, dtype=self._xp.int64, device=device)
        self.last_successes = self._xp.zeros(int(num_envs), dtype=self._xp.float64, device=device)
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

    def local_stat(self) -> tuple[Any, Any]:
        """(sum of `last_successes`, number of envs) of this process's envs (host floats on the host)."""
        if self._xp is np:
            return float(self.last_successes.sum()), int(self.last_successes.size)
        return self._xp.sum(self.last_successes), self.last_successes.shape[0]

    def mean_successes(self) -> Any:
        """The statistic the rule compares: global through the reducer if one is set."""
        total, count = self.local_stat()
        if self._reducer is not None:
            total, count = self._reducer(total, count)
            if self._xp is np:
                total, count = float(total), int(count)
                if count < 1:
                    raise ConfigError(f"the curriculum reducer returned a count of {count}; it must return the "
                                      "sum over processes of the counts it was given (>= 1)")
        return total / count

    def begin_step(self) -> Any:
        """Advance one control step and apply the rule; returns whether the tolerance tightened
        (a host bool; on a device a 0-d bool array, never read back in a step)."""
        self.steps += 1
        xp = self._xp
        due = (self.steps - self.last_tightening) >= self.interval
        if xp is np and not due:
            return False  # the host skips the statistic (and the reducer's collective) until due
        tighten = due & (self.mean_successes() >= self.min_successes)
        lower = xp.clip(xp.clip(self.tolerance * self.decay, max=self.start), min=self.minimum)
        self.tolerance = xp.where(tighten, lower, self.tolerance)
        self.last_tightening = xp.where(tighten, self.steps, self.last_tightening)
        return bool(tighten) if xp is np else tighten

    def finish(self, rows: Rows, successes: Any) -> None:
        """Record the success counts (the selection's rows) of the episodes of `rows` that ended in
        this step, or that a reset ends now."""
        Rows.of(rows, self.last_successes.shape[0]).put(self.last_successes, successes)
