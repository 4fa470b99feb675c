"""Model ids and constants of the PandaPickCube task, resolved once from the canonical model
(`build_indices`), as the arrays the step reads (in the state's namespace and dtype)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import mujoco
import numpy as np

from mjvec.errors import ConfigError
from mjvec.tasks.panda_pick_cube import scene as panda_scene
from mjvec.tasks.panda_pick_cube.config import PandaPickCubeConfig

__all__ = ["NUM_ACTUATORS", "PandaIndices", "build_indices"]

NUM_ACTUATORS = 8  # the 7 arm joints' position actuators and the gripper's (both fingers, tendon-coupled)

AsArray = Callable[..., Any]


@dataclass(frozen=True, eq=False)
class PandaIndices:
    """What the step reads from the model.

    arm_qpos (7,): the arm joints' qpos addresses; actuated_qpos (8,): the arm joints' and the first
    finger's (what the 8 position targets track, Playground's ``_robot_qposadr[:-1]``); box_qpos:
    the box's free-joint qpos address; gripper_site, box_body, target_mocap: ids; floor_adr (3,):
    the floor contact sensors' sensordata addresses; home_qpos (nq,) and home_ctrl (nu,): the "home"
    keyframe; home_arm (7,): its arm angles; box_home (3,): the box's home position (the centre of
    the box and target ranges); ctrl_low / ctrl_high (nu,): the actuators' ctrlrange.
    """

    arm_qpos: Any
    actuated_qpos: Any
    box_qpos: int
    gripper_site: int
    box_body: int
    target_mocap: int
    floor_adr: Any
    home_qpos: Any
    home_ctrl: Any
    home_arm: Any
    box_home: Any
    ctrl_low: Any
    ctrl_high: Any
    nq: int
    nv: int
    nmocap: int


def build_indices(model: mujoco.MjModel, cfg: PandaPickCubeConfig, asarray: AsArray, dtype: Any) -> PandaIndices:
    """Resolve every name the task uses; host constants become arrays of `asarray` in `dtype`.
    ConfigError when the model is not Playground's scene for `cfg`."""
    if model.nu != NUM_ACTUATORS:
        raise ConfigError(f"the Panda pick-cube task needs {NUM_ACTUATORS} actuators (Playground's "
                          f"mjx_single_cube.xml); this model has nu={model.nu}")
    if abs(float(model.opt.timestep) - cfg.sim_dt) > 1e-12:
        raise ConfigError(
            f"the scene's timestep is {model.opt.timestep} s but the config's sim_dt is {cfg.sim_dt} s; build the "
            "scene from the same config (mjvec.tasks.panda_pick_cube.scene.scene_spec(config))"
        )
    try:
        joints = [model.joint(j) for j in panda_scene.ARM_JOINTS + panda_scene.FINGER_JOINTS]
        box = model.body(panda_scene.BOX_BODY)
        target = model.body(panda_scene.TARGET_BODY)
        site = int(model.site(panda_scene.GRIPPER_SITE).id)
        home = model.keyframe(panda_scene.HOME_KEYFRAME)
        floor = np.array([model.sensor(n).adr[0] for n in panda_scene.FLOOR_SENSORS], np.int64)
    except KeyError as error:
        raise ConfigError(f"the scene lacks {error}; is it Playground's mjx_single_cube.xml?") from error
    if int(target.mocapid[0]) < 0 or int(box.jntnum[0]) != 1:
        raise ConfigError(
            f"the scene's {panda_scene.TARGET_BODY!r} must be a mocap body (mocapid {int(target.mocapid[0])}) and its "
            f"{panda_scene.BOX_BODY!r} must have one free joint ({int(box.jntnum[0])} joints); is it Playground's "
            "mjx_single_cube.xml?")
    qpos_adr = np.array([int(model.jnt_qposadr[j.id]) for j in joints], np.int64)
    box_qpos = int(model.jnt_qposadr[box.jntadr[0]])
    home_qpos = home.qpos.copy()
    return PandaIndices(
        arm_qpos=asarray(qpos_adr[:7]), actuated_qpos=asarray(qpos_adr[:NUM_ACTUATORS]), box_qpos=box_qpos,
        gripper_site=site, box_body=int(box.id), target_mocap=int(target.mocapid[0]), floor_adr=asarray(floor),
        home_qpos=asarray(home_qpos, dtype), home_ctrl=asarray(home.ctrl.copy(), dtype),
        home_arm=asarray(home_qpos[qpos_adr[:7]], dtype), box_home=asarray(home_qpos[box_qpos:box_qpos + 3], dtype),
        ctrl_low=asarray(model.actuator_ctrlrange[:, 0].copy(), dtype),
        ctrl_high=asarray(model.actuator_ctrlrange[:, 1].copy(), dtype),
        nq=int(model.nq), nv=int(model.nv), nmocap=int(model.nmocap),
    )
