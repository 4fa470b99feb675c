"""The constants of LeapCubeReorient as one frozen, validated config: MuJoCo Playground's
``leap_hand/reorient.py`` ``default_config()`` (its names, its defaults) plus the reset and goal
ranges its ``reset`` and ``step`` write inline. A variant is ``dataclasses.replace(
LeapCubeReorientConfig(), ...)``; a bad value raises `ConfigError` naming the field, the value and
what is allowed."""

from __future__ import annotations

from dataclasses import dataclass, field

from mjvec.errors import ConfigError, is_int
from mjvec.tasks.locomotion.checks import NoiseScalesBase, TermWeights, real, real_range, real_tuple

__all__ = ["LeapCubeReorientConfig", "LeapNoiseScales", "LeapRewardScales"]


@dataclass(frozen=True)
class LeapNoiseScales(NoiseScalesBase):
    """Observation noise per block (Playground's ``obs_noise.scales``), each times the level:
    joint angles + U(-1, 1) x `joint_pos` rad, cube position + U(-1, 1) x `cube_pos` m, the cube's
    quaternion + N(0, 1) x `cube_ori` per component, then renormalised."""

    joint_pos: float = 0.05
    cube_pos: float = 0.02
    cube_ori: float = 0.1


@dataclass(frozen=True)
class LeapRewardScales(TermWeights):
    """The weight of each reward term (Playground's ``reward_config.scales``; 0 turns a term off).
    The reward is (sum of weight x term) x control_dt + success_reward x success (no clip)."""

    orientation: float = 5.0
    position: float = 0.5
    termination: float = -100.0
    hand_pose: float = -0.5
    action_rate: float = -0.001
    joint_vel: float = 0.0
    energy: float = -1e-3


@dataclass(frozen=True)
class LeapCubeReorientConfig:
    """Constants of the LEAP cube reorientation task (defaults: Playground's).

    Timing: control every `ctrl_dt` s, physics every `sim_dt` s (an integer ratio); episodes of
    `episode_length` control steps.
    Control (relative): targets = clip(ctrl + `action_scale` x action, ctrlrange), then the
    `ema_alpha` blend with the previous targets (1: none).
    Success: the cube within `success_threshold` rad of the goal orientation; it pays
    `success_reward` and spins the goal on (below).
    Observation: `history_len` steps of the error histories; noise `noise_level` x `noise_scales`;
    with probability `random_ori_injection_prob` per step (times the level) the observed cube pose
    is replaced by a random one (position U(-0.5, 0.5) m, a uniform rotation).
    Reset (Playground's ``reset``): hand joints default + N(0, `hand_pose_std`) clipped to the
    ctrlrange, at rest; the cube at `cube_start` + U(-`cube_start_jitter`, `cube_start_jitter`) m
    per axis, a uniform orientation, at rest; a uniform goal orientation.
    Goal (Playground's ``step``): an angular velocity w (rad/s, 3) rotates the goal by w x
    `goal_spin_dt_factor` x control_dt every step; on success w <- `goal_spin_base` + U(-`goal_spin_jitter`,
    `goal_spin_jitter`) per axis, otherwise w <- `goal_spin_decay` x w.
    Perturbations (Playground's ``pert_config``, off by default as there): with `pert_enable`, every
    `pert_wait_steps` steps (drawn per episode, an int in [low, high)) a force and torque push the cube
    for `pert_duration_steps` steps (likewise drawn) along a random unit 6-vector, shaped by a half
    sine, scaled by the cube's mass and a velocity change drawn per episode in
    `pert_linear_velocity` (m/s) and `pert_angular_velocity` (rad/s) from ONE uniform draw, as
    Playground's (its two draws share a key).
    """

    ctrl_dt: float = 0.05
    sim_dt: float = 0.01
    action_scale: float = 0.5
    ema_alpha: float = 1.0
    episode_length: int = 1000
    success_threshold: float = 0.1
    history_len: int = 1
    noise_level: float = 1.0
    noise_scales: LeapNoiseScales = field(default_factory=LeapNoiseScales)
    random_ori_injection_prob: float = 0.0
    reward_scales: LeapRewardScales = field(default_factory=LeapRewardScales)
    success_reward: float = 100.0
    hand_pose_std: float = 0.1
    cube_start: tuple[float, float, float] = (0.1, 0.0, 0.05)
    cube_start_jitter: float = 0.01
    goal_spin_base: float = 3.0
    goal_spin_jitter: float = 2.0
    goal_spin_decay: float = 0.8
    goal_spin_dt_factor: float = 2.0
    pert_enable: bool = False
    pert_linear_velocity: tuple[float, float] = (0.0, 3.0)
    pert_angular_velocity: tuple[float, float] = (0.0, 0.5)
    pert_duration_steps: tuple[int, int] = (1, 100)
    pert_wait_steps: tuple[int, int] = (60, 150)

    def __post_init__(self) -> None:
        owner = type(self).__name__
        for name in ("ctrl_dt", "sim_dt", "action_scale", "success_threshold"):
            object.__setattr__(self, name, real(owner, name, getattr(self, name), positive=True))
        for name in ("noise_level", "hand_pose_std", "cube_start_jitter", "goal_spin_jitter", "goal_spin_dt_factor"):
            object.__setattr__(self, name, real(owner, name, getattr(self, name), low=0.0))
        for name in ("ema_alpha", "random_ori_injection_prob", "goal_spin_decay"):
            object.__setattr__(self, name, real(owner, name, getattr(self, name), low=0.0, high=1.0))
        object.__setattr__(self, "success_reward", real(owner, "success_reward", self.success_reward))
        object.__setattr__(self, "goal_spin_base", real(owner, "goal_spin_base", self.goal_spin_base))
        object.__setattr__(self, "cube_start", real_tuple(owner, "cube_start", self.cube_start, 3))
        for name in ("episode_length", "history_len"):
            value = getattr(self, name)
            if not is_int(value) or value < 1:
                raise ConfigError(f"{owner}.{name} must be an int >= 1, got {value!r}")
            object.__setattr__(self, name, int(value))
        if not isinstance(self.pert_enable, bool):
            raise ConfigError(f"{owner}.pert_enable must be True or False, got {self.pert_enable!r}")
        for name in ("pert_linear_velocity", "pert_angular_velocity"):
            object.__setattr__(self, name, real_range(owner, name, getattr(self, name)))
        for name in ("pert_duration_steps", "pert_wait_steps"):
            value = getattr(self, name)
            if (isinstance(value, (str, bytes)) or not isinstance(value, (tuple, list)) or len(value) != 2
                    or not all(is_int(v) for v in value) or not 1 <= value[0] < value[1]):
                raise ConfigError(f"{owner}.{name} must be (low, high) ints with 1 <= low < high (high excluded, as "
                                  f"Playground's randint), got {value!r}")
            object.__setattr__(self, name, (int(value[0]), int(value[1])))
        ratio = self.ctrl_dt / self.sim_dt
        if abs(ratio - round(ratio)) > 1e-9 or round(ratio) < 1:
            raise ConfigError(
                f"{owner}: ctrl_dt / sim_dt must be a whole number of substeps >= 1, got {self.ctrl_dt} / "
                f"{self.sim_dt} = {ratio:.6g}"
            )
        for name, kind in (("noise_scales", LeapNoiseScales), ("reward_scales", LeapRewardScales)):
            if not isinstance(getattr(self, name), kind):
                raise ConfigError(f"{owner}.{name} must be a {kind.__name__}, got {type(getattr(self, name)).__name__}")

    @property
    def substeps(self) -> int:
        """Physics steps per control step (Playground's ``n_substeps``)."""
        return round(self.ctrl_dt / self.sim_dt)
