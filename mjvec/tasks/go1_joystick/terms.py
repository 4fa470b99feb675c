"""One step's reward terms and termination of the Go1 joystick task, from the shared locomotion terms
(`mjvec.tasks.locomotion`), in MuJoCo Playground's order and with its inputs (``Joystick._get_reward``)."""

from __future__ import annotations

from typing import Any

from mjvec import portable
from mjvec.tasks.go1_joystick import kernels
from mjvec.tasks.go1_joystick.config import Go1JoystickConfig
from mjvec.tasks.go1_joystick.indices import Go1Indices
from mjvec.tasks.go1_joystick.observations import sensor
from mjvec.tasks.locomotion import FeetStep, rewards
from mjvec.tasks.locomotion import feet as feet_terms
from mjvec.xp import namespace_of

__all__ = ["REWARD_TERMS", "fallen", "reward", "reward_terms", "weighted_reward"]

Array = Any
REWARD_TERMS = (
    "tracking_lin_vel", "tracking_ang_vel", "lin_vel_z", "ang_vel_xy", "orientation", "stand_still", "termination",
    "pose", "torques", "action_rate", "energy", "feet_slip", "feet_clearance", "feet_height", "feet_air_time",
    "dof_pos_limits",
)
MAX_REWARD = 10000.0  # Playground clips each step's reward (the weighted sum x control_dt) to [0, 1e4]


def fallen(sensordata: Array, idx: Go1Indices) -> Array:
    """(N,) bool: the base's z axis points below the horizon (Playground's fall termination)."""
    return sensor(sensordata, idx, "upvector")[:, 2] < 0.0


def reward_terms(cfg: Go1JoystickConfig, idx: Go1Indices, qpos: Array, qvel: Array, sensordata: Array,
                 site_xpos: Array, actuator_force: Array, action: Array, last_action: Array, command: Array,
                 feet: FeetStep, done: Array) -> dict[str, Array]:
    """Each term's unweighted (N,) value for this step (Playground's names)."""
    joint_pos, joint_vel = qpos[:, 7:], qvel[:, 6:]
    feet_vel = sensordata[:, idx.foot_vel_adr]
    foot_z = site_xpos[:, idx.foot_sites, 2]
    # The three exp terms in one call (portable.each: the same bits as one call each).
    tracking_lin_vel, tracking_ang_vel, pose = portable.each(
        portable.exp, rewards.tracking_lin_vel_exponent(command, sensor(sensordata, idx, "local_linvel"),
                                                        cfg.tracking_sigma),
        rewards.tracking_ang_vel_exponent(command, sensor(sensordata, idx, "gyro"), cfg.tracking_sigma),
        rewards.pose_exponent(joint_pos, idx.default_pose, idx.pose_weight))
    return {
        "tracking_lin_vel": tracking_lin_vel,
        "tracking_ang_vel": tracking_ang_vel,
        "lin_vel_z": rewards.lin_vel_z(sensor(sensordata, idx, "global_linvel")),
        "ang_vel_xy": rewards.ang_vel_xy(sensor(sensordata, idx, "global_angvel")),
        "orientation": rewards.orientation(sensor(sensordata, idx, "upvector")),
        "stand_still": rewards.stand_still(command, joint_pos, idx.default_pose),
        "termination": rewards.termination(done, joint_pos.dtype),
        "pose": pose,
        "torques": rewards.torques(actuator_force),
        "action_rate": rewards.action_rate(action, last_action),
        "energy": rewards.energy(joint_vel, actuator_force),
        "feet_slip": feet_terms.feet_slip(feet_vel, feet.contact, command),
        "feet_clearance": feet_terms.feet_clearance(feet_vel, foot_z, cfg.max_foot_height),
        "feet_height": feet_terms.feet_height(feet.swing_peak, feet.first_contact, command, cfg.max_foot_height),
        "feet_air_time": feet_terms.feet_air_time(feet.air_time, feet.first_contact, command),
        "dof_pos_limits": rewards.joint_pos_limits(joint_pos, idx.soft_lower, idx.soft_upper),
    }


def reward(cfg: Go1JoystickConfig, terms: dict[str, Array]) -> tuple[Array, dict[str, Array]]:
    """(reward (N,), weighted terms): clip(sum of weight x term, 0, 1e4) x control_dt, as Playground's."""
    scales = cfg.reward_scales.as_dict()
    weighted = {name: scales[name] * terms[name] for name in REWARD_TERMS}
    total = sum(weighted.values())
    xp = namespace_of(total)
    return xp.clip(total * cfg.ctrl_dt, 0.0, MAX_REWARD), weighted


def weighted_reward(cfg: Go1JoystickConfig, idx: Go1Indices, qpos: Array, qvel: Array, sensordata: Array,
                    site_xpos: Array, actuator_force: Array, action: Array, last_action: Array, command: Array,
                    feet: FeetStep, done: Array) -> tuple[Array, dict[str, Array]]:
    """`reward(cfg, reward_terms(...))`: (reward (N,), the weighted terms by name). On float64 numpy
    state it is `kernels.reward`, the same bits in one pass."""
    arrays = (qpos, qvel, sensordata, site_xpos, actuator_force, action, last_action, command, feet.air_time,
              feet.swing_peak, feet.contact, feet.first_contact, done, idx.default_pose, idx.pose_weight,
              idx.soft_lower, idx.soft_upper)
    if kernels.applies(*arrays):
        return kernels.reward(cfg, idx, qpos, qvel, sensordata, site_xpos, actuator_force, action, last_action,
                              command, feet, done, REWARD_TERMS, MAX_REWARD)
    return reward(cfg, reward_terms(cfg, idx, qpos, qvel, sensordata, site_xpos, actuator_force, action,
                                    last_action, command, feet, done))
