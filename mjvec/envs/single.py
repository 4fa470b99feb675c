"""`SingleEnv`: a plain `gymnasium.Env` over a one-env `MjVecEnv`, for ``gym.make`` entry points.

The wrapped env must have num_envs == 1, numpy output and ``autoreset_mode="disabled"``: a single
Gymnasium env never resets itself (the caller, or a vectorizer around it, calls ``reset()`` after
an episode ends), and stepping a done env raises `ResetNeededError` instead of silently starting a
new episode.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode

from mjvec.envs.base import MjVecEnv
from mjvec.errors import ActionError, ConfigError


def unbatch_info(info: Mapping[str, Any], index: int = 0) -> dict[str, Any]:
    """Row `index` of a vector info: keys whose ``"_key"`` mask is False there are dropped."""
    out: dict[str, Any] = {}
    for key, value in info.items():
        if key.startswith("_"):
            continue
        mask = info.get(f"_{key}")
        if mask is not None and not mask[index]:
            continue
        out[key] = unbatch_info(value, index) if isinstance(value, Mapping) else value[index]
    return out


class SingleEnv(gym.Env):
    """Env 0 of a one-env MjVecEnv as a `gymnasium.Env` (obs, float reward, bool term/trunc, info).

    vec_env: an MjVecEnv or a vector wrapper of one (e.g. the randomization wrappers); the
    wrapper chain is what gets stepped.
    """

    def __init__(self, vec_env: gym.vector.VectorEnv) -> None:
        base = getattr(vec_env, "unwrapped", None)
        if not isinstance(base, MjVecEnv):
            raise ConfigError(f"SingleEnv wraps an MjVecEnv (or a wrapper of one), got {type(vec_env).__name__}")
        problems = []
        if base.num_envs != 1:
            problems.append(f"num_envs={base.num_envs} (needs 1)")
        if base.autoreset_mode is not AutoresetMode.DISABLED:
            problems.append(f"autoreset_mode={base.autoreset_mode} (needs 'disabled')")
        if base.array_backend != "numpy":
            problems.append(f"array_backend={base.array_backend!r} (needs 'numpy')")
        if problems:
            raise ConfigError(
                "SingleEnv needs an MjVecEnv built with num_envs=1, autoreset_mode='disabled' and "
                f"array_backend='numpy'; got {', '.join(problems)}"
            )
        self.vec_env = vec_env
        self.observation_space = vec_env.single_observation_space
        self.action_space = vec_env.single_action_space
        self.render_mode = base.render_mode
        self.metadata = {
            "render_modes": base.metadata["render_modes"],
            "render_fps": base.metadata["render_fps"],
        }

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Reset the env (seed is passed on: the env's streams are keyed by (seed, its global id))."""
        super().reset(seed=seed)
        obs, info = self.vec_env.reset(seed=seed, options=options)
        return _row(obs), unbatch_info(info)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """Step with one action of the single action space's shape (e.g. (29,), not a batch of one)."""
        try:
            shape: Any = tuple(action.shape) if hasattr(action, "shape") else np.shape(action)
        except ValueError:  # a ragged nested list
            shape = "ragged"
        if shape != self.action_space.shape:
            raise ActionError(
                f"action has shape {shape}; expected {self.action_space.shape}: a gym.make env takes one "
                "action, not a batch (use gym.make_vec for batches)"
            )
        batch = np.asarray(action)[None] if not hasattr(action, "unsqueeze") else action.unsqueeze(0)
        obs, reward, terminated, truncated, info = self.vec_env.step(batch)
        return _row(obs), float(reward[0]), bool(terminated[0]), bool(truncated[0]), unbatch_info(info)

    def render(self) -> np.ndarray | None:
        """(H, W, 3) uint8 frame of the env; None (with a warning) without a render mode."""
        frames = self.vec_env.unwrapped.render()
        return None if frames is None else frames[0]

    def close(self) -> None:
        self.vec_env.close()


def _row(obs: Any) -> Any:
    if isinstance(obs, Mapping):
        return {key: value[0] for key, value in obs.items()}
    return obs[0]
