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

import gymnasium as gym
import numpy as np
from gymnasium.vector import VectorEnv, VectorWrapper

from mjvec._jit import kernel
from mjvec.contract import (
    EnvHooks,
    ObservationLayoutHooks,
    ObsEvent,
    require_hooks,
)
from mjvec.errors import ConfigError, allowed
from mjvec.randomization.queues import DelayQueue, ResetMarks, check_delay, segment_hooks, with_segment_starts
from mjvec.randomization.wrapper import HookWrapper, WrapperEffect
from mjvec.xp import copy_array as _copy
from mjvec.xp import namespace_of


def _policy(obs: Any) -> Any:
    return obs["policy"] if isinstance(obs, Mapping) else obs


def _with_policy(obs: Any, policy: Any) -> Any:
    if isinstance(obs, Mapping):
        return {**obs, "policy": policy}
    return policy


NOISE_DISTRIBUTIONS = ("gaussian", "uniform")


def _find_block(layouts: Mapping[str | None, Any], block: str, key: str | None) -> tuple[str | None, slice]:
    """(key, slice) of `block` in the task's observation layouts, or a ConfigError naming what it knows.

    key None: the Box observation, or the Dict's "policy" key (what the policy perceives), or else
    the one key whose layout has the block.
    """
    known = {k: [name for name, _ in layout] for k, layout in layouts.items()}
    if key is not None and key not in known:
        raise ConfigError(f"ObservationNoise: observation key {key!r} has no named blocks; keys with blocks are "
                          f"{allowed([k for k in known if k is not None])}")
    where = [k for k, names in known.items() if block in names and (key is None or k == key)]
    if key is None and len(where) > 1 and "policy" in where:
        where = ["policy"]
    if len(where) != 1:
        blocks = {("(box)" if k is None else k): names for k, names in known.items()}
        problem = (f"is in the keys {where}; pass key= one of them" if where
                   else f"is not one of the observation's blocks {blocks}")
        raise ConfigError(f"ObservationNoise: block {block!r} {problem}"
                          + ("" if known else " (the task declares no observation layout: set policy_layout)"))
    start = 0
    for name, width in layouts[where[0]]:
        if name == block:
            return where[0], slice(start, start + width)
        start += width
    raise AssertionError(block)  # found above


class ObservationNoise(HookWrapper, VectorWrapper):
    """Add noise to one named block of the observation (default: joint_vel, N(0, 0.1)).

    block: a block name of the task's declared layouts (`ObservationLayoutHooks`: ``policy_layout``
        for a Box observation, ``<key>_layout`` for the keys of a Dict one).
    scale: the Gaussian's standard deviation, or the half-width h of U(-h, h) for uniform noise.
    distribution: "gaussian" or "uniform".
    key: the Dict observation key holding the block (None: the Box observation, or a Dict's
        "policy" key, or else the one key that has the block).
    Each step draws one noise vector per env on the stream ``dr/obs_noise/<block>``; a reset draws
    for the reset envs only, on ``dr/obs_noise/<block>/reset``. Needs `EnvHooks`.
    """

    def __init__(self, env: VectorEnv, block: str = "joint_vel", scale: float = 0.1, *,
                 distribution: str = "gaussian", key: str | None = None) -> None:
        super().__init__(env)
        base = require_hooks(env, EnvHooks, ObservationLayoutHooks, who="ObservationNoise")
        if distribution not in NOISE_DISTRIBUTIONS:
            raise ConfigError(f"ObservationNoise: distribution {distribution!r} is not one of "
                              f"{allowed(NOISE_DISTRIBUTIONS)}")
        if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not (math.isfinite(scale) and scale >= 0):
            raise ConfigError(f"ObservationNoise: scale must be a finite number >= 0 (the Gaussian's std or the "
                              f"uniform half-width), got {scale!r}")
        self._key, self._slice = _find_block(base.observation_layouts, block, key)
        self._scale, self._uniform, self._base = float(scale), distribution == "uniform", base
        self._block, self._distribution = block, distribution
        self._all = base.all_rows
        self._stream = f"dr/obs_noise/{block}"
        self._register(lambda: base.add_observation_transform(self._transform))

    def describe(self) -> WrapperEffect:
        """Noise on one block: each step a fresh draw per env (float32), a reset a fresh draw for the reset envs."""
        return WrapperEffect("obs_noise", self._block, {"key": self._key, "distribution": self._distribution,
                                                        "scale": self._scale, "dtype": "float32"})

    def _transform(self, obs: Any, event: ObsEvent) -> Any:
        rows, stream = (self._all, self._stream) if event.stepped else (event.reset, f"{self._stream}/reset")
        width = self._slice.stop - self._slice.start
        rng = self._base.rng
        if self._uniform:
            noise = rng.uniform(rows, stream, -self._scale, self._scale, (width,))
        else:
            noise = rng.normal(rows, stream, (width,), dtype=np.float32) * self._scale
        array = _copy(obs if self._key is None else obs[self._key])
        if (rows.everything and isinstance(array, np.ndarray) and array.ndim == 2 and array.dtype == np.float32
                and noise.dtype == np.float32):  # the add in one compiled pass over the block (the same sums)
            _add_in_place(array, self._slice.start, noise)
            return array if self._key is None else {**obs, self._key: array}
        block = array[..., self._slice]  # a view: the rows below write through
        noise = namespace_of(block).astype(noise, block.dtype)
        if rows.everything:  # every row: the same sums, added in place
            block += noise
        else:
            rows.put(block, rows.take(block) + noise)
        return array if self._key is None else {**obs, self._key: array}


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
        check_delay("ObservationDelay", max_delay)
        self._segments = segment_hooks(env, refill_on_goal, "ObservationDelay")
        self._base, self._max, self._refill_on_goal = base, max_delay, refill_on_goal
        self._queue = DelayQueue(max_delay + 1)
        self._all = base.all_rows
        self._register(lambda: base.add_observation_transform(self._transform))

    def describe(self) -> WrapperEffect:
        """The whole policy observation from 0..max_delay steps ago, uniform per env per step."""
        return WrapperEffect("obs_delay", "observation",
                             {"max_delay": self._max, "refill_on_goal": self._refill_on_goal})

    def per_env_bytes(self) -> int:
        """The queue: max_delay + 1 policy observations per env."""
        space = self._base.single_observation_space
        policy = space["policy"] if isinstance(space, gym.spaces.Dict) else space
        return (self._max + 1) * int(np.prod(policy.shape)) * np.dtype(policy.dtype).itemsize

    def _transform(self, obs: Any, event: ObsEvent) -> Any:
        fresh = _policy(obs)
        if not event.stepped:
            self._queue.refill(fresh, event.reset)
            return obs
        self._queue.push(fresh, with_segment_starts(event.reset, self._segments, 1))
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
        check_delay("ActionDelay", max_delay)
        self._segments = segment_hooks(env, refill_on_goal, "ActionDelay")
        self._base, self._max, self._refill_on_goal = base, max_delay, refill_on_goal
        self._queue = DelayQueue(max_delay + 1)
        self._marks = ResetMarks(base)
        self._all = base.all_rows
        self._register(lambda: base.lifecycle.subscribe("reset", self._marks.mark),
                       lambda: base.add_action_transform(self._transform))

    def describe(self) -> WrapperEffect:
        """The action from 0..max_delay steps ago, uniform per env per step."""
        return WrapperEffect("action_delay", "action", {"max_delay": self._max, "refill_on_goal": self._refill_on_goal})

    def per_env_bytes(self) -> int:
        """The queue: max_delay + 1 float64 actions per env, and a reset mark."""
        return (self._max + 1) * int(np.prod(self.env.single_action_space.shape)) * 8 + 1

    def _transform(self, actions: Any) -> Any:
        self._queue.push(actions, with_segment_starts(self._marks.take(), self._segments, 1))
        ages = self._base.rng.integers(self._all, "dr/action_delay", 0, self._max + 1)
        return self._queue.read(ages)


@kernel
def _add_in_place(array: np.ndarray, start: int, noise: np.ndarray) -> None:
    """array[:, start:start + width] += noise (N, width), in the arrays' float32."""
    for e in range(noise.shape[0]):
        for j in range(noise.shape[1]):
            array[e, start + j] += noise[e, j]
