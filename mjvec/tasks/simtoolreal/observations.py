"""The observation builder of SimToolReal-v0 (a mixin of `SimToolRealEnv`).

The policy observation follows `POLICY_LAYOUT` (the source's obsList), the critic state
`CRITIC_LAYOUT` (the source's stateList, whose order interleaves the palm and object velocities
among the policy terms). Both are assembled from named blocks, so a block is computed once and
placed by name.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from mjvec.tasks.simtoolreal import terms as tm
from mjvec.tasks.simtoolreal.terms import CRITIC_LAYOUT, POLICY_LAYOUT, layout_size

Blocks = dict[str, Any]


class SimToolRealObservations:
    """`_observe` and its blocks; reads the state `SimToolRealEnv` keeps (see its docstring), in the
    state's namespace."""

    num_envs: int
    cfg: Any
    obs_mode: str
    backend: Any
    xp: Any

    def _observe(self) -> Any:
        xp = self.xp
        palm_pos = self._site_xpos[:, self._palm_site]
        scales = xp.astype(self.observed_object_scales(), self._float)
        shared = self._robot_blocks(palm_pos, scales)
        policy = self._stack(POLICY_LAYOUT, shared, self._object_blocks(palm_pos, *self.observed_object_pose(), scales))
        if self.obs_mode == "policy":
            return policy
        true_pos, true_quat = self.true_object_pose()
        critic = self._stack(CRITIC_LAYOUT, shared, self._object_blocks(palm_pos, true_pos, true_quat, scales),
                             self._critic_blocks(true_pos, true_quat))
        return {"policy": policy, "critic": critic}

    def _stack(self, layout: tuple[tuple[str, int], ...], *parts: Blocks) -> Any:
        """(N, width) float32: the named blocks concatenated in `layout` order, clamped to ±obs_clip."""
        xp = self.xp
        blocks = {k: v for part in parts for k, v in part.items()}
        out = xp.concat([xp.astype(xp.reshape(blocks[name], (self.num_envs, -1)), xp.float32) for name, _ in layout],
                        axis=1)
        if self._host:
            np.clip(out, -self.cfg.obs_clip, self.cfg.obs_clip, out=out)
            return out
        return xp.clip(out, -self.cfg.obs_clip, self.cfg.obs_clip)

    def _robot_blocks(self, palm_pos: Any, scales: Any) -> Blocks:
        """The policy terms that do not depend on the object pose."""
        xp = self.xp
        q, v = self.backend.qpos, self.backend.qvel
        return {
            "joint_pos": xp.clip(tm.unscale_from_limits(q[:, self._jnt_qpos], self.joint_lower, self.joint_upper),
                                 -1.0, 1.0),
            "joint_vel": v[:, self._jnt_dof],
            "prev_action_targets": self.targets,
            "palm_pos": palm_pos,
            "palm_rot": tm.wxyz_to_xyzw(self._xquat[:, self._palm_body]),
            "fingertip_pos_rel_palm": self._fingertip_pos() - palm_pos[:, None],
            "object_scales": scales,
        }

    def _object_blocks(self, palm_pos: Any, obj_pos: Any, obj_quat: Any, scales: Any) -> Blocks:
        """The policy terms of an object pose (the observed one, or the true one for the critic)."""
        offsets = tm.keypoint_offsets(scales * self.cfg.object_base_size, self.cfg.keypoint_scale)
        kp_obj = tm.keypoint_positions(obj_pos, obj_quat, offsets)
        kp_goal = tm.keypoints_from_rot(self._goal_pos, self._goal_rot, offsets)
        return {
            "object_rot": tm.wxyz_to_xyzw(obj_quat),
            "keypoints_rel_palm": kp_obj - palm_pos[:, None],
            "keypoints_rel_goal": kp_obj - kp_goal,
        }

    def _critic_blocks(self, obj_pos: Any, obj_quat: Any) -> Blocks:
        """The privileged critic terms (true state)."""
        xp = self.xp
        v = self.backend.qvel
        ang = self._cvel[:, self._palm_body, :3]
        lin_at_com = self._cvel[:, self._palm_body, 3:]
        lever = self._site_xpos[:, self._palm_site] - self._subtree_com[:, self._palm_root]
        obj_ang = tm.quat_rotate(obj_quat, v[:, self._obj_dof + 3:self._obj_dof + 6])
        obj_lin = tm.object_com_velocity(v[:, self._obj_dof:self._obj_dof + 3], obj_ang, obj_quat, self._obj_com)
        tip_dist = xp.linalg.vector_norm(self._fingertip_pos() - obj_pos[:, None], axis=-1)
        closest_tip = xp.where(self.closest_fingertip_dist < 0, tip_dist, self.closest_fingertip_dist)
        # An unset (-1) best distance reads as the current one, as the first evaluation will set it.
        dist = tm.max_keypoint_distance(
            tm.keypoint_positions(obj_pos, obj_quat, self._fixed_offsets), self._goal_kp_fixed
        )
        closest_kp = xp.where(self.closest_keypoint_dist < 0, dist, self.closest_keypoint_dist)
        return {
            "palm_vel": xp.concat([lin_at_com + tm.cross(ang, lever), ang], axis=1),
            "object_vel": xp.concat([obj_lin, obj_ang], axis=1),
            "closest_keypoint_max_dist": closest_kp,
            "closest_fingertip_dist": closest_tip,
            "lifted_object": xp.astype(self.lifted, xp.float64),
            "progress": xp.log(xp.astype(self.progress, xp.float64) / 10.0 + 1.0),
            "successes": xp.log(xp.astype(self.successes, xp.float64) + 1.0),
            "reward": 0.01 * self.last_reward,
        }


def observation_space(obs_mode: str, clip: float) -> gym.Space:
    """Box(140) for obs_mode \"policy\"; Dict(policy=Box(140), critic=Box(162)) for \"asymmetric\"."""
    policy = gym.spaces.Box(-clip, clip, (layout_size(POLICY_LAYOUT),), np.float32)
    if obs_mode == "policy":
        return policy
    critic = gym.spaces.Box(-clip, clip, (layout_size(CRITIC_LAYOUT),), np.float32)
    return gym.spaces.Dict({"policy": policy, "critic": critic})
