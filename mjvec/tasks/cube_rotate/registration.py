"""CubeRotate-v0's registration on the shared task path (`mjvec.envs.registry.register_task`).

After ``import mjvec``, ``gym.make_vec("CubeRotate-v0", num_envs=N, ...)`` -> `CubeRotateEnv` and
``gym.make("CubeRotate-v0")`` -> a single `gymnasium.Env`. The options are the shared
`TaskOptions` plus num_cubes and config (`CubeRotateOptions`); randomization defaults to None (the
bare task), and ``randomization="paper"`` selects `paper`, this task's one preset.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, ClassVar

from mjvec.envs.registry import Task, TaskOptions, register_once
from mjvec.errors import ConfigError, is_int
from mjvec.tasks.cube_rotate.config import CubeRotateConfig
from mjvec.tasks.cube_rotate.env import CubeRotateEnv
from mjvec.tasks.cube_rotate.presets import PAPER_TERMS, paper
from mjvec.tasks.cube_rotate.scene import MAX_CUBES, CubeCatalog, cube_variant_spec, default_cube_catalog

__all__ = ["ENV_ID", "PAPER_TERMS", "CubeRotateOptions", "paper", "register_envs"]

ENV_ID = "CubeRotate-v0"

@dataclass(frozen=True)
class CubeRotateOptions(TaskOptions):
    """The keywords CubeRotate-v0 accepts: the shared `TaskOptions` (max_episode_steps defaults to
    the config's 400; randomization to None, the bare task) plus:

    num_cubes: cubes in use, 1..64; env with global id g holds cube g % num_cubes of the seed-0
        catalog (`mjvec.tasks.cube_rotate.scene.CubeCatalog`).
    config: task constants (`CubeRotateConfig`); None for the defaults.
    """

    HINTS: ClassVar[Mapping[str, str]] = MappingProxyType({
        "frameskip": "; the control period is fixed by the task: config=CubeRotateConfig(frame_skip=...) "
        "sets physics substeps per control step",
    })

    num_cubes: int = 8
    config: CubeRotateConfig | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if not is_int(self.num_cubes) or not 1 <= self.num_cubes <= MAX_CUBES:
            raise ConfigError(
                f"num_cubes must be an int in [1, {MAX_CUBES}] (the catalog has {MAX_CUBES} cubes), "
                f"got {self.num_cubes!r}"
            )
        object.__setattr__(self, "num_cubes", int(self.num_cubes))
        if self.config is not None and not isinstance(self.config, CubeRotateConfig):
            raise ConfigError(f"config must be a CubeRotateConfig or None, got {type(self.config).__name__}")

    def effective_values(self) -> dict[str, Any]:
        """`TaskOptions.effective_values` with ``config`` the config the task runs with (`task_config`)."""
        return {**super().effective_values(), "config": self.task_config()}

    def task_config(self) -> CubeRotateConfig:
        cfg = CubeRotateConfig() if self.config is None else self.config
        if self.max_episode_steps is None:
            return cfg
        return dataclasses.replace(cfg, max_episode_steps=self.max_episode_steps)


def _variants(opts: CubeRotateOptions) -> tuple[int, Any]:
    return opts.num_cubes, functools.partial(cube_variant_spec, catalog=_catalog())


def _catalog() -> CubeCatalog:
    return default_cube_catalog()


def register_envs() -> Task:
    """Register CubeRotate-v0 (idempotent: a second call returns the registered task)."""
    return register_once(
        ENV_ID,
        env_class=CubeRotateEnv,
        options=CubeRotateOptions,
        variants=_variants,
        env_kwargs=lambda opts: {"catalog": _catalog(), "config": opts.task_config()},
        presets={"paper": paper},
    )
