"""The step machinery of `MjVecEnv` (a mixin): action checks, the autoreset modes' observe paths,
the base's rules around `_evaluate`, observation transforms and output conversion.

It uses the attributes `MjVecEnv.__init__` sets (``xp``, ``_host``, ``_like``, ``_torch``,
``_device``, the action bounds, ``_needs_reset``, ``_episode_steps``, the transform lists, the
lifecycle) and the task hooks; `mjvec.envs.base` documents the contract these implement.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mjvec.contract import ObsEvent
from mjvec.envs.arrays import check_actions, check_device_actions, to_numpy, to_output
from mjvec.envs.autoreset import check_task_obs, check_task_step, copy_obs, masked_info, merge_reset_info, merge_rows
from mjvec.errors import ResetNeededError
from mjvec.xp import Rows

__all__ = ["StepMixin"]


class StepMixin:
    """The private step helpers of `MjVecEnv` and its public array makers (`zeros`, `asarray`)."""

    def _check_actions(self, actions: Any) -> tuple[Any, Any]:
        """(validated, clipped actions in the state's namespace, device rows with non-finite values or None)."""
        if self._host:
            return check_actions(actions, self._action_shape, self._action_low, self._action_high), None
        return check_device_actions(actions, self._action_shape, self._action_low, self._action_high)

    def _refuse_done_envs(self) -> None:
        """DISABLED mode: a step with an env that is done raises before anything moves. (On a device
        this reads the done mask back to the host: DISABLED mode has a host round trip per step.)"""
        done = np.asarray(to_numpy(self._needs_reset), bool)
        if done.any():
            ids = np.flatnonzero(done)
            raise ResetNeededError(
                f"envs {ids[:16].tolist()} are done and autoreset_mode is DISABLED; reset them first "
                "with env.reset(options={'reset_mask': mask})"
            )

    def _maybe(self, mask: Any) -> bool:
        """Whether `mask` may have a True entry: its value on the host; always True on a device."""
        return bool(mask.any()) if self._host else True

    def _reset_then_observe(self, reset: Any, needs_reset: Any, info: dict[str, Any]) -> Any:
        """NEXT_STEP / DISABLED: reset `reset` (pending autoresets, failures), add their reset info to
        the step's `info` (as SyncVectorEnv does for its autoresets), then observe them all."""
        rows = Rows.of_mask(reset)
        if rows.any():
            self._reset_rows(rows)
            merge_reset_info(info, self._reset_info(rows), rows.mask)
        self._needs_reset = needs_reset
        return self._transform_obs(self._task_obs(), ObsEvent(True, rows if rows.any() else self._no_rows))

    def _same_step_obs(self, done: Any, info: dict[str, Any]) -> Any:
        """SAME_STEP: the transformed terminal obs (``final_obs``), then the done envs reset and observed."""
        terminal = self._transform_obs(self._task_obs(), ObsEvent(True, self._no_rows))
        rows = Rows.of_mask(done)
        if not rows.any():
            return terminal
        final_info = dict(info)
        info["final_obs"], info["_final_obs"] = terminal, self.xp.asarray(done, copy=True)
        info["final_info"], info["_final_info"] = final_info, self.xp.asarray(done, copy=True)
        self._reset_rows(rows)
        return self._transform_obs(self._task_obs(), ObsEvent(False, rows), previous=terminal)

    def _evaluate_step(self, active: Any, failed: Any) -> tuple[Any, Any, Any, dict[str, Any]]:
        """Count the step, call `_evaluate` and apply the base's rules to inactive and failed rows and
        to the time limit."""
        self._episode_steps += self.xp.astype(active, self.xp.int64)
        result = self._evaluate(active)
        if not self._checked_info:
            check_task_step(result, self.num_envs, type(self).__name__)
            self._checked_info = True
        reward, term, trunc, task_info = result
        self._task_info = task_info
        xp = self.xp
        rewards = xp.where(active, xp.astype(reward, xp.float64), 0.0)
        terminated = xp.astype(term, xp.bool) & active
        truncated = xp.astype(trunc, xp.bool)
        if self.max_episode_steps is not None:
            truncated = truncated | ((self._episode_steps >= self.max_episode_steps) & ~terminated)
        truncated = (truncated & active) | failed
        info = masked_info(task_info, active)
        info["sim_error"], info["_sim_error"] = failed, xp.ones(self.num_envs, dtype=xp.bool, device=self._device_of())
        return rewards, terminated, truncated, info

    def _reset_rows(self, rows: Rows) -> None:
        """Reset these local envs: lifecycle "reset" first, then the task's state reset."""
        self.lifecycle.fire_reset(rows)
        rows.put(self._episode_steps, 0)
        self._reset_envs(rows)
        if self.camera_images is not None:  # the reset envs' first frames (mjvec.envs.camera_images)
            self.camera_images.after_reset(rows)
        self._stats.restart(rows)
        rows.put(self._needs_reset, False)

    def _transform_obs(self, obs: Any, event: ObsEvent, previous: Any = None) -> Any:
        """The task's numpy obs through the observation transforms. For a reset (``event.stepped``
        False) of some envs, the other rows come from `previous` (the obs they returned last)."""
        if not self._checked_obs:
            check_task_obs(obs, self.observation_space, type(self).__name__)
            self._checked_obs = True
        if not self._obs_transforms:
            return obs
        for transform in self._obs_transforms:
            obs = transform(obs, event)
        if not event.stepped and previous is not None and (event.reset.dense or event.reset.size < self.num_envs):
            obs = merge_rows(previous, obs, event.reset)
        return obs

    def _finish_obs(self, obs: Any) -> Any:
        """Remember the returned obs (while transforms exist) and convert it to the output kind."""
        self._last_obs = copy_obs(obs) if self._obs_transforms else None
        return to_output(obs, self._torch, self._device)

    def _out(self, value: Any) -> Any:
        """`value` (the state's namespace) as the env's output kind."""
        return to_output(value, self._torch, self._device)

    def _host_info(self, info: dict[str, Any]) -> dict[str, Any]:
        """Infos stay in the state's namespace, except for numpy output from device state."""
        return info if self._host or self._torch is not None else to_output(info, None, None)

    def zeros(self, tail: tuple[int, ...], dtype: Any) -> Any:
        """A (num_envs, *tail) zero array in the state's namespace and device."""
        return self.xp.zeros((self.num_envs, *tail), dtype=dtype, device=self._device_of())

    def asarray(self, value: Any, dtype: Any = None) -> Any:
        """`value` (host data) as an array in the state's namespace and on its device."""
        if self._host:
            return np.asarray(value, dtype=dtype)
        if isinstance(value, np.ndarray) and not value.flags.writeable:
            value = value.copy()  # torch refuses to wrap read-only host memory
        return self.xp.asarray(value, dtype=dtype, device=self._device_of())

    def _device_of(self) -> Any:
        return None if self._host else self._like.device
