"""SimToolReal-v0: move one of 600 procedural tools to random 6-D goal poses with an arm + hand.

Faithful to the authors' Isaac Gym task (docs/simtoolreal.md states the rules and lists the
deliberate deviations). Per control step
(60 Hz, two 120 Hz physics substeps): the 29-D action in [-1, 1] becomes PD targets (arm: integrated
deltas of at most 0.025 rad; hand: absolute; EMA 0.1), the physics steps, then rewards, successes,
goal changes and terminations are evaluated and the observation is built.

Frames and liveness. Every position is in the env frame (the world frame of the env's own scene:
table centred at the origin in x/y, robot base at (0, 0.8, 0)). The object pose comes from qpos and
is current. Palm and fingertip positions come from MuJoCo site positions, which after a step are
those of the last substep's start (one physics substep, stale), as after `mj_step`; after a reset
they are current. Palm velocity is derived from `cvel` (same staleness): the linear velocity of the
palm-centre point and the angular velocity of the palm body, world frame (the source reports its
merged link-7 body's COM velocity instead; see docs/simtoolreal.md). Object velocity comes from the
free joint's qvel (current): the linear velocity of the tool's centre of mass, as the source's
rigid-body state reports it (v_com = v_origin + w x (R com), with each env's own COM offset, read
from the model at each reset), and the angular velocity, both in the world frame.

Observation (float32, clamped to ±obs_clip): see `POLICY_LAYOUT` / `CRITIC_LAYOUT`. Quaternions are
xyzw as in the source. The object pose used for the policy's object terms and the object size are
the true ones unless a wrapper fills the task's declared slots (`set_object_pose_source`,
`set_object_scale_source`) to inject perception delay/noise and grasp-box scale noise. The critic's
policy terms use the true pose (and the observed scales, as in the source), in the source's
stateList order.

Hooks declared for the randomization wrappers (`mjvec.randomization.hooks`): `EnvHooks` (from
`MjVecEnv`), `PolicyLayoutHooks`, `ObjectPoseHooks`, `ObjectScaleHooks`, `PushHooks` (pushes act
on the object body, only while the object is lifted, scaled by the tool's own mass or by the
paper run's reference mass) and `GoalSegmentHooks` (the step counter the source's delay queues
refill on).

Episode timing (the source's): the step counter `progress` counts control steps since the reset
or the last success; truncation fires at the step where it reaches `max_episode_steps`.
Success fires when the fixed-size keypoint distance has been within keypoint_scale x tolerance
for `success_steps` consecutive control steps; the tolerance follows `ToleranceCurriculum`.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import mujoco
import numpy as np
from gymnasium.vector import VectorEnv

from mjvec.assets import robot as R
from mjvec.assets import scene as S
from mjvec.assets.tools import ToolCatalog
from mjvec.envs import task_math as tm
from mjvec.envs.base import MjVecEnv
from mjvec.envs.config import SimToolRealConfig
from mjvec.envs.curriculum import Reducer, ToleranceCurriculum
from mjvec.envs.simtoolreal_hooks import SimToolRealHooks
from mjvec.envs.simtoolreal_obs import SimToolRealObservations, observation_space
from mjvec.envs.task_math import CRITIC_LAYOUT, OBS_MODES, POLICY_LAYOUT, layout_size
from mjvec.errors import ConfigError, allowed

__all__ = ["CRITIC_LAYOUT", "OBS_MODES", "POLICY_LAYOUT", "SimToolRealEnv"]

REWARD_TERMS = ("approach", "lift", "lift_bonus", "keypoint", "success_bonus", "arm_speed", "hand_speed")


# VectorEnv is named again among the bases for libraries that recognise a Gymnasium env by the
# module of its class's direct bases (skrl's wrap_env).
class SimToolRealEnv(SimToolRealHooks, SimToolRealObservations, MjVecEnv, VectorEnv):
    """The SimToolReal task over any backend (see the module docstring).

    backend: a `Backend` whose scene's variant v is `scene_spec(v, tool_geometry, catalog)`.
    catalog: the tool catalog the scene was built from (per-env scales, dims and masses).
    obs_mode: "policy" -> Box(140); "asymmetric" -> Dict(policy=Box(140), critic=Box(162)).
    Remaining keyword arguments go to `MjVecEnv`.

    Attributes: `policy_layout` / `critic_layout` ((name, width) blocks of the observations),
    `object_scales`, `object_mass`, `handle_dims`, `tool_ids` (per env, fixed), `lifted`,
    `object_body_id`, `goal_pos` / `goal_quat` (wxyz), `targets` (PD targets), `tolerance`,
    `curriculum`; the wrapper hooks are listed in the module docstring.

    info (every step, (N, ...) arrays): reward_terms (dict of weighted per-term rewards),
    success (a goal was reached this step), successes (count this episode), tolerance (the
    success tolerance used this step), keypoint_dist (fixed-size max keypoint distance),
    lifted, tool_id.
    """

    render_camera = S.CAMERA_NAME
    policy_layout = POLICY_LAYOUT
    critic_layout = CRITIC_LAYOUT

    def __init__(
        self,
        backend: Any,
        *,
        catalog: ToolCatalog,
        tool_geometry: str = "primitive",
        config: SimToolRealConfig | None = None,
        obs_mode: str = "policy",
        **base_kwargs: Any,
    ) -> None:
        if backend.capabilities.array_namespace != "numpy":
            raise ConfigError(
                f"SimToolRealEnv computes its task on numpy state; the {backend.capabilities.backend!r} backend "
                f"keeps {backend.capabilities.array_namespace!r} state, which it does not support yet. "
                "Use a backend with numpy state (backend='cpu')"
            )
        cfg = SimToolRealConfig() if config is None else config
        if not isinstance(cfg, SimToolRealConfig):
            raise ConfigError(f"config must be a SimToolRealConfig, got {type(cfg).__name__}")
        if obs_mode not in OBS_MODES:
            raise ConfigError(f"obs_mode={obs_mode!r} is not supported; allowed values are {allowed(OBS_MODES)}")
        self.cfg = cfg
        self.obs_mode = obs_mode
        self.catalog = catalog
        self.tool_geometry = tool_geometry
        self._bind_model(backend.model)
        self._init_tool_metadata(np.asarray(backend.variant_of_env, np.int64), catalog)
        self._init_buffers(int(backend.num_envs))
        action_space = gym.spaces.Box(-1.0, 1.0, (tm.NUM_JOINTS,), np.float32)
        super().__init__(
            backend,
            single_observation_space=observation_space(obs_mode, cfg.obs_clip),
            single_action_space=action_space,
            frame_skip=cfg.frame_skip,
            **base_kwargs,
        )
        views = {name: backend.bind(name) for name in self.bound_fields(obs_mode)}
        self._mocap_pos, self._mocap_quat = views["mocap_pos"], views["mocap_quat"]
        self._site_xpos, self._xquat = views["site_xpos"], views["xquat"]
        if obs_mode == "asymmetric":
            self._cvel, self._subtree_com = views["cvel"], views["subtree_com"]
            self._obj_com = np.zeros((self.num_envs, 3))  # object-frame COM offset, read at each reset
        self._slots.declare("object_pose")
        self._slots.declare("object_scales")

    # ---- what the task needs per env (read by `mjvec.envs.memory` before anything is built) -----
    @staticmethod
    def bound_fields(obs_mode: str) -> tuple[str, ...]:
        """The MjData fields the task binds; a bound output is copied out every step: bind only what is read."""
        task = ("mocap_pos", "mocap_quat", "site_xpos", "xquat")
        return (*task, "cvel", "subtree_com") if obs_mode == "asymmetric" else task

    @staticmethod
    def bytes_per_env(obs_mode: str) -> int:
        """Host bytes the task holds or builds per env per step, besides the backend's views.

        About 128 float64 values of task state, goals, tool metadata and infos, and four
        observation-sized float64 temporaries (blocks, concatenation, float32 copy, output).
        """
        width = layout_size(POLICY_LAYOUT) + (layout_size(CRITIC_LAYOUT) if obs_mode == "asymmetric" else 0)
        return 8 * (128 + 4 * width)

    # ---- construction helpers --------------------------------------------------------------
    def _bind_model(self, model: mujoco.MjModel) -> None:
        """Resolve every name the task uses into ids/addresses of the canonical model."""
        def joint(name: str) -> Any:
            try:
                return model.joint(name)
            except KeyError as error:
                raise ConfigError(f"the scene has no joint {name!r}; is it a SimToolReal scene?") from error

        self._jnt_qpos = np.array([joint(n).qposadr[0] for n in R.JOINT_NAMES], np.int64)
        self._jnt_dof = np.array([joint(n).dofadr[0] for n in R.JOINT_NAMES], np.int64)
        self._act_ids = np.array([model.actuator(n).id for n in R.ACTUATOR_NAMES], np.int64)
        jnt_ids = np.array([joint(n).id for n in R.JOINT_NAMES], np.int64)
        self.joint_lower = model.jnt_range[jnt_ids, 0].copy()
        self.joint_upper = model.jnt_range[jnt_ids, 1].copy()
        self.default_joint_pos = np.clip(np.asarray(R.DEFAULT_JOINT_POS, np.float64), self.joint_lower,
                                         self.joint_upper)
        obj = joint(S.OBJECT_JOINT_NAME)
        self._obj_qpos = int(obj.qposadr[0])
        self._obj_dof = int(obj.dofadr[0])
        self.object_body_id = int(model.body(S.OBJECT_BODY_NAME).id)
        self._palm_site = int(model.site(R.PALM_SITE_NAME).id)
        self._palm_body = int(model.site_bodyid[self._palm_site])
        self._palm_root = int(model.body_rootid[self._palm_body])
        self._tip_sites = np.array([model.site(n).id for n in R.FINGERTIP_SITE_NAMES], np.int64)
        self._goal_mocap = int(model.body_mocapid[model.body(S.GOAL_BODY_NAME).id])
        if self._goal_mocap < 0:
            raise ConfigError(f"body {S.GOAL_BODY_NAME!r} must be a mocap body")
        self._qpos0 = model.qpos0.copy()
        self._nv = int(model.nv)
        self.spawn_pos = np.asarray(S.OBJECT_SPAWN_POS, np.float64)

    def _init_tool_metadata(self, tool_ids: np.ndarray, catalog: ToolCatalog) -> None:
        """Per-env tool arrays, gathered once (tools are fixed per env for the env's life)."""
        self.tool_ids = tool_ids.copy()
        self.tool_ids.setflags(write=False)
        tools = {int(t): catalog[int(t)] for t in np.unique(tool_ids)}
        self.object_scales = np.stack([np.asarray(tools[int(t)].object_scales, np.float64) for t in tool_ids])
        self.handle_dims = np.stack([np.asarray(tools[int(t)].handle_dims, np.float64) for t in tool_ids])
        self.object_mass = np.array([float(tools[int(t)].mass) for t in tool_ids])
        for arr in (self.object_scales, self.handle_dims, self.object_mass):
            arr.setflags(write=False)
        fixed = tm.keypoint_offsets(np.asarray(self.cfg.fixed_keypoint_size), self.cfg.keypoint_scale)
        self._fixed_offsets = fixed[None]  # (1, 4, 3), shared by every tool

    def _init_buffers(self, n: int) -> None:
        self.targets = np.zeros((n, tm.NUM_JOINTS))
        self._goal_pos = np.zeros((n, 3))
        self._goal_quat = np.tile([1.0, 0.0, 0.0, 0.0], (n, 1))
        # Derived from the goals in _set_goal (goals change only there): rotation matrices and the
        # fixed-size keypoints the reward compares against.
        self._goal_rot = np.tile(np.eye(3), (n, 1, 1))
        self._goal_kp_fixed = tm.keypoints_from_rot(self._goal_pos, self._goal_rot, self._fixed_offsets)
        self.lifted = np.zeros(n, bool)
        self.closest_fingertip_dist = -np.ones((n, tm.NUM_FINGERTIPS))
        self.closest_keypoint_dist = -np.ones(n)
        self.near_goal_steps = np.zeros(n, np.int64)
        self.successes = np.zeros(n, np.int64)
        self.progress = np.zeros(n, np.int64)
        self.last_reward = np.zeros(n)
        cfg = self.cfg
        self.curriculum = ToleranceCurriculum(
            n, cfg.tolerance_start, cfg.tolerance_decay, cfg.tolerance_min, cfg.curriculum_interval,
            cfg.curriculum_min_successes,
        )

    @property
    def goal_pos(self) -> np.ndarray:
        """(N, 3) goal positions, env frame; a read-only view (goals change through `_set_goal`)."""
        view = self._goal_pos.view()
        view.flags.writeable = False
        return view

    @property
    def goal_quat(self) -> np.ndarray:
        """(N, 4) goal orientations, wxyz; a read-only view (goals change through `_set_goal`)."""
        view = self._goal_quat.view()
        view.flags.writeable = False
        return view

    @property
    def tolerance(self) -> float:
        """The current success tolerance (before the keypoint-scale factor), shared by all envs."""
        return self.curriculum.tolerance

    def set_curriculum_reducer(self, reducer: Reducer) -> None:
        """Make the tolerance curriculum global over processes (torchrun shards).

        reducer(sum, count) -> (global sum, global count): an all-reduce (sum) of this process's
        statistic over all processes, e.g. with torch.distributed (see examples/ppo.py). It is
        called at the same control steps in every process, so all processes must step in lockstep.
        Set it before the first step; raises ConfigError otherwise or if it is not callable.
        """
        self.curriculum.set_reducer(reducer)

    def _fingertip_pos(self) -> np.ndarray:
        """(N, 5, 3) fingertip points (one substep stale after a step)."""
        return self._site_xpos[:, self._tip_sites]

    # ---- hooks -----------------------------------------------------------------------------
    def _apply_action(self, actions: np.ndarray) -> None:
        cfg = self.cfg
        self.targets = tm.compute_joint_targets(
            actions, self.targets, self.joint_lower, self.joint_upper,
            arm_step=cfg.dof_speed_scale * self.control_dt,
            arm_moving_average=cfg.arm_moving_average, hand_moving_average=cfg.hand_moving_average,
        )
        self.backend.ctrl[:, self._act_ids] = self.targets

    def _evaluate(self, active: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        cfg = self.cfg
        self.curriculum.begin_step()  # before the tolerance is used, as in the source
        obj_pos, obj_quat = self.true_object_pose()
        tip_dist = np.linalg.norm(self._fingertip_pos() - obj_pos[:, None], axis=-1)
        dist = tm.max_keypoint_distance(
            tm.keypoint_positions(obj_pos, obj_quat, self._fixed_offsets), self._goal_kp_fixed
        )
        lift, just_lifted, lifted = tm.lift_terms(
            obj_pos[:, 2], self.spawn_pos[2], self.lifted, offset=cfg.lift_offset, clip=cfg.lift_clip,
            threshold=cfg.lift_threshold,
        )
        approach, closest_tip = tm.approach_term(self.closest_fingertip_dist, tip_dist, lifted, clip=cfg.approach_clip)
        progress_term, closest_kp = tm.keypoint_progress_term(
            self.closest_keypoint_dist, dist, lifted, clip=cfg.keypoint_clip
        )
        tolerance = self.curriculum.tolerance
        near_steps, success = tm.near_goal_update(
            self.near_goal_steps, dist, tolerance, keypoint_scale=cfg.keypoint_scale, success_steps=cfg.success_steps
        )
        success &= active
        terms = self._reward_terms(approach, lift, just_lifted, progress_term, success)
        reward = sum(terms.values())
        successes = self.successes + success
        progress = np.where(success, 0, self.progress + 1)
        terminated = (
            (obj_pos[:, 2] < cfg.fall_z)
            | (tip_dist.max(axis=-1) > cfg.fingertip_max_dist)
            | (successes >= cfg.max_consecutive_successes)
        )
        truncated = (progress >= cfg.max_episode_steps) & ~terminated
        self._commit(active, (
            (self.lifted, lifted), (self.closest_fingertip_dist, closest_tip),
            (self.closest_keypoint_dist, closest_kp), (self.near_goal_steps, near_steps), (self.successes, successes),
            (self.progress, progress), (self.last_reward, reward),
        ))
        new_goal = np.flatnonzero(success & ~terminated)
        if new_goal.size:
            self._next_goal(new_goal)
        finished = np.flatnonzero(active & (terminated | truncated))
        self.curriculum.finish(finished, self.successes[finished])
        info = {
            "reward_terms": terms,
            "success": success,
            "successes": self.successes.copy(),
            "tolerance": np.full(self.num_envs, tolerance),
            "keypoint_dist": dist,
            "lifted": self.lifted.copy(),
            "tool_id": np.asarray(self.tool_ids).copy(),
        }
        return reward, terminated, truncated, info

    def _reward_terms(self, approach: np.ndarray, lift: np.ndarray, just_lifted: np.ndarray,
                      progress_term: np.ndarray, success: np.ndarray) -> dict[str, np.ndarray]:
        """The weighted per-term rewards (REWARD_TERMS) of this step."""
        cfg = self.cfg
        arm_pen, hand_pen = tm.joint_speed_penalties(
            self.backend.qvel[:, self._jnt_dof], arm_weight=cfg.arm_speed_penalty, hand_weight=cfg.hand_speed_penalty
        )
        return {
            "approach": cfg.approach_weight * approach,
            "lift": cfg.lift_weight * lift,
            "lift_bonus": cfg.lift_bonus * just_lifted,
            "keypoint": cfg.keypoint_weight * progress_term,
            "success_bonus": cfg.success_bonus * success,
            "arm_speed": arm_pen,
            "hand_speed": hand_pen,
        }

    @staticmethod
    def _commit(active: np.ndarray, updates: tuple[tuple[np.ndarray, np.ndarray], ...]) -> None:
        """Copy each new value into its task-state buffer for the evaluated (`active`) envs only."""
        for buf, new in updates:
            np.copyto(buf, new, where=active.reshape(-1, *(1,) * (buf.ndim - 1)))

    def _reset_info(self, env_ids: np.ndarray) -> dict[str, np.ndarray]:
        """At reset: each env's tool id and the current success tolerance."""
        return {"tool_id": np.asarray(self.tool_ids).copy(), "tolerance": np.full(self.num_envs, self.tolerance)}

    def _success(self) -> np.ndarray:
        """Episode success for episode statistics: at least one goal reached in the episode."""
        return self.successes > 0

    def _next_goal(self, env_ids: np.ndarray) -> None:
        """Replace the goals of these envs by delta goals; re-arm their progress tracking."""
        pos, quat = tm.sample_delta_goal(self.rng, env_ids, self._goal_pos[env_ids], self._goal_quat[env_ids],
                                         self.cfg)
        self._set_goal(env_ids, pos, quat)

    def _set_goal(self, env_ids: np.ndarray, pos: np.ndarray, quat: np.ndarray) -> None:
        """New goals for `env_ids` (pos (K, 3), quat (K, 4) wxyz); re-arms their progress tracking."""
        self._set_goal_pose(env_ids, pos, quat)
        self.closest_keypoint_dist[env_ids] = -1.0
        self.near_goal_steps[env_ids] = 0

    def _set_goal_pose(self, env_ids: np.ndarray, pos: np.ndarray, quat: np.ndarray) -> None:
        """Move the goals of `env_ids` (and their ghosts) without touching the task's progress state."""
        self._goal_pos[env_ids] = pos
        self._goal_quat[env_ids] = quat
        rot = tm.quat_to_mat(np.asarray(quat, np.float64).reshape(-1, 4))
        self._goal_rot[env_ids] = rot
        self._goal_kp_fixed[env_ids] = tm.keypoints_from_rot(self._goal_pos[env_ids], rot, self._fixed_offsets)
        # The ghost is drawn from mocap_pos/quat; the backend applies them at its next call.
        self._mocap_pos[env_ids, self._goal_mocap] = pos
        self._mocap_quat[env_ids, self._goal_mocap] = quat

    def _reset_envs(self, env_ids: np.ndarray) -> None:
        cfg, rng, k = self.cfg, self.rng, env_ids.size
        noise = np.asarray(cfg.spawn_pos_noise)
        obj_pos = self.spawn_pos + rng.uniform(env_ids, "reset/object_pos", -noise, noise, (3,))
        obj_quat = rng.quaternion(env_ids, "reset/object_quat")
        default, lower, upper = self.default_joint_pos, self.joint_lower, self.joint_upper
        delta = rng.uniform(env_ids, "reset/joint_pos", lower - default, upper - default, (tm.NUM_JOINTS,))
        joint_pos = np.clip(default + cfg.joint_pos_noise * delta, lower, upper)
        joint_vel = rng.uniform(env_ids, "reset/joint_vel", -cfg.joint_vel_noise, cfg.joint_vel_noise, (tm.NUM_JOINTS,))
        qpos = np.tile(self._qpos0, (k, 1))
        qpos[:, self._jnt_qpos] = joint_pos
        qpos[:, self._obj_qpos:self._obj_qpos + 3] = obj_pos
        qpos[:, self._obj_qpos + 3:self._obj_qpos + 7] = obj_quat
        qvel = np.zeros((k, self._nv))
        qvel[:, self._jnt_dof] = joint_vel
        self.backend.reset(env_ids, qpos, qvel)
        self.targets[env_ids] = joint_pos
        self.backend.ctrl[np.ix_(env_ids, self._act_ids)] = joint_pos
        goal_pos, goal_quat = tm.sample_first_goal(rng, env_ids, cfg, self.spawn_pos[2])
        self._set_goal(env_ids, goal_pos, goal_quat)
        self.lifted[env_ids] = False
        self.closest_fingertip_dist[env_ids] = -1.0
        self.successes[env_ids] = 0
        self.progress[env_ids] = 0
        self.last_reward[env_ids] = 0.0
        if self.obs_mode == "asymmetric":  # after the lifecycle's reset event: a DR'd COM is in effect
            ipos = self.backend.field_values("body_ipos", env_ids)
            self._obj_com[env_ids] = ipos[:, self.object_body_id]
