"""rsl_rl adapter: `RslRlVecEnv(env)` makes an mjvec vector env rsl_rl's ``VecEnv`` (rsl-rl-lib 5.x).

    env = gym.make_vec("SimToolReal-v0", num_envs=4096, autoreset_mode="same_step", obs_mode="asymmetric")
    runner = OnPolicyRunner(RslRlVecEnv(env), train_cfg, log_dir="out/rsl_rl", device="cpu")
    runner.learn(1500, init_at_random_ep_len=True)

Contract (what rsl_rl's ``OnPolicyRunner``, ``PPO``, ``RolloutStorage`` and ``Logger`` read):

- The env must use ``autoreset_mode="same_step"`` (else `ConfigError`): rsl_rl resets a done env
  inside the done step, as Isaac Lab does. An env on a device must output torch
  (``array_backend="torch"``); the adapter then moves nothing off the device, except the one
  read of whether an episode ended per step that the episode log needs (rsl_rl's own Logger reads
  the dones back every step too).
- Observations are a ``TensorDict`` of groups, batch size (num_envs,): ``"policy"`` for a Box
  observation, one group per key of a Dict observation (SimToolReal-v0's ``obs_mode="asymmetric"``:
  ``"policy"`` and ``"critic"``, so ``obs_groups={"actor": ["policy"], "critic": ["critic"]}``).
  The adapter resets the env (with `seed`) when it is built; `get_observations()` is the latest.
- ``step(actions)`` -> ``(obs, rewards (N,) float32, dones (N,) long, extras)``; rewards are the
  env's times `reward_scale` (rsl_rl has no reward scale of its own; SimToolReal-v0's source trains
  with 0.01, which rl_games applies through its ``reward_shaper``). ``extras``:
  ``"time_outs"`` (truncated and not terminated: rsl_rl bootstraps those with the value of the
  step's observation) and ``"log"``: for the episodes that ended, ``"Episode_Reward/<term>"`` (the
  episode's sum of each ``info["reward_terms"]`` entry) and ``"Episode/success"`` (whether
  ``info[success_key]`` was True at any step), plus ``"Metrics/<key>"`` step means of `log_keys`;
  rsl_rl's Logger writes them to TensorBoard.
- ``num_envs``, ``num_actions``, ``max_episode_length`` (the env's ``max_episode_steps``; an env
  without one is refused), ``device`` (where the outputs live), ``cfg`` (a dict describing the env).
- ``episode_length_buf`` is the env's live ``episode_steps`` counter as a tensor (sharing memory on
  the host): in-place writes and assignments (``learn(init_at_random_ep_len=True)`` assigns random
  values) land in the env and move each env's time limit. SimToolReal-v0's counter restarts at
  every success (the source's semantics), see `mjvec.tasks.simtoolreal.env`.

Only this module (with `mjvec.integrations._torch_env`) imports rsl_rl; without it, importing it
raises `InstallError` (``pip install -e '.[train]'``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from gymnasium.vector import VectorEnv

from mjvec.errors import ConfigError, InstallError, install_hint
from mjvec.integrations._torch_env import (
    EpisodeLog,
    as_tensor,
    check_same_step_env,
    counter_tensor,
    obs_groups,
    output_device,
)
from mjvec.validate import require_number

try:
    from rsl_rl.env import VecEnv
    from tensordict import TensorDict
except ImportError as _error:
    raise InstallError(
        f"mjvec.integrations.rsl_rl needs rsl-rl-lib, which is not importable ({_error}); "
        f"fix: {install_hint('train')}"
    ) from _error

__all__ = ["RslRlVecEnv", "save_run_config"]


class RslRlVecEnv(VecEnv):
    """rsl_rl's VecEnv over an mjvec env in SAME_STEP mode (see the module docstring).

    env: the Gymnasium `VectorEnv` (possibly wrapped); reset now with `seed`, closed by `close()`.
    success_key: the step-info key whose any-True over an episode is ``Episode/success`` (None: none).
    log_keys: step-info keys logged as per-step means ``Metrics/<key>`` (e.g. ``("tolerance",)``).
    reward_scale: what the env's rewards are multiplied by (the episode logs stay unscaled).
    """

    def __init__(self, env: VectorEnv, *, seed: int | None = None, success_key: str | None = "success",
                 log_keys: Sequence[str] = (), reward_scale: float = 1.0) -> None:
        base = check_same_step_env(env, "RslRlVecEnv")
        self.reward_scale = require_number(reward_scale, "RslRlVecEnv: reward_scale", low=0.0, low_open=True)
        if base.max_episode_steps is None:
            raise ConfigError(
                f"RslRlVecEnv needs an env with a time limit (rsl_rl reads max_episode_length); "
                f"{type(base).__name__} has max_episode_steps=None: build it with max_episode_steps=N, or pass "
                "max_episode_steps to MjVecEnv in the task"
            )
        self.env = env
        self._base = base
        self.num_envs = int(env.num_envs)
        self.num_actions = int(env.single_action_space.shape[0])
        self.max_episode_length = int(base.max_episode_steps)
        self.device = output_device(base)
        self._groups = obs_groups(env.single_observation_space)
        spec = getattr(env, "spec", None) or getattr(base, "spec", None)
        self.cfg = {"env_id": getattr(spec, "id", type(base).__name__), "num_envs": self.num_envs,
                    "max_episode_steps": self.max_episode_length, "obs_groups": list(self._groups),
                    "autoreset_mode": "same_step", "seed": seed, "reward_scale": self.reward_scale}
        self._log = EpisodeLog(self.num_envs, self.device, success_key, log_keys)
        obs, _ = env.reset(seed=seed)
        self._obs = self._tensordict(obs)

    @property
    def unwrapped(self) -> Any:
        """The mjvec env under any wrappers."""
        return self._base

    @property
    def episode_length_buf(self) -> torch.Tensor:
        """(N,) int64, live: the env's ``episode_steps`` (writes into it are the env's)."""
        return counter_tensor(self._base)

    @episode_length_buf.setter
    def episode_length_buf(self, value: torch.Tensor) -> None:
        self._base.episode_steps = value

    def get_observations(self) -> TensorDict:
        """The latest observations (of the reset, or of the last step)."""
        return self._obs

    def reset(self, seed: int | None = None) -> tuple[TensorDict, dict[str, Any]]:
        """Reset every env (reseeding with `seed` if given); returns (obs, extras)."""
        obs, info = self.env.reset(seed=seed)
        self._obs = self._tensordict(obs)
        return self._obs, {"reset_info": info}

    def step(self, actions: torch.Tensor) -> tuple[TensorDict, torch.Tensor, torch.Tensor, dict[str, Any]]:
        """Step every env with (N, num_actions) actions (clipped by the env to its action space)."""
        obs, reward, terminated, truncated, info = self.env.step(actions)
        dev = self.device
        terminated, truncated = as_tensor(terminated, dev, torch.bool), as_tensor(truncated, dev, torch.bool)
        done = terminated | truncated
        self._obs = self._tensordict(obs)
        extras = {"time_outs": truncated & ~terminated, "log": self._log.log(info, done)}
        rewards = as_tensor(reward, dev, torch.float32)
        if self.reward_scale != 1.0:
            rewards = rewards * self.reward_scale
        return self._obs, rewards, done.to(torch.long), extras

    def close(self) -> None:
        self.env.close()

    def _tensordict(self, obs: Any) -> TensorDict:
        if isinstance(obs, dict):
            groups = {key: as_tensor(obs[key], self.device, torch.float32) for key in self._groups}
        else:
            groups = {"policy": as_tensor(obs, self.device, torch.float32)}
        return TensorDict(groups, batch_size=[self.num_envs], device=self.device)


def save_run_config(log_dir: str | Path, venv: RslRlVecEnv, train_cfg: dict[str, Any],
                    env_options: dict[str, Any]) -> Path:
    """Write ``<log_dir>/params/agent.json``: what `mjvec.integrations.policies.load_policy` needs to
    rebuild the actor of this run's ``model_<it>.pt`` (rsl_rl saves weights only): the train config
    (with the resolved ``obs_groups``), the observation group sizes, the action size and bounds, and
    the env id and the options it was made with (for evaluation). Returns the path."""
    obs = venv.get_observations()
    space = venv.env.single_action_space
    info = {
        "env_id": venv.cfg["env_id"], "env_options": env_options, "train_cfg": train_cfg,
        "obs_dims": {key: int(obs[key].shape[-1]) for key in obs.keys()}, "num_actions": venv.num_actions,
        "action_low": np.asarray(space.low, np.float64).tolist(),
        "action_high": np.asarray(space.high, np.float64).tolist(),
    }
    path = Path(log_dir) / "params" / "agent.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(info, indent=2, default=str))
    return path
