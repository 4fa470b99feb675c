"""PandaPickCube's and PandaPickCubeOrientation's registration on the shared task path
(`mjvec.envs.registry.register_task`).

The ids keep Playground's names in the ``playground/`` namespace: after ``import mjvec``,
``gym.make_vec("playground/PandaPickCube-v0", num_envs=N, ...)`` -> `PandaPickCubeEnv` and
``gym.make(...)`` a single `gymnasium.Env`; ``playground/PandaPickCubeOrientation-v0`` is the same
env whose default config samples the target's orientation (`PandaPickCubeConfig.sample_orientation`,
as Playground's subclass sets it; a config given explicitly is used as given). Options: the
shared `TaskOptions` (max_episode_steps defaults to the config's 150; randomization to None, the
bare task, as Playground's ``registry.load``) plus config. No presets: Playground registers no domain randomization for
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
from typing import Any, ClassVar

import mujoco

from mjvec.envs.registry import Task, TaskOptions, register_once
from mjvec.errors import ConfigError
from mjvec.tasks.panda_pick_cube.config import PandaPickCubeConfig
from mjvec.tasks.panda_pick_cube.env import PandaPickCubeEnv
from mjvec.tasks.panda_pick_cube.scene import scene_spec

__all__ = ["ENV_ID", "ORIENTATION_ENV_ID", "PandaPickCubeOptions", "PandaPickCubeOrientationOptions",
           "register_envs"]

ENV_ID = "playground/PandaPickCube-v0"
ORIENTATION_ENV_ID = "playground/PandaPickCubeOrientation-v0"


@dataclass(frozen=True)
class PandaPickCubeOptions(TaskOptions):
    """The keywords of playground/PandaPickCube-v0: the shared `TaskOptions` plus

    config: the task constants (`PandaPickCubeConfig`); None for Playground's.
    """

    config: PandaPickCubeConfig | None = None
    default_config: ClassVar[PandaPickCubeConfig] = PandaPickCubeConfig()

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.config is not None and not isinstance(self.config, PandaPickCubeConfig):
            raise ConfigError(f"config must be a PandaPickCubeConfig or None, got {type(self.config).__name__}")

    def task_config(self) -> PandaPickCubeConfig:
        """The config with max_episode_steps (when given) as its episode length."""
        cfg = self.default_config if self.config is None else self.config
        if self.max_episode_steps is None:
            return cfg
        return dataclasses.replace(cfg, episode_length=self.max_episode_steps)


@dataclass(frozen=True)
class PandaPickCubeOrientationOptions(PandaPickCubeOptions):
    """The keywords of playground/PandaPickCubeOrientation-v0: `PandaPickCubeOptions`, with
    Playground's orientation sampling in the default config."""

    default_config: ClassVar[PandaPickCubeConfig] = PandaPickCubeConfig(sample_orientation=True)


def _variant(config: PandaPickCubeConfig, v: int) -> mujoco.MjSpec:
    return scene_spec(config)


def _variants(opts: PandaPickCubeOptions) -> tuple[int, Any]:
    return 1, functools.partial(_variant, opts.task_config())


def _env_kwargs(opts: PandaPickCubeOptions) -> dict[str, Any]:
    return {"config": opts.task_config()}


def register_envs() -> tuple[Task, ...]:
    """Register both tasks (idempotent: a second call returns the registered ones)."""
    return tuple(register_once(env_id, env_class=PandaPickCubeEnv, options=options, variants=_variants,
                               env_kwargs=_env_kwargs, presets={}, namespaces=("numpy", "torch"))
                 for env_id, options in ((ENV_ID, PandaPickCubeOptions),
                                         (ORIENTATION_ENV_ID, PandaPickCubeOrientationOptions)))
