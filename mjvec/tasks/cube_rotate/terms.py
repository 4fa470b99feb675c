"""The pure functions of CubeRotate-v0: action mapping, reward terms, termination, observation.

Each takes and returns (N, ...) numpy arrays, has no state and no Python loop over envs, and uses
only elementwise operations, reductions and `np.where`, so it ports to torch one call for one.
Quaternions are MuJoCo's (w, x, y, z). Weights and thresholds come from `CubeRotateConfig`.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from mjvec import portable
from mjvec.contract import layout_size  # noqa: F401

# The shared quaternion helpers (env.py reaches them as ct.<name>).
from mjvec.rotations import canonical_quat, quat_conj, quat_mul, quat_rotate, rotation_vector  # noqa: F401
from mjvec.tasks.cube_rotate.config import CubeRotateConfig

NUM_HAND_JOINTS = 22
NUM_FINGERTIPS = 5
# The policy observation, in order: (block name, width). Joint positions are radians (so
# ObservationNoise on "joint_pos" is in radians); positions are metres, in the world frame.
POLICY_LAYOUT: tuple[tuple[str, int], ...] = (
    ("joint_pos", NUM_HAND_JOINTS),
    ("joint_vel", NUM_HAND_JOINTS),  # x CubeRotateConfig.joint_vel_obs_scale
    ("targets", NUM_HAND_JOINTS),  # the current PD targets (rad)
    ("cube_pos", 3),  # cube centre - palm centre
    ("cube_quat", 4),  # wxyz, sign chosen so that w >= 0
    ("cube_linvel", 3),
    ("cube_angvel", 3),
    ("fingertip_pos", 3 * NUM_FINGERTIPS),  # each fingertip - cube centre
    ("cube_half_size", 1),
)
REWARD_TERMS = ("rotation", "action", "energy", "drop")


def joint_targets(actions: np.ndarray, previous: np.ndarray, default: np.ndarray, lower: np.ndarray,
                  upper: np.ndarray, scale: float, ema: float) -> np.ndarray:
    """(N, J) PD targets: the absolute target default + a * gain with gain = scale * (upper - lower) / 2
    (`action_gain`), clipped to [lower, upper], moved to by the fraction `ema` from the previous
    targets (1: no smoothing). The policy contract states this arithmetic (offset + scale * a)."""
    target = np.clip(default + actions * action_gain(lower, upper, scale), lower, upper)
    return ema * target + (1.0 - ema) * previous


def action_gain(lower: np.ndarray, upper: np.ndarray, scale: float) -> np.ndarray:
    """(J,) the target change per unit action: scale * (upper - lower) / 2."""
    return scale * (0.5 * (upper - lower))


def world_angular_velocity(quat: np.ndarray, local_angvel: np.ndarray) -> np.ndarray:
    """(N, 3) angular velocity in the world frame from a free joint's (body-frame) qvel[3:6]."""
    return quat_rotate(quat, local_angvel)


def mean_angular_velocity(previous: np.ndarray, quat: np.ndarray, dt: float) -> np.ndarray:
    """(N, 3) world-frame angular velocity that turns orientation `previous` into `quat` (wxyz) in
    `dt` seconds: the rotation vector of quat * previous^-1, over dt (the step's mean velocity for a
    turn below pi per step)."""
    return rotation_vector(quat_mul(quat, quat_conj(previous))) / dt


def rotation_term(angvel_z: np.ndarray, clip: float) -> np.ndarray:
    """(N,) the cube's mean angular velocity about the world z axis over the step, clipped to
    [-clip, clip] (rad/s)."""
    return np.clip(angvel_z, -clip, clip)


def action_term(actions: np.ndarray) -> np.ndarray:
    """(N,) sum of squared actions."""
    return np.sum(actions * actions, axis=1)


def energy_term(torque: np.ndarray, joint_vel: np.ndarray) -> np.ndarray:
    """(N,) mechanical power of the joint drives, sum_j |tau_j * qdot_j| (W)."""
    return np.abs(torque * joint_vel).sum(axis=1)


def dropped(cube_pos: np.ndarray, palm_pos: np.ndarray, drop_depth: float, max_xy_distance: float) -> np.ndarray:
    """(N,) bool: the cube's centre is more than drop_depth below the palm centre, or farther than
    max_xy_distance from it horizontally."""
    rel = cube_pos - palm_pos
    return (rel[:, 2] < -drop_depth) | (portable.hypot(rel[:, 0], rel[:, 1]) > max_xy_distance)


def reward_terms(rotation: np.ndarray, action: np.ndarray, energy: np.ndarray, drop: np.ndarray, *,
                 control_dt: float, cfg: CubeRotateConfig) -> dict[str, np.ndarray]:
    """The weighted reward terms (`REWARD_TERMS`) of one step; the reward is their sum.

    rotation, action, energy: the unweighted terms above; drop: (N,) bool.
    """
    return {
        "rotation": cfg.rotation_weight * control_dt * rotation,
        "action": -cfg.action_weight * control_dt * action,
        "energy": -cfg.energy_weight * control_dt * energy,
        "drop": -cfg.drop_penalty * drop.astype(np.float64),
    }


def assemble(blocks: Mapping[str, np.ndarray], layout: tuple[tuple[str, int], ...], clip: float) -> np.ndarray:
    """(N, width) float32: the named (N, ...) blocks concatenated in `layout` order, clamped to +-clip."""
    n = next(iter(blocks.values())).shape[0]
    out = np.concatenate([np.asarray(blocks[name], np.float64).reshape(n, width) for name, width in layout], axis=1)
    return np.clip(out, -clip, clip).astype(np.float32)
