"""Pure, vectorized numpy math of the SimToolReal task (reference/simtoolreal.md §1, §3).

Everything here works on a leading batch axis (N envs) and holds no state (the stateful
tolerance curriculum is `mjvec.envs.curriculum`). Quaternions are wxyz (MuJoCo's order) unless a name says xyzw; the
observation uses xyzw like the source (`wxyz_to_xyzw`).

Distance "sentinels": the source marks "best distance so far" buffers as -1 when they must be
re-initialised (episode start, new goal); the first evaluation then sets them to the current
distance, so the first step after a reset or goal change earns no progress reward. The
functions below keep that convention.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from mjvec.envs.config import SimToolRealConfig
    from mjvec.rng import EnvRandom

NUM_ARM_JOINTS = 7
NUM_JOINTS = 29
NUM_FINGERTIPS = 5
NUM_KEYPOINTS = 4
# Box corners (+,+,+), (+,+,-), (-,-,+), (-,-,-), as in the source's _object_keypoint_offsets.
KEYPOINT_SIGNS = np.array([[1, 1, 1], [1, 1, -1], [-1, -1, 1], [-1, -1, -1]], dtype=np.float64)


# ---- quaternions (wxyz) -------------------------------------------------------------------
def quat_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product a*b of (..., 4) wxyz quaternions (broadcasting), like mju_mulQuat."""
    aw, ax, ay, az = a[..., 0], a[..., 1], a[..., 2], a[..., 3]
    bw, bx, by, bz = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
    return np.stack(
        [
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ],
        axis=-1,
    )


def quat_conj(q: np.ndarray) -> np.ndarray:
    """Conjugate of (..., 4) wxyz quaternions (the inverse for unit quaternions)."""
    return q * np.array([1.0, -1.0, -1.0, -1.0])


def cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cross product of (..., 3) vectors (broadcasting); np.cross's overhead dominates at this size."""
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    return np.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)


def quat_rotate(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Rotate (..., 3) vectors by (..., 4) unit wxyz quaternions (broadcasting), like mju_rotVecQuat."""
    w = q[..., :1]
    u = q[..., 1:]
    t = 2.0 * cross(u, v)
    return v + w * t + cross(u, t)


def quat_from_axis_angle(axis: np.ndarray, angle: np.ndarray) -> np.ndarray:
    """(..., 4) wxyz quaternions of a rotation by `angle` (...) about unit `axis` (..., 3)."""
    half = 0.5 * np.asarray(angle, dtype=np.float64)[..., None]
    return np.concatenate([np.cos(half), np.sin(half) * axis], axis=-1)


def quat_normalize(q: np.ndarray) -> np.ndarray:
    """Unit quaternions with a non-negative w (q and -q are the same rotation)."""
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    return np.where(q[..., :1] < 0.0, -q, q)


def wxyz_to_xyzw(q: np.ndarray) -> np.ndarray:
    return q[..., [1, 2, 3, 0]]


def xyzw_to_wxyz(q: np.ndarray) -> np.ndarray:
    return q[..., [3, 0, 1, 2]]


def object_com_velocity(v_origin: np.ndarray, w_world: np.ndarray, quat: np.ndarray, com: np.ndarray) -> np.ndarray:
    """(N, 3) world linear velocity of a body's centre of mass: v_origin + w x (R com).

    v_origin: (N, 3) world velocity of the body frame origin (a free joint's qvel[0:3]); w_world:
    (N, 3) world angular velocity; quat: (N, 4) wxyz body orientation; com: (N, 3) or (3,) the COM
    in the body frame (body_ipos).
    """
    return v_origin + cross(w_world, quat_rotate(quat, np.broadcast_to(com, v_origin.shape)))


# ---- keypoints ----------------------------------------------------------------------------
def keypoint_offsets(dims: np.ndarray, keypoint_scale: float) -> np.ndarray:
    """(N, 4, 3) corner offsets in the object frame of boxes of size `dims` (N, 3) or (3,).

    Half-extents are keypoint_scale * dims / 2 (the source's keypointScale, 1.5).
    """
    dims = np.asarray(dims, dtype=np.float64)
    return KEYPOINT_SIGNS * (0.5 * keypoint_scale * dims)[..., None, :]


def quat_to_mat(q: np.ndarray) -> np.ndarray:
    """(N, 3, 3) rotation matrices of (N, 4) unit wxyz quaternions, like mju_quat2Mat."""
    w, x, y, z = q[:, 0], q[:, 1], q[:, 2], q[:, 3]
    out = np.empty((q.shape[0], 3, 3))
    out[:, 0, 0] = 1 - 2 * (y * y + z * z)
    out[:, 0, 1] = 2 * (x * y - w * z)
    out[:, 0, 2] = 2 * (x * z + w * y)
    out[:, 1, 0] = 2 * (x * y + w * z)
    out[:, 1, 1] = 1 - 2 * (x * x + z * z)
    out[:, 1, 2] = 2 * (y * z - w * x)
    out[:, 2, 0] = 2 * (x * z - w * y)
    out[:, 2, 1] = 2 * (y * z + w * x)
    out[:, 2, 2] = 1 - 2 * (x * x + y * y)
    return out


def keypoint_positions(pos: np.ndarray, quat: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """(N, 4, 3) world keypoints of poses pos (N, 3), quat (N, 4) wxyz with offsets (N|1, 4, 3)."""
    return keypoints_from_rot(pos, quat_to_mat(quat), offsets)


def keypoints_from_rot(pos: np.ndarray, rot: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """(N, 4, 3) world keypoints of poses pos (N, 3), rotation matrices rot (N, 3, 3), offsets (N|1, 4, 3)."""
    # One batched matmul with the rotation matrix: several times cheaper than rotating each of
    # the 4 offsets by the quaternion.
    return pos[:, None, :] + np.matmul(offsets, rot.transpose(0, 2, 1))


def max_keypoint_distance(kp_a: np.ndarray, kp_b: np.ndarray) -> np.ndarray:
    """(N,) max over keypoints of the Euclidean distance between (N, K, 3) keypoint sets."""
    return np.linalg.norm(kp_a - kp_b, axis=-1).max(axis=-1)


# ---- action pipeline ----------------------------------------------------------------------
def scale_to_limits(x: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Map [-1, 1] linearly onto [lower, upper] (the source's `scale`)."""
    return lower + 0.5 * (x + 1.0) * (upper - lower)


def unscale_from_limits(x: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Map [lower, upper] linearly onto [-1, 1] (the source's `unscale`)."""
    return (2.0 * x - upper - lower) / (upper - lower)


def compute_joint_targets(
    actions: np.ndarray,
    prev_targets: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    *,
    arm_step: float,
    arm_moving_average: float,
    hand_moving_average: float,
    num_arm: int = NUM_ARM_JOINTS,
) -> np.ndarray:
    """New PD targets (N, 29) from actions (N, 29) in [-1, 1] and the previous targets.

    Arm (relative): clamp(prev + arm_step * a) to the limits, then EMA with the previous
    target. Hand (absolute): a mapped onto [lower, upper], EMA, then clamp. A final clamp of
    all joints follows, as in the source's pre_physics_step (arm clamped before smoothing,
    hand after).
    """
    out = np.empty_like(prev_targets)
    arm = np.clip(prev_targets[:, :num_arm] + arm_step * actions[:, :num_arm], lower[:num_arm], upper[:num_arm])
    out[:, :num_arm] = arm_moving_average * arm + (1.0 - arm_moving_average) * prev_targets[:, :num_arm]
    hand = scale_to_limits(actions[:, num_arm:], lower[num_arm:], upper[num_arm:])
    out[:, num_arm:] = hand_moving_average * hand + (1.0 - hand_moving_average) * prev_targets[:, num_arm:]
    np.clip(out, lower, upper, out=out)
    return out


# ---- reward terms (unweighted) -------------------------------------------------------------
def lift_terms(
    z: np.ndarray, z_spawn: float | np.ndarray, lifted_prev: np.ndarray, *, offset: float, clip: float,
    threshold: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Lift shaping, the one-time lift event and the latched `lifted` flag.

    z_lift = z - z_spawn + offset; lifted = lifted_prev | (z_lift > threshold).
    Returns (clip(z_lift, 0, clip) * ~lifted, just_lifted = lifted & ~lifted_prev, lifted).
    """
    z_lift = z - z_spawn + offset
    lifted = lifted_prev | (z_lift > threshold)
    just_lifted = lifted & ~lifted_prev
    return np.clip(z_lift, 0.0, clip) * ~lifted, just_lifted, lifted


def approach_term(
    closest: np.ndarray, current: np.ndarray, lifted: np.ndarray, *, clip: float
) -> tuple[np.ndarray, np.ndarray]:
    """Fingertip approach: sum over fingertips of clip(best - current, 0, clip), zero once lifted.

    closest, current: (N, F) distances fingertip -> object origin; closest < 0 marks "unset"
    (initialised to current, giving 0). Returns (term (N,), updated closest (N, F)).
    """
    closest = np.where(closest < 0.0, current, closest)
    delta = np.clip(closest - current, 0.0, clip).sum(axis=-1) * ~lifted
    return delta, np.minimum(closest, current)


def keypoint_progress_term(
    closest: np.ndarray, dist: np.ndarray, lifted: np.ndarray, *, clip: float
) -> tuple[np.ndarray, np.ndarray]:
    """Goal progress: clip(best - d, 0, clip) gated by `lifted`; best < 0 marks "unset".

    Returns (term (N,), updated best (N,)).
    """
    closest = np.where(closest < 0.0, dist, closest)
    delta = np.clip(closest - dist, 0.0, clip) * lifted
    return delta, np.minimum(closest, dist)


def near_goal_update(
    near_goal_steps: np.ndarray, dist: np.ndarray, tolerance: float, *, keypoint_scale: float,
    success_steps: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Consecutive near-goal counter: +1 while d <= tolerance * keypoint_scale, else back to 0.

    Returns (updated counter (N,) int, success (N,) bool = counter >= success_steps).
    """
    near = dist <= tolerance * keypoint_scale
    steps = np.where(near, near_goal_steps + 1, 0)
    return steps, steps >= success_steps


def joint_speed_penalties(
    qvel: np.ndarray, *, arm_weight: float, hand_weight: float, num_arm: int = NUM_ARM_JOINTS
) -> tuple[np.ndarray, np.ndarray]:
    """(-arm_weight * sum|qdot_arm|, -hand_weight * sum|qdot_hand|) for joint speeds (N, 29)."""
    speed = np.abs(qvel)
    return -arm_weight * speed[:, :num_arm].sum(axis=-1), -hand_weight * speed[:, num_arm:].sum(axis=-1)


# ---- goals --------------------------------------------------------------------------------
def first_goal(
    u: np.ndarray, quat: np.ndarray, low: np.ndarray, high: np.ndarray, min_z: float
) -> tuple[np.ndarray, np.ndarray]:
    """First goal of an episode from uniforms u (K, 3) in [0, 1) and a random quat (K, 4).

    Position uniform in the box [low, high], then z raised to at least min_z (the source's
    _clip_goal_z: spawn z - lift offset + lift threshold).
    """
    pos = low + u * (high - low)
    pos[:, 2] = np.maximum(pos[:, 2], min_z)
    return pos, quat.copy()


def delta_goal(
    prev_pos: np.ndarray, prev_quat: np.ndarray, offset: np.ndarray, axis_raw: np.ndarray,
    angle: np.ndarray, low: np.ndarray, high: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Next goal: prev_pos + offset clamped to [low, high], prev_quat * axis_angle(axis, angle).

    axis_raw (K, 3) is normalised here; the source draws it from U(0, 1)^3, so the axis always
    lies in the positive octant (a quirk kept on purpose). The delta rotation is applied in the
    goal's own frame (right-multiplied), as the source's quat_matrix @ delta_matrix.
    """
    pos = np.clip(prev_pos + offset, low, high)
    axis = axis_raw / np.linalg.norm(axis_raw, axis=-1, keepdims=True)
    quat = quat_mul(prev_quat, quat_from_axis_angle(axis, angle))
    return pos, quat_normalize(quat)


def sample_first_goal(
    rng: EnvRandom, env_ids: np.ndarray, cfg: SimToolRealConfig, spawn_z: float
) -> tuple[np.ndarray, np.ndarray]:
    """Draw first goals for `env_ids` from their own streams: (pos (K, 3), quat (K, 4) wxyz)."""
    u = rng.uniform(env_ids, "goal/first_pos", 0.0, 1.0, (3,))
    quat = rng.quaternion(env_ids, "goal/first_quat")
    min_z = spawn_z - cfg.lift_offset + cfg.lift_threshold
    return first_goal(u, quat, np.asarray(cfg.goal_low), np.asarray(cfg.goal_high), min_z)


def sample_delta_goal(
    rng: EnvRandom, env_ids: np.ndarray, prev_pos: np.ndarray, prev_quat: np.ndarray, cfg: SimToolRealConfig
) -> tuple[np.ndarray, np.ndarray]:
    """Draw the next (delta) goals for `env_ids` after a success."""
    offset = rng.uniform(env_ids, "goal/delta_pos", -cfg.goal_delta_pos, cfg.goal_delta_pos, (3,))
    axis_raw = rng.uniform(env_ids, "goal/delta_axis", 0.0, 1.0, (3,))
    # Guard the measure-zero all-zero draw so normalising never divides by zero.
    axis_raw = np.maximum(axis_raw, 1e-12)
    angle = rng.uniform(env_ids, "goal/delta_angle", -cfg.goal_delta_angle, cfg.goal_delta_angle)
    low, high = np.asarray(cfg.goal_low), np.asarray(cfg.goal_high)
    return delta_goal(prev_pos, prev_quat, offset, axis_raw, angle, low, high)


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


def layout_size(layout: tuple[tuple[str, int], ...]) -> int:
    """Total width of an observation layout."""
    return sum(size for _, size in layout)


def layout_slices(layout: tuple[tuple[str, int], ...]) -> dict[str, slice]:
    """name -> slice of that block in an observation of this layout."""
    out, start = {}, 0
    for name, size in layout:
        out[name] = slice(start, start + size)
        start += size
    return out
