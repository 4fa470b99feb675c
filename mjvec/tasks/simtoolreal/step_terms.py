"""The terms of one SimToolReal-v0 control step, computed once by pure functions.

`measure` reads what the rules need of the physics state (object pose, fixed-size keypoints,
fingertip and keypoint distances) into a `Measurement`; `evaluate` applies the task's rules to it
and the task state, giving a `StepTerms` (the state's new values, rewards, success, terminations).
The env commits the new values, and the critic observation reads the same measurement's
distances instead of measuring again. Nothing here writes anything.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

from mjvec.tasks.simtoolreal import kernels
from mjvec.tasks.simtoolreal import terms as tool_terms
from mjvec.tasks.simtoolreal.config import SimToolRealConfig
from mjvec.tasks.simtoolreal.indices import Array, TaskIndices
from mjvec.tasks.simtoolreal.state import TaskState
from mjvec.xp import Rows, assign_where, copy_array, namespace_of

REWARD_TERMS = ("approach", "lift", "lift_bonus", "keypoint", "success_bonus", "arm_speed", "hand_speed")


@dataclass(frozen=True, eq=False)
class Measurement:
    """What a step measures, (N, ...) arrays of the state's namespace (env frame, F fingertips).

    obj_pos (N, 3), obj_quat (N, 4) wxyz: the object pose from qpos (current). object_keypoints
    (N, 4, 3): its fixed-size keypoints. fingertip_dist (N, F): fingertip -> object origin
    (fingertips one substep stale after a step). keypoint_dist (N,): max distance of the
    object's fixed-size keypoints to the goal's.
    """

    obj_pos: Array
    obj_quat: Array
    object_keypoints: Array
    fingertip_dist: Array
    keypoint_dist: Array

    def with_rows(self, rows: Rows, fresh: Measurement) -> Measurement:
        """This measurement with the rows of `rows` taken from `fresh` (a measurement of the selection's
        rows); new arrays, so arrays handed out before (the step's info) keep their values."""
        return Measurement(**{f.name: _with_rows(rows, getattr(self, f.name), getattr(fresh, f.name))
                              for f in fields(self)})

    def with_goal(self, rows: Rows, goal_kp_fixed: Array) -> Measurement:
        """This measurement with the keypoint distances of `rows` taken to new goals (`goal_kp_fixed`:
        the selection's rows); the object was not moved."""
        dist = tool_terms.max_keypoint_distance(rows.take(self.object_keypoints), goal_kp_fixed)
        return replace(self, keypoint_dist=_with_rows(rows, self.keypoint_dist, dist))


def _with_rows(rows: Rows, old: Array, new: Array) -> Array:
    out = copy_array(old)
    rows.put(out, new)
    return out


def object_pose(indices: TaskIndices, qpos: Array) -> tuple[Array, Array]:
    """(pos (K, 3), quat (K, 4) wxyz) of the object in qpos (K, nq): copies, in qpos's namespace."""
    a = indices.obj_qpos
    return copy_array(qpos[:, a:a + 3]), copy_array(qpos[:, a + 3:a + 7])


def measure(indices: TaskIndices, qpos: Array, site_xpos: Array, goal_kp_fixed: Array) -> Measurement:
    """Measure K envs from their qpos (K, nq), site positions (K, nsite, 3) and goal keypoints (K, 4, 3).
    On float64 numpy arrays this is `kernels.measure` (the same bits)."""
    if kernels.applies(qpos, site_xpos, goal_kp_fixed, indices.fixed_offsets):
        return Measurement(*kernels.measure(qpos, site_xpos, indices, goal_kp_fixed))
    xp = namespace_of(qpos)
    obj_pos, obj_quat = object_pose(indices, qpos)
    keypoints = tool_terms.keypoint_positions(obj_pos, obj_quat, indices.fixed_offsets)
    return Measurement(
        obj_pos=obj_pos,
        obj_quat=obj_quat,
        object_keypoints=keypoints,
        fingertip_dist=xp.linalg.vector_norm(site_xpos[:, indices.tip_sites] - obj_pos[:, None], axis=-1),
        keypoint_dist=tool_terms.max_keypoint_distance(keypoints, goal_kp_fixed),
    )


@dataclass(frozen=True, eq=False)
class StepTerms:
    """One step's terms, (N, ...) arrays: the `measured` state, the task state's new values
    (`lifted`, `closest_fingertip_dist`, `closest_keypoint_dist`, `near_goal_steps`, `successes`,
    `progress`; committed only for the evaluated envs), `success` (a goal reached this step, bool),
    `reward_terms` (the weighted per-term rewards, `REWARD_TERMS`), `reward` (their sum),
    `terminated` and `truncated` (bool), and the `tolerance` used (a 0-d array or host scalar)."""

    measured: Measurement
    lifted: Array
    closest_fingertip_dist: Array
    closest_keypoint_dist: Array
    near_goal_steps: Array
    successes: Array
    progress: Array
    success: Array
    reward_terms: dict[str, Array]
    reward: Array
    terminated: Array
    truncated: Array
    tolerance: Any


def evaluate(cfg: SimToolRealConfig, indices: TaskIndices, state: TaskState, measured: Measurement, qvel: Array,
             tolerance: Any, active: Array) -> StepTerms:
    """Apply the task's rules to this step's measurement and the state before it (the source's
    compute_reward order); `active` (N,) bool: the envs evaluated (only they may succeed). On a
    float64 numpy state this is `kernels.evaluate` (the same bits)."""
    if (kernels.applies(measured.obj_pos, measured.fingertip_dist, measured.keypoint_dist, qvel)
            and kernels.state_applies(state) and isinstance(active, np.ndarray) and isinstance(tolerance, np.ndarray)):
        new = kernels.evaluate(cfg, indices, state, measured.obj_pos[:, 2], measured.fingertip_dist,
                               measured.keypoint_dist, qvel, float(tolerance), active, len(REWARD_TERMS))
        terms = dict(zip(REWARD_TERMS, new.pop("reward_terms"), strict=True))
        return StepTerms(measured=measured, reward_terms=terms, tolerance=tolerance, **new)
    xp = namespace_of(qvel)
    obj_z = measured.obj_pos[:, 2]
    lift, just_lifted, lifted = tool_terms.lift_terms(obj_z, state.spawn_z, state.lifted, offset=cfg.lift_offset,
                                              clip=cfg.lift_clip, threshold=cfg.lift_threshold)
    approach, closest_tip = tool_terms.approach_term(state.closest_fingertip_dist, measured.fingertip_dist, lifted,
                                             clip=cfg.approach_clip)
    progress_term, closest_kp = tool_terms.keypoint_progress_term(state.closest_keypoint_dist, measured.keypoint_dist,
                                                          lifted, clip=cfg.keypoint_clip)
    near_steps, success = tool_terms.near_goal_update(state.near_goal_steps, measured.keypoint_dist, tolerance,
                                              keypoint_scale=cfg.keypoint_scale, success_steps=cfg.success_steps)
    success = success & active
    terms = reward_terms(cfg, approach, lift, just_lifted, progress_term, success, qvel[:, indices.jnt_dof])
    successes = state.successes + xp.astype(success, xp.int64)
    # The base counted this step already (state.progress is its episode_steps); a success restarts it.
    progress = xp.where(success, 0, state.progress)
    terminated = (
        (obj_z < cfg.fall_z)
        | (xp.max(measured.fingertip_dist, axis=-1) > cfg.fingertip_max_dist)
        | (successes >= cfg.max_consecutive_successes)
    )
    return StepTerms(
        measured=measured, lifted=lifted, closest_fingertip_dist=closest_tip, closest_keypoint_dist=closest_kp,
        near_goal_steps=near_steps, successes=successes, progress=progress, success=success, reward_terms=terms,
        reward=sum(terms.values()), terminated=terminated,
        truncated=(progress >= cfg.max_episode_steps) & ~terminated, tolerance=tolerance,
    )


def reward_terms(cfg: SimToolRealConfig, approach: Array, lift: Array, just_lifted: Array, progress_term: Array,
                 success: Array, joint_vel: Array) -> dict[str, Array]:
    """The weighted per-term rewards (`REWARD_TERMS` order) from the unweighted terms and the joint
    velocities (N, J)."""
    xp = namespace_of(approach)
    arm_pen, hand_pen = tool_terms.joint_speed_penalties(joint_vel, arm_weight=cfg.arm_speed_penalty,
                                                 hand_weight=cfg.hand_speed_penalty)
    return {
        "approach": cfg.approach_weight * approach,
        "lift": cfg.lift_weight * lift,
        "lift_bonus": cfg.lift_bonus * xp.astype(just_lifted, approach.dtype),
        "keypoint": cfg.keypoint_weight * progress_term,
        "success_bonus": cfg.success_bonus * xp.astype(success, approach.dtype),
        "arm_speed": arm_pen,
        "hand_speed": hand_pen,
    }


def commit(state: TaskState, active: Array, terms: StepTerms) -> None:
    """Copy the step's new values into `state` for the evaluated (`active`) envs only."""
    if kernels.commit(state, active, terms):  # host arrays: one compiled pass
        return
    updates = (
        (state.lifted, terms.lifted), (state.closest_fingertip_dist, terms.closest_fingertip_dist),
        (state.closest_keypoint_dist, terms.closest_keypoint_dist), (state.near_goal_steps, terms.near_goal_steps),
        (state.successes, terms.successes), (state.progress, terms.progress), (state.last_reward, terms.reward),
    )
    for buf, new in updates:
        assign_where(buf, active.reshape(-1, *(1,) * (buf.ndim - 1)), new)
