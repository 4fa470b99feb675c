"""The LeapCubeReorient observations: MuJoCo Playground's ``state`` (the policy's, 41 + 16 with
history_len = 1) and ``privileged_state`` (the critic's, policy + 71), as named blocks.

Policy (``_get_obs``'s ``state``): the noisy joint angles (16), the history of noisy joint angle -
motor target (16 x H), of palm - noisy cube position (3 x H), of the last six entries of the
rotation matrix of noisy cube quat x goal quat^-1 (6 x H), the previous action (16). Histories are
newest first (Playground rolls them and writes the front). Critic: the policy state, the clean
joint angles and velocities, the fingertips relative to the palm's grasp site (12), the clean palm
- cube offset (3) and orientation-error entries (6), the cube's linear and angular velocity, the
perturbation direction (6; zero with perturbations off, their default) and the cube's applied
wrench (``xfrc_applied``, 6).

The observed pose is taken after the physics from MuJoCo's sensors (cube and goal frame sensors,
the palm site), as Playground's, which reads ``data`` right after ``mjx.step``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from mjvec.contract import layout_size
from mjvec.rotations import quat_conj, quat_mul, quat_to_mat_mj
from mjvec.tasks.leap_cube_reorient.terms import NUM_JOINTS, LeapIndices
from mjvec.xp import namespace_of

__all__ = ["OBS_MODES", "LeapObserved", "critic_layout", "observation_space", "observe", "ori_entries",
           "policy_layout", "stack"]

Array = Any
OBS_MODES = ("policy", "asymmetric")


def policy_layout(history_len: int) -> tuple[tuple[str, int], ...]:
    """The policy state's blocks for `history_len` steps of history."""
    return (("joint_pos", NUM_JOINTS), ("joint_error_history", NUM_JOINTS * history_len),
            ("cube_pos_error_history", 3 * history_len), ("cube_ori_error_history", 6 * history_len),
            ("last_act", NUM_JOINTS))


def critic_layout(history_len: int) -> tuple[tuple[str, int], ...]:
    """The privileged state's blocks."""
    return (("policy_state", layout_size(policy_layout(history_len))), ("clean_joint_pos", NUM_JOINTS),
            ("joint_vel", NUM_JOINTS), ("fingertips", 12), ("clean_cube_pos_error", 3),
            ("clean_cube_ori_error", 6), ("cube_linvel", 3), ("cube_angvel", 3), ("pert_dir", 6),
            ("cube_wrench", 6))


@dataclass(eq=False)
class LeapObserved:
    """(N, ...) what the next observation shows of the task state: joint_pos (N, 16) the noisy
    joint angles; joint_history (N, 16 H), pos_history (N, 3 H), ori_history (N, 6 H); last_act
    (N, 16) the action before the step just taken."""

    joint_pos: Array
    joint_history: Array
    pos_history: Array
    ori_history: Array
    last_act: Array


def ori_entries(quat: Array, goal: Array) -> Array:
    """(N, 6) the rotation matrix of quat x goal^-1 (MJX's ``quat_to_mat``: the squares-summed form,
    `quat_to_mat_mj`), row-major, without its first row."""
    xp = namespace_of(quat)
    mat = quat_to_mat_mj(quat_mul(quat, quat_conj(goal)))
    return xp.reshape(mat, (mat.shape[0], 9))[:, 3:]


def stack(layout: tuple[tuple[str, int], ...], blocks: dict[str, Array]) -> Array:
    """(N, width) float32: the named blocks concatenated in `layout` order."""
    first = next(iter(blocks.values()))
    xp, n = namespace_of(first), first.shape[0]
    return xp.concat([xp.astype(xp.reshape(blocks[name], (n, -1)), xp.float32) for name, _ in layout], axis=1)


def observe(qpos: Array, qvel: Array, sensordata: Array, cube_wrench: Array, pert_dir: Array, idx: LeapIndices,
            shown: LeapObserved, history_len: int, critic: bool) -> Any:
    """(N, policy width) float32 policy observation; with `critic`, {"policy": ..., "critic": ...}."""
    policy = stack(policy_layout(history_len), {
        "joint_pos": shown.joint_pos, "joint_error_history": shown.joint_history,
        "cube_pos_error_history": shown.pos_history, "cube_ori_error_history": shown.ori_history,
        "last_act": shown.last_act})
    if not critic:
        return policy
    cube_pos, cube_quat = idx.read(sensordata, "cube_position"), idx.read(sensordata, "cube_orientation")
    privileged = {
        "policy_state": policy,
        "clean_joint_pos": qpos[:, :NUM_JOINTS],
        "joint_vel": qvel[:, :NUM_JOINTS],
        "fingertips": sensordata[:, idx.fingertip_adr],
        "clean_cube_pos_error": idx.read(sensordata, "palm_position") - cube_pos,
        "clean_cube_ori_error": ori_entries(cube_quat, idx.read(sensordata, "cube_goal_orientation")),
        "cube_linvel": idx.read(sensordata, "cube_linvel"),
        "cube_angvel": idx.read(sensordata, "cube_angvel"),
        "pert_dir": pert_dir,
        "cube_wrench": cube_wrench,
    }
    return {"policy": policy, "critic": stack(critic_layout(history_len), privileged)}


def observation_space(obs_mode: str, history_len: int) -> gym.Space:
    """Box(policy width) for "policy"; Dict(policy=..., critic=...) for "asymmetric" (unbounded, as
    Playground's)."""
    policy = gym.spaces.Box(-np.inf, np.inf, (layout_size(policy_layout(history_len)),), np.float32)
    if obs_mode == "policy":
        return policy
    critic = gym.spaces.Box(-np.inf, np.inf, (layout_size(critic_layout(history_len)),), np.float32)
    return gym.spaces.Dict({"policy": policy, "critic": critic})
