"""CubeRotate-v0: the 22-DoF hand, fixed palm-up, spins a cube about the world z axis in its palm.

The classic in-hand benchmark (MuJoCo Playground's LeapCubeRotateZAxis, Isaac Lab's Allegro and
Shadow cubes) on this project's hand (`mjvec.tasks.cube_rotate.scene`), small enough to learn on a laptop CPU.
The constants are `CubeRotateConfig`'s; the pure per-step functions are `cube_rotate_terms`'.

Per control step (20 Hz: five 100 Hz physics substeps by default): the 22-D action in [-1, 1]
becomes ABSOLUTE PD targets around the rest pose (``default + action_scale * a * half range``,
clipped to the joint range, optionally smoothed by `CubeRotateConfig.action_ema`); the physics
steps; the reward, the drop termination and the observation are computed. Absolute rather than
relative targets: the policy's initial mean action (about 0) then holds the rest pose, whose
fingertips rest on the cube, so early episodes are long and a policy is a stationary map from state
to hand pose; relative deltas integrate the exploration noise into a random walk of the targets
that opens the hand and drops the cube before anything is learned (Playground uses absolute
targets for this task too). docs/cube_rotate.md states every rule.

Cubes: env with global id g holds cube ``g % num_cubes`` of the seeded catalog (`CubeCatalog`): its
size, mass and friction are fixed for the env's life, compiled into its own variant of the scene.

Liveness (as in SimToolReal-v0): the cube pose and velocities come from qpos/qvel (current); the
fingertip sites and the actuator forces the energy term uses are those of the last substep's start.
The palm is fixed, so its centre is a constant of the scene.

Hooks for the randomization wrappers: `EnvHooks` (from `MjVecEnv`) and `ObservationLayoutHooks`
(``policy_layout``), so `ObservationNoise` (e.g. on "joint_pos"), `ObservationDelay` and
`ActionDelay` apply, and every model-field `EventTerm` (the cube body is "cube", its geom "cube");
and the policy contract's deployment declarations (`deployment.DeploymentHooks`).
"""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import mujoco
import numpy as np
from gymnasium.vector import VectorEnv

from mjvec import portable
from mjvec.assets.robot import FINGERTIP_SITE_NAMES, HAND_ACTUATOR_NAMES, HAND_JOINT_NAMES
from mjvec.envs.base import MjVecEnv
from mjvec.envs.memory import MemoryNeeds
from mjvec.errors import ConfigError
from mjvec.tasks.cube_rotate import cameras as cube_cameras
from mjvec.tasks.cube_rotate import kernels as cube_kernels
from mjvec.tasks.cube_rotate import scene as cube_scene
from mjvec.tasks.cube_rotate import terms as cube_terms
from mjvec.tasks.cube_rotate.config import CubeRotateConfig
from mjvec.tasks.cube_rotate.deployment import DeploymentHooks

__all__ = ["POLICY_LAYOUT", "REWARD_TERMS", "CubeRotateEnv"]

POLICY_LAYOUT = cube_terms.POLICY_LAYOUT
REWARD_TERMS = cube_terms.REWARD_TERMS


class CubeRotateEnv(DeploymentHooks, MjVecEnv, VectorEnv):
    """The CubeRotate task over any backend (see the module docstring).

    backend: a `Backend` (numpy state views) whose scene's variant v is
        ``cube_scene_spec(catalog[v])``.
    catalog: the cube catalog the scene was built from (per-env half sizes and masses).
    config: the task constants (None: the defaults). Remaining keyword arguments go to `MjVecEnv`.

    Attributes: ``cube_ids``, ``cube_half_size``, ``cube_mass`` (per env, fixed), ``targets``
    (current PD targets), ``progress`` (control steps this episode: the base's ``episode_steps``,
    which truncates at ``config.max_episode_steps``),
    ``palm_center`` (world), ``policy_layout``.

    info (every step, (N, ...) arrays): reward_terms (the weighted terms, `REWARD_TERMS`),
    cube_angvel_z (the cube's unclipped mean angular velocity about world z over the step, rad/s:
    the turn of its orientation since the previous step, over control_dt), dropped, cube_id.
    """

    render_camera = cube_scene.CAMERA_NAME
    policy_layout = POLICY_LAYOUT

    def __init__(self, backend: Any, *, catalog: cube_scene.CubeCatalog, config: CubeRotateConfig | None = None,
                 **base_kwargs: Any) -> None:
        if backend.capabilities.array_namespace != "numpy":
            raise ConfigError(
                f"CubeRotateEnv computes its task on numpy state; the {backend.capabilities.backend!r} backend "
                f"keeps {backend.capabilities.array_namespace!r} state. Build it through gym.make_vec (which "
                "gives the task numpy views of any backend) or wrap the backend in HostViews"
            )
        cfg = CubeRotateConfig() if config is None else config
        if not isinstance(cfg, CubeRotateConfig):
            raise ConfigError(f"config must be a CubeRotateConfig, got {type(cfg).__name__}")
        self.cfg = cfg
        self.catalog = catalog
        self._bind_model(backend.model)
        n = int(backend.num_envs)
        self.cube_ids = np.asarray(backend.variant_of_env, np.int64).copy()
        self.cube_half_size = np.array([catalog[int(v)].half_size for v in self.cube_ids])
        self.cube_mass = np.array([catalog[int(v)].mass for v in self.cube_ids])
        for arr in (self.cube_ids, self.cube_half_size, self.cube_mass):
            arr.setflags(write=False)
        self.targets = np.tile(self.default_pose, (n, 1))
        self._actions = np.zeros((n, cube_terms.NUM_HAND_JOINTS))
        self._step_targets = self.targets.copy()
        # The cube's orientation at the end of the previous step (or at the reset): the rotation reward
        # is the turn from it.
        self._prev_quat = np.tile([1.0, 0.0, 0.0, 0.0], (n, 1))
        clip = cfg.obs_clip
        super().__init__(
            backend,
            single_observation_space=gym.spaces.Box(-clip, clip, (cube_terms.layout_size(POLICY_LAYOUT),), np.float32),
            single_action_space=gym.spaces.Box(-1.0, 1.0, (cube_terms.NUM_HAND_JOINTS,), np.float32),
            frame_skip=cfg.frame_skip,
            max_episode_steps=cfg.max_episode_steps,
            **base_kwargs,
        )
        self._site_xpos = backend.bind("site_xpos")
        self._actuator_force = backend.bind("actuator_force")

    @classmethod
    def task_cameras(cls, options: Any) -> tuple:
        """Camera observations' camera: "palm", fixed above the palm (see `cameras`)."""
        return cube_cameras.CAMERAS

    @classmethod
    def memory_needs(cls, options: Any) -> MemoryNeeds:
        """What one env holds (`MjVecEnv.memory_needs`)."""
        return MemoryNeeds(cls.bound_fields(), cls.bytes_per_env())

    @staticmethod
    def bound_fields() -> tuple[str, ...]:
        """The MjData fields the task binds (read by `mjvec.envs.memory` before anything is built)."""
        return ("site_xpos", "actuator_force")

    @staticmethod
    def bytes_per_env() -> int:
        """Host bytes the task holds or builds per env per step besides the backend's views: about
        128 float64 values of state and infos, and four observation-sized float64 temporaries."""
        return 8 * (128 + 4 * cube_terms.layout_size(POLICY_LAYOUT))

    def _bind_model(self, model: mujoco.MjModel) -> None:
        """Resolve every name the task uses into ids/addresses of the canonical model."""
        try:
            joints = [model.joint(n) for n in HAND_JOINT_NAMES]
            cube = model.joint(cube_scene.CUBE_JOINT_NAME)
            self._act_ids = np.array([model.actuator(n).id for n in HAND_ACTUATOR_NAMES], np.int64)
            self._palm_site = int(model.site(cube_scene.PALM_SITE_NAME).id)
            self._tip_sites = np.array([model.site(n).id for n in FINGERTIP_SITE_NAMES], np.int64)
        except KeyError as error:
            raise ConfigError(
                f"the scene lacks {error}; is it a CubeRotate scene (mjvec.tasks.cube_rotate.scene)?"
            ) from error
        self._jnt_qpos = np.array([j.qposadr[0] for j in joints], np.int64)
        self._jnt_dof = np.array([j.dofadr[0] for j in joints], np.int64)
        ids = np.array([j.id for j in joints], np.int64)
        self.joint_lower = model.jnt_range[ids, 0].copy()
        self.joint_upper = model.jnt_range[ids, 1].copy()
        self.default_pose = np.clip(np.asarray(cube_scene.DEFAULT_HAND_POSE, np.float64), self.joint_lower,
                                    self.joint_upper)
        self._cube_qpos = int(cube.qposadr[0])
        self._cube_dof = int(cube.dofadr[0])
        self.cube_body_id = int(model.body(cube_scene.CUBE_BODY_NAME).id)
        self._qpos0 = model.qpos0.copy()
        self._nv = int(model.nv)
        self.palm_center = np.asarray(cube_scene.PALM_CENTER, np.float64)

    @property
    def progress(self) -> np.ndarray:
        """(N,) int64, live: control steps of each env's current episode (the base's ``episode_steps``)."""
        return self.episode_steps

    # ---- state views -------------------------------------------------------------------------
    def cube_pose(self) -> tuple[np.ndarray, np.ndarray]:
        """(pos (N, 3), quat (N, 4) wxyz) of the cube, world frame, from qpos (copies)."""
        q = self.backend.qpos
        return q[:, self._cube_qpos:self._cube_qpos + 3].copy(), q[:, self._cube_qpos + 3:self._cube_qpos + 7].copy()

    def cube_velocity(self, quat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(linear (N, 3), angular (N, 3)) velocity of the cube, world frame, from qvel."""
        v = self.backend.qvel
        local = v[:, self._cube_dof + 3:self._cube_dof + 6]
        return v[:, self._cube_dof:self._cube_dof + 3].copy(), cube_terms.world_angular_velocity(quat, local)

    # ---- hooks -------------------------------------------------------------------------------
    def _apply_action(self, actions: np.ndarray) -> None:
        self._actions = actions
        self._step_targets = cube_terms.joint_targets(actions, self.targets, self.default_pose, self.joint_lower,
                                              self.joint_upper, self.cfg.action_scale, self.cfg.action_ema)
        self.backend.ctrl[:, self._act_ids] = self._step_targets

    def _evaluate(self, active: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        fused = cube_kernels.evaluate(self, active)  # the same bits in one compiled pass, where it applies
        if fused is not None:
            rows, reward, angvel_z, drop = fused
            terms = dict(zip(REWARD_TERMS, rows, strict=True))
            info = {"reward_terms": terms, "cube_angvel_z": angvel_z, "dropped": drop, "cube_id": self.cube_ids.copy()}
            return reward, drop, np.zeros_like(drop), info
        cfg = self.cfg
        pos, quat = self.cube_pose()
        angvel_z = cube_terms.mean_angular_velocity(self._prev_quat, quat, self.control_dt)[:, 2]
        drop = cube_terms.dropped(pos, self.palm_center, cfg.drop_depth, cfg.max_xy_distance)
        energy = cube_terms.energy_term(self._actuator_force[:, self._act_ids], self.backend.qvel[:, self._jnt_dof])
        terms = cube_terms.reward_terms(cube_terms.rotation_term(angvel_z, cfg.rotation_clip),
                                        cube_terms.action_term(self._actions), energy, drop,
                                        control_dt=self.control_dt, cfg=cfg)
        reward = sum(terms.values())
        np.copyto(self.targets, self._step_targets, where=active[:, None])
        np.copyto(self._prev_quat, quat, where=active[:, None])
        info = {"reward_terms": terms, "cube_angvel_z": angvel_z, "dropped": drop, "cube_id": self.cube_ids.copy()}
        return reward, drop, np.zeros_like(drop), info  # the base truncates at max_episode_steps

    def _observe(self) -> np.ndarray:
        fused = cube_kernels.observe(self)  # the same bits in one compiled pass, where it applies
        if fused is not None:
            return fused
        pos, quat = self.cube_pose()
        linvel, angvel = self.cube_velocity(quat)
        tips = self._site_xpos[:, self._tip_sites] - pos[:, None]
        blocks = {
            "joint_pos": self.backend.qpos[:, self._jnt_qpos],
            "joint_vel": self.cfg.joint_vel_obs_scale * self.backend.qvel[:, self._jnt_dof],
            "targets": self.targets,
            "cube_pos": pos - self.palm_center,
            "cube_quat": cube_terms.canonical_quat(quat),
            "cube_linvel": linvel,
            "cube_angvel": angvel,
            "fingertip_pos": tips,
            "cube_half_size": self.cube_half_size,
        }
        return cube_terms.assemble(blocks, POLICY_LAYOUT, self.cfg.obs_clip)

    def _reset_envs(self, env_ids: np.ndarray) -> None:
        cfg, rng, k = self.cfg, self.rng, env_ids.size
        noise = rng.uniform(env_ids, "reset/joint_pos", -cfg.joint_pos_noise, cfg.joint_pos_noise,
                            (cube_terms.NUM_HAND_JOINTS,))
        joint_pos = np.clip(self.default_pose + noise, self.joint_lower, self.joint_upper)
        xy = np.asarray(cube_scene.CUBE_SPAWN_XY) + rng.uniform(env_ids, "reset/cube_xy", -cfg.cube_xy_noise,
                                                       cfg.cube_xy_noise, (2,))
        sin_half_yaw, cos_half_yaw = portable.sincos(0.5 * rng.uniform(env_ids, "reset/cube_yaw", -math.pi, math.pi))
        qpos = np.tile(self._qpos0, (k, 1))
        qpos[:, self._jnt_qpos] = joint_pos
        qpos[:, self._cube_qpos:self._cube_qpos + 2] = xy
        qpos[:, self._cube_qpos + 2] = cube_scene.spawn_height(self.cube_half_size[env_ids])
        qpos[:, self._cube_qpos + 3:self._cube_qpos + 7] = np.stack(
            [cos_half_yaw, np.zeros(k), np.zeros(k), sin_half_yaw], axis=1)
        # The targets go in at the reset itself, so its one forward (and the actuator forces the
        # backend reports from it) sees them; every other actuator keeps mj_resetData's 0.
        ctrl = np.zeros((k, self.backend.model.nu))
        ctrl[:, self._act_ids] = joint_pos
        self.backend.reset(env_ids, qpos, np.zeros((k, self._nv)), ctrl=ctrl)
        self.targets[env_ids] = joint_pos
        self._prev_quat[env_ids] = qpos[:, self._cube_qpos + 3:self._cube_qpos + 7]

    def _reset_info(self, env_ids: np.ndarray) -> dict[str, np.ndarray]:
        """At reset: each env's cube id."""
        return {"cube_id": self.cube_ids.copy()}

