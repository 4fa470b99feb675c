"""Pure, vectorized math of the SimToolReal task, for either array namespace.

Everything here works on a leading batch axis (N envs), holds no state (the stateful tolerance
curriculum is `mjvec.tasks.simtoolreal.curriculum`) and runs in the namespace of its inputs: numpy on the host,
torch on a device (`mjvec.xp`), with the same formulas. Quaternions are wxyz (MuJoCo's order)
unless a name says xyzw; the observation uses xyzw like the source (`mjvec.rotations.wxyz_to_xyzw`).

Distance "sentinels": the source marks "best distance so far" buffers as -1 when they must be
re-initialised (episode start, new goal); the first evaluation then sets them to the current
distance, so the first step after a reset or goal change earns no progress reward. The
functions below keep that convention.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from mjvec.contract import layout_size, layout_slices  # noqa: F401  (reached as terms.<name>)
from mjvec.rotations import (  # noqa: F401  (the task's quaternion helpers, reached as terms.<name>)
    cross,
    quat_conj,
    quat_from_axis_angle,
    quat_mul,
    quat_normalize,
    quat_rotate,
    quat_to_mat,
    wxyz_to_xyzw,
    xyzw_to_wxyz,
)
from mjvec.xp import Rows, namespace_of

if TYPE_CHECKING:
    from mjvec.rng import EnvRandom
    from mjvec.tasks.simtoolreal.config import SimToolRealConfig

Array = Any  # an array of the caller's namespace (numpy, or torch on a device)

NUM_ARM_JOINTS = 7
NUM_JOINTS = 29
NUM_FINGERTIPS = 5
NUM_KEYPOINTS = 4
# Box corners (+,+,+), (+,+,-), (-,-,+), (-,-,-), as in the source's _object_keypoint_offsets.
KEYPOINT_SIGNS = np.array([[1, 1, 1], [1, 1, -1], [-1, -1, 1], [-1, -1, -1]], dtype=np.float64)


def _like(value: Any, like: Array) -> Array:
    """Host data (a constant, a config tuple) as an array in `like`'s namespace, dtype and device."""
    if isinstance(like, np.ndarray):
        return np.asarray(value, dtype=like.dtype)
    return namespace_of(like).asarray(value, dtype=like.dtype, device=like.device)


def object_com_velocity(v_origin: Array, w_world: Array, quat: Array, com: Array) -> Array:
    """(N, 3) world linear velocity of a body's centre of mass: v_origin + w x (R com).

    v_origin: (N, 3) world velocity of the body frame origin (a free joint's qvel[0:3]); w_world:
    (N, 3) world angular velocity; quat: (N, 4) wxyz body orientation; com: (N, 3) or (3,) the COM
    in the body frame (body_ipos).
    """
    xp = namespace_of(v_origin)
    return v_origin + cross(w_world, quat_rotate(quat, xp.broadcast_to(com, v_origin.shape)))


# ---- keypoints ----------------------------------------------------------------------------
def keypoint_offsets(dims: Array, keypoint_scale: float) -> Array:
    """(N, 4, 3) corner offsets in the object frame of boxes of size `dims` (N, 3) or (3,).

    Half-extents are keypoint_scale * dims / 2 (the source's keypointScale, 1.5).
    """
    return _like(KEYPOINT_SIGNS, dims) * (0.5 * keypoint_scale * dims)[..., None, :]


def keypoint_positions(pos: Array, quat: Array, offsets: Array) -> Array:
    """(N, 4, 3) world keypoints of poses pos (N, 3), quat (N, 4) wxyz with offsets (N|1, 4, 3)."""
    return keypoints_from_rot(pos, quat_to_mat(quat), offsets)


def keypoints_from_rot(pos: Array, rot: Array, offsets: Array) -> Array:
    """(N, 4, 3) world keypoints of poses pos (N, 3), rotation matrices rot (N, 3, 3), offsets (N|1, 4, 3)."""
    # The product with the rotation matrix written out (sum over j of offsets_j rot_ij, in j order):
    # cheaper than rotating each of the 4 offsets by the quaternion, and, unlike matmul (a BLAS call),
    # the same bits whatever BLAS kernel the CPU selects.
    r = rot[:, None]
    return pos[:, None, :] + (offsets[..., 0, None] * r[..., 0] + offsets[..., 1, None] * r[..., 1]
                              + offsets[..., 2, None] * r[..., 2])


def max_keypoint_distance(kp_a: Array, kp_b: Array) -> Array:
    """(N,) max over keypoints of the Euclidean distance between (N, K, 3) keypoint sets."""
    xp = namespace_of(kp_a)
    return xp.max(xp.linalg.vector_norm(kp_a - kp_b, axis=-1), axis=-1)


# ---- action pipeline ----------------------------------------------------------------------
def scale_to_limits(x: Array, lower: Array, upper: Array) -> Array:
    """Map [-1, 1] linearly onto [lower, upper] (the source's `scale`)."""
    return lower + 0.5 * (x + 1.0) * (upper - lower)


def unscale_from_limits(x: Array, lower: Array, upper: Array) -> Array:
    """Map [lower, upper] linearly onto [-1, 1] (the source's `unscale`)."""
    return (2.0 * x - upper - lower) / (upper - lower)


def compute_joint_targets(
    actions: Array,
    prev_targets: Array,
    lower: Array,
    upper: Array,
    *,
    arm_step: float,
    arm_moving_average: float,
    hand_moving_average: float,
    num_arm: int = NUM_ARM_JOINTS,
) -> Array:
    """New PD targets (N, 29) from actions (N, 29) in [-1, 1] and the previous targets.

    Arm (relative): clamp(prev + arm_step * a) to the limits, then EMA with the previous
    target. Hand (absolute): a mapped onto [lower, upper], EMA, then clamp. A final clamp of
    all joints follows, as in the source's pre_physics_step (arm clamped before smoothing,
    hand after).
    """
    xp = namespace_of(prev_targets)
    arm = xp.clip(prev_targets[:, :num_arm] + arm_step * actions[:, :num_arm], lower[:num_arm], upper[:num_arm])
    arm = arm_moving_average * arm + (1.0 - arm_moving_average) * prev_targets[:, :num_arm]
    hand = scale_to_limits(actions[:, num_arm:], lower[num_arm:], upper[num_arm:])
    hand = hand_moving_average * hand + (1.0 - hand_moving_average) * prev_targets[:, num_arm:]
    return xp.clip(xp.concat([arm, hand], axis=1), lower, upper)


# ---- reward terms (unweighted) -------------------------------------------------------------
def lift_terms(
    z: Array, z_spawn: Any, lifted_prev: Array, *, offset: float, clip: float, threshold: float,
) -> tuple[Array, Array, Array]:
    """Lift shaping, the one-time lift event and the latched `lifted` flag.

    z_spawn: each env's spawn height (N,), or one float. z_lift = z - z_spawn + offset;
    lifted = lifted_prev | (z_lift > threshold).
    Returns (clip(z_lift, 0, clip) * ~lifted, just_lifted = lifted & ~lifted_prev, lifted).
    """
    xp = namespace_of(z)
    z_lift = z - z_spawn + offset
    lifted = lifted_prev | (z_lift > threshold)
    just_lifted = lifted & ~lifted_prev
    return xp.where(lifted, 0.0, xp.clip(z_lift, 0.0, clip)), just_lifted, lifted


def approach_term(closest: Array, current: Array, lifted: Array, *, clip: float) -> tuple[Array, Array]:
    """Fingertip approach: sum over fingertips of clip(best - current, 0, clip), zero once lifted.

    closest, current: (N, F) distances fingertip -> object origin; closest < 0 marks "unset"
    (initialised to current, giving 0). Returns (term (N,), updated closest (N, F)).
    """
    xp = namespace_of(current)
    closest = xp.where(closest < 0.0, current, closest)
    delta = xp.where(lifted, 0.0, xp.sum(xp.clip(closest - current, 0.0, clip), axis=-1))
    return delta, xp.minimum(closest, current)


def keypoint_progress_term(closest: Array, dist: Array, lifted: Array, *, clip: float) -> tuple[Array, Array]:
    """Goal progress: clip(best - d, 0, clip) gated by `lifted`; best < 0 marks "unset".

    Returns (term (N,), updated best (N,)).
    """
    xp = namespace_of(dist)
    closest = xp.where(closest < 0.0, dist, closest)
    delta = xp.where(lifted, xp.clip(closest - dist, 0.0, clip), 0.0)
    return delta, xp.minimum(closest, dist)


def near_goal_update(
    near_goal_steps: Array, dist: Array, tolerance: Any, *, keypoint_scale: float, success_steps: int,
) -> tuple[Array, Array]:
    """Consecutive near-goal counter: +1 while d <= tolerance * keypoint_scale, else back to 0.

    tolerance: a scalar, host or device (0-d). Returns (updated counter (N,) int, success (N,)
    bool = counter >= success_steps).
    """
    xp = namespace_of(dist)
    near = dist <= tolerance * keypoint_scale
    steps = xp.where(near, near_goal_steps + 1, 0)
    return steps, steps >= success_steps


def joint_speed_penalties(
    qvel: Array, *, arm_weight: float, hand_weight: float, num_arm: int = NUM_ARM_JOINTS
) -> tuple[Array, Array]:
    """(-arm_weight * sum|qdot_arm|, -hand_weight * sum|qdot_hand|) for joint speeds (N, 29)."""
    xp = namespace_of(qvel)
    speed = xp.abs(qvel)
    return -arm_weight * xp.sum(speed[:, :num_arm], axis=-1), -hand_weight * xp.sum(speed[:, num_arm:], axis=-1)


# ---- goals --------------------------------------------------------------------------------
def first_goal(u: Array, quat: Array, low: Array, high: Array, min_z: Any) -> tuple[Array, Array]:
    """First goal of an episode from uniforms u (K, 3) in [0, 1) and a random quat (K, 4).

    Position uniform in the box [low, high], then z raised to at least min_z (a float, or (K,) per
    goal; the source's _clip_goal_z: the env's spawn z - lift offset + lift threshold).
    """
    xp = namespace_of(u)
    pos = low + u * (high - low)
    z = pos[:, 2:]
    if isinstance(min_z, float):
        z = xp.clip(z, min=min_z)
    else:
        min_z = xp.reshape(xp.astype(min_z, pos.dtype), (-1, 1))
        z = xp.where(z < min_z, min_z, z)
    return xp.concat([pos[:, :2], z], axis=1), quat


def delta_goal(
    prev_pos: Array, prev_quat: Array, offset: Array, axis_raw: Array, angle: Array, low: Array, high: Array,
) -> tuple[Array, Array]:
    """Next goal: prev_pos + offset clamped to [low, high], prev_quat * axis_angle(axis, angle).

    axis_raw (K, 3) is normalised here; the source draws it from U(0, 1)^3, so the axis always
    lies in the positive octant (a quirk kept on purpose). The delta rotation is applied in the
    goal's own frame (right-multiplied), as the source's quat_matrix @ delta_matrix.
    """
    xp = namespace_of(prev_pos)
    pos = xp.clip(prev_pos + offset, low, high)
    axis = axis_raw / xp.linalg.vector_norm(axis_raw, axis=-1, keepdims=True)
    quat = quat_mul(prev_quat, quat_from_axis_angle(axis, angle))
    return pos, quat_normalize(quat)


def sample_first_goal(rng: EnvRandom, rows: Rows, cfg: SimToolRealConfig, spawn_z: Any) -> tuple[Array, Array]:
    """Draw first goals for `rows` from their own streams: (pos (rows, 3), quat (rows, 4) wxyz).
    spawn_z: the rows' spawn heights ((rows,), or one float)."""
    u = rng.uniform(rows, "goal/first_pos", 0.0, 1.0, (3,))
    quat = rng.quaternion(rows, "goal/first_quat")
    if cfg.goal_min_height_above_spawn is None:  # the source's floor, in its order of operations
        min_z = spawn_z - cfg.lift_offset + cfg.lift_threshold
    else:
        min_z = spawn_z + cfg.goal_min_height_above_spawn
    return first_goal(u, quat, _like(cfg.goal_low, u), _like(cfg.goal_high, u), min_z)


def sample_delta_goal(
    rng: EnvRandom, rows: Rows, prev_pos: Array, prev_quat: Array, cfg: SimToolRealConfig
) -> tuple[Array, Array]:
    """Draw the next (delta) goals for `rows` after a success (prev_*: the selection's rows)."""
    offset = rng.uniform(rows, "goal/delta_pos", -cfg.goal_delta_pos, cfg.goal_delta_pos, (3,))
    axis_raw = rng.uniform(rows, "goal/delta_axis", 0.0, 1.0, (3,))
    xp = namespace_of(axis_raw)
    # Guard the measure-zero all-zero draw so normalising never divides by zero.
    axis_raw = xp.clip(axis_raw, min=1e-12)
    angle = rng.uniform(rows, "goal/delta_angle", -cfg.goal_delta_angle, cfg.goal_delta_angle)
    return delta_goal(prev_pos, prev_quat, offset, axis_raw, angle, _like(cfg.goal_low, offset),
                      _like(cfg.goal_high, offset))


# ---- observation layout -------------------------------------------------------------------
OBS_MODES = ("policy", "asymmetric")
# (name, size) blocks of the actor observation, in the source's obsList order.
POLICY_LAYOUT: tuple[tuple[str, int], ...] = (
    ("joint_pos", NUM_JOINTS),
    ("joint_vel", NUM_JOINTS),
    ("prev_action_targets", NUM_JOINTS),
    ("palm_pos", 3),
    ("palm_rot", 4),
    ("object_rot", 4),
    ("fingertip_pos_rel_palm", 3 * NUM_FINGERTIPS),
    ("keypoints_rel_palm", 3 * NUM_KEYPOINTS),
    ("keypoints_rel_goal", 3 * NUM_KEYPOINTS),
    ("object_scales", 3),
)
# The critic state, in the source's stateList order: the policy's terms (clean: true object pose,
# no observation noise or delay) with the palm and object velocities interleaved, then the
# privileged terms. Offsets (see `layout_slices`):
#   joint_pos 0:29, joint_vel 29:58, prev_action_targets 58:87, palm_pos 87:90, palm_rot 90:94,
#   palm_vel 94:100 (linear, angular), object_rot 100:104, object_vel 104:110 (linear at the COM,
#   angular), fingertip_pos_rel_palm 110:125, keypoints_rel_palm 125:137, keypoints_rel_goal 137:149,
#   object_scales 149:152, closest_keypoint_max_dist 152, closest_fingertip_dist 153:158,
#   lifted_object 158, progress 159, successes 160, reward 161.
CRITIC_LAYOUT: tuple[tuple[str, int], ...] = (
    ("joint_pos", NUM_JOINTS),
    ("joint_vel", NUM_JOINTS),
    ("prev_action_targets", NUM_JOINTS),
    ("palm_pos", 3),
    ("palm_rot", 4),
    ("palm_vel", 6),
    ("object_rot", 4),
    ("object_vel", 6),
    ("fingertip_pos_rel_palm", 3 * NUM_FINGERTIPS),
    ("keypoints_rel_palm", 3 * NUM_KEYPOINTS),
    ("keypoints_rel_goal", 3 * NUM_KEYPOINTS),
    ("object_scales", 3),
    ("closest_keypoint_max_dist", 1),
    ("closest_fingertip_dist", NUM_FINGERTIPS),
    ("lifted_object", 1),
    ("progress", 1),
    ("successes", 1),
    ("reward", 1),
)
