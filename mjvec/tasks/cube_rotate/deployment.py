"""CubeRotate-v0's deployment declarations (`mjvec.envs.deployment`): the policy observation's
blocks in MuJoCo terms and the absolute PD-target action, exactly as `CubeRotateEnv` computes them."""

from __future__ import annotations

from typing import Any

import numpy as np

from mjvec.assets.robot import FINGERTIP_SITE_NAMES, HAND_ACTUATOR_NAMES, HAND_JOINT_NAMES
from mjvec.envs.deployment import ActionDim, Command, DeploymentSpec, ObsBlock, ObsSource, Perceived
from mjvec.tasks.cube_rotate import scene as cube_scene
from mjvec.tasks.cube_rotate import terms as cube_terms

CUBE = (cube_scene.CUBE_JOINT_NAME,)
POSE = ("cube_pose",)


def deployment_spec(env: Any) -> DeploymentSpec:
    """The spec of a `CubeRotateEnv` (its config, rest pose, joint ranges and palm centre)."""
    cfg = env.cfg
    cube_pos = ObsSource("free_joint_pos", CUBE)
    blocks = (
        ObsBlock("joint_pos", cube_terms.NUM_HAND_JOINTS, ObsSource("joint_pos", HAND_JOINT_NAMES), units="rad"),
        ObsBlock("joint_vel", cube_terms.NUM_HAND_JOINTS, ObsSource("joint_vel", HAND_JOINT_NAMES), units="rad/s",
                 scale=cfg.joint_vel_obs_scale),
        ObsBlock("targets", cube_terms.NUM_HAND_JOINTS, ObsSource("targets"), units="rad",
                 description="the PD targets the last action set (the action pipeline's state)"),
        ObsBlock("cube_pos", 3, ObsSource("free_joint_pos", CUBE, minus=ObsSource(
            "constant", params={"value": [float(v) for v in env.palm_center]})), frame="world", units="m",
                 perceives=POSE, description="cube centre minus the palm centre"),
        ObsBlock("cube_quat", 4, ObsSource("free_joint_quat", CUBE), frame="world", units="quaternion wxyz",
                 canonical=True, perceives=POSE),
        ObsBlock("cube_linvel", 3, ObsSource("free_joint_linvel", CUBE), frame="world", units="m/s", perceives=POSE),
        ObsBlock("cube_angvel", 3, ObsSource("free_joint_angvel", CUBE), frame="world", units="rad/s",
                 perceives=POSE),
        ObsBlock("fingertip_pos", 3 * cube_terms.NUM_FINGERTIPS,
                 ObsSource("site_pos", FINGERTIP_SITE_NAMES, minus=cube_pos),
                 frame="world", units="m", perceives=POSE, description="each fingertip minus the cube centre"),
        ObsBlock("cube_half_size", 1, ObsSource("command", command="cube_half_size"), units="m"),
    )
    lower, upper = env.joint_lower, env.joint_upper
    gain = cube_terms.action_gain(lower, upper, cfg.action_scale)
    action = tuple(
        ActionDim(act, joint, "absolute", "affine", scale=float(gain[j]), offset=float(env.default_pose[j]),
                  clip_target=(float(lower[j]), float(upper[j])), smoothing=cfg.action_ema)
        for j, (act, joint) in enumerate(zip(HAND_ACTUATOR_NAMES, HAND_JOINT_NAMES, strict=True))
    )
    commands = (Command("cube_half_size", 1, "m", description="the cube's half edge length (the env: its cube "
                                                                "catalog entry, fixed for the env's life)"),)
    perceived = (Perceived("cube_pose", free_joint=cube_scene.CUBE_JOINT_NAME,
                           description="the cube's pose and velocity (on a robot: the state estimator's)"),)
    return DeploymentSpec({None: blocks}, cfg.obs_clip, "float32", action, initial_targets="joint_pos",
                          commands=commands, perceived=perceived)


class DeploymentHooks:
    """`MjVecEnv.deployment_spec` and `MjVecEnv.command_values` of `CubeRotateEnv`."""

    def deployment_spec(self) -> DeploymentSpec:
        """The observation blocks and actions in MuJoCo terms (`deployment_spec`)."""
        return deployment_spec(self)

    def command_values(self) -> dict[str, np.ndarray]:
        """cube_half_size (N, 1): each env's cube."""
        return {"cube_half_size": self.cube_half_size[:, None].astype(np.float64)}
