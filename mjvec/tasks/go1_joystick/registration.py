"""Go1JoystickFlatTerrain's and Go1JoystickRoughTerrain's registration on the shared task path
(`mjvec.envs.registry.register_task`).

Their ids keep Playground's names in a ``playground/`` namespace (`ENV_IDS`: Playground's terrain
name -> id): after ``import mjvec``, ``gym.make_vec("playground/Go1JoystickFlatTerrain-v0",
num_envs=N, ...)`` (or ``...RoughTerrain-v0``) -> `Go1JoystickEnv` and ``gym.make(...)`` a single
`gymnasium.Env`. The two differ in their scene alone (`scene.TERRAINS`), as Playground's
``Joystick(task=...)`` does; they share the options, the config and the "paper" preset
(Playground registers ``go1_randomize.domain_randomize`` for both). Options: the shared `TaskOptions` (max_episode_steps
defaults to the config's 1000; randomization to None, the bare task, as Playground's
``registry.load``) plus obs_mode and config. The scene comes from the ``mjvec[playground]`` extra;
without it, building the env raises one ConfigError naming the extra.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Any

import mujoco

from mjvec.envs.registry import Task, TaskOptions, register_once
from mjvec.errors import ConfigError, allowed
from mjvec.tasks.go1_joystick.config import Go1JoystickConfig
from mjvec.tasks.go1_joystick.env import Go1JoystickEnv
from mjvec.tasks.go1_joystick.observations import OBS_MODES
from mjvec.tasks.go1_joystick.presets import paper
from mjvec.tasks.go1_joystick.scene import scene_spec

__all__ = ["ENV_ID", "ENV_IDS", "ROUGH_ENV_ID", "Go1JoystickOptions", "register_envs"]

ENV_ID = "playground/Go1JoystickFlatTerrain-v0"
ROUGH_ENV_ID = "playground/Go1JoystickRoughTerrain-v0"
ENV_IDS = {"flat_terrain": ENV_ID, "rough_terrain": ROUGH_ENV_ID}


@dataclass(frozen=True)
class Go1JoystickOptions(TaskOptions):
    """The keywords of playground/Go1Joystick{Flat,Rough}Terrain-v0: the shared `TaskOptions` plus

    obs_mode: "policy" (Box(48): Playground's "state") or "asymmetric" (Dict(policy=48,
        critic=123): with its "privileged_state").
    config: the task constants (`Go1JoystickConfig`); None for Playground's.
    """

    obs_mode: str = "policy"
    config: Go1JoystickConfig | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.obs_mode not in OBS_MODES:
            raise ConfigError(f"obs_mode={self.obs_mode!r} is not supported; allowed values are {allowed(OBS_MODES)}")
        if self.config is not None and not isinstance(self.config, Go1JoystickConfig):
            raise ConfigError(f"config must be a Go1JoystickConfig or None, got {type(self.config).__name__}")

    def task_config(self) -> Go1JoystickConfig:
        """The config with max_episode_steps (when given) as its episode length."""
        cfg = Go1JoystickConfig() if self.config is None else self.config
        if self.max_episode_steps is None:
            return cfg
        return dataclasses.replace(cfg, episode_length=self.max_episode_steps)


def _variant(config: Go1JoystickConfig, terrain: str, v: int) -> mujoco.MjSpec:
    return scene_spec(config, terrain)


def _variants(terrain: str, opts: Go1JoystickOptions) -> tuple[int, Any]:
    return 1, functools.partial(_variant, opts.task_config(), terrain)


def _env_kwargs(opts: Go1JoystickOptions) -> dict[str, Any]:
    return {"config": opts.task_config(), "obs_mode": opts.obs_mode}


def register_envs() -> tuple[Task, ...]:
    """Register both tasks (idempotent: a second call returns the registered ones), flat first."""
    return tuple(
        register_once(env_id, env_class=Go1JoystickEnv, options=Go1JoystickOptions,
                      variants=functools.partial(_variants, terrain), env_kwargs=_env_kwargs,
                      presets={"paper": paper}, namespaces=("numpy", "torch"))
        for terrain, env_id in ENV_IDS.items())
