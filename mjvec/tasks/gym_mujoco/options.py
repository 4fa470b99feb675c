"""The suite's typed options: Gymnasium v5's constructor arguments that change physics or reward.

Each task's options class is the shared `TaskOptions` (backend, num_threads, autoreset_mode,
randomization, max_episode_steps, ...) plus the keyword arguments of Gymnasium's own env class
(``gymnasium/envs/mujoco/<task>_v5.py``) with Gymnasium's names and defaults. Gymnasium's rendering
arguments (width, height, camera_id, camera_name, default_camera_config, max_geom,
visual_options) are not options: mjvec renders with ``render_mode`` and ``render_size``.
``max_episode_steps`` defaults to 1000, Gymnasium's registered limit for these ids.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np

from mjvec.envs.registry import TaskOptions
from mjvec.errors import ConfigError, is_int

__all__ = [
    "AntOptions",
    "GymMujocoOptions",
    "HalfCheetahOptions",
    "HopperOptions",
    "HumanoidOptions",
    "Walker2dOptions",
]

MAX_EPISODE_STEPS = 1000  # Gymnasium registers every v5 locomotion id with this TimeLimit

_RENDER_HINT = ("; mjvec renders with render_mode='rgb_array' and render_size=(height, width): Gymnasium's "
                "camera and window arguments are not options")
_HINTS = MappingProxyType({
    name: _RENDER_HINT
    for name in ("width", "height", "camera_id", "camera_name", "default_camera_config", "max_geom",
                 "visual_options")
} | {"frameskip": "; the option is frame_skip (Gymnasium's spelling)"})


def _real(owner: str, name: str, value: Any, *, finite: bool = True) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ConfigError(f"{owner}: {name} must be a real number, got {type(value).__name__} {value!r}")
    value = float(value)
    if math.isnan(value) or (finite and not math.isfinite(value)):
        raise ConfigError(f"{owner}: {name} must be {'finite' if finite else 'a number (not NaN)'}, got {value!r}")
    return value


def _range(owner: str, name: str, value: Any) -> tuple[float, float]:
    if isinstance(value, (str, bytes)) or not isinstance(value, (tuple, list, np.ndarray)) or len(value) != 2:
        raise ConfigError(f"{owner}: {name} must be a pair (low, high), got {value!r}")
    low, high = (_real(owner, f"{name}[{i}]", v, finite=False) for i, v in enumerate(value))
    if low > high:
        raise ConfigError(f"{owner}: {name} must have low <= high, got {value!r}")
    return low, high


@dataclass(frozen=True)
class GymMujocoOptions(TaskOptions):
    """Options every task of the suite takes (besides the shared `TaskOptions`).

    xml_file: None (the task's file in the installed gymnasium's assets) or Gymnasium's
        ``xml_file``: a path starting with ".", "/" or "~", or a file name in those assets.
    frame_skip: physics steps per control step (Gymnasium's default per task).
    forward_reward_weight, ctrl_cost_weight: the weights of the forward reward and control cost.
    reset_noise_scale: the half width (uniform) or standard deviation (normal) of the reset noise
        added to qpos0 and to zero velocities (which distribution: the task's, as Gymnasium's).
    exclude_current_positions_from_observation: leave the root's x (and y, for Ant and Humanoid)
        out of the observation.
    Range options are (low, high) pairs; the inequality each uses (strict or not) is Gymnasium's.
    """

    HINTS: ClassVar[Mapping[str, str]] = _HINTS
    _RANGES: ClassVar[tuple[str, ...]] = ()

    xml_file: str | None = None
    frame_skip: int = 5
    forward_reward_weight: float = 1.0
    ctrl_cost_weight: float = 0.1
    reset_noise_scale: float = 0.1
    exclude_current_positions_from_observation: bool = True

    def __post_init__(self) -> None:
        super().__post_init__()
        owner = type(self).__name__
        if self.xml_file is not None and (not isinstance(self.xml_file, str) or not self.xml_file):
            raise ConfigError(f"{owner}: xml_file must be None or a non-empty str, got {self.xml_file!r}")
        skip = self.frame_skip
        if not is_int(skip) or skip < 1:
            raise ConfigError(f"{owner}: frame_skip must be an int >= 1, got {skip!r}")
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name.endswith(("_weight", "_reward")):
                object.__setattr__(self, f.name, _real(owner, f.name, value))
            elif f.name in self._RANGES:
                object.__setattr__(self, f.name, _range(owner, f.name, value))
            elif f.name.startswith(("include_", "exclude_", "terminate_")) and not isinstance(value, (bool, np.bool_)):
                raise ConfigError(f"{owner}: {f.name} must be True or False, got {value!r}")
        if _real(owner, "reset_noise_scale", self.reset_noise_scale) < 0:
            raise ConfigError(f"{owner}: reset_noise_scale must be >= 0, got {self.reset_noise_scale!r}")

    @property
    def episode_steps(self) -> int:
        """The episode limit in control steps (``max_episode_steps``, default 1000)."""
        return MAX_EPISODE_STEPS if self.max_episode_steps is None else int(self.max_episode_steps)


@dataclass(frozen=True)
class AntOptions(GymMujocoOptions):
    """Ant-v5's options (Gymnasium's `AntEnv` arguments and defaults).

    contact_cost_weight: weight of the contact cost (the squared, clipped external contact forces).
    healthy_reward: reward per step while healthy. terminate_when_unhealthy: end the episode when not.
    main_body: the body (id or name) whose xy displacement gives the forward velocity.
    healthy_z_range: healthy while low <= torso z <= high (and the state is finite).
    contact_force_range: the clip of ``cfrc_ext`` in the observation and the contact cost.
    include_cfrc_ext_in_observation: append the clipped ``cfrc_ext`` of every body but the world.
    """

    _RANGES: ClassVar[tuple[str, ...]] = ("healthy_z_range", "contact_force_range")

    ctrl_cost_weight: float = 0.5
    contact_cost_weight: float = 5e-4
    healthy_reward: float = 1.0
    main_body: int | str = 1
    terminate_when_unhealthy: bool = True
    healthy_z_range: tuple[float, float] = (0.2, 1.0)
    contact_force_range: tuple[float, float] = (-1.0, 1.0)
    include_cfrc_ext_in_observation: bool = True

    def __post_init__(self) -> None:
        super().__post_init__()
        body = self.main_body
        if isinstance(body, (bool, np.bool_)) or not isinstance(body, (int, np.integer, str)) or \
                (not isinstance(body, str) and body < 0):
            raise ConfigError(f"AntOptions: main_body must be a body id (int >= 0) or name (str), got {body!r}")


@dataclass(frozen=True)
class HalfCheetahOptions(GymMujocoOptions):
    """HalfCheetah-v5's options (Gymnasium's `HalfCheetahEnv` arguments and defaults): the shared ones."""


@dataclass(frozen=True)
class HopperOptions(GymMujocoOptions):
    """Hopper-v5's options (Gymnasium's `HopperEnv` arguments and defaults).

    healthy_state_range: healthy while every qpos[2:] and qvel entry is strictly inside it;
    healthy_z_range / healthy_angle_range: strict bounds of the torso height qpos[1] and angle qpos[2].
    """

    _RANGES: ClassVar[tuple[str, ...]] = ("healthy_state_range", "healthy_z_range", "healthy_angle_range")

    frame_skip: int = 4
    ctrl_cost_weight: float = 1e-3
    reset_noise_scale: float = 5e-3
    healthy_reward: float = 1.0
    terminate_when_unhealthy: bool = True
    healthy_state_range: tuple[float, float] = (-100.0, 100.0)
    healthy_z_range: tuple[float, float] = (0.7, float("inf"))
    healthy_angle_range: tuple[float, float] = (-0.2, 0.2)


@dataclass(frozen=True)
class Walker2dOptions(GymMujocoOptions):
    """Walker2d-v5's options (Gymnasium's `Walker2dEnv` arguments and defaults; its file walker2d_v5.xml).

    healthy_z_range / healthy_angle_range: strict bounds of the torso height qpos[1] and angle qpos[2].
    """

    _RANGES: ClassVar[tuple[str, ...]] = ("healthy_z_range", "healthy_angle_range")

    frame_skip: int = 4
    ctrl_cost_weight: float = 1e-3
    reset_noise_scale: float = 5e-3
    healthy_reward: float = 1.0
    terminate_when_unhealthy: bool = True
    healthy_z_range: tuple[float, float] = (0.8, 2.0)
    healthy_angle_range: tuple[float, float] = (-1.0, 1.0)


@dataclass(frozen=True)
class HumanoidOptions(GymMujocoOptions):
    """Humanoid-v5's options (Gymnasium's `HumanoidEnv` arguments and defaults).

    contact_cost_weight / contact_cost_range: the contact cost is clip(weight x sum of squared
        ``cfrc_ext``, low, high). healthy_z_range: strict bounds of the torso height qpos[2].
    include_*_in_observation: append ``cinert[1:]``, ``cvel[1:]``, ``qfrc_actuator[6:]``,
        ``cfrc_ext[1:]`` (in that order).
    """

    _RANGES: ClassVar[tuple[str, ...]] = ("contact_cost_range", "healthy_z_range")

    forward_reward_weight: float = 1.25
    reset_noise_scale: float = 1e-2
    contact_cost_weight: float = 5e-7
    contact_cost_range: tuple[float, float] = (-float("inf"), 10.0)
    healthy_reward: float = 5.0
    terminate_when_unhealthy: bool = True
    healthy_z_range: tuple[float, float] = (1.0, 2.0)
    include_cinert_in_observation: bool = True
    include_cvel_in_observation: bool = True
    include_qfrc_actuator_in_observation: bool = True
    include_cfrc_ext_in_observation: bool = True
