"""`MjVecEnv`'s arguments, validated before anything moves: the constructor's (`check_env_args`,
`parse_autoreset_mode`) and ``reset(seed=, options=)``'s (`parse_seed`, `parse_reset_options`, with
SyncVectorEnv's error types for the reset mask)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode

from mjvec.errors import ConfigError, allowed, is_int
from mjvec.validate import require_bool, require_int

RESET_OPTION_KEYS = ("reset_mask",)

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


def check_env_args(frame_skip: Any, observation_space: Any, action_space: Any, render_mode: Any,
                   record_episode_statistics: Any, render_modes: tuple[str, ...],
                   max_episode_steps: Any = None) -> None:
    """`MjVecEnv`'s constructor arguments, or ConfigError naming the bad one."""
    require_int(frame_skip, "frame_skip", low=1)
    if not isinstance(observation_space, gym.Space):
        raise ConfigError(f"single_observation_space must be a gymnasium Space, got {observation_space!r}")
    if not isinstance(action_space, gym.spaces.Box):
        raise ConfigError(f"single_action_space must be a gymnasium.spaces.Box, got {action_space!r}")
    if len(action_space.shape) != 1:
        raise ConfigError(f"single_action_space must be 1-D, got shape {action_space.shape}")
    if render_mode is not None and render_mode not in render_modes:
        raise ConfigError(f"render_mode={render_mode!r} is not supported; allowed values are None or {render_modes}")
    require_bool(record_episode_statistics, "record_episode_statistics")
    require_int(max_episode_steps, "max_episode_steps", low=1, optional=True)
