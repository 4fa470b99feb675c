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

Hooks declared for the randomization wrappers (`mjvec.contract`): `EnvHooks` (from
`MjVecEnv`), `PolicyLayoutHooks`, `ObjectPoseHooks`, `ObjectScaleHooks`, `PushHooks` (pushes act
on the object body, only while the object is lifted, scaled by the tool's own mass or by the
paper run's reference mass) and `GoalSegmentHooks` (the step counter the source's delay queues
refill on).

Episode timing (the source's): the step counter `progress` counts control steps since the reset
or the last success; truncation fires at the step where it reaches `max_episode_steps`. It IS the
base's public ``episode_steps`` counter (the source's progress_buf): the base counts and
truncates, and this task zeroes it on every success, as the source does, so an episode with
successes lasts longer than `max_episode_steps`. A write into it (rsl_rl's
``init_at_random_ep_len``) also moves what reads it: the critic's log(progress / 10 + 1) term and
the goal-segment refill of the delay queues, as writing the source's progress_buf would.
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
from mjvec.assets.tools import ToolCatalog
from mjvec.envs.base import MjVecEnv
from mjvec.envs.memory import MemoryNeeds
from mjvec.errors import ConfigError, allowed
from mjvec.tasks.simtoolreal import scene as S
from mjvec.tasks.simtoolreal import terms as tm
from mjvec.tasks.simtoolreal.config import SimToolRealConfig
from mjvec.tasks.simtoolreal.curriculum import Reducer, ToleranceCurriculum
from mjvec.tasks.simtoolreal.hooks import SimToolRealHooks
from mjvec.tasks.simtoolreal.observations import SimToolRealObservations, observation_space
from mjvec.tasks.simtoolreal.terms import CRITIC_LAYOUT, OBS_MODES, POLICY_LAYOUT, layout_size
from mjvec.xp import Rows
from mjvec.xp import copy_array as _copy

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
        cfg = SimToolRealConfig() if config is None else config
        if not isinstance(cfg, SimToolRealConfig):
            raise ConfigError(f"config must be a SimToolRealConfig, got {type(cfg).__name__}")
        if obs_mode not in OBS_MODES:
            raise ConfigError(f"obs_mode={obs_mode!r} is not supported; allowed values are {allowed(OBS_MODES)}")
        self.cfg = cfg
        self.obs_mode = obs_mode
        self.catalog = catalog
        self.tool_geometry = tool_geometry
        action_space = gym.spaces.Box(-1.0, 1.0, (tm.NUM_JOINTS,), np.float32)
        super().__init__(
            backend,
            single_observation_space=observation_space(obs_mode, cfg.obs_clip),
            single_action_space=action_space,
            frame_skip=cfg.frame_skip,
            max_episode_steps=cfg.max_episode_steps,
            **base_kwargs,
        )
        # Everything below lives where the backend's state does (numpy, or torch on its device).
        self._bind_model(backend.model)
        self._init_tool_metadata(np.asarray(backend.variant_of_env, np.int64), catalog)
        self._init_buffers()
        views = {name: backend.bind(name) for name in self.bound_fields(obs_mode)}
        self._mocap_pos, self._mocap_quat = views["mocap_pos"], views["mocap_quat"]
        self._site_xpos, self._xquat = views["site_xpos"], views["xquat"]
        if obs_mode == "asymmetric":
            self._cvel, self._subtree_com = views["cvel"], views["subtree_com"]
            self._com_version = -1  # the object-frame COM offsets below, as of this write count
            self._obj_com = self.zeros((3,), self._float)
        self._slots.declare("object_pose")
        self._slots.declare("object_scales")

    # ---- what the task needs per env (read by `mjvec.envs.memory` before anything is built) -----
    @classmethod
    def memory_needs(cls, options: Any) -> MemoryNeeds:
        """What one env holds (`MjVecEnv.memory_needs`), for SimToolReal-v0's options."""
        return MemoryNeeds(cls.bound_fields(options.obs_mode), cls.bytes_per_env(options.obs_mode))

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

        self._float = self.backend.qpos.dtype  # the task computes in the state's precision
        self._jnt_qpos = self._index([joint(n).qposadr[0] for n in R.JOINT_NAMES])
        self._jnt_dof = self._index([joint(n).dofadr[0] for n in R.JOINT_NAMES])
        self._act_ids = self._index([model.actuator(n).id for n in R.ACTUATOR_NAMES])
        jnt_ids = np.array([joint(n).id for n in R.JOINT_NAMES], np.int64)
        lower, upper = model.jnt_range[jnt_ids, 0], model.jnt_range[jnt_ids, 1]
        self.joint_lower = self.asarray(lower, self._float)
        self.joint_upper = self.asarray(upper, self._float)
        self.default_joint_pos = self.asarray(np.clip(np.asarray(R.DEFAULT_JOINT_POS, np.float64), lower, upper),
                                              self._float)
        obj = joint(S.OBJECT_JOINT_NAME)
        self._obj_qpos = int(obj.qposadr[0])
        self._obj_dof = int(obj.dofadr[0])
        self.object_body_id = int(model.body(S.OBJECT_BODY_NAME).id)
        self._palm_site = int(model.site(R.PALM_SITE_NAME).id)
        self._palm_body = int(model.site_bodyid[self._palm_site])
        self._palm_root = int(model.body_rootid[self._palm_body])
        self._tip_sites = self._index([model.site(n).id for n in R.FINGERTIP_SITE_NAMES])
        self._goal_mocap = int(model.body_mocapid[model.body(S.GOAL_BODY_NAME).id])
        if self._goal_mocap < 0:
            raise ConfigError(f"body {S.GOAL_BODY_NAME!r} must be a mocap body")
        self._qpos0 = self.asarray(model.qpos0, self._float)
        self._nv = int(model.nv)
        self.spawn_pos = self.asarray(S.OBJECT_SPAWN_POS, self._float)
        self._spawn_z = float(S.OBJECT_SPAWN_POS[2])

    def _index(self, ids: list[int]) -> Any:
        """Model ids as an index array where the state lives (host ints, or a device tensor)."""
        return self.asarray(np.asarray(ids, np.int64))

    def _init_tool_metadata(self, tool_ids: np.ndarray, catalog: ToolCatalog) -> None:
        """Per-env tool arrays, gathered once (tools are fixed per env for the env's life)."""
        self.tool_ids = tool_ids.copy()
        self.tool_ids.setflags(write=False)
        tools = {int(t): catalog[int(t)] for t in np.unique(tool_ids)}
        scales = np.stack([np.asarray(tools[int(t)].object_scales, np.float64) for t in tool_ids])
        dims = np.stack([np.asarray(tools[int(t)].handle_dims, np.float64) for t in tool_ids])
        mass = np.array([float(tools[int(t)].mass) for t in tool_ids])
        self.object_scales, self.handle_dims = self.asarray(scales, self._float), self.asarray(dims, self._float)
        self.object_mass = self.asarray(mass, self._float)
        self._tool_ids = self.asarray(tool_ids)
        if self._host:
            for arr in (self.object_scales, self.handle_dims, self.object_mass):
                arr.setflags(write=False)
        fixed = tm.keypoint_offsets(self.asarray(self.cfg.fixed_keypoint_size, self._float), self.cfg.keypoint_scale)
        self._fixed_offsets = fixed[None]  # (1, 4, 3), shared by every tool

    def _init_buffers(self) -> None:
        xp, f = self.xp, self._float
        self.targets = self.zeros((tm.NUM_JOINTS,), f)
        self._goal_pos = self.zeros((3,), f)
        self._goal_quat = self.zeros((4,), f) + self.asarray([1.0, 0.0, 0.0, 0.0], f)
        # Derived from the goals in _set_goal (goals change only there): rotation matrices and the
        # fixed-size keypoints the reward compares against.
        self._goal_rot = self.zeros((3, 3), f) + self.asarray(np.eye(3), f)
        self._goal_kp_fixed = tm.keypoints_from_rot(self._goal_pos, self._goal_rot, self._fixed_offsets)
        self.lifted = self.zeros((), xp.bool)
        self.closest_fingertip_dist = self.zeros((tm.NUM_FINGERTIPS,), f) - 1.0
        self.closest_keypoint_dist = self.zeros((), f) - 1.0
        self.near_goal_steps = self.zeros((), xp.int64)
        self.successes = self.zeros((), xp.int64)
        self.last_reward = self.zeros((), xp.float64)
        cfg = self.cfg
        self.curriculum = ToleranceCurriculum(
            self.num_envs, cfg.tolerance_start, cfg.tolerance_decay, cfg.tolerance_min, cfg.curriculum_interval,
            cfg.curriculum_min_successes, like=self._like,
        )

    @property
    def progress(self) -> Any:
        """(N,) int64, live: control steps since the reset or the last success (the base's
        ``episode_steps``, which this task zeroes on success)."""
        return self.episode_steps

    @property
    def goal_pos(self) -> Any:
        """(N, 3) goal positions, env frame: a read-only view on the host, a copy on a device (goals
        change through `_set_goal`)."""
        return _read_only(self._goal_pos)

    @property
    def goal_quat(self) -> Any:
        """(N, 4) goal orientations, wxyz: a read-only view on the host, a copy on a device."""
        return _read_only(self._goal_quat)

    @property
    def tolerance(self) -> float:
        """The current success tolerance (before the keypoint-scale factor), shared by all envs (a
        host float: on a device, reading it waits for the device)."""
        return float(self.curriculum.tolerance)

    def set_curriculum_reducer(self, reducer: Reducer) -> None:
        """Make the tolerance curriculum global over processes (torchrun shards).

        reducer(sum, count) -> (global sum, global count): an all-reduce (sum) of this process's
        statistic over all processes, e.g. with torch.distributed (see examples/ppo.py). It is
        called at the same control steps in every process, so all processes must step in lockstep.
        On the host it gets (float, int) when the curriculum is due and returns numbers. On a
        device it gets (0-d float64 tensor, int) at every step and must return device values
        without reading them back (e.g. `torch.distributed.all_reduce` of a device tensor), so
        the step never waits for the device.
        Set it before the first step; raises ConfigError otherwise or if it is not callable.
        """
        self.curriculum.set_reducer(reducer)

    def _fingertip_pos(self) -> Any:
        """(N, 5, 3) fingertip points (one substep stale after a step)."""
        return self._site_xpos[:, self._tip_sites]

    # ---- hooks -----------------------------------------------------------------------------
    def _apply_action(self, actions: Any) -> None:
        cfg = self.cfg
        self.targets = tm.compute_joint_targets(
            actions, self.targets, self.joint_lower, self.joint_upper,
            arm_step=cfg.dof_speed_scale * self.control_dt,
            arm_moving_average=cfg.arm_moving_average, hand_moving_average=cfg.hand_moving_average,
        )
        self.backend.ctrl[:, self._act_ids] = self.targets

    def _evaluate(self, active: Any) -> tuple[Any, Any, Any, dict[str, Any]]:
        cfg, xp = self.cfg, self.xp
        self.curriculum.begin_step()  # before the tolerance is used, as in the source
        obj_pos, obj_quat = self.true_object_pose()
        tip_dist = xp.linalg.vector_norm(self._fingertip_pos() - obj_pos[:, None], axis=-1)
        dist = tm.max_keypoint_distance(
            tm.keypoint_positions(obj_pos, obj_quat, self._fixed_offsets), self._goal_kp_fixed
        )
        lift, just_lifted, lifted = tm.lift_terms(
            obj_pos[:, 2], self._spawn_z, self.lifted, offset=cfg.lift_offset, clip=cfg.lift_clip,
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
        success = success & active
        terms = self._reward_terms(approach, lift, just_lifted, progress_term, success)
        reward = sum(terms.values())
        successes = self.successes + xp.astype(success, xp.int64)
        terminated = (
            (obj_pos[:, 2] < cfg.fall_z)
            | (xp.max(tip_dist, axis=-1) > cfg.fingertip_max_dist)
            | (successes >= cfg.max_consecutive_successes)
        )
        # The base counted this step and truncates at max_episode_steps; a success restarts the count.
        self._commit(active, (
            (self.lifted, lifted), (self.closest_fingertip_dist, closest_tip),
            (self.closest_keypoint_dist, closest_kp), (self.near_goal_steps, near_steps), (self.successes, successes),
            (self.episode_steps, xp.where(success, 0, self.episode_steps)), (self.last_reward, reward),
        ))
        # The base's own time limit, known here for the curriculum's finished episodes.
        truncated = (self.episode_steps >= cfg.max_episode_steps) & ~terminated
        new_goal = Rows.of_mask(success & ~terminated)
        if new_goal.any():
            self._next_goal(new_goal)
        finished = Rows.of_mask(active & (terminated | truncated))
        if finished.any():
            self.curriculum.finish(finished, finished.take(xp.astype(self.successes, xp.float64)))
        info = {
            "reward_terms": terms,
            "success": success,
            "successes": _copy(self.successes),
            "tolerance": self.zeros((), xp.float64) + tolerance,
            "keypoint_dist": dist,
            "lifted": _copy(self.lifted),
            "tool_id": _copy(self._tool_ids),
        }
        return reward, terminated, truncated, info

    def _reward_terms(self, approach: Any, lift: Any, just_lifted: Any, progress_term: Any,
                      success: Any) -> dict[str, Any]:
        """The weighted per-term rewards (REWARD_TERMS) of this step."""
        cfg, xp = self.cfg, self.xp
        arm_pen, hand_pen = tm.joint_speed_penalties(
            self.backend.qvel[:, self._jnt_dof], arm_weight=cfg.arm_speed_penalty, hand_weight=cfg.hand_speed_penalty
        )
        return {
            "approach": cfg.approach_weight * approach,
            "lift": cfg.lift_weight * lift,
            "lift_bonus": cfg.lift_bonus * xp.astype(just_lifted, approach.dtype),
            "keypoint": cfg.keypoint_weight * progress_term,
            "success_bonus": cfg.success_bonus * xp.astype(success, approach.dtype),
            "arm_speed": arm_pen,
            "hand_speed": hand_pen,
        }

    def _commit(self, active: Any, updates: tuple[tuple[Any, Any], ...]) -> None:
        """Copy each new value into its task-state buffer for the evaluated (`active`) envs only."""
        for buf, new in updates:
            mask = self.xp.reshape(active, (-1, *(1,) * (buf.ndim - 1)))
            if self._host:
                np.copyto(buf, new, where=mask, casting="unsafe")
            else:
                buf[...] = self.xp.where(mask, self.xp.astype(new, buf.dtype), buf)

    def _reset_info(self, rows: Rows) -> dict[str, Any]:
        """At reset: each env's tool id and the current success tolerance."""
        tolerance = self.zeros((), self.xp.float64) + self.curriculum.tolerance
        return {"tool_id": _copy(self._tool_ids), "tolerance": tolerance}

    def _success(self) -> Any:
        """Episode success for episode statistics: at least one goal reached in the episode."""
        return self.successes > 0

    def _next_goal(self, rows: Rows) -> None:
        """Replace the goals of these envs by delta goals; re-arm their progress tracking."""
        pos, quat = tm.sample_delta_goal(self.rng, rows, rows.take(self._goal_pos), rows.take(self._goal_quat),
                                         self.cfg)
        self._set_goal(rows, pos, quat)

    def _set_goal(self, rows: Rows, pos: Any, quat: Any) -> None:
        """New goals for `rows` (pos (rows, 3), quat (rows, 4) wxyz); re-arms their progress tracking."""
        self._set_goal_pose(rows, pos, quat)
        rows.put(self.closest_keypoint_dist, -1.0)
        rows.put(self.near_goal_steps, 0)

    def _set_goal_pose(self, rows: Rows, pos: Any, quat: Any) -> None:
        """Move the goals of `rows` (and their ghosts) without touching the task's progress state."""
        rows = Rows.of(rows, self.num_envs)
        pos, quat = self.xp.astype(self.asarray(pos), self._float), self.xp.astype(self.asarray(quat), self._float)
        rows.put(self._goal_pos, pos)
        rows.put(self._goal_quat, quat)
        rot = tm.quat_to_mat(quat)
        rows.put(self._goal_rot, rot)
        rows.put(self._goal_kp_fixed, tm.keypoints_from_rot(pos, rot, self._fixed_offsets))
        # The ghost is drawn from mocap_pos/quat; the backend applies them at its next call.
        rows.put(self._mocap_pos[:, self._goal_mocap], pos)
        rows.put(self._mocap_quat[:, self._goal_mocap], quat)

    def _reset_envs(self, rows: Rows) -> None:
        cfg, rng, xp, f = self.cfg, self.rng, self.xp, self._float
        noise = self.asarray(cfg.spawn_pos_noise, xp.float64)
        obj_pos = self.spawn_pos + xp.astype(rng.uniform(rows, "reset/object_pos", -noise, noise, (3,)), f)
        obj_quat = xp.astype(rng.quaternion(rows, "reset/object_quat"), f)
        default, lower, upper = self.default_joint_pos, self.joint_lower, self.joint_upper
        delta = xp.astype(rng.uniform(rows, "reset/joint_pos", lower - default, upper - default, (tm.NUM_JOINTS,)), f)
        joint_pos = xp.clip(default + cfg.joint_pos_noise * delta, lower, upper)
        joint_vel = xp.astype(
            rng.uniform(rows, "reset/joint_vel", -cfg.joint_vel_noise, cfg.joint_vel_noise, (tm.NUM_JOINTS,)), f
        )
        qpos = xp.zeros((rows.size, self._qpos0.shape[0]), dtype=f, device=self._device_of()) + self._qpos0
        qpos[:, self._jnt_qpos] = joint_pos
        qpos[:, self._obj_qpos:self._obj_qpos + 3] = obj_pos
        qpos[:, self._obj_qpos + 3:self._obj_qpos + 7] = obj_quat
        qvel = xp.zeros((rows.size, self._nv), dtype=f, device=self._device_of())
        qvel[:, self._jnt_dof] = joint_vel
        ctrl = xp.zeros((rows.size, self.backend.model.nu), dtype=f, device=self._device_of())
        ctrl[:, self._act_ids] = joint_pos
        self.backend.reset(rows.selector(), qpos, qvel, ctrl=ctrl)
        rows.put(self.targets, joint_pos)
        goal_pos, goal_quat = tm.sample_first_goal(rng, rows, cfg, self._spawn_z)
        self._set_goal(rows, goal_pos, goal_quat)
        rows.put(self.lifted, False)
        rows.put(self.closest_fingertip_dist, -1.0)
        rows.put(self.successes, 0)
        rows.put(self.last_reward, 0.0)
        if self.obs_mode == "asymmetric":
            self._refresh_object_com()

    def _refresh_object_com(self) -> None:
        """Re-read the object-frame COM offsets after a write to body_ipos (a COM randomization term):
        the backend counts its writes per field, so this reads nothing back while none happen."""
        version = self.backend.field_version("body_ipos")
        if version != self._com_version:
            ipos = self.backend.field_values("body_ipos")[:, self.object_body_id]
            self._obj_com[...] = self.asarray(ipos, self._float)
            self._com_version = version


def _read_only(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        view = value.view()
        view.flags.writeable = False
        return view
    return value.clone()
