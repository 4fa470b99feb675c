"""Base-motion, pose and regularisation reward terms of MuJoCo Playground's locomotion tasks, unweighted.

Each is a pure function of (N, ...) arrays returning (N,) values in the inputs' namespace (numpy or
torch); names are Playground's (``_reward_<name>`` / ``_cost_<name>``). Frames: "local" is the base
(IMU) frame, "global" the world frame; command is (N, 3) = (lin x, lin y, yaw rate) in the base frame.
"""

from __future__ import annotations

from typing import Any

from mjvec import portable
from mjvec.tasks.locomotion.feet import moving
from mjvec.xp import namespace_of

__all__ = [
    "action_rate",
    "ang_vel_xy",
    "energy",
    "joint_pos_limits",
    "lin_vel_z",
    "orientation",
    "pose",
    "pose_exponent",
    "stand_still",
    "termination",
    "torques",
    "tracking_ang_vel",
    "tracking_ang_vel_exponent",
    "tracking_lin_vel",
    "tracking_lin_vel_exponent",
]

Array = Any


def tracking_lin_vel(command: Array, local_linvel: Array, sigma: float) -> Array:
    """exp(-|command_xy - v_xy|^2 / sigma), v the base's local linear velocity (N, 3)."""
    return portable.exp(tracking_lin_vel_exponent(command, local_linvel, sigma))


def tracking_lin_vel_exponent(command: Array, local_linvel: Array, sigma: float) -> Array:
    """`tracking_lin_vel`'s exponent, -|command_xy - v_xy|^2 / sigma (for `portable.each`)."""
    xp = namespace_of(local_linvel)
    return -xp.sum((command[:, :2] - local_linvel[:, :2]) ** 2, axis=-1) / sigma


def tracking_ang_vel(command: Array, gyro: Array, sigma: float) -> Array:
    """exp(-(command_yaw - w_z)^2 / sigma), w the base's local angular velocity (gyro, N x 3)."""
    return portable.exp(tracking_ang_vel_exponent(command, gyro, sigma))


def tracking_ang_vel_exponent(command: Array, gyro: Array, sigma: float) -> Array:
    """`tracking_ang_vel`'s exponent, -(command_yaw - w_z)^2 / sigma (for `portable.each`)."""
    return -((command[:, 2] - gyro[:, 2]) ** 2) / sigma


def lin_vel_z(global_linvel: Array) -> Array:
    """The squared vertical base velocity."""
    return global_linvel[:, 2] ** 2


def ang_vel_xy(global_angvel: Array) -> Array:
    """The squared roll and pitch rates of the base (world frame)."""
    xp = namespace_of(global_angvel)
    return xp.sum(global_angvel[:, :2] ** 2, axis=-1)


def orientation(upvector: Array) -> Array:
    """|up_xy|^2 of the base's z axis in the world frame (0 when level)."""
    xp = namespace_of(upvector)
    return xp.sum(upvector[:, :2] ** 2, axis=-1)


def torques(force: Array) -> Array:
    """|tau|_2 + |tau|_1 of the actuator forces (N, nu)."""
    xp = namespace_of(force)
    return xp.sqrt(xp.sum(force**2, axis=-1)) + xp.sum(xp.abs(force), axis=-1)


def energy(joint_vel: Array, force: Array) -> Array:
    """sum |qdot| |tau| over the actuated joints (N, nu each)."""
    xp = namespace_of(force)
    return xp.sum(xp.abs(joint_vel) * xp.abs(force), axis=-1)


def action_rate(action: Array, last_action: Array) -> Array:
    """|a_t - a_{t-1}|^2."""
    xp = namespace_of(action)
    return xp.sum((action - last_action) ** 2, axis=-1)


def pose(joint_pos: Array, default_pose: Array, weight: Array) -> Array:
    """exp(-sum w (q - q_default)^2): near 1 close to the default pose."""
    return portable.exp(pose_exponent(joint_pos, default_pose, weight))


def pose_exponent(joint_pos: Array, default_pose: Array, weight: Array) -> Array:
    """`pose`'s exponent, -sum w (q - q_default)^2 (for `portable.each`)."""
    xp = namespace_of(joint_pos)
    return -xp.sum((joint_pos - default_pose) ** 2 * weight, axis=-1)


def stand_still(command: Array, joint_pos: Array, default_pose: Array) -> Array:
    """sum |q - q_default| where the command is a standing one (norm < 0.01), else 0."""
    xp = namespace_of(joint_pos)
    deviation = xp.sum(xp.abs(joint_pos - default_pose), axis=-1)
    return deviation * xp.astype(~moving(command), deviation.dtype)


def termination(done: Array, dtype: Any) -> Array:
    """1 where the episode terminated (a fall), else 0, as `dtype`."""
    return namespace_of(done).astype(done, dtype)


def joint_pos_limits(joint_pos: Array, soft_lower: Array, soft_upper: Array) -> Array:
    """How far the joints are outside their soft limits, summed (0 inside)."""
    xp = namespace_of(joint_pos)
    below = -xp.clip(joint_pos - soft_lower, max=0.0)
    above = xp.clip(joint_pos - soft_upper, min=0.0)
    return xp.sum(below + above, axis=-1)
