"""Pieces of `MjVecEnv`'s reset/step bookkeeping that do not touch the simulation.

- `parse_autoreset_mode`: the constructor's ``autoreset_mode`` (an `AutoresetMode` or its name).
- `parse_reset_options` / `parse_seed`: validation of ``reset(seed=, options=)`` before any state
  changes, with SyncVectorEnv's error types for the reset mask.
- `masked_info`: a task info dict plus Gymnasium's ``"_key"`` masks; `merge_reset_info`: the
  reset info of envs reset inside a step, merged into that step's info as SyncVectorEnv does.
- `copy_obs` / `merge_rows`: the last returned observation, and a partial reset's rows merged into it.
- `EpisodeStats`: the opt-in native ``info["episode"]``.
- `check_env_args` / `check_task_obs` / `check_task_step`: the constructor's arguments and a task's
  first observation and step result, checked once.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode

from mjvec.envs.arrays import to_numpy
from mjvec.errors import ConfigError, allowed, is_int
from mjvec.xp import Rows, namespace_of
from mjvec.xp import copy_array as _copy

RESET_OPTION_KEYS = ("reset_mask",)
# Keys the base writes into step infos; a task's info must not use them.
RESERVED_INFO_KEYS = frozenset({"sim_error", "episode", "final_obs", "final_info"})

_MODE_NAMES = {
    "next_step": AutoresetMode.NEXT_STEP,
    "same_step": AutoresetMode.SAME_STEP,
    "disabled": AutoresetMode.DISABLED,
}


def parse_autoreset_mode(mode: str | AutoresetMode) -> AutoresetMode:
    """An `AutoresetMode`, from itself, its value ("NextStep") or its snake-case name ("next_step")."""
    if isinstance(mode, AutoresetMode):
        return mode
    if isinstance(mode, str):
        key = mode.lower()
        if key in _MODE_NAMES:
            return _MODE_NAMES[key]
        for member in AutoresetMode:
            if mode == member.value:
                return member
    raise ConfigError(
        f"autoreset_mode={mode!r} is not supported; allowed values are {allowed(_MODE_NAMES)} "
        "or a gymnasium.vector.AutoresetMode member"
    )


def parse_reset_options(options: Any, num_envs: int) -> np.ndarray | None:
    """The validated reset mask (a private copy) or None; the caller's `options` is never mutated.

    Raises ConfigError for a non-mapping or unknown keys; TypeError / ValueError for a bad mask,
    exactly like SyncVectorEnv (non-ndarray or non-bool dtype: TypeError; wrong shape or no True
    entry: ValueError).
    """
    if options is None:
        return None
    if not isinstance(options, Mapping):
        raise ConfigError(f"reset options must be a dict or None, got {type(options).__name__}")
    unknown = set(options) - set(RESET_OPTION_KEYS)
    if unknown:
        raise ConfigError(
            f"unknown reset option(s) {sorted(map(str, unknown))}; allowed keys are {allowed(RESET_OPTION_KEYS)}"
        )
    mask = options.get("reset_mask")
    if mask is None:
        return None
    if not isinstance(mask, np.ndarray):
        raise TypeError(f"`options['reset_mask']` must be a numpy array, got {type(mask)}")
    if mask.shape != (num_envs,):
        raise ValueError(f"`options['reset_mask']` must have shape `({num_envs},)`, got {mask.shape}")
    if mask.dtype != np.bool_:
        raise TypeError(f"`options['reset_mask']` must have `dtype=np.bool_`, got {mask.dtype}")
    if not mask.any():
        raise ValueError(
            "`options['reset_mask']` must contain a boolean array with at least one True value, "
            f"got reset_mask={mask}"
        )
    return mask.copy()


MAX_SEED = 2**64 - 1  # the random streams are keyed by 64-bit words
_SEED_RANGE = "[0, 2**64 - 1]"


def parse_seed(seed: Any, num_envs: int) -> int | list[int] | None:
    """None, one int in [0, 2**64 - 1], or a list of `num_envs` of them; else ConfigError.

    Called before anything is reseeded, so a refused seed leaves every random stream as it was.
    """
    if seed is None:
        return None
    if is_int(seed):
        if not 0 <= seed <= MAX_SEED:
            raise ConfigError(f"seed must be a non-negative int, got {seed!r}; allowed are ints in {_SEED_RANGE}")
        return int(seed)
    if isinstance(seed, (Sequence, np.ndarray)) and not isinstance(seed, (str, bytes)):
        values = list(seed)
        if len(values) != num_envs:
            raise ConfigError(
                f"a seed list must have one int per env: got {len(values)} seeds for num_envs={num_envs}"
            )
        bad = [i for i, v in enumerate(values) if not is_int(v) or not 0 <= v <= MAX_SEED]
        if bad:
            raise ConfigError(
                f"seed list entries {bad[:8]} must be ints in {_SEED_RANGE} (got {[values[i] for i in bad[:8]]})"
            )
        return [int(v) for v in values]
    raise ConfigError(
        f"seed must be None, an int in {_SEED_RANGE} or a list of {num_envs} such ints, "
        f"got {type(seed).__name__} {seed!r}"
    )


def masked_info(info: Mapping[str, Any], mask: Any, out: dict[str, Any] | None = None) -> dict[str, Any]:
    """Copy `info` into `out` with a ``"_key"`` mask (a copy of `mask`, in its namespace) beside
    every key; recurses."""
    out = {} if out is None else out
    for key, value in info.items():
        out[key] = masked_info(value, mask) if isinstance(value, Mapping) else value
        out[f"_{key}"] = _copy(mask)
    return out


def merge_reset_info(info: dict[str, Any], reset_info: Mapping[str, Any], mask: Any) -> dict[str, Any]:
    """Write the rows `mask` (N,) of `reset_info` into the step `info`, in place; returns `info`.

    Gymnasium's SyncVectorEnv in NEXT_STEP mode adds an autoreset env's reset info to the step's
    info (``_add_info``): a key the step info has gets that env's row from the reset info, a key it
    lacks is added, and the ``"_key"`` mask becomes True for the env. Nested dicts recurse.
    """
    for key, value in reset_info.items():
        flag = f"_{key}"
        if isinstance(value, Mapping):
            merge_reset_info(info.setdefault(key, {}), value, mask)
        elif key in info:
            xp = namespace_of(value)
            rows = xp.reshape(mask, (mask.shape[0], *([1] * (len(_shape(value)) - 1))))
            info[key] = xp.where(rows, value, info[key])
        else:
            info[key] = _copy(value)
        info[flag] = info[flag] | mask if flag in info else _copy(mask)
    return info


def _shape(value: Any) -> tuple[int, ...]:
    shape = getattr(value, "shape", None)
    return tuple(shape) if shape is not None else np.shape(value)


def check_task_info(info: Any, num_envs: int, owner: str) -> None:
    """Reject a task info that is not a dict of (N, ...) arrays or that uses a reserved key."""
    if not isinstance(info, Mapping):
        raise ConfigError(f"{owner}._evaluate must return an info dict, got {type(info).__name__}")
    for key, value in info.items():
        if key in RESERVED_INFO_KEYS or str(key).startswith("_"):
            raise ConfigError(
                f"{owner}._evaluate info key {key!r} is reserved (keys starting with '_' and "
                f"{allowed(RESERVED_INFO_KEYS)} are written by MjVecEnv); rename it"
            )
        if isinstance(value, Mapping):
            check_task_info(value, num_envs, owner)
        elif _shape(value)[:1] != (num_envs,):
            raise ConfigError(
                f"{owner}._evaluate info[{key!r}] has shape {_shape(value)}; expected leading dim {num_envs}"
            )


@dataclass
class EpisodeStats:
    """Per-env running return, length and start time of the current episode (native statistics),
    in the env's array namespace.

    Counts the steps an env was actually stepped (a NEXT_STEP autoreset step is not part of any
    episode, as in gymnasium's RecordEpisodeStatistics).
    """

    returns: Any
    lengths: Any
    starts: Any

    @classmethod
    def create(cls, num_envs: int, like: Any = None) -> EpisodeStats:
        xp = namespace_of(like) if like is not None else np
        device = None if like is None else like.device
        zeros = xp.zeros(num_envs, dtype=xp.float64, device=device)
        return cls(zeros, xp.zeros(num_envs, dtype=xp.int64, device=device), zeros + time.perf_counter())

    def restart(self, rows: Rows) -> None:
        """Zero the running stats of these envs (they start a new episode)."""
        rows.put(self.returns, 0.0)
        rows.put(self.lengths, 0)
        rows.put(self.starts, time.perf_counter())

    def record(self, stepped: Any, rewards: Any, done: Any, success: Any) -> dict[str, Any] | None:
        """Add this step; return the ``info["episode"]`` dict for envs done now.

        r (float64), l (int64), t (float64 seconds since the episode's reset, rounded to 1 us),
        and success (bool, when the task provides one). Rows where `done` is False are 0. On the
        host None when no env is done (on a device the dict is always built: no host round trip).
        """
        xp = namespace_of(self.returns)
        self.returns += xp.where(stepped, xp.astype(rewards, xp.float64), 0.0)
        self.lengths += xp.astype(stepped, xp.int64)
        if xp is np and not done.any():
            return None
        elapsed = xp.round((time.perf_counter() - self.starts) * 1e6) / 1e6
        episode = {
            "r": xp.where(done, self.returns, 0.0),
            "l": xp.where(done, self.lengths, 0),
            "t": xp.where(done, elapsed, 0.0),
        }
        if success is not None:
            episode["success"] = xp.astype(success, xp.bool) & done
        return episode


def copy_obs(obs: Any) -> Any:
    """A deep copy of an observation (arrays of either namespace, or a dict of them)."""
    if isinstance(obs, Mapping):
        return {k: copy_obs(v) for k, v in obs.items()}
    return _copy(obs)


def merge_rows(previous: Any, fresh: Any, rows: Rows) -> Any:
    """A copy of `previous` with the selection's rows taken from `fresh` (recursing into dicts)."""
    if isinstance(previous, Mapping):
        return {k: merge_rows(previous[k], fresh[k], rows) for k in previous}
    out = _copy(previous)
    rows.put(out, rows.take(fresh))
    return out


def check_env_args(frame_skip: Any, observation_space: Any, action_space: Any, render_mode: Any,
                   record_episode_statistics: Any, render_modes: tuple[str, ...],
                   max_episode_steps: Any = None) -> None:
    """`MjVecEnv`'s constructor arguments, or ConfigError naming the bad one."""
    if isinstance(frame_skip, bool) or not isinstance(frame_skip, (int, np.integer)) or frame_skip < 1:
        raise ConfigError(f"frame_skip must be an int >= 1, got {frame_skip!r}")
    if not isinstance(observation_space, gym.Space):
        raise ConfigError(f"single_observation_space must be a gymnasium Space, got {observation_space!r}")
    if not isinstance(action_space, gym.spaces.Box):
        raise ConfigError(f"single_action_space must be a gymnasium.spaces.Box, got {action_space!r}")
    if len(action_space.shape) != 1:
        raise ConfigError(f"single_action_space must be 1-D, got shape {action_space.shape}")
    if render_mode is not None and render_mode not in render_modes:
        raise ConfigError(f"render_mode={render_mode!r} is not supported; allowed values are None or {render_modes}")
    if not isinstance(record_episode_statistics, (bool, np.bool_)):
        raise ConfigError(f"record_episode_statistics must be True or False, got {record_episode_statistics!r}")
    if max_episode_steps is not None and (isinstance(max_episode_steps, (bool, np.bool_))
                                          or not isinstance(max_episode_steps, (int, np.integer))
                                          or max_episode_steps < 1):
        raise ConfigError(f"max_episode_steps must be None or an int >= 1, got {max_episode_steps!r}")


def check_task_obs(obs: Any, space: Any, owner: str) -> None:
    """Shape and dtype of a task's first observation against the (batched) observation space."""
    pairs = (
        [(k, obs.get(k) if isinstance(obs, Mapping) else None, s) for k, s in space.spaces.items()]
        if isinstance(space, gym.spaces.Dict)
        else [("obs", obs, space)]
    )
    for key, value, sub in pairs:
        if value is None or tuple(getattr(value, "shape", ())) != sub.shape or \
                np.dtype(to_numpy(value[:1]).dtype) != sub.dtype:
            raise ConfigError(
                f"{owner}._observe returned {key} with shape {np.shape(value)} and dtype "
                f"{getattr(value, 'dtype', None)}; the observation space expects {sub.shape} {sub.dtype}"
            )


def check_task_step(result: Any, num_envs: int, owner: str) -> None:
    """The first `_evaluate` result: a 4-tuple of (num_envs,) reward/terminated/truncated arrays (of
    the env's namespace: lists are refused) and (num_envs, ...) infos."""
    if not isinstance(result, tuple) or len(result) != 4:
        got = f"a tuple of {len(result)}" if isinstance(result, tuple) else type(result).__name__
        raise ConfigError(
            f"{owner}._evaluate must return a tuple (reward, terminated, truncated, info) of 4 items, got {got}"
        )
    reward, terminated, truncated, info = result
    check_task_info(info, num_envs, owner)
    for name, value in (("reward", reward), ("terminated", terminated), ("truncated", truncated)):
        if not (hasattr(value, "shape") and hasattr(value, "dtype")):
            raise ConfigError(
                f"{owner}._evaluate returned {name} as a {type(value).__name__}; it must be an array of the env's "
                f"namespace (self.xp), shape ({num_envs},): e.g. self.xp.asarray(...)"
            )
        if tuple(getattr(value, "shape", np.shape(value))) != (num_envs,):
            raise ConfigError(f"{owner}._evaluate returned {name} of shape {np.shape(value)}; expected ({num_envs},)")
