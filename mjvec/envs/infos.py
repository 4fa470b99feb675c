"""What a task hands back to `MjVecEnv`, checked once (`check_task_obs`, `check_task_step`,
`check_task_info`), and the infos built from it: `masked_info` (a task info plus Gymnasium's
``"_key"`` masks) and `merge_reset_info` (the reset info of envs reset inside a step, merged into
that step's info as SyncVectorEnv does)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np

from mjvec.envs.arrays import to_numpy
from mjvec.errors import ConfigError, allowed
from mjvec.xp import copy_array as _copy
from mjvec.xp import namespace_of

# Keys the base writes into step infos; a task's info must not use them.
RESERVED_INFO_KEYS = frozenset({"sim_error", "episode", "final_obs", "final_info"})


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
