"""LeapCubeReorient's registration on the shared task path (`mjvec.envs.registry.register_task`).

The id keeps Playground's name in the ``playground/`` namespace: after ``import mjvec``,
``gym.make_vec("playground/LeapCubeReorient-v0", num_envs=N, ...)`` -> `LeapCubeReorientEnv` and
``gym.make(...)`` a single `gymnasium.Env`. Options: the shared `TaskOptions` (max_episode_steps
defaults to the config's 1000; randomization to None, the bare task, as Playground's
``registry.load``; "paper" is Playground's ``domain_randomize``) plus obs_mode and config. The scene
comes from the ``mjvec[playground]`` extra; without it, building the env raises one ConfigError
naming the extra.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Any

import mujoco

from mjvec.envs.registry import Task, TaskOptions, register_once
from mjvec.errors import ConfigError, allowed
from mjvec.tasks.leap_cube_reorient.config import LeapCubeReorientConfig
from mjvec.tasks.leap_cube_reorient.env import LeapCubeReorientEnv
from mjvec.tasks.leap_cube_reorient.observations import OBS_MODES
from mjvec.tasks.leap_cube_reorient.presets import paper
from mjvec.tasks.leap_cube_reorient.scene import scene_spec

__all__ = ["ENV_ID", "LeapCubeReorientOptions", "register_envs"]

ENV_ID = "playground/LeapCubeReorient-v0"


@dataclass(frozen=True)
class LeapCubeReorientOptions(TaskOptions):
    """The keywords of playground/LeapCubeReorient-v0: the shared `TaskOptions` plus

    obs_mode: "policy" (Box(57): Playground's "state") or "asymmetric" (Dict(policy=57,
        critic=128): with its "privileged_state"); widths for history_len 1.
    config: the task constants (`LeapCubeReorientConfig`); None for Playground's.
    """

    obs_mode: str = "policy"
    config: LeapCubeReorientConfig | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.obs_mode not in OBS_MODES:
            raise ConfigError(f"obs_mode={self.obs_mode!r} is not supported; allowed values are {allowed(OBS_MODES)}")
        if self.config is not None and not isinstance(self.config, LeapCubeReorientConfig):
            raise ConfigError(f"config must be a LeapCubeReorientConfig or None, got {type(self.config).__name__}")

    def task_config(self) -> LeapCubeReorientConfig:
        """The config with max_episode_steps (when given) as its episode length."""
        cfg = LeapCubeReorientConfig() if self.config is None else self.config
        if self.max_episode_steps is None:
            return cfg
        return dataclasses.replace(cfg, episode_length=self.max_episode_steps)


def _variant(config: LeapCubeReorientConfig, cube_com_writable: bool, v: int) -> mujoco.MjSpec:
    return scene_spec(config, cube_com_writable)


def _variants(opts: LeapCubeReorientOptions) -> tuple[int, Any]:
    # The paper preset moves the cube's centre of mass: its scene compiles the cube non-simple.
    return 1, functools.partial(_variant, opts.task_config(), opts.randomization == "paper")


def _env_kwargs(opts: LeapCubeReorientOptions) -> dict[str, Any]:
    return {"config": opts.task_config(), "obs_mode": opts.obs_mode}


def register_envs() -> Task:
    """Register the task (idempotent: a second call returns the registered one)."""
    return register_once(ENV_ID, env_class=LeapCubeReorientEnv, options=LeapCubeReorientOptions,
                         variants=_variants, env_kwargs=_env_kwargs, presets={"paper": paper},
                         namespaces=("numpy", "torch"))
