"""Compiled host kernels of CubeRotate-v0's per-step terms: the policy observation and the step's
evaluation (turn, drop, energy, action, reward terms), each one pass over the envs instead of a
few dozen numpy calls.

Each kernel computes the SAME IEEE-754 operations, in the same order, as the numpy functions it
stands in for (`terms.assemble` of the env's blocks; `terms.mean_angular_velocity`, `dropped`,
`energy_term`, `action_term` and `reward_terms`), so its results are their bits: `mjvec._jit`
compiles without fast-math, and where numpy reduces a row the kernel sums in numpy's order
(pairwise along a contiguous row, in sequence across the rows of a column-major array).
tests/test_cube_rotate_kernels.py compares them bit for bit on random states (signed zeros, values
beyond the clip and non-finite inputs included) and through whole episodes.

They run where the state is float64 numpy (the CPU backend's default) and the actions a float64
array with contiguous rows; any other namespace or layout, and a turn that is not finite (outside
the atan2 kernel's domain), take the numpy functions, which stay the oracle.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mjvec._jit import clip as _clip
from mjvec._jit import host_arrays, kernel, pairwise_sum, sequential_sum
from mjvec._rotations_host import finite_rows, mul_row, rotate_vec_row, rotation_vector_row
from mjvec.tasks.cube_rotate.terms import POLICY_LAYOUT, layout_size

_WIDTH = layout_size(POLICY_LAYOUT)


@kernel
def _observe_kernel(qpos: np.ndarray, qvel: np.ndarray, site_xpos: np.ndarray, targets: np.ndarray,
                    half_size: np.ndarray, jnt_qpos: np.ndarray, jnt_dof: np.ndarray, tip_sites: np.ndarray,
                    cube_qpos: int, cube_dof: int, palm: np.ndarray, vel_scale: float, clip: float,
                    out: np.ndarray) -> None:
    n_joints, n_tips = jnt_qpos.shape[0], tip_sites.shape[0]
    row = np.empty(out.shape[1])
    quat, angvel = np.empty(4), np.empty(3)
    for e in range(qpos.shape[0]):
        col = 0
        for j in range(n_joints):
            row[col + j] = qpos[e, jnt_qpos[j]]
        col += n_joints
        for j in range(n_joints):
            row[col + j] = vel_scale * qvel[e, jnt_dof[j]]
        col += n_joints
        for j in range(n_joints):
            row[col + j] = targets[e, j]
        col += n_joints
        for i in range(3):
            row[col + i] = qpos[e, cube_qpos + i] - palm[i]
        col += 3
        for i in range(4):
            quat[i] = qpos[e, cube_qpos + 3 + i]
        flip = quat[0] < 0.0  # canonical_quat: w >= 0
        for i in range(4):
            row[col + i] = -quat[i] if flip else quat[i]
        col += 4
        for i in range(3):
            row[col + i] = qvel[e, cube_dof + i]
        col += 3
        rotate_vec_row(quat, qvel[e, cube_dof + 3:cube_dof + 6], angvel)
        for i in range(3):
            row[col + i] = angvel[i]
        col += 3
        for t in range(n_tips):
            for i in range(3):
                row[col + 3 * t + i] = site_xpos[e, tip_sites[t], i] - qpos[e, cube_qpos + i]
        col += 3 * n_tips
        row[col] = half_size[e]
        for c in range(row.shape[0]):  # clamped in float64, then rounded once (terms.assemble)
            out[e, c] = np.float32(_clip(row[c], -clip, clip))


def observe(env: Any) -> np.ndarray | None:
    """The (N, width) float32 policy observation of a `CubeRotateEnv` (its `_observe`), or None where
    its state is not float64 numpy (the caller then assembles the numpy blocks)."""
    be = env.backend
    qpos, qvel, site_xpos = be.qpos, be.qvel, env._site_xpos
    if env.policy_layout != POLICY_LAYOUT or not host_arrays((qpos, qvel, site_xpos, env.targets), (np.float64,)):
        return None  # the kernel writes POLICY_LAYOUT's blocks, in its order
    out = np.empty((qpos.shape[0], _WIDTH), np.float32)
    _observe_kernel(qpos, qvel, site_xpos, env.targets, env.cube_half_size, env._jnt_qpos, env._jnt_dof,
                    env._tip_sites, env._cube_qpos, env._cube_dof, env.palm_center,
                    float(env.cfg.joint_vel_obs_scale), float(env.cfg.obs_clip), out)
    return out


@kernel
def _evaluate_kernel(qpos: np.ndarray, qvel: np.ndarray, force: np.ndarray, actions: np.ndarray,
                     prev_quat: np.ndarray, step_targets: np.ndarray, active: np.ndarray, targets: np.ndarray,
                     jnt_dof: np.ndarray, act_ids: np.ndarray, cube_qpos: int, palm: np.ndarray, dt: float,
                     rotation_clip: float, weights: np.ndarray, drop_depth: float, max_xy: float,
                     terms: np.ndarray, reward: np.ndarray, angvel_z: np.ndarray, drop: np.ndarray) -> bool:
    n_joints, n_act = jnt_dof.shape[0], actions.shape[1]
    quat, conj, rv = np.empty(4), np.empty(4), np.empty(3)
    turn = np.empty((1, 4))
    work = np.empty(max(n_joints, n_act))
    for e in range(qpos.shape[0]):
        for i in range(4):
            quat[i] = qpos[e, cube_qpos + 3 + i]
        conj[0] = prev_quat[e, 0] * 1.0  # quat_conj: times (1, -1, -1, -1)
        for i in range(1, 4):
            conj[i] = prev_quat[e, i] * -1.0
        mul_row(quat, conj, turn[0])
        if not finite_rows(turn):
            return False  # the generic turn formula's own answer (outside the atan2 kernel's domain)
        rotation_vector_row(turn[0], rv)
        angvel_z[e] = rv[2] / dt
        rel_x, rel_y = qpos[e, cube_qpos] - palm[0], qpos[e, cube_qpos + 1] - palm[1]
        rel_z = qpos[e, cube_qpos + 2] - palm[2]
        drop[e] = (rel_z < -drop_depth) or (np.sqrt(rel_x * rel_x + rel_y * rel_y) > max_xy)
        for j in range(n_joints):
            work[j] = abs(force[e, act_ids[j]] * qvel[e, jnt_dof[j]])
        # energy_term sums a product of two fancy-indexed (column-major) arrays: numpy adds across
        # the rows, each row's joints in sequence, except for one row (contiguous: pairwise).
        energy = pairwise_sum(work[:n_joints]) if qpos.shape[0] == 1 else sequential_sum(work[:n_joints])
        for j in range(n_act):
            work[j] = actions[e, j] * actions[e, j]
        action = pairwise_sum(work[:n_act])
        terms[0, e] = weights[0] * _clip(angvel_z[e], -rotation_clip, rotation_clip)
        terms[1, e] = weights[1] * action
        terms[2, e] = weights[2] * energy
        terms[3, e] = weights[3] * (1.0 if drop[e] else 0.0)
        total = 0.0  # Python's sum() of the terms starts from 0
        for t in range(terms.shape[0]):
            total += terms[t, e]
        reward[e] = total
    # Only once every row is computed (a refusal above leaves the state as it was): the step's
    # targets and the turn's reference move on for active envs.
    for e in range(qpos.shape[0]):
        if active[e]:
            for j in range(step_targets.shape[1]):
                targets[e, j] = step_targets[e, j]
            for i in range(4):
                prev_quat[e, i] = qpos[e, cube_qpos + 3 + i]
    return True


def evaluate(env: Any, active: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """A `CubeRotateEnv` step's (terms (4, N) in `terms.REWARD_TERMS` order, reward (N,), the cube's
    angular velocity about z (N,), dropped (N,) bool), with its targets and previous orientation
    moved on for `active` envs (as `_evaluate` does); None where the kernel does not apply, with
    nothing written."""
    be, cfg, actions = env.backend, env.cfg, env._actions
    qpos, qvel, force = be.qpos, be.qvel, env._actuator_force
    if not (host_arrays((qpos, qvel, force, actions, env._step_targets), (np.float64,))
            and host_arrays((active,), (np.bool_,)) and actions.ndim == 2 and actions.strides[1] == 8
            and actions.strides[0] >= 8 * actions.shape[1]):
        return None  # numpy's reduction order holds for contiguous action rows only
    n, dt = qpos.shape[0], env.control_dt
    # reward_terms' weights, each formed as Python forms it (weight * dt, then times the term)
    weights = np.array([cfg.rotation_weight * dt, -cfg.action_weight * dt, -cfg.energy_weight * dt,
                        -cfg.drop_penalty])
    terms, reward, angvel_z, drop = np.empty((4, n)), np.empty(n), np.empty(n), np.empty(n, bool)
    if not _evaluate_kernel(qpos, qvel, force, actions, env._prev_quat, env._step_targets, active, env.targets,
                            env._jnt_dof, env._act_ids, env._cube_qpos, env.palm_center, dt, cfg.rotation_clip,
                            weights, cfg.drop_depth, cfg.max_xy_distance, terms, reward, angvel_z, drop):
        return None
    return terms, reward, angvel_z, drop
