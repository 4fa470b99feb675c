"""The checks every library adapter makes of the vector env it wraps (no library imported here)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
from gymnasium.vector import AutoresetMode

from mjvec.errors import ConfigError


def require_same_step_box_env(env: Any, who: str, library: str) -> None:
    """ConfigError unless `env` autoresets in SAME_STEP mode (the library resets a done env inside
    the done step, so a NEXT_STEP env would feed it one bogus transition per episode) and has a Box
    action space."""
    mode = env.metadata.get("autoreset_mode")
    if mode not in (AutoresetMode.SAME_STEP, AutoresetMode.SAME_STEP.value):
        raise ConfigError(
            f"{who} needs an env with autoreset_mode SAME_STEP ({library} resets a done env inside the done "
            f"step), got {mode!r}; fix: gym.make_vec(..., autoreset_mode='same_step')"
        )
    if not isinstance(env.single_action_space, gym.spaces.Box):
        raise ConfigError(f"{who} supports Box action spaces, got {type(env.single_action_space).__name__}")
