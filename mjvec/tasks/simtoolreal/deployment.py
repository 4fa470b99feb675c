"""SimToolReal-v0's deployment declarations (`mjvec.envs.deployment`): the 140-D policy
observation's blocks in MuJoCo terms (`observations.policy_and_critic`'s arithmetic) and the arm
delta / hand absolute PD-target action (`terms.compute_joint_targets`'), for the policy contract."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from mjvec.assets import robot
from mjvec.envs.arrays import to_numpy
from mjvec.envs.deployment import ActionDim, Command, DeploymentSpec, ObsBlock, ObsSource, Perceived
from mjvec.tasks.simtoolreal import scene as tool_scene
from mjvec.tasks.simtoolreal import terms as tool_terms

OBJECT = (tool_scene.OBJECT_JOINT_NAME,)
POSE, SCALES = "object_pose", "object_scales"


def _keypoints(cfg: Any, **pose: Any) -> ObsSource:
    """The observation keypoints: the grasp box (the commanded scales x object_base_size, times
    keypoint_scale) at a pose (the object's free joint, or the goal command)."""
    params = {"signs": tool_terms.KEYPOINT_SIGNS.tolist(), "size_command": SCALES, "size_scale": cfg.object_base_size,
              "extent_scale": cfg.keypoint_scale}
    return ObsSource("box_keypoints", params=params, **pose)


def deployment_spec(env: Any) -> DeploymentSpec:
    """The spec of a `SimToolRealEnv` (its config, joint ranges and model names)."""
    cfg, model = env.cfg, env.backend.model
    palm_body = model.body(int(model.site_bodyid[model.site(robot.PALM_SITE_NAME).id])).name
    palm = ObsSource("site_pos", (robot.PALM_SITE_NAME,))
    nj, nt, nk = tool_terms.NUM_JOINTS, tool_terms.NUM_FINGERTIPS, tool_terms.NUM_KEYPOINTS
    blocks = (
        ObsBlock("joint_pos", nj, ObsSource("joint_pos", robot.JOINT_NAMES), units="1 (joint range onto [-1, 1])",
                 normalize="joint_range", clip=(-1.0, 1.0)),
        ObsBlock("joint_vel", nj, ObsSource("joint_vel", robot.JOINT_NAMES), units="rad/s"),
        ObsBlock("prev_action_targets", nj, ObsSource("targets"), units="rad",
                 description="the PD targets the last action set (the action pipeline's state)"),
        ObsBlock("palm_pos", 3, palm, frame="world", units="m"),
        ObsBlock("palm_rot", 4, ObsSource("body_quat", (palm_body,)), frame="world", units="quaternion xyzw",
                 quat_order="xyzw"),
        ObsBlock("object_rot", 4, ObsSource("free_joint_quat", OBJECT), frame="world", units="quaternion xyzw",
                 canonical=True, quat_order="xyzw", perceives=(POSE,)),
        ObsBlock("fingertip_pos_rel_palm", 3 * nt, ObsSource("site_pos", robot.FINGERTIP_SITE_NAMES, minus=palm),
                 frame="world", units="m"),
        ObsBlock("keypoints_rel_palm", 3 * nk, replace(_keypoints(cfg, elements=OBJECT), minus=palm),
                 frame="world", units="m", perceives=(POSE, SCALES)),
        ObsBlock("keypoints_rel_goal", 3 * nk, replace(_keypoints(cfg, elements=OBJECT),
                                                        minus=_keypoints(cfg, command="goal_pose")),
                 frame="world", units="m", perceives=(POSE, SCALES)),
        ObsBlock("object_scales", 3, ObsSource("command", command=SCALES), units="1 (handle dims / object_base_size)",
                 perceives=(SCALES,)),
    )
    lower, upper = env.joint_lower, env.joint_upper
    arm_step = cfg.dof_speed_scale * env.control_dt
    action = []
    for j, (act, joint) in enumerate(zip(robot.ACTUATOR_NAMES, robot.JOINT_NAMES, strict=True)):
        lo, hi = float(lower[j]), float(upper[j])
        if j < tool_terms.NUM_ARM_JOINTS:
            dim = ActionDim(act, joint, "delta", "affine", scale=arm_step, offset=None, clip_target=(lo, hi),
                            smoothing=cfg.arm_moving_average, limit=(lo, hi))
        else:
            dim = ActionDim(act, joint, "absolute", "limits", scale=0.5 * (hi - lo), offset=0.5 * (hi + lo),
                            map_range=(lo, hi), smoothing=cfg.hand_moving_average, limit=(lo, hi))
        action.append(dim)
    commands = (
        Command("goal_pose", 7, "m, quaternion wxyz", frame="world",
                description="the goal pose of the object (the env samples it: first goal, then a delta goal "
                            "after every success)"),
        Command(SCALES, 3, "1 (handle dims / object_base_size)",
                description="the grasp box of the tool's handle (the env: its catalog entry)"),
    )
    perceived = (Perceived(POSE, free_joint=tool_scene.OBJECT_JOINT_NAME,
                           description="the tool's pose (on a robot: the pose estimator's)"),
                 Perceived(SCALES, command=SCALES, description="the tool's grasp box (on a robot: measured)"))
    policy = {"policy": blocks} if env.obs_mode == "asymmetric" else {None: blocks}
    return DeploymentSpec(policy, cfg.obs_clip, "float32", tuple(action), initial_targets="joint_pos",
                          commands=commands, perceived=perceived)


class DeploymentHooks:
    """`MjVecEnv.deployment_spec` and `MjVecEnv.command_values` of `SimToolRealEnv`."""

    def deployment_spec(self) -> DeploymentSpec:
        """The policy observation's blocks and the actions in MuJoCo terms (`deployment_spec`)."""
        return deployment_spec(self)

    def command_values(self) -> dict[str, np.ndarray]:
        """goal_pose (N, 7: position, wxyz quaternion) and object_scales (N, 3), as the task holds them."""
        pose = np.concatenate([to_numpy(self.goal_pos), to_numpy(self.goal_quat)], axis=1)
        return {"goal_pose": pose.astype(np.float64), SCALES: np.array(to_numpy(self.object_scales), np.float64)}
