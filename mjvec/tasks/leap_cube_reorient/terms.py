"""Model ids and the per-step math of LeapCubeReorient: the cube's orientation error, success,
Playground's seven reward terms, the termination and the goal's spin (``reorient.py``'s
``_get_reward``, ``_get_termination``, ``_cube_orientation_error``, ``step``), for (N, ...) arrays
of either namespace."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import mujoco
import numpy as np

from mjvec import portable
from mjvec.errors import ConfigError
from mjvec.rotations import quat_conj, quat_mul
from mjvec.tasks.leap_cube_reorient import scene as leap_scene
from mjvec.tasks.leap_cube_reorient.config import LeapCubeReorientConfig
from mjvec.xp import namespace_of

__all__ = ["NUM_JOINTS", "REWARD_TERMS", "LeapIndices", "build_indices", "orientation_error", "reward",
           "reward_terms", "spin_goal", "terminated", "tolerance_linear"]

Array = Any
NUM_JOINTS = 16
REWARD_TERMS = ("orientation", "position", "termination", "hand_pose", "action_rate", "joint_vel", "energy")
FALL_Z = -0.05  # the cube's height (m) below which the episode ends (Playground's fall termination)
# Playground's reward.tolerance: the value a linear sigmoid takes at one margin from the bounds.
VALUE_AT_MARGIN = 0.1
ORIENTATION_BOUNDS, ORIENTATION_MARGIN = (0.0, 0.2), float(np.pi)
POSITION_BOUNDS, POSITION_MARGIN = (0.0, 0.02), 0.05
MAX_JOINT_VEL, JOINT_VEL_TOLERANCE = 5.0, 1.0  # Playground's _cost_joint_vel constants (rad/s)


@dataclass(frozen=True, eq=False)
class LeapIndices:
    """What the step reads from the model: sensor name -> (adr, dim) (`scene.SENSORS`);
    fingertip_adr (12,) the four fingertip-position sensors' entries; cube_body and goal_mocap ids;
    default_pose (16,) and ctrl lower/upper (16,) (the "home" keyframe's hand pose and the
    actuators' ctrlrange, Playground's clip bounds); home_mpos (3,) the goal's keyframe position;
    cube_mass: the cube's mass in the template (what perturbations scale by, as Playground's); nq, nv."""

    sensor: dict[str, tuple[int, int]]
    fingertip_adr: Any
    cube_body: int
    goal_mocap: int
    default_pose: Any
    lower: Any
    upper: Any
    home_mpos: Any
    cube_mass: float
    nq: int
    nv: int

    def read(self, sensordata: Array, name: str) -> Array:
        """(N, dim) of sensor `name`."""
        adr, dim = self.sensor[name]
        return sensordata[:, adr:adr + dim]


def _check_layout(model: mujoco.MjModel) -> None:
    """Playground's layout: 16 hand hinges first (qpos = dof = actuator order), then the cube's free joint."""
    names = tuple(model.joint(j).name for j in range(model.njnt))
    in_order = model.nu == NUM_JOINTS and all(
        model.actuator_trntype[a] == mujoco.mjtTrn.mjTRN_JOINT and model.actuator_trnid[a, 0] == a
        for a in range(model.nu))
    if names[:NUM_JOINTS] != leap_scene.HAND_JOINTS or model.nq != NUM_JOINTS + 7 or not in_order \
            or model.jnt_type[NUM_JOINTS] != mujoco.mjtJoint.mjJNT_FREE:
        raise ConfigError(
            f"the LeapCubeReorient task needs the 16 LEAP joints {leap_scene.HAND_JOINTS} actuated in order, then the "
            f"cube's free joint (Playground's scene_mjx_cube.xml); this model has joints {names}, nu={model.nu}"
        )


def build_indices(model: mujoco.MjModel, cfg: LeapCubeReorientConfig, asarray: Callable[..., Any],
                  dtype: Any) -> LeapIndices:
    """Resolve every name the task uses; host constants become arrays of `asarray` in `dtype`."""
    _check_layout(model)
    if abs(float(model.opt.timestep) - cfg.sim_dt) > 1e-12:
        raise ConfigError(
            f"the scene's timestep is {model.opt.timestep} s but the config's sim_dt is {cfg.sim_dt} s; build the "
            "scene from the same config (mjvec.tasks.leap_cube_reorient.scene.scene_spec(config))"
        )
    try:
        sensor = {n: (int(model.sensor(n).adr[0]), int(model.sensor(n).dim[0])) for n in leap_scene.SENSORS}
        home = model.keyframe(leap_scene.HOME_KEYFRAME)
        cube = int(model.body(leap_scene.CUBE_BODY).id)
        goal = int(model.body_mocapid[model.body(leap_scene.GOAL_BODY).id])
    except KeyError as error:
        raise ConfigError(f"the scene lacks {error}; is it Playground's LEAP cube scene?") from error
    if goal < 0:
        raise ConfigError(f"body {leap_scene.GOAL_BODY!r} must be a mocap body (Playground's goal cube)")
    tips = np.array([sensor[f"{t}_position"][0] + k for t in leap_scene.FINGERTIPS for k in range(3)], np.int64)
    return LeapIndices(
        sensor=sensor, fingertip_adr=asarray(tips), cube_body=cube, goal_mocap=goal,
        default_pose=asarray(home.qpos[:NUM_JOINTS].copy(), dtype),
        lower=asarray(model.actuator_ctrlrange[:, 0].copy(), dtype),
        upper=asarray(model.actuator_ctrlrange[:, 1].copy(), dtype),
        home_mpos=asarray(home.mpos.reshape(-1, 3)[goal].copy(), dtype), cube_mass=float(model.body_subtreemass[cube]),
        nq=int(model.nq), nv=int(model.nv),
    )


def tolerance_linear(x: Array, bounds: tuple[float, float], margin: float) -> Array:
    """dm_control's / Playground's ``reward.tolerance`` with the linear sigmoid: 1 inside `bounds`,
    falling linearly to `VALUE_AT_MARGIN` at `margin` beyond them and to 0 at margin / (1 - it)."""
    xp = namespace_of(x)
    lower, upper = bounds
    d = xp.where(x < lower, lower - x, x - upper) / margin
    scaled = d * (1.0 - VALUE_AT_MARGIN)
    inside = (lower <= x) & (x <= upper)
    return xp.where(inside, 1.0, xp.where(xp.abs(scaled) < 1.0, 1.0 - scaled, 0.0))


def normalize(q: Array) -> Array:
    """q / |q| along the last axis, as MJX's ``math.normalize`` (a zero vector stays zero)."""
    xp = namespace_of(q)
    n = xp.linalg.vector_norm(q, axis=-1, keepdims=True)
    return q / (n + 1e-6 * xp.astype(n == 0.0, n.dtype))


def orientation_error(cube_quat: Array, goal_quat: Array) -> Array:
    """(N,) the angle (rad) between the cube's and the goal's orientations: 2 asin(|vec(q_c q_g^-1)|)."""
    xp = namespace_of(cube_quat)
    diff = normalize(quat_mul(cube_quat, quat_conj(goal_quat)))
    return 2.0 * portable.asin(xp.clip(xp.linalg.vector_norm(diff[:, 1:], axis=-1), max=1.0))


def terminated(qpos: Array, qvel: Array, sensordata: Array, idx: LeapIndices) -> Array:
    """(N,) bool: the cube fell below `FALL_Z`, or the state holds a NaN."""
    xp = namespace_of(qpos)
    nans = xp.any(xp.isnan(qpos), axis=1) | xp.any(xp.isnan(qvel), axis=1)
    return (idx.read(sensordata, "cube_position")[:, 2] < FALL_Z) | nans


def reward_terms(idx: LeapIndices, qpos: Array, qvel: Array, sensordata: Array, actuator_force: Array,
                 action: Array, last_act: Array, last_last_act: Array, done: Array, ori_error: Array
                 ) -> dict[str, Array]:
    """Each term's unweighted (N,) value for this step (Playground's names and inputs)."""
    xp = namespace_of(qpos)
    hand_q, hand_v = qpos[:, :NUM_JOINTS], qvel[:, :NUM_JOINTS]
    offset = idx.read(sensordata, "palm_position") - idx.read(sensordata, "cube_position")
    rate = action - last_act
    accel = action - 2 * last_act + last_last_act
    return {
        "orientation": tolerance_linear(ori_error, ORIENTATION_BOUNDS, ORIENTATION_MARGIN),
        "position": tolerance_linear(xp.linalg.vector_norm(offset, axis=-1), POSITION_BOUNDS, POSITION_MARGIN),
        "termination": xp.astype(done, qpos.dtype),
        "hand_pose": xp.sum((hand_q - idx.default_pose) ** 2, axis=1),
        "action_rate": xp.sum(rate * rate, axis=1) + xp.sum(accel * accel, axis=1),
        "joint_vel": xp.sum((hand_v / (MAX_JOINT_VEL - JOINT_VEL_TOLERANCE)) ** 2, axis=1),
        "energy": xp.sum(xp.abs(hand_v) * xp.abs(actuator_force), axis=1),
    }


def reward(cfg: LeapCubeReorientConfig, terms: dict[str, Array], success: Array) -> tuple[Array, dict[str, Array]]:
    """(reward (N,), weighted terms): (sum of weight x term) x control_dt + success_reward x success."""
    scales = cfg.reward_scales.as_dict()
    weighted = {name: scales[name] * terms[name] for name in REWARD_TERMS}
    total = sum(weighted.values()) * cfg.ctrl_dt
    xp = namespace_of(total)
    return total + cfg.success_reward * xp.astype(success, total.dtype), weighted


def spin_goal(goal_quat: Array, spin: Array, dt: float) -> Array:
    """(N, 4) the goal rotated by angular velocity `spin` (N, 3) over `dt` (MJX's ``quat_integrate``:
    q x (cos(|w| dt / 2), w / |w| sin(|w| dt / 2)), renormalised; w = 0 leaves q unchanged)."""
    xp = namespace_of(spin)
    n = xp.linalg.vector_norm(spin, axis=-1, keepdims=True)
    axis = spin / (n + 1e-6 * xp.astype(n == 0.0, n.dtype))
    half = 0.5 * dt * n
    sin, cos = portable.sincos(half)
    step = xp.concat([cos, axis * sin], axis=-1)
    return normalize(quat_mul(goal_quat, step))
