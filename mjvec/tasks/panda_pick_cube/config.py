"""The constants of PandaPickCube as one frozen, validated config: MuJoCo Playground's
``franka_emika_panda/pick.py`` ``default_config()`` (its names, its defaults) plus the reset ranges,
the reach distance and the workspace bound its ``reset``, ``_get_reward`` and ``step`` write
inline. A variant is ``dataclasses.replace(PandaPickCubeConfig(), ...)``; a bad value raises
`ConfigError` naming the field, the value and what is allowed."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from mjvec.errors import ConfigError
from mjvec.tasks.locomotion.checks import TermWeights, episode_timing, real, real_range

__all__ = ["PandaPickCubeConfig", "RewardScales"]


@dataclass(frozen=True)
class RewardScales(TermWeights):
    """The weight of each reward term (Playground's ``reward_config.scales``; 0 turns a term off).
    The reward is clip(sum of weight x term, -1e4, 1e4), not scaled by the control step."""

    gripper_box: float = 4.0
    box_target: float = 8.0
    no_floor_collision: float = 0.25
    robot_target_qpos: float = 0.3


@dataclass(frozen=True)
class PandaPickCubeConfig:
    """Constants of the Panda pick-cube task (defaults: Playground's).

    Timing: control every `ctrl_dt` s, physics every `sim_dt` s (ctrl_dt / sim_dt substeps, an
    integer); episodes of `episode_length` control steps.
    Control: each step moves the 8 position targets (7 arm joints, the gripper) by `action_scale` x
    action (action in [-1, 1]^8) from the previous targets, clipped to the actuators' ctrlrange.
    Reset (Playground's ``reset``): the "home" keyframe with the box moved by U(-`box_xy_range`,
    `box_xy_range`) m in x and y; the target at the box's home position + U(-`target_xy_range`,
    `target_xy_range`) m in x and y and + U(`target_z_range`) m in z; with `sample_orientation`
    (Playground's PandaPickCubeOrientation) the target is also turned by U(0, `max_target_angle`)
    rad about an axis drawn uniformly from [-1, 1]^3 and normalised (else it is never turned).
    Rewards: `reward_scales`; the box-to-target term counts once the gripper site has come within
    `reach_distance` m of the box (Playground's ``reached_box``, kept for the episode).
    Termination: the box's position leaves [-`workspace_bound`, `workspace_bound`]^3 or its z goes
    below 0, or the state is NaN.
    """

    ctrl_dt: float = 0.02
    sim_dt: float = 0.005
    episode_length: int = 150
    action_scale: float = 0.04
    reward_scales: RewardScales = field(default_factory=RewardScales)
    box_xy_range: float = 0.2
    target_xy_range: float = 0.2
    target_z_range: tuple[float, float] = (0.2, 0.4)
    reach_distance: float = 0.012
    workspace_bound: float = 1.0
    sample_orientation: bool = False
    max_target_angle: float = math.radians(45.0)

    def __post_init__(self) -> None:
        owner = type(self).__name__
        for name in ("ctrl_dt", "sim_dt", "action_scale", "reach_distance", "workspace_bound"):
            object.__setattr__(self, name, real(owner, name, getattr(self, name), positive=True))
        if not isinstance(self.sample_orientation, bool):
            raise ConfigError(f"{owner}.sample_orientation must be True or False, got {self.sample_orientation!r}")
        object.__setattr__(self, "max_target_angle", real(owner, "max_target_angle", self.max_target_angle, low=0.0,
                                                          high=math.pi))
        for name in ("box_xy_range", "target_xy_range"):
            object.__setattr__(self, name, real(owner, name, getattr(self, name), low=0.0))
        object.__setattr__(self, "target_z_range", real_range(owner, "target_z_range", self.target_z_range))
        object.__setattr__(self, "episode_length", episode_timing(owner, self.episode_length, self.ctrl_dt,
                                                                  self.sim_dt))
        if not isinstance(self.reward_scales, RewardScales):
            raise ConfigError(
                f"{owner}.reward_scales must be a RewardScales, got {type(self.reward_scales).__name__}")

    @property
    def substeps(self) -> int:
        """Physics steps per control step (Playground's ``n_substeps``)."""
        return round(self.ctrl_dt / self.sim_dt)
