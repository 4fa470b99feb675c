"""CubeRotate-v0's registration on the shared task path (`mjvec.envs.tasks.register_task`).

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

from gymnasium.vector import VectorEnv

from mjvec.assets.cube import MAX_CUBES, CubeCatalog, cube_variant_spec, default_cube_catalog
from mjvec.envs.cube_rotate import CubeRotateEnv
from mjvec.envs.cube_rotate_config import CubeRotateConfig
from mjvec.envs.tasks import Task, TaskOptions, register_task, registered_tasks, terms_bytes_per_env
from mjvec.errors import ConfigError
from mjvec.randomization import DomainRandomization, EventTerm, ObservationNoise

__all__ = ["ENV_ID", "PAPER_TERMS", "CubeRotateOptions", "paper", "register_envs"]

ENV_ID = "CubeRotate-v0"

# MuJoCo Playground's LeapCubeRotateZAxis randomization, mapped onto this hand and drawn at every
# reset: fingertip friction U(0.5, 1.0); cube mass x U(0.8, 1.2) (inertia scaled with it) and its
# centre of mass moved by U(-5, 5) mm per axis; hand joint friction loss x U(0.5, 2.0), armature
# x U(1.0, 1.05), link masses x U(0.9, 1.1); drive stiffness and damping x U(0.8, 1.2) (this hand's
# damping is its position actuators' kv). Playground's qpos0 jitter has no EventTerm kind and is
# left out.
PAPER_TERMS = (
    EventTerm("geom_friction", 0.5, 1.0, targets=("left_.*_DP_collision",), operation="abs",
              name="fingertip_friction"),
    EventTerm("body_mass", 0.8, 1.2, targets=("cube",), name="cube_mass"),
    EventTerm("body_com", -0.005, 0.005, targets=("cube",), operation="add", name="cube_com"),
    EventTerm("dof_frictionloss", 0.5, 2.0, targets=("left_.*",), name="hand_frictionloss"),
    EventTerm("dof_armature", 1.0, 1.05, targets=("left_.*",), name="hand_armature"),
    EventTerm("body_mass", 0.9, 1.1, targets=("left_.*",), name="hand_mass"),
    EventTerm("actuator_kp", 0.8, 1.2, targets=(".*_act",), name="hand_kp"),
    EventTerm("actuator_kd", 0.8, 1.2, targets=(".*_act",), name="hand_kd"),
)
# Playground adds U(-0.05, 0.05) rad to the observed joint angles; this is the Gaussian of the same spread.
JOINT_POS_NOISE_STD = 0.03


def paper(env: VectorEnv) -> VectorEnv:
    """CubeRotate-v0's preset: Playground's model randomization (`PAPER_TERMS`) and joint-angle noise."""
    return DomainRandomization(ObservationNoise(env, "joint_pos", JOINT_POS_NOISE_STD), PAPER_TERMS)


@dataclass(frozen=True)
class CubeRotateOptions(TaskOptions):
    """The keywords CubeRotate-v0 accepts: the shared `TaskOptions` (max_episode_steps defaults to
    the config's 400; randomization to None, the bare task) plus:

    num_cubes: cubes in use, 1..64; env with global id g holds cube g % num_cubes of the seed-0
        catalog (`mjvec.assets.cube.CubeCatalog`).
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
        if isinstance(self.num_cubes, bool) or not isinstance(self.num_cubes, int) or \
                not 1 <= self.num_cubes <= MAX_CUBES:
            raise ConfigError(
                f"num_cubes must be an int in [1, {MAX_CUBES}] (the catalog has {MAX_CUBES} cubes), "
                f"got {self.num_cubes!r}"
            )
        if self.config is not None and not isinstance(self.config, CubeRotateConfig):
            raise ConfigError(f"config must be a CubeRotateConfig or None, got {type(self.config).__name__}")

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
    if ENV_ID in registered_tasks():
        return registered_tasks()[ENV_ID]
    return register_task(
        ENV_ID,
        env_class=CubeRotateEnv,
        options=CubeRotateOptions,
        variants=_variants,
        env_kwargs=lambda opts: {"catalog": _catalog(), "config": opts.task_config()},
        presets={"paper": paper},
        bound_fields=lambda opts: CubeRotateEnv.bound_fields(),
        bytes_per_env=lambda opts: CubeRotateEnv.bytes_per_env(),
        preset_bytes=lambda opts, model: terms_bytes_per_env(model, PAPER_TERMS),
    )
