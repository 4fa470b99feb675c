"""What the delay wrappers share: delay queues, reset marks and the goal-segment refill rule.

A `DelayQueue` is a ring of the last `depth` values of a per-env array; `ResetMarks` remembers which
envs reset since a queue last looked; `segment_hooks` / `with_segment_starts` implement the
source's refill at each new goal segment (`mjvec.contract.GoalSegmentHooks`). Used by
`mjvec.randomization.perception` (observation and action delay) and `object_dr` (pose latency).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.vector import VectorEnv

from mjvec._jit import kernel
from mjvec.contract import GoalSegmentHooks, require_hooks
from mjvec.validate import require_bool, require_int
from mjvec.xp import Rows, namespace_of
from mjvec.xp import copy_array as _copy


def check_delay(who: str, max_delay: object) -> None:
    require_int(max_delay, f"{who}: max_delay", low=0)


def segment_hooks(env: VectorEnv, refill_on_goal: object, who: str) -> Any:
    """The unwrapped env when refill_on_goal is True (checked for `GoalSegmentHooks`), else None."""
    refill_on_goal = require_bool(refill_on_goal, f"{who}: refill_on_goal")
    return require_hooks(env, GoalSegmentHooks, who=f"{who}(refill_on_goal=True)") if refill_on_goal else None


def with_segment_starts(rows: Rows, segments: Any, steps_since_start: int) -> Rows:
    """`rows` plus the envs whose goal-segment counter equals `steps_since_start`."""
    if segments is None:
        return rows
    return rows.union(segments.goal_segment_steps() == steps_since_start)


class ResetMarks:
    """Envs reset since the last time a queue looked (`mark` is a lifecycle reset callback), as a
    mask in the env's namespace."""

    def __init__(self, base: Any) -> None:
        self.marked = base.zeros((), base.xp.bool) | True
        self._none = Rows.of_ids(np.empty(0, np.int64), self.marked.shape[0])

    def mark(self, rows: Rows) -> None:
        rows.put(self.marked, True)

    def take(self) -> Rows:
        if isinstance(self.marked, np.ndarray) and not self.marked.any():  # most steps on the host
            return self._none
        rows = Rows.of_mask(_copy(self.marked))
        self.marked[...] = False
        return rows


class DelayQueue:
    """A ring of the last `depth` values (depth, N, ...); `read` picks a random age per env.

    Age 0 is the newest value. A ring (not a roll) so that a push writes one slot.
    """

    def __init__(self, depth: int) -> None:
        self.depth = depth
        self.buf: Any = None
        self.head = 0

    def _fill(self, value: Any) -> None:
        xp = namespace_of(value)
        self.buf = xp.stack([value] * self.depth, axis=0)

    def push(self, value: Any, refill: Rows) -> None:
        """Add `value` as the newest; envs in `refill` (just reset) get it at every age."""
        if self.buf is None:
            self._fill(value)
            return
        self.head = (self.head - 1) % self.depth
        self.buf[self.head] = value
        self.refill(value, refill)

    def refill(self, value: Any, rows: Rows) -> None:
        """Set every age of envs `rows` to their `value` row (all envs on first use); no shift."""
        if self.buf is None:
            self._fill(value)
        elif rows.any():
            fresh = rows.take(value)
            for age in range(self.depth):
                rows.put(self.buf[age], fresh)

    def newest(self) -> Any:
        assert self.buf is not None
        return self.buf[self.head]

    def read(self, ages: Any) -> Any:
        """(N, ...) each env's value `ages[env]` pushes ago (0: the newest): a new array."""
        assert self.buf is not None
        if isinstance(self.buf, np.ndarray) and isinstance(ages, np.ndarray) and self.buf.flags.c_contiguous:
            out = np.empty(self.buf.shape[1:], self.buf.dtype)  # one compiled gather, not a fancy index's set-up
            n = out.shape[0]
            _gather(self.buf.reshape(self.depth, n, -1), self.head, ages, out.reshape(n, -1))
            return out
        xp = namespace_of(ages)
        envs = xp.arange(ages.shape[0], device=getattr(ages, "device", None)) if xp is not np else np.arange(ages.size)
        return self.buf[(self.head + ages) % self.depth, envs]


@kernel
def _gather(buf: np.ndarray, head: int, ages: np.ndarray, out: np.ndarray) -> None:
    depth = buf.shape[0]
    for env in range(out.shape[0]):
        slot = (head + ages[env]) % depth
        for j in range(out.shape[1]):
            out[env, j] = buf[slot, env, j]
