"""Compiled host kernels of SimToolReal-v0's per-step terms: the policy observation, the step's
measurement, its rules and rewards, and the joint targets of an action, each one pass over the envs
instead of a few dozen numpy passes and calls.

Each kernel computes the SAME IEEE-754 operations, in the same order, as the namespace-generic
functions it stands in for (`observations.policy_and_critic`'s policy blocks and `stack`,
`step_terms.measure`, `step_terms.evaluate`, `terms.compute_joint_targets`), so its results are
their bits: `mjvec._jit` compiles without fast-math,
and where numpy reduces (a 3-vector's squared norm, the max over keypoints) the kernel sums and
compares in numpy's order. tests/test_simtoolreal_kernels.py compares them bit for bit on random
states (nan, signed zeros and values beyond the clip included) and through whole episodes.

They run where the state is float64 numpy (the CPU backend's default); any other namespace or
dtype (torch on a device, a float32 state) takes the generic functions, which stay the oracle.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mjvec._jit import clip as _clip
from mjvec._jit import host_arrays, inline, kernel, minimum, pairwise_sum, sequential_sum

# Box corners (+,+,+), (+,+,-), (-,-,+), (-,-,-): `terms.KEYPOINT_SIGNS` (a test checks they agree).
_SIGNS = np.array([[1, 1, 1], [1, 1, -1], [-1, -1, 1], [-1, -1, -1]], dtype=np.float64)
_XYZW = np.array([1, 2, 3, 0])
NUM_ARM = 7  # terms.NUM_ARM_JOINTS (a test checks they agree)


@inline
def _rot(q: np.ndarray, out: np.ndarray) -> None:
    """`mjvec.rotations.quat_to_mat` of one wxyz quaternion into out (3, 3)."""
    w, x, y, z = q[0], q[1], q[2], q[3]
    out[0, 0] = 1.0 - 2.0 * (y * y + z * z)
    out[0, 1] = 2.0 * (x * y - w * z)
    out[0, 2] = 2.0 * (x * z + w * y)
    out[1, 0] = 2.0 * (x * y + w * z)
    out[1, 1] = 1.0 - 2.0 * (x * x + z * z)
    out[1, 2] = 2.0 * (y * z - w * x)
    out[2, 0] = 2.0 * (x * z - w * y)
    out[2, 1] = 2.0 * (y * z + w * x)
    out[2, 2] = 1.0 - 2.0 * (x * x + y * y)


@inline
def _keypoints(pos: np.ndarray, rot: np.ndarray, offsets: np.ndarray, out: np.ndarray) -> None:
    """`terms.keypoints_from_rot` of one pose: out (4, 3) = pos + sum over j (in j order) of offsets_j rot_ij."""
    for k in range(4):
        for i in range(3):
            out[k, i] = pos[i] + (offsets[k, 0] * rot[i, 0] + offsets[k, 1] * rot[i, 1] + offsets[k, 2] * rot[i, 2])


@inline
def _norm3(x: float, y: float, z: float) -> float:
    """np.linalg.vector_norm of one 3-vector: the squares summed in order, then sqrt."""
    return np.sqrt(x * x + y * y + z * z)


@kernel
def _policy_kernel(qpos: np.ndarray, qvel: np.ndarray, site_xpos: np.ndarray, xquat: np.ndarray,
                   jnt_qpos: np.ndarray, jnt_dof: np.ndarray, lower: np.ndarray, upper: np.ndarray,
                   palm_site: int, palm_body: int, tip_sites: np.ndarray, targets: np.ndarray,
                   scales: np.ndarray, base_size: float, half_scale: float, goal_pos: np.ndarray,
                   goal_rot: np.ndarray, obj_pos: np.ndarray, obj_quat: np.ndarray, clip: float,
                   out: np.ndarray) -> None:
    n_joints, n_tips = jnt_qpos.shape[0], tip_sites.shape[0]
    offsets, kp_goal, kp_obj, rot = np.empty((4, 3)), np.empty((4, 3)), np.empty((4, 3)), np.empty((3, 3))
    dims, quat = np.empty(3), np.empty(4)
    for e in range(qpos.shape[0]):
        row = out[e]
        col = 0
        for j in range(n_joints):  # joint_pos: unscale_from_limits, clipped to [-1, 1]
            x = (2.0 * qpos[e, jnt_qpos[j]] - upper[j] - lower[j]) / (upper[j] - lower[j])
            row[col + j] = _clip(x, -1.0, 1.0)
        col += n_joints
        for j in range(n_joints):
            row[col + j] = qvel[e, jnt_dof[j]]
        col += n_joints
        for j in range(n_joints):
            row[col + j] = targets[e, j]
        col += n_joints
        for i in range(3):
            row[col + i] = site_xpos[e, palm_site, i]
        col += 3
        for i in range(4):
            row[col + i] = xquat[e, palm_body, _XYZW[i]]
        col += 4
        flip = obj_quat[e, 0] < 0.0  # canonical_quat: w >= 0
        for i in range(4):
            quat[i] = -obj_quat[e, i] if flip else obj_quat[e, i]
        for i in range(4):
            row[col + i] = quat[_XYZW[i]]
        col += 4
        for t in range(n_tips):
            for i in range(3):
                row[col + 3 * t + i] = site_xpos[e, tip_sites[t], i] - site_xpos[e, palm_site, i]
        col += 3 * n_tips
        for i in range(3):
            dims[i] = half_scale * (scales[e, i] * base_size)
        for k in range(4):
            for i in range(3):
                offsets[k, i] = _SIGNS[k, i] * dims[i]
        _keypoints(goal_pos[e], goal_rot[e], offsets, kp_goal)
        _rot(obj_quat[e], rot)
        _keypoints(obj_pos[e], rot, offsets, kp_obj)
        for k in range(4):
            for i in range(3):
                row[col + 3 * k + i] = kp_obj[k, i] - site_xpos[e, palm_site, i]
        col += 12
        for k in range(4):
            for i in range(3):
                row[col + 3 * k + i] = kp_obj[k, i] - kp_goal[k, i]
        col += 12
        for i in range(3):
            row[col + i] = scales[e, i]
        for c in range(row.shape[0]):  # the float32 values, clamped as `observations.stack` clamps them
            row[c] = _clip(row[c], np.float32(-clip), np.float32(clip))


@kernel
def _measure_kernel(qpos: np.ndarray, site_xpos: np.ndarray, obj_qpos: int, tip_sites: np.ndarray,
                    fixed_offsets: np.ndarray, goal_kp: np.ndarray, obj_pos: np.ndarray, obj_quat: np.ndarray,
                    keypoints: np.ndarray, tip_dist: np.ndarray, kp_dist: np.ndarray) -> None:
    rot = np.empty((3, 3))
    for e in range(qpos.shape[0]):
        for i in range(3):
            obj_pos[e, i] = qpos[e, obj_qpos + i]
        for i in range(4):
            obj_quat[e, i] = qpos[e, obj_qpos + 3 + i]
        _rot(obj_quat[e], rot)
        _keypoints(obj_pos[e], rot, fixed_offsets, keypoints[e])
        for t in range(tip_sites.shape[0]):
            s = tip_sites[t]
            tip_dist[e, t] = _norm3(site_xpos[e, s, 0] - obj_pos[e, 0], site_xpos[e, s, 1] - obj_pos[e, 1],
                                    site_xpos[e, s, 2] - obj_pos[e, 2])
        best = 0.0
        for k in range(4):
            d = _norm3(keypoints[e, k, 0] - goal_kp[e, k, 0], keypoints[e, k, 1] - goal_kp[e, k, 1],
                       keypoints[e, k, 2] - goal_kp[e, k, 2])
            if k == 0 or (best == best and (d != d or d > best)):  # np.max: the first nan wins
                best = d
        kp_dist[e] = best


@kernel
def _evaluate_kernel(obj_z: np.ndarray, spawn_z: np.ndarray, lifted_prev: np.ndarray, closest_tip: np.ndarray,
                     tip_dist: np.ndarray, closest_kp: np.ndarray, kp_dist: np.ndarray, near_prev: np.ndarray,
                     successes_prev: np.ndarray, progress_prev: np.ndarray, qvel: np.ndarray, jnt_dof: np.ndarray,
                     active: np.ndarray, params: np.ndarray, ints: np.ndarray, lifted: np.ndarray,
                     new_tip: np.ndarray, new_kp: np.ndarray, near: np.ndarray, successes: np.ndarray,
                     progress: np.ndarray, success: np.ndarray, terms: np.ndarray, reward: np.ndarray,
                     terminated: np.ndarray, truncated: np.ndarray) -> None:
    (lift_offset, lift_clip, lift_threshold, approach_clip, keypoint_clip, near_dist, fall_z, tip_max,
     approach_w, lift_w, lift_bonus, keypoint_w, success_bonus, arm_w, hand_w) = (
        params[0], params[1], params[2], params[3], params[4], params[5], params[6], params[7], params[8],
        params[9], params[10], params[11], params[12], params[13], params[14])
    success_steps, max_successes, max_steps, num_arm, pairwise = ints[0], ints[1], ints[2], ints[3], ints[4]
    n_tips, n_joints = tip_dist.shape[1], jnt_dof.shape[0]
    speed = np.empty(n_joints)
    for e in range(obj_z.shape[0]):
        z_lift = (obj_z[e] - spawn_z[e]) + lift_offset  # terms.lift_terms
        lifted[e] = lifted_prev[e] or z_lift > lift_threshold
        just_lifted = lifted[e] and not lifted_prev[e]
        lift = 0.0 if lifted[e] else _clip(z_lift, 0.0, lift_clip)
        approach = 0.0  # terms.approach_term: np.sum's start, then the fingertips in order
        tip_max_dist = tip_dist[e, 0]
        for t in range(n_tips):
            current = tip_dist[e, t]
            best = current if closest_tip[e, t] < 0.0 else closest_tip[e, t]
            approach += _clip(best - current, 0.0, approach_clip)
            new_tip[e, t] = minimum(best, current)
            if t > 0 and tip_max_dist == tip_max_dist and (current != current or current > tip_max_dist):
                tip_max_dist = current  # np.max: the first nan wins
        if lifted[e]:
            approach = 0.0
        best = kp_dist[e] if closest_kp[e] < 0.0 else closest_kp[e]  # terms.keypoint_progress_term
        progress_term = _clip(best - kp_dist[e], 0.0, keypoint_clip) if lifted[e] else 0.0
        new_kp[e] = minimum(best, kp_dist[e])
        near[e] = near_prev[e] + 1 if kp_dist[e] <= near_dist else 0  # terms.near_goal_update
        success[e] = near[e] >= success_steps and active[e]
        for j in range(n_joints):
            speed[j] = abs(qvel[e, jnt_dof[j]])
        terms[0, e] = approach_w * approach  # step_terms.REWARD_TERMS, in order
        terms[1, e] = lift_w * lift
        terms[2, e] = lift_bonus * (1.0 if just_lifted else 0.0)
        terms[3, e] = keypoint_w * progress_term
        terms[4, e] = success_bonus * (1.0 if success[e] else 0.0)
        if pairwise:
            terms[5, e] = -arm_w * pairwise_sum(speed[:num_arm])
            terms[6, e] = -hand_w * pairwise_sum(speed[num_arm:])
        else:
            terms[5, e] = -arm_w * sequential_sum(speed[:num_arm])
            terms[6, e] = -hand_w * sequential_sum(speed[num_arm:])
        total = 0.0  # Python's sum() of the terms starts from 0
        for t in range(terms.shape[0]):
            total += terms[t, e]
        reward[e] = total
        successes[e] = successes_prev[e] + (1 if success[e] else 0)
        progress[e] = 0 if success[e] else progress_prev[e]
        terminated[e] = obj_z[e] < fall_z or tip_max_dist > tip_max or successes[e] >= max_successes
        truncated[e] = progress[e] >= max_steps and not terminated[e]


@kernel
def _targets_kernel(actions: np.ndarray, prev: np.ndarray, lower: np.ndarray, upper: np.ndarray, arm_step: float,
                    arm_average: float, hand_average: float, num_arm: int, out: np.ndarray) -> None:
    for e in range(actions.shape[0]):
        for j in range(actions.shape[1]):
            if j < num_arm:  # relative: clamp, then smooth
                x = _clip(prev[e, j] + arm_step * actions[e, j], lower[j], upper[j])
                x = arm_average * x + (1.0 - arm_average) * prev[e, j]
            else:  # absolute: the action mapped onto the limits, then smoothed
                x = lower[j] + 0.5 * (actions[e, j] + 1.0) * (upper[j] - lower[j])
                x = hand_average * x + (1.0 - hand_average) * prev[e, j]
            out[e, j] = _clip(x, lower[j], upper[j])


def applies(*arrays: Any) -> bool:
    """True where the kernels stand in for the generic functions: every array float64 numpy."""
    return host_arrays(arrays, (np.float64,))


def state_applies(state: Any) -> bool:
    """True where `evaluate` stands in for the generic rules: the task state on the host, in the
    dtypes `state.new_state` gives it with a float64 state dtype."""
    return (applies(state.spawn_z, state.closest_fingertip_dist, state.closest_keypoint_dist)
            and host_arrays((state.lifted,), (np.bool_,))
            and host_arrays((state.near_goal_steps, state.successes, state.progress), (np.int64,)))


def policy_observation(qpos: np.ndarray, qvel: np.ndarray, site_xpos: np.ndarray, xquat: np.ndarray, indices: Any,
                       targets: np.ndarray, scales: np.ndarray, goal_pos: np.ndarray, goal_rot: np.ndarray,
                       obj_pos: np.ndarray, obj_quat: np.ndarray, base_size: float, keypoint_scale: float,
                       clip: float, width: int) -> np.ndarray:
    """(N, width) float32: `observations.policy_and_critic`'s policy observation (the blocks of
    `terms.POLICY_LAYOUT`, clamped to ±clip), for float64 numpy inputs."""
    out = np.empty((qpos.shape[0], width), np.float32)
    _policy_kernel(qpos, qvel, site_xpos, xquat, indices.jnt_qpos, indices.jnt_dof, indices.joint_lower,
                   indices.joint_upper, indices.palm_site, indices.palm_body, indices.tip_sites, targets, scales,
                   float(base_size), 0.5 * keypoint_scale, goal_pos, goal_rot, obj_pos, obj_quat, float(clip), out)
    return out


def measure(qpos: np.ndarray, site_xpos: np.ndarray, indices: Any, goal_kp: np.ndarray) -> tuple[np.ndarray, ...]:
    """`step_terms.measure`'s arrays for float64 numpy inputs: (obj_pos (K, 3), obj_quat (K, 4),
    object_keypoints (K, 4, 3), fingertip_dist (K, F), keypoint_dist (K,)), new arrays."""
    k, tips = qpos.shape[0], indices.tip_sites.shape[0]
    obj_pos, obj_quat, keypoints = np.empty((k, 3)), np.empty((k, 4)), np.empty((k, 4, 3))
    tip_dist, kp_dist = np.empty((k, tips)), np.empty(k)
    _measure_kernel(qpos, site_xpos, int(indices.obj_qpos), indices.tip_sites, indices.fixed_offsets[0], goal_kp,
                    obj_pos, obj_quat, keypoints, tip_dist, kp_dist)
    return obj_pos, obj_quat, keypoints, tip_dist, kp_dist


def evaluate(cfg: Any, indices: Any, state: Any, obj_z: np.ndarray, tip_dist: np.ndarray, kp_dist: np.ndarray,
             qvel: np.ndarray, tolerance: float, active: np.ndarray, num_terms: int) -> dict[str, Any]:
    """`step_terms.evaluate`'s new values for float64 numpy inputs, new arrays by StepTerms field name
    (`reward_terms` a (num_terms, N) array in REWARD_TERMS order); `tolerance` a host float."""
    n = obj_z.shape[0]
    params = np.array([cfg.lift_offset, cfg.lift_clip, cfg.lift_threshold, cfg.approach_clip, cfg.keypoint_clip,
                       tolerance * cfg.keypoint_scale, cfg.fall_z, cfg.fingertip_max_dist, cfg.approach_weight,
                       cfg.lift_weight, cfg.lift_bonus, cfg.keypoint_weight, cfg.success_bonus, cfg.arm_speed_penalty,
                       cfg.hand_speed_penalty], np.float64)
    # The generic rule sums qvel[:, jnt_dof], a fancy index whose memory is column-major: numpy then
    # adds across the rows, each row's joints in sequence, except for one row (contiguous: pairwise).
    ints = np.array([cfg.success_steps, cfg.max_consecutive_successes, cfg.max_episode_steps, NUM_ARM, n == 1],
                    np.int64)
    out = {"lifted": np.empty(n, np.bool_), "closest_fingertip_dist": np.empty(tip_dist.shape),
           "closest_keypoint_dist": np.empty(n), "near_goal_steps": np.empty(n, np.int64),
           "successes": np.empty(n, np.int64), "progress": np.empty(n, np.int64), "success": np.empty(n, np.bool_),
           "reward_terms": np.empty((num_terms, n)), "reward": np.empty(n), "terminated": np.empty(n, np.bool_),
           "truncated": np.empty(n, np.bool_)}
    _evaluate_kernel(obj_z, state.spawn_z, state.lifted, state.closest_fingertip_dist, tip_dist,
                     state.closest_keypoint_dist, kp_dist, state.near_goal_steps, state.successes, state.progress,
                     qvel, indices.jnt_dof, active, params, ints, *out.values())
    return out


@kernel
def _commit_kernel(active: np.ndarray, lifted: np.ndarray, new_lifted: np.ndarray, tip: np.ndarray,
                   new_tip: np.ndarray, kp: np.ndarray, new_kp: np.ndarray, near: np.ndarray, new_near: np.ndarray,
                   successes: np.ndarray, new_successes: np.ndarray, progress: np.ndarray, new_progress: np.ndarray,
                   last_reward: np.ndarray, reward: np.ndarray) -> None:
    for e in range(active.shape[0]):
        if active[e]:
            lifted[e] = new_lifted[e]
            for t in range(tip.shape[1]):
                tip[e, t] = new_tip[e, t]
            kp[e], near[e], successes[e] = new_kp[e], new_near[e], new_successes[e]
            progress[e], last_reward[e] = new_progress[e], reward[e]


def commit(state: Any, active: np.ndarray, terms: Any) -> bool:
    """`step_terms.commit` in one pass where the state and the step's new values are the host arrays
    `evaluate` makes (True), else nothing written (False): the active envs' rows take the new values."""
    new = (terms.lifted, terms.closest_fingertip_dist, terms.closest_keypoint_dist, terms.near_goal_steps,
           terms.successes, terms.progress, terms.reward)
    old = (state.lifted, state.closest_fingertip_dist, state.closest_keypoint_dist, state.near_goal_steps,
           state.successes, state.progress, state.last_reward)
    if not (state_applies(state) and host_arrays((active,), (np.bool_,)) and all(
            isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape
            for a, b in zip(old, new, strict=True))):
        return False
    _commit_kernel(active, *(x for pair in zip(old, new, strict=True) for x in pair))
    return True


def joint_targets(actions: np.ndarray, prev: np.ndarray, lower: np.ndarray, upper: np.ndarray, *, arm_step: float,
                  arm_moving_average: float, hand_moving_average: float, num_arm: int) -> np.ndarray:
    """`terms.compute_joint_targets` for float64 numpy inputs: (N, J), a new array."""
    out = np.empty(prev.shape)
    _targets_kernel(actions, prev, lower, upper, float(arm_step), float(arm_moving_average),
                    float(hand_moving_average), int(num_arm), out)
    return out
