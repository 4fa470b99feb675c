"""Small adapters for RL libraries whose expectations a Gymnasium vector env cannot meet by itself.

- `FlattenInfo`: nested info dicts (``info["reward_terms"]``, ``info["episode"]``) become flat
  ``"reward_terms/approach"`` keys, also inside ``info["final_info"]``. torchrl's SAME_STEP reader of
  terminal observations (``GymWrapper``, torchrl 0.14) fails on any nested info key at a done step,
  with Gymnasium's own ``SyncVectorEnv`` too; with flat keys it reads them. DISABLED mode needs no
  adapter.
- `TianshouVecEnv`: tianshou's ``Collector`` drives tianshou's own vector-env interface, not
  Gymnasium's: ``step(action, ready_env_ids)``, ``reset(env_id=ids)`` returning per-env info dicts,
  ``len(env)``, ``is_async`` and per-env ``action_space[i]``. This adapter maps that onto one batched
  mjvec env in DISABLED mode (the Collector resets done envs itself, by id, which is exactly
  ``reset(options={"reset_mask": m})``). A batched env steps every env at once, so a step of a
  strict subset of envs (the Collector's ``n_episode`` mode, which parks envs that finished)
  raises `ConfigError`; collect with ``n_step``.

Neither imports its library.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv, VectorWrapper

from mjvec.envs.arrays import to_numpy
from mjvec.errors import ConfigError
from mjvec.vector_api import VectorEnvAPI

__all__ = ["FlattenInfo", "TianshouVecEnv"]


def flatten_info(info: Mapping[str, Any], sep: str = "/") -> dict[str, Any]:
    """`info` with nested dicts flattened to ``parent<sep>child`` keys, each with its ``"_key"`` mask
    (its own, else its parent's). ``final_info`` keeps its name and is flattened inside;
    ``final_obs`` (an observation, a dict for dict spaces) is kept as it is."""
    out: dict[str, Any] = {}
    for key, value in info.items():
        if key.startswith("_"):
            continue
        mask = info.get(f"_{key}")
        if isinstance(value, Mapping) and key not in ("final_info", "final_obs"):
            flat = flatten_info(value, sep)
            for sub, sub_value in flat.items():
                if sub.startswith("_"):
                    continue
                out[f"{key}{sep}{sub}"] = sub_value
                sub_mask = flat.get(f"_{sub}", mask)
                if sub_mask is not None:
                    out[f"_{key}{sep}{sub}"] = sub_mask
            continue
        out[key] = flatten_info(value, sep) if key == "final_info" and isinstance(value, Mapping) else value
        if mask is not None:
            out[f"_{key}"] = mask
    return out


class FlattenInfo(VectorEnvAPI, VectorWrapper):
    """Step infos with nested dicts flattened (see the module docstring); reset infos unchanged."""

    def __init__(self, env: VectorEnv, sep: str = "/") -> None:
        super().__init__(env)
        if not isinstance(sep, str) or not sep:
            raise ConfigError(f"FlattenInfo: sep must be a non-empty str, got {sep!r}")
        self._sep = sep

    def step(self, actions: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(actions)
        return obs, reward, terminated, truncated, flatten_info(info, self._sep)


class TianshouVecEnv:
    """tianshou's vector-env interface over an mjvec env in DISABLED mode (see the module docstring).

    env: the Gymnasium `VectorEnv` (possibly wrapped) with ``autoreset_mode="disabled"``; closed by
        `close()`. Observations and rewards are numpy; infos are arrays of per-env dicts.
    """

    is_async = False

    def __init__(self, env: VectorEnv) -> None:
        if not isinstance(env, VectorEnv):
            raise ConfigError(f"TianshouVecEnv wraps a gymnasium.vector.VectorEnv, got {type(env).__name__}")
        mode = env.metadata.get("autoreset_mode")
        if mode not in (AutoresetMode.DISABLED, AutoresetMode.DISABLED.value):
            raise ConfigError(
                f"TianshouVecEnv needs autoreset_mode DISABLED (tianshou's Collector resets done envs itself), "
                f"got {mode!r}; fix: gym.make_vec(..., autoreset_mode='disabled')"
            )
        self.env = env
        self.env_num = int(env.num_envs)
        self.action_space = [env.single_action_space] * self.env_num
        self.observation_space = [env.single_observation_space] * self.env_num
        self._all = np.arange(self.env_num)
        self._obs: Any = None

    def __len__(self) -> int:
        return self.env_num

    def reset(self, env_id: Any = None, **kwargs: Any) -> tuple[Any, np.ndarray]:
        """Reset all envs (env_id None) or those listed; returns (their obs, their info dicts)."""
        ids = self._ids(env_id)
        options = kwargs.pop("options", None) or {}
        if ids.size < self.env_num:
            mask = np.zeros(self.env_num, bool)
            mask[ids] = True
            options = {**options, "reset_mask": mask}
        obs, _ = self.env.reset(options=options or None, **kwargs)
        self._obs = _numpy_obs(obs)
        return _rows(self._obs, ids), np.array([{} for _ in ids], dtype=object)

    def step(self, action: np.ndarray, id: Any = None) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Step every env; `id` must be None or every env id (a batched env cannot step a subset)."""
        ids = self._ids(id)
        if ids.size != self.env_num or not np.array_equal(ids, self._all):
            raise ConfigError(
                f"TianshouVecEnv steps all {self.env_num} envs at once (an mjvec env is one batched object), "
                f"got ready env ids {ids[:16].tolist()}; collect with Collector.collect(n_step=...)"
            )
        obs, reward, terminated, truncated, info = self.env.step(np.asarray(action))
        self._obs = _numpy_obs(obs)
        infos = np.empty(self.env_num, dtype=object)
        for i in range(self.env_num):
            infos[i] = _info_row(info, i)
        return (self._obs, np.asarray(to_numpy(reward)), np.asarray(to_numpy(terminated), bool),
                np.asarray(to_numpy(truncated), bool), infos)

    def seed(self, seed: int | None = None) -> list[int | None]:
        """Seeds are given to reset (``Collector.reset(gym_reset_kwargs={"seed": s})``)."""
        return [seed] * self.env_num

    def render(self, **kwargs: Any) -> Any:
        return self.env.render()

    def close(self) -> None:
        self.env.close()

    def _ids(self, ids: Any) -> np.ndarray:
        if ids is None:
            return self._all
        out = np.atleast_1d(np.asarray(ids)).astype(np.int64)
        if out.size == 0 or out.min() < 0 or out.max() >= self.env_num:
            raise ConfigError(f"env ids {out[:16].tolist()} must be in [0, {self.env_num})")
        return out


def _numpy_obs(obs: Any) -> Any:
    if isinstance(obs, Mapping):
        return {k: np.asarray(to_numpy(v)) for k, v in obs.items()}
    return np.asarray(to_numpy(obs))


def _rows(obs: Any, ids: np.ndarray) -> Any:
    if isinstance(obs, Mapping):
        return {k: v[ids] for k, v in obs.items()}
    return obs[ids]


def _info_row(info: Mapping[str, Any], i: int) -> dict[str, Any]:
    """Env i's row of every info key (nested dicts recurse); masks are left out."""
    return {k: _info_row(v, i) if isinstance(v, Mapping) else np.asarray(to_numpy(v))[i]
            for k, v in info.items() if not str(k).startswith("_")}

