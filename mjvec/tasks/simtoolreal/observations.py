"""The observation builders of SimToolReal-v0: pure functions of the task's records and arrays.

The policy observation follows `POLICY_LAYOUT` (the source's obsList; its object orientation with
w >= 0, as the source's policy sees it), the critic state
`CRITIC_LAYOUT` (the source's stateList, whose order interleaves the palm and object velocities
among the policy terms). Both are assembled from named blocks, so a block is computed once and
placed by name. The builders read `TaskIndices`, `SimViews`, `TaskState` and the step's
`Measurement`, and arrays of the state's namespace; they write nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from mjvec import portable
from mjvec.rotations import canonical_quat
from mjvec.tasks.simtoolreal import kernels
from mjvec.tasks.simtoolreal import terms as tool_terms
from mjvec.tasks.simtoolreal.config import SimToolRealConfig
from mjvec.tasks.simtoolreal.indices import Array, SimViews, TaskIndices
from mjvec.tasks.simtoolreal.state import TaskState
from mjvec.tasks.simtoolreal.step_terms import Measurement
from mjvec.tasks.simtoolreal.terms import CRITIC_LAYOUT, POLICY_LAYOUT, layout_size
from mjvec.xp import namespace_of

Blocks = dict[str, Any]
Pose = tuple[Array, Array]  # (pos (N, 3), quat (N, 4) wxyz)


@dataclass(frozen=True, eq=False)
class ObsInputs:
    """What one observation is built from: the physics state (`qpos`, `qvel`, the bound `views`), the
    task's records, the object pose `observed` by the policy and the `true` one (the same tuple when
    no pose source is set; unused without the critic), the observed grasp-box `scales` (N, 3) in the
    state's dtype, and `measured`, the step's measurement (the critic reads its distances; the env
    re-measures the rows it resets or gives a new goal after the step; None without the critic)."""

    cfg: SimToolRealConfig
    indices: TaskIndices
    views: SimViews
    state: TaskState
    qpos: Array
    qvel: Array
    observed: Pose
    true: Pose
    scales: Array
    measured: Measurement | None


def policy_and_critic(obs: ObsInputs, critic: bool) -> Any:
    """(N, 140) float32 policy observation; with `critic`, {"policy": ..., "critic": (N, 162)}.
    On float64 numpy state the policy observation is `kernels.policy_observation` (the same bits)."""
    cfg, idx = obs.cfg, obs.indices
    compiled = kernels.applies(obs.qpos, obs.qvel, obs.views.site_xpos, obs.views.xquat, obs.state.targets,
                               obs.scales, obs.state.goal_pos, obs.state.goal_rot, *obs.observed, idx.joint_lower,
                               idx.joint_upper)
    policy = _compiled_policy(obs) if compiled else None
    if policy is not None and not critic:
        return policy
    palm_pos = obs.views.site_xpos[:, idx.palm_site]
    offsets = tool_terms.keypoint_offsets(obs.scales * cfg.object_base_size, cfg.keypoint_scale)
    kp_goal = tool_terms.keypoints_from_rot(obs.state.goal_pos, obs.state.goal_rot, offsets)
    shared = robot_blocks(obs, palm_pos)
    seen = None
    if policy is None:
        seen = object_blocks(palm_pos, *obs.observed, offsets, kp_goal)
        # The source hands the policy its object orientation through a rotation-matrix round trip
        # that returns w >= 0 (q and -q are one rotation); the critic reads the simulator's quaternion as is.
        policy_rot = {"object_rot": tool_terms.wxyz_to_xyzw(canonical_quat(obs.observed[1]))}
        policy = stack(POLICY_LAYOUT, cfg.obs_clip, shared, seen, policy_rot)
        if not critic:
            return policy
    reuse = seen is not None and obs.true is obs.observed
    true = seen if reuse else object_blocks(palm_pos, *obs.true, offsets, kp_goal)
    return {"policy": policy, "critic": stack(CRITIC_LAYOUT, cfg.obs_clip, shared, true, critic_blocks(obs))}


def _compiled_policy(obs: ObsInputs) -> Array:
    cfg, state, views = obs.cfg, obs.state, obs.views
    return kernels.policy_observation(
        obs.qpos, obs.qvel, views.site_xpos, views.xquat, obs.indices, state.targets, obs.scales, state.goal_pos,
        state.goal_rot, *obs.observed, base_size=cfg.object_base_size, keypoint_scale=cfg.keypoint_scale,
        clip=cfg.obs_clip, width=layout_size(POLICY_LAYOUT))


def stack(layout: tuple[tuple[str, int], ...], clip: float, *parts: Blocks) -> Array:
    """(N, width) float32: the named blocks concatenated in `layout` order, clamped to ±clip."""
    blocks = {k: v for part in parts for k, v in part.items()}
    first = next(iter(blocks.values()))
    xp, n = namespace_of(first), first.shape[0]
    out = xp.concat([xp.astype(xp.reshape(blocks[name], (n, -1)), xp.float32) for name, _ in layout], axis=1)
    if isinstance(out, np.ndarray):
        np.clip(out, -clip, clip, out=out)
        return out
    return xp.clip(out, -clip, clip)


def robot_blocks(obs: ObsInputs, palm_pos: Array) -> Blocks:
    """The policy terms that do not depend on the object pose."""
    idx, views = obs.indices, obs.views
    xp = namespace_of(obs.qpos)
    joint_pos = tool_terms.unscale_from_limits(obs.qpos[:, idx.jnt_qpos], idx.joint_lower, idx.joint_upper)
    return {
        "joint_pos": xp.clip(joint_pos, -1.0, 1.0),
        "joint_vel": obs.qvel[:, idx.jnt_dof],
        "prev_action_targets": obs.state.targets,
        "palm_pos": palm_pos,
        "palm_rot": tool_terms.wxyz_to_xyzw(views.xquat[:, idx.palm_body]),
        "fingertip_pos_rel_palm": views.site_xpos[:, idx.tip_sites] - palm_pos[:, None],
        "object_scales": obs.scales,
    }


def object_blocks(palm_pos: Array, obj_pos: Array, obj_quat: Array, offsets: Array, kp_goal: Array) -> Blocks:
    """The policy terms of an object pose (the observed one, or the true one for the critic), with
    the observed grasp-box keypoint `offsets` (N, 4, 3) and the goal's keypoints `kp_goal` of them."""
    kp_obj = tool_terms.keypoint_positions(obj_pos, obj_quat, offsets)
    return {
        "object_rot": tool_terms.wxyz_to_xyzw(obj_quat),
        "keypoints_rel_palm": kp_obj - palm_pos[:, None],
        "keypoints_rel_goal": kp_obj - kp_goal,
    }


def critic_blocks(obs: ObsInputs) -> Blocks:
    """The privileged critic terms (true state). A best-so-far distance that is unset (-1) reads as
    the current one from the step's measurement, as the next evaluation will set it."""
    idx, views, state, seen = obs.indices, obs.views, obs.state, obs.measured
    xp = namespace_of(obs.qvel)
    _, obj_quat = obs.true
    v, d = obs.qvel, idx.obj_dof
    ang = views.cvel[:, idx.palm_body, :3]
    lever = views.site_xpos[:, idx.palm_site] - views.subtree_com[:, idx.palm_root]
    obj_ang = tool_terms.quat_rotate(obj_quat, v[:, d + 3:d + 6])
    obj_lin = tool_terms.object_com_velocity(v[:, d:d + 3], obj_ang, obj_quat, state.object_com)
    closest_tip = xp.where(state.closest_fingertip_dist < 0, seen.fingertip_dist, state.closest_fingertip_dist)
    closest_kp = xp.where(state.closest_keypoint_dist < 0, seen.keypoint_dist, state.closest_keypoint_dist)
    progress, successes = portable.each(portable.log, xp.astype(state.progress, xp.float64) / 10.0 + 1.0,
                                        xp.astype(state.successes, xp.float64) + 1.0)
    return {
        "palm_vel": xp.concat([views.cvel[:, idx.palm_body, 3:] + tool_terms.cross(ang, lever), ang], axis=1),
        "object_vel": xp.concat([obj_lin, obj_ang], axis=1),
        "closest_keypoint_max_dist": closest_kp,
        "closest_fingertip_dist": closest_tip,
        "lifted_object": xp.astype(state.lifted, xp.float64),
        "progress": progress,
        "successes": successes,
        "reward": 0.01 * state.last_reward,
    }


def observation_space(obs_mode: str, clip: float) -> gym.Space:
    """Box(140) for obs_mode \"policy\"; Dict(policy=Box(140), critic=Box(162)) for \"asymmetric\"."""
    policy = gym.spaces.Box(-clip, clip, (layout_size(POLICY_LAYOUT),), np.float32)
    if obs_mode == "policy":
        return policy
    critic = gym.spaces.Box(-clip, clip, (layout_size(CRITIC_LAYOUT),), np.float32)
    return gym.spaces.Dict({"policy": policy, "critic": critic})
