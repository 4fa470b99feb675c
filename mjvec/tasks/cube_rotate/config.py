"""Task constants of CubeRotate-v0 as one frozen, validated config.

Every weight, threshold and range the task uses lives here, so a variant of the task is a
`dataclasses.replace(CubeRotateConfig(), ...)` rather than an edit. A bad value raises `ConfigError`
naming the field, the value and what is allowed. Lengths are metres, angles radians, angular
velocities rad/s, times control steps unless a name says otherwise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

from mjvec.errors import ConfigError

_INTS = ("frame_skip", "max_episode_steps")
# Fields that must be > 0 (the others must be >= 0).
_POSITIVE = ("action_scale", "action_ema", "rotation_clip", "obs_clip", "drop_depth", "max_xy_distance")


@dataclass(frozen=True)
class CubeRotateConfig:
    """Constants of the CubeRotate task (the defaults are the registered task's).

    Timing: the physics runs at the scene's 100 Hz (`mjvec.tasks.cube_rotate.scene.TIMESTEP`); a control step
    is `frame_skip` substeps (20 Hz by default); an episode is truncated after `max_episode_steps`
    control steps (20 s).

    Action: absolute PD targets around the rest pose. Hand joint j is sent towards
    ``default_j + action_scale * a_j * (upper_j - lower_j) / 2``, clipped to its range, for the action
    a in [-1, 1]^22 (a = 0 holds the rest pose, fingertips on the cube); `action_ema` < 1 moves the
    targets only that fraction of the way per step (1: no smoothing).

    Reward per control step, each term weighted as below and listed in ``info["reward_terms"]``:
    rotation ``rotation_weight * clip(w_z, -rotation_clip, rotation_clip) * control_dt`` (w_z the
    cube's mean angular velocity about the world z axis over the step, from its turn since the
    previous step: with weight 1 an episode's rotation reward is the angle turned about z, in
    radians, up to the clip); action ``-action_weight * sum(a^2) * control_dt``;
    energy ``-energy_weight * sum_j |tau_j * qdot_j| * control_dt`` (the actuators' mechanical power,
    W); drop ``-drop_penalty`` on the step the cube is dropped.

    Drop (termination): the cube's centre is more than `drop_depth` below the palm's face, or more
    than `max_xy_distance` from the palm's centre horizontally.

    Reset: hand joints at the rest pose + U(-joint_pos_noise, joint_pos_noise) (clipped to the
    range), at rest; the cube resting on the palm at its spawn point + U(-cube_xy_noise,
    cube_xy_noise) in x and y, turned by a uniform yaw, at rest.

    Observation: `joint_vel_obs_scale` scales the joint velocities; every entry is clamped to
    +-obs_clip.
    """

    frame_skip: int = 5
    max_episode_steps: int = 400
    action_scale: float = 1.0
    action_ema: float = 1.0
    rotation_weight: float = 1.0
    rotation_clip: float = 3.0
    action_weight: float = 0.001
    energy_weight: float = 0.001
    drop_penalty: float = 5.0
    drop_depth: float = 0.04
    max_xy_distance: float = 0.15
    joint_pos_noise: float = 0.1
    cube_xy_noise: float = 0.005
    joint_vel_obs_scale: float = 0.1
    obs_clip: float = 10.0

    def __post_init__(self) -> None:
        for name in _INTS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"CubeRotateConfig.{name} must be an int >= 1, got {value!r}")
        for f in fields(self):
            if f.name in _INTS:
                continue
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ConfigError(f"CubeRotateConfig.{f.name} must be a finite float, got {value!r}")
            object.__setattr__(self, f.name, float(value))
            low = "> 0" if f.name in _POSITIVE else ">= 0"
            if value < 0 or (f.name in _POSITIVE and value == 0):
                raise ConfigError(f"CubeRotateConfig.{f.name} must be {low}, got {value!r}")
        for name in ("action_scale", "action_ema"):
            if getattr(self, name) > 1.0:
                raise ConfigError(f"CubeRotateConfig.{name} must be in (0, 1], got {getattr(self, name)!r}")
