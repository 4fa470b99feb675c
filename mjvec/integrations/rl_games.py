"""rl_games adapter: `RlGamesVecEnv(env)` is rl_games' ``IVecEnv`` over an mjvec vector env, and
`register_rl_games` makes an mjvec task an rl_games ``env_name`` (as IsaacGymEnvs' ``rlgpu`` is).

    register_rl_games("mjvec")                     # once, before the Runner builds the agent
    runner = Runner(MjvecAlgoObserver()); runner.load({"params": {..., "config": {
        "env_name": "mjvec", "num_actors": 4096,
        "env_config": {"env_id": "SimToolReal-v0", "obs_mode": "asymmetric", "randomization": "paper"}}}})
    runner.run({"train": True})

Contract (what rl_games' ``A2CAgent``, its central value net and ``ExperienceBuffer`` read), as
Isaac Gym's ``VecTask`` gives it:

- The env must use ``autoreset_mode="same_step"`` (else `ConfigError`); a device env must output
  torch. Everything returned is a torch tensor on `device` (default: the env's output device;
  rl_games does not move an env's tensors to its own device, so a CPU env feeding a CUDA agent
  passes ``device="cuda:0"``: one copy per step), and rl_games passes torch actions back.
- ``reset()`` / ``step()`` observations: ``{"obs": (N, D) float32}``, plus ``"states"`` (the
  asymmetric critic's input) when the env's Dict observation has `state_key`; a Box observation
  is ``obs`` itself. ``step`` -> ``(obs, rewards (N,) float32, dones (N,) uint8, infos)`` with
  ``infos["time_outs"]`` (truncated and not terminated: rl_games' ``value_bootstrap`` adds
  gamma * V(s) to those rewards) and ``infos["log"]`` (the episode logs of
  `mjvec.integrations._torch_env.EpisodeLog`, which `MjvecAlgoObserver` writes to TensorBoard).
- ``get_env_info()``: ``action_space``, ``observation_space`` (the ``obs`` Box), ``state_space``
  (the ``states`` Box, when there is one), ``agents`` 1, ``value_size`` 1.
- Seeding: rl_games' Runner writes its ``seed`` into ``config["env_config"]["seed"]``; the creator
  `register_rl_games` installs passes it on, and the first reset uses it (env i keyed by (seed,
  global id i)). ``seed(s)`` makes the next reset use ``s``.

Only this module imports rl_games; without it, importing it raises `InstallError`. rl-games 1.6.5
pins psutil<6 and so cannot share the dev environment (ipython needs psutil>=7): install the
``rl_games`` extra into its own environment (``bash scripts/setup_rl_games.sh`` makes ``.venv-rl-games``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import torch
from gymnasium.vector import VectorEnv

from mjvec.errors import ConfigError, InstallError, install_hint
from mjvec.integrations._torch_env import EpisodeLog, as_tensor, check_same_step_env, output_device

try:
    from rl_games.common import env_configurations, vecenv
    from rl_games.common.algo_observer import AlgoObserver
    from rl_games.common.ivecenv import IVecEnv
except ImportError as _error:
    raise InstallError(
        f"mjvec.integrations.rl_games needs rl-games, which is not importable ({_error}); "
        f"fix: {install_hint('rl_games')}"
    ) from _error

__all__ = ["MjvecAlgoObserver", "RlGamesVecEnv", "make_rl_games_env", "register_rl_games"]

VECENV_TYPE = "MJVEC"


class RlGamesVecEnv(IVecEnv):
    """rl_games' IVecEnv over an mjvec env in SAME_STEP mode (see the module docstring).

    env: the Gymnasium `VectorEnv` (possibly wrapped); closed by `close()`.
    seed: the seed of the first reset (None: no reseed).
    obs_key / state_key: the Dict-observation keys of the actor's input and of the critic's states.
    success_key, log_keys: as in `RslRlVecEnv` (the episode logs).
    device: where the returned tensors live (None: the env's output device).
    """

    def __init__(self, env: VectorEnv, *, seed: int | None = None, obs_key: str = "policy",
                 state_key: str = "critic", success_key: str | None = "success", log_keys: Sequence[str] = (),
                 device: str | None = None) -> None:
        base = check_same_step_env(env, "RlGamesVecEnv")
        space = env.single_observation_space
        if isinstance(space, gym.spaces.Dict):
            if obs_key not in space.spaces:
                raise ConfigError(
                    f"RlGamesVecEnv: obs_key={obs_key!r} is not a key of the observation; allowed: {list(space.spaces)}"
                )
            self._obs_key, self._state_key = obs_key, state_key if state_key in space.spaces else None
            self.observation_space = space[obs_key]
            self.state_space = space[state_key] if self._state_key else None
        else:
            self._obs_key = self._state_key = None
            self.observation_space, self.state_space = space, None
        self.env = env
        self._base = base
        self.action_space = env.single_action_space
        self.num_envs = int(env.num_envs)
        self.device = output_device(base) if device is None else torch.device(device)
        self._next_seed = seed
        self._log = EpisodeLog(self.num_envs, self.device, success_key, log_keys)

    def get_env_info(self) -> dict[str, Any]:
        info = {"action_space": self.action_space, "observation_space": self.observation_space,
                "agents": 1, "value_size": 1}
        if self.state_space is not None:
            info["state_space"] = self.state_space
        return info

    def get_number_of_agents(self) -> int:
        return 1

    def seed(self, seed: int | None) -> None:
        """Use `seed` at the next reset (None: do not reseed)."""
        self._next_seed = seed

    def reset(self) -> dict[str, torch.Tensor]:
        obs, _ = self.env.reset(seed=self._next_seed)
        self._next_seed = None
        return self._obs(obs)

    def step(self, actions: torch.Tensor) -> tuple[dict[str, torch.Tensor], torch.Tensor, torch.Tensor, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(actions)
        dev = self.device
        terminated, truncated = as_tensor(terminated, dev, torch.bool), as_tensor(truncated, dev, torch.bool)
        done = terminated | truncated
        infos = {"time_outs": truncated & ~terminated, "log": self._log.log(info, done)}
        return self._obs(obs), as_tensor(reward, dev, torch.float32), done.to(torch.uint8), infos

    def close(self) -> None:
        self.env.close()

    @property
    def unwrapped(self) -> Any:
        return self._base

    def _obs(self, obs: Any) -> dict[str, torch.Tensor]:
        if self._obs_key is None:
            return {"obs": as_tensor(obs, self.device, torch.float32)}
        out = {"obs": as_tensor(obs[self._obs_key], self.device, torch.float32)}
        if self._state_key is not None:
            out["states"] = as_tensor(obs[self._state_key], self.device, torch.float32)
        return out


def make_rl_games_env(num_envs: int = 1, seed: int | None = None, *, env_id: str = "SimToolReal-v0",
                      adapter: dict[str, Any] | None = None, **options: Any) -> RlGamesVecEnv:
    """``gym.make_vec(env_id, num_envs, autoreset_mode="same_step", **options)`` as an `RlGamesVecEnv`
    (`adapter`: its keyword arguments, e.g. ``{"log_keys": ["tolerance"]}``), seeded by `seed`."""
    if "autoreset_mode" in options:
        raise ConfigError("make_rl_games_env sets autoreset_mode='same_step' itself (rl_games resets in the done "
                          "step); remove autoreset_mode from env_config")
    env = gym.make_vec(env_id, num_envs=num_envs, autoreset_mode="same_step", **options)
    return RlGamesVecEnv(env, seed=seed, **(adapter or {}))


def register_rl_games(name: str = "mjvec", **defaults: Any) -> None:
    """Make `name` an rl_games ``env_name``: its ``env_config`` (plus the Runner's ``seed``) is
    passed to `make_rl_games_env`, over `defaults`, with ``num_envs = num_actors``. Idempotent."""
    def create(**kwargs: Any) -> RlGamesVecEnv:
        return make_rl_games_env(**{**defaults, **kwargs})

    vecenv.register(VECENV_TYPE, lambda config_name, num_actors, **kwargs:
                    env_configurations.configurations[config_name]["env_creator"](num_envs=num_actors, **kwargs))
    env_configurations.register(name, {"vecenv_type": VECENV_TYPE, "env_creator": create})


class MjvecAlgoObserver(AlgoObserver):
    """Writes the adapter's episode logs (``infos["log"]``: success, per-term episode rewards,
    metrics) to rl_games' TensorBoard writer, as means over each epoch's finished episodes."""

    def __init__(self) -> None:
        super().__init__()
        self._sums: dict[str, torch.Tensor] = {}
        self._counts: dict[str, int] = {}
        self.writer: Any = None

    def after_init(self, algo: Any) -> None:
        self.writer = algo.writer

    def process_infos(self, infos: Any, done_indices: Any) -> None:
        if not isinstance(infos, dict):
            return
        for key, value in infos.get("log", {}).items():
            value = torch.as_tensor(value).reshape(-1).double()
            start = self._sums.get(key, torch.zeros((), dtype=torch.float64, device=value.device))
            self._sums[key] = start + value.sum()
            self._counts[key] = self._counts.get(key, 0) + int(value.numel())

    def after_print_stats(self, frame: int, epoch_num: int, total_time: float) -> None:
        if self.writer is not None:
            for key, total in self._sums.items():
                if self._counts[key]:
                    self.writer.add_scalar(key, float(total) / self._counts[key], frame)
        self._sums.clear()
        self._counts.clear()
