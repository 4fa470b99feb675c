"""Model ids and constants of the Go1 joystick task, resolved once from the canonical model
(`build_indices`), as the arrays the step reads (in the state's namespace and dtype)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import mujoco
import numpy as np

from mjvec.errors import ConfigError
from mjvec.tasks.go1_joystick import scene as go1_scene
from mjvec.tasks.go1_joystick.config import Go1JoystickConfig

__all__ = ["NUM_JOINTS", "Go1Indices", "build_indices"]

NUM_JOINTS = 12
POSE_WEIGHT = (1.0, 1.0, 0.1)  # Playground's pose-reward weight per leg joint (abduction, hip, knee)

AsArray = Callable[..., Any]


@dataclass(frozen=True, eq=False)
class Go1Indices:
    """What the step reads from the model.

    sensor: name -> (adr, dim) in sensordata for the base sensors (`scene.SENSORS`); foot_vel_adr
    (4, 3) and contact_adr (4,) index sensordata; imu_site, foot_sites (4,), torso: ids;
    torso_mass: the base's subtree mass in the template (Playground's ``_torso_mass``, what kicks
    scale by); home_qpos (nq,) and default_pose (12,) from the "home" keyframe; soft_lower /
    soft_upper (12,) the joint ranges x soft_joint_pos_limit_factor (Playground scales the bounds
    themselves); pose_weight (12,); noise_scale (33,) level x scale per noisy observation entry.
    """

    sensor: dict[str, tuple[int, int]]
    foot_vel_adr: Any
    contact_adr: Any
    imu_site: int
    foot_sites: Any
    torso: int
    torso_mass: float
    home_qpos: Any
    default_pose: Any
    soft_lower: Any
    soft_upper: Any
    pose_weight: Any
    noise_scale: Any
    nv: int


def _sensor(model: mujoco.MjModel, name: str) -> tuple[int, int]:
    try:
        sensor = model.sensor(name)
    except KeyError as error:
        raise ConfigError(f"the scene has no sensor {name!r}; is it Playground's Go1 scene?") from error
    return int(sensor.adr[0]), int(sensor.dim[0])


def _check_layout(model: mujoco.MjModel) -> None:
    """The task's arrays assume Playground's layout: one free joint, then 12 hinges whose qpos/dof
    follow it, actuated in that order by 12 position actuators."""
    free = model.njnt and model.jnt_type[0] == mujoco.mjtJoint.mjJNT_FREE
    in_order = model.nu == NUM_JOINTS and all(
        model.actuator_trntype[a] == mujoco.mjtTrn.mjTRN_JOINT and model.actuator_trnid[a, 0] == a + 1
        for a in range(model.nu))
    if not (free and model.njnt == NUM_JOINTS + 1 and model.nq == 7 + NUM_JOINTS and in_order):
        raise ConfigError(
            f"the Go1 joystick task needs a free base joint and {NUM_JOINTS} hinges actuated in joint order "
            f"(Playground's go1_mjx_feetonly.xml); this model has njnt={model.njnt}, nq={model.nq}, nu={model.nu}"
        )


def build_indices(model: mujoco.MjModel, cfg: Go1JoystickConfig, asarray: AsArray, dtype: Any) -> Go1Indices:
    """Resolve every name the task uses; host constants become arrays of `asarray` in `dtype`."""
    _check_layout(model)
    if abs(float(model.opt.timestep) - cfg.sim_dt) > 1e-12:
        raise ConfigError(
            f"the scene's timestep is {model.opt.timestep} s but the config's sim_dt is {cfg.sim_dt} s; build the "
            "scene from the same config (mjvec.tasks.go1_joystick.scene.scene_spec(config))"
        )
    try:
        home = model.keyframe(go1_scene.HOME_KEYFRAME).qpos.copy()
        imu = int(model.site(go1_scene.IMU_SITE).id)
        feet = np.array([model.site(f).id for f in go1_scene.FEET], np.int64)
        torso = int(model.body(go1_scene.ROOT_BODY).id)
    except KeyError as error:
        raise ConfigError(f"the scene lacks {error}; is it Playground's Go1 scene?") from error
    foot_vel = np.array([[_sensor(model, n)[0] + k for k in range(3)] for n in go1_scene.FOOT_LINVEL_SENSORS], np.int64)
    contact = np.array([_sensor(model, n)[0] for n in go1_scene.FOOT_CONTACT_SENSORS], np.int64)
    lower, upper = model.jnt_range[1:].T
    factor = cfg.soft_joint_pos_limit_factor
    return Go1Indices(
        sensor={name: _sensor(model, name) for name in go1_scene.SENSORS},
        foot_vel_adr=asarray(foot_vel), contact_adr=asarray(contact), imu_site=imu, foot_sites=asarray(feet),
        torso=torso, torso_mass=float(model.body_subtreemass[torso]),
        home_qpos=asarray(home, dtype), default_pose=asarray(home[7:], dtype),
        soft_lower=asarray(lower * factor, dtype), soft_upper=asarray(upper * factor, dtype),
        pose_weight=asarray(np.tile(POSE_WEIGHT, 4), dtype), noise_scale=asarray(cfg.noise_vector(), dtype),
        nv=int(model.nv),
    )
