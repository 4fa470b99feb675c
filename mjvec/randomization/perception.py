"""Non-model randomization of what the policy perceives and does: observation noise, observation
delay, action delay. Each is a Gymnasium vector wrapper over the hooks of `mjvec.contract`.

Streams. Every draw comes from the env's per-env streams (`mjvec.rng.EnvRandom`), and every draw is
made for exactly the envs it concerns, so an env's draws are a pure function of (seed, global env
id, its own history): they do not depend on num_envs, on which other envs reset, or on a refused
step. Per-step draws are made once per control step for every env (one vectorized call); reset
draws only for the envs being reset, and where a wrapper draws both per step and per reset, the
reset draws use a stream of their own ("<stream>/reset"), so an env's per-step streams advance
exactly once per step whether or not it was autoreset. SAME_STEP's ``final_obs`` is a stepped batch
(it draws what that step would have drawn had nothing reset); the reset envs' rows are then drawn
as by ``reset(options={"reset_mask": done})``.

Delay queues are refilled with the first value of a new episode, so nothing of an old episode is
ever delivered in a new one. With ``refill_on_goal=True`` (the paper preset) they are also refilled
when a new goal segment starts, as the source's are: its queues refill whenever its progress
counter is 1, and that counter restarts at every success as well as at every reset. The task
declares the counter through `GoalSegmentHooks`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium.vector import VectorEnv, VectorWrapper

from mjvec.contract import (
    EnvHooks,
    GoalSegmentHooks,
    ObsEvent,
    PolicyLayoutHooks,
    require_hooks,
)
from mjvec.errors import ConfigError, allowed
from mjvec.randomization.wrapper import HookWrapper
from mjvec.xp import Rows, namespace_of
from mjvec.xp import copy_array as _copy


def _check_delay(who: str, max_delay: object) -> None:
    if isinstance(max_delay, bool) or not isinstance(max_delay, int) or max_delay < 0:
        raise ConfigError(f"{who}: max_delay must be an int >= 0, got {max_delay!r}")


def _segment_hooks(env: VectorEnv, refill_on_goal: object, who: str) -> Any:
    """The unwrapped env when refill_on_goal is True (checked for `GoalSegmentHooks`), else None."""
    if not isinstance(refill_on_goal, bool):
        raise ConfigError(f"{who}: refill_on_goal must be a bool, got {refill_on_goal!r}")
    return require_hooks(env, GoalSegmentHooks, who=f"{who}(refill_on_goal=True)") if refill_on_goal else None


def _with_segment_starts(rows: Rows, segments: Any, steps_since_start: int) -> Rows:
    """`rows` plus the envs whose goal-segment counter equals `steps_since_start`."""
    if segments is None:
        return rows
    return rows.union(segments.goal_segment_steps() == steps_since_start)


def _policy(obs: Any) -> Any:
    return obs["policy"] if isinstance(obs, Mapping) else obs


def _with_policy(obs: Any, policy: Any) -> Any:
    if isinstance(obs, Mapping):
        return {**obs, "policy": policy}
    return policy


class _ResetMarks:
    """Envs reset since the last time a queue looked (`mark` is a lifecycle reset callback), as a
    mask in the env's namespace."""

    def __init__(self, base: Any) -> None:
        self.marked = base.zeros((), base.xp.bool) | True

    def mark(self, rows: Rows) -> None:
        rows.put(self.marked, True)

    def take(self) -> Rows:
        rows = Rows.of_mask(_copy(self.marked))
        self.marked[...] = False
        return rows


class _DelayQueue:
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
        assert self.buf is not None
        xp = namespace_of(ages)
        envs = xp.arange(ages.shape[0], device=getattr(ages, "device", None)) if xp is not np else np.arange(ages.size)
        return self.buf[(self.head + ages) % self.depth, envs]


class ObservationNoise(HookWrapper, VectorWrapper):
    """Add N(0, std) to one block of the policy observation (default: joint_vel, 0.1).

    Needs `EnvHooks` and `PolicyLayoutHooks`. Each step draws one noise vector per env on the
    stream ``dr/obs_noise/<block>``; a reset draws for the reset envs only, on
    ``dr/obs_noise/<block>/reset``.
    """

    def __init__(self, env: VectorEnv, block: str = "joint_vel", std: float = 0.1) -> None:
        super().__init__(env)
        base = require_hooks(env, EnvHooks, PolicyLayoutHooks, who="ObservationNoise")
        starts, pos = {}, 0
        for name, width in base.policy_layout:
            starts[name] = slice(pos, pos + width)
            pos += width
        if block not in starts:
            raise ConfigError(f"ObservationNoise: block {block!r} is not one of {allowed(starts)}")
        if not (math.isfinite(std) and std >= 0):
            raise ConfigError(f"ObservationNoise: std must be finite and >= 0, got {std}")
        self._slice, self._std, self._base = starts[block], float(std), base
        self._all = base._all_rows
        self._stream = f"dr/obs_noise/{block}"
        self._register(lambda: base.add_observation_transform(self._transform))

    def _transform(self, obs: Any, event: ObsEvent) -> Any:
        policy = _copy(_policy(obs))
        rows, stream = (self._all, self._stream) if event.stepped else (event.reset, f"{self._stream}/reset")
        width = self._slice.stop - self._slice.start
        noise = self._base.rng.normal(rows, stream, (width,), dtype=np.float32) * self._std
        block = policy[:, self._slice]  # a view: the rows below write through
        rows.put(block, rows.take(block) + noise)
        return _with_policy(obs, policy)


class ObservationDelay(HookWrapper, VectorWrapper):
    """Deliver the policy observation from 0..max_delay control steps ago (random per env per step).

    Needs `EnvHooks`. Each step draws one age per env on ``dr/obs_delay``; a reset draws nothing
    and delivers the fresh observation (the reset envs' queues are refilled with it).
    refill_on_goal=True (needs `GoalSegmentHooks`): a step whose evaluation is the first of a goal
    segment (counter 1: the step after a reset or after a success) also refills that env's queue
    with its fresh observation, as in the source.
    """

    def __init__(self, env: VectorEnv, max_delay: int = 2, refill_on_goal: bool = False) -> None:
        super().__init__(env)
        base = require_hooks(env, EnvHooks, who="ObservationDelay")
        _check_delay("ObservationDelay", max_delay)
        self._segments = _segment_hooks(env, refill_on_goal, "ObservationDelay")
        self._base, self._max = base, max_delay
        self._queue = _DelayQueue(max_delay + 1)
        self._all = base._all_rows
        self._register(lambda: base.add_observation_transform(self._transform))

    def _transform(self, obs: Any, event: ObsEvent) -> Any:
        fresh = _policy(obs)
        if not event.stepped:
            self._queue.refill(fresh, event.reset)
            return obs
        self._queue.push(fresh, _with_segment_starts(event.reset, self._segments, 1))
        ages = self._base.rng.integers(self._all, "dr/obs_delay", 0, self._max + 1)
        return _with_policy(obs, self._queue.read(ages))


class ActionDelay(HookWrapper, VectorWrapper):
    """Apply the action from 0..max_delay control steps ago (random per env per step).

    Needs `EnvHooks`. Each step that runs draws one age per env on ``dr/action_delay``; an env's
    queue is refilled with the first action after its reset. refill_on_goal=True (needs
    `GoalSegmentHooks`): also with the action of the step after a goal segment's first step
    (counter 1 when the action arrives), where the source's action queue refills.
    """

    def __init__(self, env: VectorEnv, max_delay: int = 2, refill_on_goal: bool = False) -> None:
        super().__init__(env)
        base = require_hooks(env, EnvHooks, who="ActionDelay")
        _check_delay("ActionDelay", max_delay)
        self._segments = _segment_hooks(env, refill_on_goal, "ActionDelay")
        self._base, self._max = base, max_delay
        self._queue = _DelayQueue(max_delay + 1)
        self._marks = _ResetMarks(base)
        self._all = base._all_rows
        self._register(lambda: base.lifecycle.subscribe("reset", self._marks.mark),
                       lambda: base.add_action_transform(self._transform))

    def _transform(self, actions: Any) -> Any:
        self._queue.push(actions, _with_segment_starts(self._marks.take(), self._segments, 1))
        ages = self._base.rng.integers(self._all, "dr/action_delay", 0, self._max + 1)
        return self._queue.read(ages)
