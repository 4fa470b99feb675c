"""What the torch-facing adapters (rsl_rl, rl_games) share: the checks of the env they wrap, its
outputs as torch tensors where the env keeps them, and per-episode logs of its infos.

Only torch is imported here (the ``train`` extra).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from gymnasium.vector import VectorEnv

from mjvec.envs.base import MjVecEnv
from mjvec.errors import ConfigError
from mjvec.integrations._checks import require_same_step_box_env


def check_same_step_env(env: Any, who: str) -> MjVecEnv:
    """The unwrapped `MjVecEnv` of `env` (a SAME_STEP vector env with Box actions), or ConfigError.

    Both libraries reset a done env inside the done step (Isaac Gym / Isaac Lab semantics), so a
    NEXT_STEP env would feed them one bogus transition per episode, and a DISABLED one refuses the
    step after a done. A device-resident env must output torch: numpy output from a device would
    copy every step's observations to the host and back.
    """
    if not isinstance(env, VectorEnv) or not isinstance(getattr(env, "unwrapped", None), MjVecEnv):
        raise ConfigError(
            f"{who} wraps an mjvec vector env (e.g. gym.make_vec('SimToolReal-v0', ...), possibly wrapped), "
            f"got {type(env).__name__}"
        )
    require_same_step_box_env(env, who, "the library")
    base = env.unwrapped
    if not isinstance(base.episode_steps, np.ndarray) and base.array_backend != "torch":
        raise ConfigError(
            f"{who}: this env keeps its state on {base.backend.capabilities.device!r} but outputs numpy, which "
            "copies every step's observations to the host and back; fix: gym.make_vec(..., array_backend='torch')"
        )
    return base


def output_device(base: MjVecEnv) -> torch.device:
    """Where the env's outputs live as tensors: its torch output device, or the CPU for numpy."""
    return torch.device(base.device) if base.array_backend == "torch" else torch.device("cpu")


def as_tensor(value: Any, device: torch.device, dtype: torch.dtype | None = None) -> torch.Tensor:
    """`value` (numpy or torch) as a tensor on `device` (zero-copy for host numpy on the CPU)."""
    return torch.as_tensor(value, device=device, dtype=dtype)


def obs_groups(space: gym.Space) -> tuple[str, ...]:
    """The observation groups: the keys of a Dict space, else ("policy",)."""
    return tuple(space.spaces) if isinstance(space, gym.spaces.Dict) else ("policy",)


def counter_tensor(base: MjVecEnv) -> torch.Tensor:
    """The env's live episode-step counter as a tensor sharing its memory (writes land in the env)."""
    steps = base.episode_steps
    return torch.from_numpy(steps) if isinstance(steps, np.ndarray) else steps


class EpisodeLog:
    """Per-env sums of the reward terms and any-True success over each running episode, emitted
    for the envs that finish (one value per finished episode), in the env's device.

    log(info, done) -> {"Episode_Reward/<term>": (K,), "Episode/success": (K,), "Metrics/<key>": ()}
    for the K envs done now (an empty dict when none is: deciding that reads `done` on the host,
    one synchronisation per step on a device). ``Metrics/<key>`` are the per-step means of the
    `log_keys` step-info entries where their mask is True.
    """

    def __init__(self, num_envs: int, device: torch.device, success_key: str | None, log_keys: Sequence[str]) -> None:
        if isinstance(log_keys, str) or not all(isinstance(k, str) for k in log_keys):
            raise ConfigError(f"log_keys must be a sequence of str, got {log_keys!r}")
        self._n, self._device = num_envs, device
        self._success_key, self._log_keys = success_key, tuple(log_keys)
        self._terms: dict[str, torch.Tensor] = {}
        self._success = torch.zeros(num_envs, dtype=torch.bool, device=device)

    def log(self, info: Mapping[str, Any], done: torch.Tensor) -> dict[str, torch.Tensor]:
        terms = info.get("reward_terms", {})
        for name, value in terms.items():
            if not name.startswith("_"):
                value = as_tensor(value, self._device, torch.float64)
                self._terms[name] = self._terms.get(name, torch.zeros(self._n, dtype=torch.float64,
                                                                      device=self._device)) + value
        if self._success_key is not None and self._success_key in info:
            self._success |= _masked(info, self._success_key, self._device)
        out: dict[str, torch.Tensor] = {}
        for key in self._log_keys:
            if key in info:
                value = as_tensor(info[key], self._device, torch.float64)
                mask = _mask(info, key, self._device)
                if mask is None:
                    out[f"Metrics/{key}"] = value.mean()
                else:  # a masked mean without indexing: no host synchronisation on a device
                    out[f"Metrics/{key}"] = torch.where(mask, value, 0.0).sum() / mask.sum().clamp(min=1)
        if not bool(done.any()):
            return out
        for name, total in self._terms.items():
            out[f"Episode_Reward/{name}"] = total[done].float()
            total[done] = 0.0
        if self._success_key is not None and self._success_key in info:
            out["Episode/success"] = self._success[done].float()
        self._success[done] = False
        return out


def _mask(info: Mapping[str, Any], key: str, device: torch.device) -> torch.Tensor | None:
    mask = info.get(f"_{key}")
    return None if mask is None else as_tensor(mask, device, torch.bool)


def _masked(info: Mapping[str, Any], key: str, device: torch.device) -> torch.Tensor:
    value = as_tensor(info[key], device, torch.bool)
    mask = _mask(info, key, device)
    return value if mask is None else value & mask
