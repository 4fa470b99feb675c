"""The step machinery of `MjVecEnv` (a mixin over its declared records): the autoreset modes' observe
paths, the base's rules around `_evaluate`, the observation pipeline from the task to the output, and
the public ``episode_steps`` counter.

It reads only what `MjVecEnv.__init__` declares: ``arrays`` (`ArraySpace`), ``episodes``
(`Episodes`), ``transforms`` (`Transforms`), ``output`` (`Output`), ``lifecycle``, ``backend``,
``num_envs``, ``observation_space`` and the first-call flags ``_checked``; and it calls the task
hooks. `mjvec.envs.base` documents the contract these implement.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mjvec._jit import host_arrays, kernel
from mjvec.contract import Lifecycle, ObsEvent
from mjvec.envs.arrays import to_numpy
from mjvec.envs.infos import check_task_obs, check_task_step, masked_info, merge_reset_info
from mjvec.envs.records import ArraySpace, Episodes, Output
from mjvec.envs.transforms import Transforms
from mjvec.errors import ConfigError, ResetNeededError
from mjvec.xp import Rows

__all__ = ["StepMixin"]


class StepMixin:
    """The private step helpers of `MjVecEnv` (see the module docstring)."""

    arrays: ArraySpace
    episodes: Episodes
    transforms: Transforms
    output: Output
    lifecycle: Lifecycle
    backend: Any
    num_envs: int
    frame_skip: int
    observation_space: Any
    _checked: set[str]
    _task_info: Any

    def autoresetting(self) -> Any:
        """(N,) bool in the state's namespace: the envs the running step autoresets instead of
        stepping (NEXT_STEP: those that were done after the previous step; their physics this step
        is skipped or discarded). All False in the other modes; outside a step, the last step's."""
        return self.episodes.autoresetting

    def _refuse_done_envs(self) -> None:
        """DISABLED mode: a step with an env that is done raises before anything moves. (On a device
        this reads the done mask back to the host: DISABLED mode has a host round trip per step.)"""
        done = np.asarray(to_numpy(self.episodes.needs_reset), bool)
        if done.any():
            ids = np.flatnonzero(done)
            raise ResetNeededError(
                f"envs {ids[:16].tolist()} are done and autoreset_mode is DISABLED; reset them first "
                "with env.reset(options={'reset_mask': mask})"
            )

    def _step_physics(self, pending: Any) -> Any:
        """The backend's step of this control step; the (N,) mask of envs that failed in it, less
        `pending` (the NEXT_STEP autoresets of this call: they are reset before anything reads their
        state, so their physics is moot). On a backend that declares ``partial_step`` those envs are
        not stepped at all (a host mask; they keep their state until the reset)."""
        if self.arrays.host and self.backend.capabilities.partial_step and pending.any():
            return self.backend.step(self.frame_skip, skip=pending) & ~pending
        return self.backend.step(self.frame_skip) & ~pending

    def _reset_then_observe(self, reset: Any, needs_reset: Any, info: dict[str, Any]) -> Any:
        """NEXT_STEP / DISABLED: reset `reset` (pending autoresets, failures), add their reset info to
        the step's `info` (as SyncVectorEnv does for its autoresets), then observe them all."""
        rows = Rows.of_mask(reset)
        if rows.any():
            self._reset_rows(rows)
            merge_reset_info(info, self._reset_info(rows), rows.mask)
        self.episodes.needs_reset = needs_reset
        return self._observation(self._task_obs(), ObsEvent(True, rows if rows.any() else self.arrays.no_rows))

    def _same_step_obs(self, done: Any, info: dict[str, Any]) -> Any:
        """SAME_STEP: the transformed terminal obs (``final_obs``), then the done envs reset and observed."""
        terminal = self._observation(self._task_obs(), ObsEvent(True, self.arrays.no_rows))
        rows = Rows.of_mask(done)
        if not rows.any():
            return terminal
        xp = self.arrays.xp
        final_info = dict(info)
        info["final_obs"], info["_final_obs"] = terminal, xp.asarray(done, copy=True)
        info["final_info"], info["_final_info"] = final_info, xp.asarray(done, copy=True)
        self._reset_rows(rows)
        return self._observation(self._task_obs(), ObsEvent(False, rows), previous=terminal)

    def _evaluate_step(self, active: Any, failed: Any) -> tuple[Any, Any, Any, dict[str, Any]]:
        """Count the step, call `_evaluate` and apply the base's rules to inactive and failed rows and
        to the time limit."""
        xp, episodes = self.arrays.xp, self.episodes
        episodes.steps += xp.astype(active, xp.int64)
        result = self._evaluate(active)
        if "step" not in self._checked:
            check_task_step(result, self.num_envs, type(self).__name__)
            self._checked.add("step")
        reward, term, trunc, task_info = result
        self._task_info = task_info
        if host_arrays((reward,), _REWARD_DTYPES) and host_arrays((term, trunc, active, failed), (np.bool_,)):
            rewards, terminated, truncated = _host_rules(reward, term, trunc, active, failed, episodes)
        else:
            rewards = xp.where(active, xp.astype(reward, xp.float64), 0.0)
            terminated = xp.astype(term, xp.bool) & active
            truncated = xp.astype(trunc, xp.bool)
            if episodes.max_steps is not None:
                truncated = truncated | ((episodes.steps >= episodes.max_steps) & ~terminated)
            truncated = (truncated & active) | failed
        info = masked_info(task_info, active)
        info["sim_error"], info["_sim_error"] = failed, xp.ones(self.num_envs, dtype=xp.bool, device=self.arrays.device)
        return rewards, terminated, truncated, info

    def _reset_rows(self, rows: Rows) -> None:
        """Reset these local envs: lifecycle "reset" first, then the task's state reset."""
        self.lifecycle.fire_reset(rows)
        rows.put(self.episodes.steps, 0)  # before the task's reset, which may write the counter
        self._reset_envs(rows)
        if self.camera_images is not None:  # the reset envs' first frames (mjvec.envs.camera_images)
            self.camera_images.after_reset(rows)
        self.episodes.restart(rows)

    def _observation(self, obs: Any, event: ObsEvent, previous: Any = None) -> Any:
        """The task's obs (checked the first time) through the observation transforms."""
        if "obs" not in self._checked:
            check_task_obs(obs, self.observation_space, type(self).__name__)
            self._checked.add("obs")
        return self.transforms.on_observation(obs, event, previous, self.num_envs)

    def _finish_obs(self, obs: Any) -> Any:
        """Remember the returned obs (while transforms exist) and convert it to the output kind."""
        self.transforms.remember(obs)
        return self.output(obs)

    @property
    def episode_steps(self) -> Any:
        """(N,) int64, live (the state's namespace, not a copy): control steps of each env's current
        episode, as the module docstring states. Writes into it are honoured at the next step."""
        return self.episodes.steps

    @episode_steps.setter
    def episode_steps(self, values: Any) -> None:
        """Copy `values` ((N,) ints >= 0, numpy or torch) into the live counter (read back to the
        host once to be checked when the state is on a device)."""
        host = np.asarray(to_numpy(values))
        if host.shape != (self.num_envs,) or host.dtype.kind not in "iu" or (host < 0).any():
            raise ConfigError(
                f"episode_steps must be {self.num_envs} ints >= 0 (one per env), got shape {host.shape} "
                f"dtype {host.dtype}{' with negative values' if host.dtype.kind == 'i' and (host < 0).any() else ''}"
            )
        self.episodes.steps[...] = self.arrays.asarray(host.astype(np.int64))


_REWARD_DTYPES = (np.float64, np.float32)


def _host_rules(reward: np.ndarray, term: np.ndarray, trunc: np.ndarray, active: np.ndarray, failed: np.ndarray,
                episodes: Episodes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`_evaluate_step`'s rules for (N,) host arrays in one compiled pass: (rewards, terminated, truncated)."""
    n = reward.shape[0]
    rewards, terminated, truncated = np.empty(n), np.empty(n, bool), np.empty(n, bool)
    limit = -1 if episodes.max_steps is None else int(episodes.max_steps)
    _rules_kernel(reward, term, trunc, active, failed, episodes.steps, limit, rewards, terminated, truncated)
    return rewards, terminated, truncated


@kernel
def _rules_kernel(reward: np.ndarray, term: np.ndarray, trunc: np.ndarray, active: np.ndarray, failed: np.ndarray,
                  steps: np.ndarray, limit: int, rewards: np.ndarray, terminated: np.ndarray,
                  truncated: np.ndarray) -> None:
    """An inactive env's reward is +0.0 and it neither terminates nor truncates unless it failed; a
    failed env truncates; an active env that did not terminate truncates at the step limit (limit >= 0)."""
    for e in range(reward.shape[0]):
        rewards[e] = np.float64(reward[e]) if active[e] else 0.0
        terminated[e] = term[e] and active[e]
        cut = trunc[e] or (limit >= 0 and steps[e] >= limit and not terminated[e])
        truncated[e] = (cut and active[e]) or failed[e]
