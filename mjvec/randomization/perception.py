"""Non-model randomization: observation noise and delay, action delay, object-pose latency and
noise, grasp-box scale noise, random object pushes. Each is a Gymnasium vector wrapper.

They act through the unwrapped env's documented hooks (duck-typed, so this package stays below
`mjvec.envs`):
- `add_observation_transform(fn)` / `add_action_transform(fn)` and `lifecycle` (any MjVecEnv);
- `policy_layout` (name -> width blocks of the policy observation);
- `_true_object_pose()` / `_observed_object_pose` / `_observed_object_scales`, `object_scales`,
  `object_mass`, `lifted`, `object_body_id` (SimToolReal-style tasks).
Every draw comes from the env's per-env streams, so results do not depend on num_envs. Delay
queues are refilled with the first value after an env's reset.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium.vector import VectorEnv, VectorWrapper

from mjvec.errors import ConfigError, allowed


def _need(base: Any, *attrs: str, who: str) -> None:
    missing = [a for a in attrs if not hasattr(base, a)]
    if missing:
        raise ConfigError(f"{who} needs an env with {missing}; {type(base).__name__} has none of them")


def _check_delay(who: str, max_delay: object) -> None:
    if isinstance(max_delay, bool) or not isinstance(max_delay, int) or max_delay < 0:
        raise ConfigError(f"{who}: max_delay must be an int >= 0, got {max_delay!r}")


def _policy(obs: Any) -> np.ndarray:
    return obs["policy"] if isinstance(obs, Mapping) else obs


def _with_policy(obs: Any, policy: np.ndarray) -> Any:
    if isinstance(obs, Mapping):
        return {**obs, "policy": policy}
    return policy


class _ResetMarks:
    """Envs reset since the last time a queue looked (set from the lifecycle's reset event)."""

    def __init__(self, base: Any) -> None:
        self.marked = np.ones(base.num_envs, bool)
        self.unsubscribe = base.lifecycle.subscribe("reset", self._mark)

    def _mark(self, env_ids: np.ndarray) -> None:
        self.marked[env_ids] = True

    def take(self) -> np.ndarray:
        ids = np.flatnonzero(self.marked)
        self.marked[:] = False
        return ids


class _DelayQueue:
    """A ring of the last `depth` values (depth, N, ...); `read` picks a random age per env.

    Age 0 is the newest value. A ring (not np.roll) so that a push writes one slot.
    """

    def __init__(self, depth: int) -> None:
        self.depth = depth
        self.buf: np.ndarray | None = None
        self.head = 0

    def push(self, value: np.ndarray, refill: np.ndarray) -> None:
        """Add `value` as the newest; envs in `refill` (just reset) get it at every age."""
        if self.buf is None:
            self.buf = np.repeat(value[None], self.depth, axis=0)
            return
        self.head = (self.head - 1) % self.depth
        self.buf[self.head] = value
        if refill.size:
            self.buf[:, refill] = value[refill]

    def refill(self, value: np.ndarray, ids: np.ndarray) -> None:
        """Set every age of envs `ids` to their `value` row (all envs on first use); no shift."""
        if self.buf is None:
            self.buf = np.repeat(value[None], self.depth, axis=0)
        else:
            self.buf[:, ids] = value[ids]

    def newest(self) -> np.ndarray:
        assert self.buf is not None
        return self.buf[self.head]

    def read(self, ages: np.ndarray) -> np.ndarray:
        assert self.buf is not None
        return self.buf[(self.head + ages) % self.depth, np.arange(ages.size)]


class ObservationNoise(VectorWrapper):
    """Add N(0, std) to one block of the policy observation each step (default: joint_vel, 0.1)."""

    def __init__(self, env: VectorEnv, block: str = "joint_vel", std: float = 0.1) -> None:
        super().__init__(env)
        base = env.unwrapped
        _need(base, "policy_layout", "add_observation_transform", "rng", who="ObservationNoise")
        starts, pos = {}, 0
        for name, width in base.policy_layout:
            starts[name] = slice(pos, pos + width)
            pos += width
        if block not in starts:
            raise ConfigError(f"ObservationNoise: block {block!r} is not one of {allowed(starts)}")
        if not (math.isfinite(std) and std >= 0):
            raise ConfigError(f"ObservationNoise: std must be finite and >= 0, got {std}")
        self._slice, self._std, self._base = starts[block], float(std), base
        self._ids = np.arange(base.num_envs)
        self._stream = f"dr/obs_noise/{block}"
        self._unsub = base.add_observation_transform(self._transform)

    def _transform(self, obs: Any, stepped: bool) -> Any:
        policy = _policy(obs).copy()
        width = self._slice.stop - self._slice.start
        noise = self._base.rng.normal(self._ids, self._stream, (width,), dtype=policy.dtype.type)
        noise *= policy.dtype.type(self._std)
        policy[:, self._slice] += noise
        return _with_policy(obs, policy)


class ObservationDelay(VectorWrapper):
    """Deliver the policy observation from 0..max_delay control steps ago (random per env per step)."""

    def __init__(self, env: VectorEnv, max_delay: int = 2) -> None:
        super().__init__(env)
        base = env.unwrapped
        _need(base, "add_observation_transform", "lifecycle", "rng", who="ObservationDelay")
        _check_delay("ObservationDelay", max_delay)
        self._base, self._max = base, max_delay
        self._queue = _DelayQueue(max_delay + 1)
        self._marks = _ResetMarks(base)
        self._last: np.ndarray | None = None
        self._ids = np.arange(base.num_envs)
        self._unsub = base.add_observation_transform(self._transform)

    def _transform(self, obs: Any, stepped: bool) -> Any:
        fresh = _policy(obs)
        refill = self._marks.take()
        if stepped or self._last is None:
            self._queue.push(fresh, refill)
            ages = self._base.rng.integers(self._ids, "dr/obs_delay", 0, self._max + 1)
            out = self._queue.read(ages)
        else:
            # reset(): only the reset envs get a new observation; the others keep theirs.
            self._queue.refill(fresh, refill)
            out = self._last.copy()
            out[refill] = fresh[refill]
        self._last = out.copy()
        return _with_policy(obs, out)


class ActionDelay(VectorWrapper):
    """Apply the action from 0..max_delay control steps ago (random per env per step)."""

    def __init__(self, env: VectorEnv, max_delay: int = 2) -> None:
        super().__init__(env)
        base = env.unwrapped
        _need(base, "add_action_transform", "lifecycle", "rng", who="ActionDelay")
        _check_delay("ActionDelay", max_delay)
        self._base, self._max = base, max_delay
        self._queue = _DelayQueue(max_delay + 1)
        self._marks = _ResetMarks(base)
        self._ids = np.arange(base.num_envs)
        self._unsub = base.add_action_transform(self._transform)

    def _transform(self, actions: np.ndarray) -> np.ndarray:
        self._queue.push(actions, self._marks.take())
        ages = self._base.rng.integers(self._ids, "dr/action_delay", 0, self._max + 1)
        return self._queue.read(ages)
