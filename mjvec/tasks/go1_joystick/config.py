"""The constants of Go1JoystickFlatTerrain as one frozen, validated config: MuJoCo Playground's
``go1/joystick.py`` ``default_config()`` (its names, its defaults) plus the reset ranges its
``reset`` writes inline. A variant is ``dataclasses.replace(Go1JoystickConfig(), ...)``; a bad value
raises `ConfigError` naming the field, the value and what is allowed."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from mjvec.errors import ConfigError
from mjvec.tasks.locomotion import CommandConfig, PushConfig
from mjvec.tasks.locomotion.checks import NoiseScalesBase, TermWeights, episode_timing, real

__all__ = ["Go1JoystickConfig", "NoiseScales", "RewardScales"]


@dataclass(frozen=True)
class NoiseScales(NoiseScalesBase):
    """Half-widths of the uniform observation noise, per block (Playground's ``noise_config.scales``):
    joint angles (rad), joint velocities (rad/s), gyro (rad/s), gravity (unit vector), local linear
    velocity (m/s). The noise added is U(-1, 1) x level x scale."""

    joint_pos: float = 0.03
    joint_vel: float = 1.5
    gyro: float = 0.2
    gravity: float = 0.05
    linvel: float = 0.1


@dataclass(frozen=True)
class RewardScales(TermWeights):
    """The weight of each reward term (Playground's ``reward_config.scales``; 0 turns a term off).
    The reward is clip(sum of weight x term, 0, 1e4) x control_dt."""

    tracking_lin_vel: float = 1.0
    tracking_ang_vel: float = 0.5
    lin_vel_z: float = -0.5
    ang_vel_xy: float = -0.05
    orientation: float = -5.0
    dof_pos_limits: float = -1.0
    pose: float = 0.5
    termination: float = -1.0
    stand_still: float = -1.0
    torques: float = -0.0002
    action_rate: float = -0.01
    energy: float = -0.001
    feet_clearance: float = -2.0
    feet_height: float = -0.2
    feet_slip: float = -0.1
    feet_air_time: float = 0.1


@dataclass(frozen=True)
class Go1JoystickConfig:
    """Constants of the Go1 joystick task (defaults: Playground's).

    Timing: control every `ctrl_dt` s, physics every `sim_dt` s (ctrl_dt / sim_dt substeps, an
    integer); episodes of `episode_length` control steps.
    Control: position targets default pose + `action_scale` x action (action in [-1, 1]^12); the
    position actuators' gain is `Kp` and the leg joints' damping `Kd` (written into the model, as
    Playground does). `soft_joint_pos_limit_factor` scales the joint ranges into the soft limits
    the ``dof_pos_limits`` term penalises.
    Observation noise: `noise_level` x `noise_scales` (0 turns it off).
    Rewards: `reward_scales`; `tracking_sigma` of the tracking kernels; `max_foot_height` (m) of the
    feet clearance and height terms. Commands: `commands`; kicks: `pushes` (off, as Playground's).
    Reset (Playground's ``reset``): the home keyframe, base x and y + U(-`reset_xy`, `reset_xy`) m,
    yaw U(-`reset_yaw`, `reset_yaw`) rad, base linear and angular velocity U(-`reset_base_vel`,
    `reset_base_vel`) each.
    """

    ctrl_dt: float = 0.02
    sim_dt: float = 0.004
    episode_length: int = 1000
    Kp: float = 35.0
    Kd: float = 0.5
    action_scale: float = 0.5
    soft_joint_pos_limit_factor: float = 0.95
    noise_level: float = 1.0
    noise_scales: NoiseScales = field(default_factory=NoiseScales)
    reward_scales: RewardScales = field(default_factory=RewardScales)
    tracking_sigma: float = 0.25
    max_foot_height: float = 0.1
    commands: CommandConfig = field(default_factory=CommandConfig)
    pushes: PushConfig = field(default_factory=PushConfig)
    reset_xy: float = 0.5
    reset_yaw: float = 3.14
    reset_base_vel: float = 0.5

    def __post_init__(self) -> None:
        owner = type(self).__name__
        for name in ("ctrl_dt", "sim_dt", "Kp", "action_scale", "tracking_sigma", "max_foot_height"):
            object.__setattr__(self, name, real(owner, name, getattr(self, name), positive=True))
        for name in ("Kd", "noise_level", "reset_xy", "reset_yaw", "reset_base_vel"):
            object.__setattr__(self, name, real(owner, name, getattr(self, name), low=0.0))
        object.__setattr__(self, "soft_joint_pos_limit_factor", real(
            owner, "soft_joint_pos_limit_factor", self.soft_joint_pos_limit_factor, low=0.0, high=1.0))
        object.__setattr__(self, "episode_length", episode_timing(owner, self.episode_length, self.ctrl_dt,
                                                                  self.sim_dt))
        for name, kind in (("noise_scales", NoiseScales), ("reward_scales", RewardScales),
                           ("commands", CommandConfig), ("pushes", PushConfig)):
            if not isinstance(getattr(self, name), kind):
                raise ConfigError(f"{owner}.{name} must be a {kind.__name__}, got {type(getattr(self, name)).__name__}")

    @property
    def substeps(self) -> int:
        """Physics steps per control step (Playground's ``n_substeps``)."""
        return round(self.ctrl_dt / self.sim_dt)

    def noise_vector(self) -> np.ndarray:
        """(33,) level x scale of each noisy policy entry, in the policy observation's order
        (local linear velocity, gyro, gravity, 12 joint angles, 12 joint velocities)."""
        s, level = self.noise_scales, self.noise_level
        return level * np.repeat([s.linvel, s.gyro, s.gravity, s.joint_pos, s.joint_vel], [3, 3, 3, 12, 12])
