"""PandaPickCube's registration on the shared task path (`mjvec.envs.registry.register_task`).

Its id keeps Playground's name in the ``playground/`` namespace: after ``import mjvec``,
``gym.make_vec("playground/PandaPickCube-v0", num_envs=N, ...)`` -> `PandaPickCubeEnv` and
``gym.make(...)`` a single `gymnasium.Env`. Options: the shared `TaskOptions` (max_episode_steps
defaults to the config's 150; randomization to None, the bare task, as Playground's
``registry.load``) plus config. No presets: Playground registers no domain randomization for
PandaPickCube (``manipulation._randomizer`` has none; its ``randomize_vision.py`` is the vision
variant's renderer randomization), so ``randomization="paper"`` raises, naming the presets (none).
No obs_mode: Playground's PandaPickCube has a single ``state`` observation and no privileged state.
The scene comes from the ``mjvec[playground]`` extra; without it, building the env raises one
ConfigError naming the extra.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Any

import mujoco

from mjvec.envs.registry import Task, TaskOptions, register_once
from mjvec.errors import ConfigError
from mjvec.tasks.panda_pick_cube.config import PandaPickCubeConfig
from mjvec.tasks.panda_pick_cube.env import PandaPickCubeEnv
from mjvec.tasks.panda_pick_cube.scene import scene_spec

__all__ = ["ENV_ID", "PandaPickCubeOptions", "register_envs"]

ENV_ID = "playground/PandaPickCube-v0"


@dataclass(frozen=True)
class PandaPickCubeOptions(TaskOptions):
    """The keywords of playground/PandaPickCube-v0: the shared `TaskOptions` plus

    config: the task constants (`PandaPickCubeConfig`); None for Playground's.
    """

    config: PandaPickCubeConfig | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.config is not None and not isinstance(self.config, PandaPickCubeConfig):
            raise ConfigError(f"config must be a PandaPickCubeConfig or None, got {type(self.config).__name__}")

    def task_config(self) -> PandaPickCubeConfig:
        """The config with max_episode_steps (when given) as its episode length."""
        cfg = PandaPickCubeConfig() if self.config is None else self.config
        if self.max_episode_steps is None:
            return cfg
        return dataclasses.replace(cfg, episode_length=self.max_episode_steps)


def _variant(config: PandaPickCubeConfig, v: int) -> mujoco.MjSpec:
    return scene_spec(config)


def _variants(opts: PandaPickCubeOptions) -> tuple[int, Any]:
    return 1, functools.partial(_variant, opts.task_config())


def _env_kwargs(opts: PandaPickCubeOptions) -> dict[str, Any]:
    return {"config": opts.task_config()}


def register_envs() -> tuple[Task, ...]:
    """Register the task (idempotent: a second call returns the registered one)."""
    return (register_once(ENV_ID, env_class=PandaPickCubeEnv, options=PandaPickCubeOptions, variants=_variants,
                          env_kwargs=_env_kwargs, presets={}, namespaces=("numpy", "torch")),)
