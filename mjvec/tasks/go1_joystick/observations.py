"""The Go1 joystick observations: MuJoCo Playground's ``state`` (the policy's, 48) and
``privileged_state`` (the critic's, 123), as named blocks.

Sources (after a step: MuJoCo's outputs of the last substep's start, as Playground's, which reads
``data`` right after ``mjx.step``): the IMU site's gyro, local and global velocimeters and
accelerometer, the gravity direction in the IMU frame (its rotation transposed times (0, 0, -1)),
the leg joints' angles (minus the default pose) and velocities from qpos/qvel, the actuator forces,
the feet's global linear velocities, the kick force on the base (``xfrc_applied``).

What is shown of the task's own state is what Playground's step observes, BEFORE its end-of-step
updates (`Go1Shown`): the previous step's action, the command that this step's reward used (a
resample at this step shows from the next one on), the previous step's foot contacts, the feet's
air time including this step.

Noise (Playground's ``noise_config``): U(-1, 1) x level x scale on the linear velocity, gyro,
gravity, joint angles and joint velocities of the policy's state; the critic's state begins with
that same noisy policy state, as Playground's privileged state does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from mjvec.contract import layout_size
from mjvec.tasks.go1_joystick import kernels
from mjvec.tasks.go1_joystick.indices import NUM_JOINTS, Go1Indices
from mjvec.xp import namespace_of

__all__ = ["CRITIC_LAYOUT", "NOISY_WIDTH", "OBS_MODES", "POLICY_LAYOUT", "Go1Shown", "observation_space", "observe"]

Array = Any
OBS_MODES = ("policy", "asymmetric")
POLICY_LAYOUT: tuple[tuple[str, int], ...] = (
    ("linvel", 3),
    ("gyro", 3),
    ("gravity", 3),
    ("joint_pos", NUM_JOINTS),
    ("joint_vel", NUM_JOINTS),
    ("last_act", NUM_JOINTS),
    ("command", 3),
)
NOISY_WIDTH = 33  # the noisy leading blocks of POLICY_LAYOUT: linvel .. joint_vel
CRITIC_LAYOUT: tuple[tuple[str, int], ...] = (
    ("policy_state", layout_size(POLICY_LAYOUT)),
    ("clean_gyro", 3),
    ("accelerometer", 3),
    ("clean_gravity", 3),
    ("clean_linvel", 3),
    ("global_angvel", 3),
    ("clean_joint_pos", NUM_JOINTS),
    ("clean_joint_vel", NUM_JOINTS),
    ("actuator_force", NUM_JOINTS),
    ("last_contact", 4),
    ("feet_vel", 12),
    ("feet_air_time", 4),
    ("push_force", 3),
    ("push_due", 1),
)


@dataclass(eq=False)
class Go1Shown:
    """(N, ...) task state as the observation shows it (see the module docstring): last_act (N, 12),
    command (N, 3), last_contact (N, 4) bool, air_time (N, 4); noise (N, 33): this observation's
    noise draw (zero with noise off)."""

    last_act: Array
    command: Array
    last_contact: Array
    air_time: Array
    noise: Array


def sensor(sensordata: Array, idx: Go1Indices, name: str) -> Array:
    """(N, dim) of base sensor `name`."""
    adr, dim = idx.sensor[name]
    return sensordata[:, adr:adr + dim]


def gravity(site_xmat: Array, idx: Go1Indices) -> Array:
    """(N, 3) the world's down direction in the IMU frame: R^T (0, 0, -1) = -(third row of R)."""
    return -site_xmat[:, idx.imu_site, 6:9]


def clean_policy(qpos: Array, qvel: Array, sensordata: Array, site_xmat: Array, idx: Go1Indices,
                 shown: Go1Shown) -> dict[str, Array]:
    """The policy blocks without noise."""
    return {
        "linvel": sensor(sensordata, idx, "local_linvel"),
        "gyro": sensor(sensordata, idx, "gyro"),
        "gravity": gravity(site_xmat, idx),
        "joint_pos": qpos[:, 7:] - idx.default_pose,
        "joint_vel": qvel[:, 6:],
        "last_act": shown.last_act,
        "command": shown.command,
    }


def stack(layout: tuple[tuple[str, int], ...], blocks: dict[str, Array]) -> Array:
    """(N, width) float32: the named blocks concatenated in `layout` order."""
    first = next(iter(blocks.values()))
    xp, n = namespace_of(first), first.shape[0]
    return xp.concat([xp.astype(xp.reshape(blocks[name], (n, -1)), xp.float32) for name, _ in layout], axis=1)


def observe(qpos: Array, qvel: Array, sensordata: Array, site_xmat: Array, actuator_force: Array,
            push_force: Array, push_due: Array, idx: Go1Indices, shown: Go1Shown, critic: bool) -> Any:
    """(N, 48) float32 policy observation; with `critic`, {"policy": ..., "critic": (N, 123)}. On
    float64 numpy state this is `kernels.observe` (the same bits)."""
    if kernels.applies(qpos, qvel, sensordata, site_xmat, actuator_force, push_force, push_due, shown.last_act,
                       shown.command, shown.last_contact, shown.air_time, shown.noise, idx.default_pose):
        return kernels.observe(qpos, qvel, sensordata, site_xmat, actuator_force, push_force, push_due, idx, shown,
                               critic, layout_size(POLICY_LAYOUT), layout_size(CRITIC_LAYOUT))
    xp = namespace_of(qpos)
    clean = clean_policy(qpos, qvel, sensordata, site_xmat, idx, shown)
    policy = stack(POLICY_LAYOUT, clean)
    policy[:, :NOISY_WIDTH] += xp.astype(shown.noise, xp.float32)
    if not critic:
        return policy
    feet_vel = sensordata[:, idx.foot_vel_adr]
    privileged = {
        "policy_state": policy,
        "clean_gyro": clean["gyro"],
        "accelerometer": sensor(sensordata, idx, "accelerometer"),
        "clean_gravity": clean["gravity"],
        "clean_linvel": clean["linvel"],
        "global_angvel": sensor(sensordata, idx, "global_angvel"),
        "clean_joint_pos": clean["joint_pos"],
        "clean_joint_vel": clean["joint_vel"],
        "actuator_force": actuator_force,
        "last_contact": shown.last_contact,
        "feet_vel": feet_vel,
        "feet_air_time": shown.air_time,
        "push_force": push_force,
        "push_due": push_due,
    }
    return {"policy": policy, "critic": stack(CRITIC_LAYOUT, privileged)}


def observation_space(obs_mode: str) -> gym.Space:
    """Box(48) for "policy"; Dict(policy=Box(48), critic=Box(123)) for "asymmetric" (unbounded, as
    Playground's)."""
    policy = gym.spaces.Box(-np.inf, np.inf, (layout_size(POLICY_LAYOUT),), np.float32)
    if obs_mode == "policy":
        return policy
    critic = gym.spaces.Box(-np.inf, np.inf, (layout_size(CRITIC_LAYOUT),), np.float32)
    return gym.spaces.Dict({"policy": policy, "critic": critic})
