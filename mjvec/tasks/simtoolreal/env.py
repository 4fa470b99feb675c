"""SimToolReal-v0: move one procedural tool (of 600, or of the source's 1,200) to random 6-D goal poses
with an arm + hand.

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
`MjVecEnv`), `ObservationLayoutHooks`, `ObjectPoseHooks`, `ObjectScaleHooks`, `PushHooks` (pushes act
on the object body, only while the object is lifted, scaled by the tool's own mass or by the
paper run's reference mass), `PushReferenceMassHooks` and `GoalSegmentHooks` (the step counter
the source's delay queues refill on), each implemented below over the task's records; and the
deployment declarations of the policy contract (`deployment.DeploymentHooks`).

Structure. The env holds records and runs the phases; the computing is done by pure functions:
`indices.TaskIndices` (model ids and per-env tool arrays, built once by `build_indices`),
`indices.SimViews` (the bound MjData views), `state.TaskState` (per-env task state and the
operations that update its rows), `step_terms` (`measure` -> `Measurement`, `evaluate` ->
`StepTerms`: one step's terms, computed once; the critic reads the same measurement) and
`observations` (the policy and critic blocks).

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

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import VectorEnv

from mjvec.envs.base import MjVecEnv
from mjvec.envs.memory import MemoryNeeds
from mjvec.errors import ConfigError, allowed
from mjvec.tasks.simtoolreal import cameras as tool_cameras
from mjvec.tasks.simtoolreal import kernels
from mjvec.tasks.simtoolreal import scene as tool_scene
from mjvec.tasks.simtoolreal import terms as tool_terms
from mjvec.tasks.simtoolreal.catalog.tools import ToolCatalog, source_env0_tool
from mjvec.tasks.simtoolreal.config import SimToolRealConfig
from mjvec.tasks.simtoolreal.curriculum import Reducer
from mjvec.tasks.simtoolreal.deployment import DeploymentHooks
from mjvec.tasks.simtoolreal.indices import bind_views, build_indices
from mjvec.tasks.simtoolreal.observations import ObsInputs, observation_space, policy_and_critic
from mjvec.tasks.simtoolreal.state import initial_state, new_state, refresh_object_com, refresh_table
from mjvec.tasks.simtoolreal.step_terms import REWARD_TERMS, commit, evaluate, measure, object_pose
from mjvec.tasks.simtoolreal.terms import CRITIC_LAYOUT, OBS_MODES, POLICY_LAYOUT, layout_size
from mjvec.xp import Rows, to_host
from mjvec.xp import copy_array as _copy

__all__ = ["CRITIC_LAYOUT", "OBS_MODES", "POLICY_LAYOUT", "REWARD_TERMS", "SimToolRealEnv"]


class _Field:
    """A read-only attribute of the env that is a field of one of its records: the record's own
    value (for an array, in-place writes reach the record; rebinding the attribute raises)."""

    def __init__(self, record: str) -> None:
        self.record = record

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, env: Any, owner: type | None = None) -> Any:
        return self if env is None else getattr(getattr(env, self.record), self.name)

    def __set__(self, env: Any, value: Any) -> None:
        raise AttributeError(f"{type(env).__name__}.{self.name} is {self.record}.{self.name}; write into it in "
                             f"place (env.{self.name}[...] = ...) rather than rebinding it")


def _fields(record: str, count: int) -> tuple[_Field, ...]:
    """`count` attributes reading fields of `record`, each named by the class attribute it is bound to."""
    return tuple(_Field(record) for _ in range(count))


# VectorEnv is named again among the bases for libraries that recognise a Gymnasium env by the
# module of its class's direct bases (skrl's wrap_env).
class SimToolRealEnv(DeploymentHooks, MjVecEnv, VectorEnv):
    """The SimToolReal task over any backend (see the module docstring).

    backend: a `Backend` whose scene's variant v is `scene_spec(v, tool_geometry, catalog)`.
    catalog: the tool catalog the scene was built from (per-env scales, dims and masses).
    obs_mode: "policy" -> Box(140); "asymmetric" -> Dict(policy=Box(140), critic=Box(162)).
    Remaining keyword arguments go to `MjVecEnv`.

    Records: `indices` (`TaskIndices`), `views` (`SimViews`), `task_state` (`TaskState`).
    Attributes (fields of those records): `object_scales`, `object_mass`, `handle_dims`, `tool_ids`
    (per env, fixed), `object_body_id`, `joint_lower` / `joint_upper`, `default_joint_pos`,
    `spawn_pos` (over the table at its compiled height; each env's spawn height, which follows a
    randomized table, is ``task_state.spawn_z``); `targets` (PD targets), `lifted`,
    `near_goal_steps`, `successes`, `progress`, `closest_fingertip_dist`, `closest_keypoint_dist`,
    `last_reward`, `curriculum`; and
    `policy_layout` / `critic_layout` ((name, width) blocks of the observations), `goal_pos` /
    `goal_quat` (wxyz), `tolerance`; the wrapper hooks are listed in the module docstring.

    info (every step, (N, ...) arrays): reward_terms (dict of weighted per-term rewards),
    success (a goal was reached this step), successes (count this episode), tolerance (the
    success tolerance used this step), keypoint_dist (fixed-size max keypoint distance),
    lifted, tool_id.
    """

    render_camera = tool_scene.CAMERA_NAME
    policy_layout = POLICY_LAYOUT
    critic_layout = CRITIC_LAYOUT
    object_scales, object_mass, handle_dims, tool_ids, object_body_id = _fields("indices", 5)
    joint_lower, joint_upper, default_joint_pos, spawn_pos = _fields("indices", 4)
    targets, lifted, near_goal_steps, successes, progress, last_reward = _fields("task_state", 6)
    closest_fingertip_dist, closest_keypoint_dist, curriculum = _fields("task_state", 3)

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
        action_space = gym.spaces.Box(-1.0, 1.0, (tool_terms.NUM_JOINTS,), np.float32)
        super().__init__(
            backend,
            single_observation_space=observation_space(obs_mode, cfg.obs_clip),
            single_action_space=action_space,
            frame_skip=cfg.frame_skip,
            max_episode_steps=cfg.max_episode_steps,
            **base_kwargs,
        )
        # Everything below lives where the backend's state does (numpy, or torch on its device).
        self._critic = obs_mode == "asymmetric"
        tool_ids = np.asarray(backend.variant_of_env, np.int64)
        self.indices = build_indices(backend.model, catalog, tool_ids, cfg, self.asarray, backend.qpos.dtype)
        self._act_ids = self.indices.act_ids  # (named by the reset's ctrl write)
        # The hand and arm actuators are the model's, in order: the targets write ctrl whole (a
        # strided copy) instead of through a fancy index.
        self._ctrl_whole = np.array_equal(to_host(self._act_ids), np.arange(backend.model.nu))
        # The task's progress counter IS the base's episode_steps (see the module docstring).
        self.task_state = new_state(self.num_envs, cfg, self.indices, self.zeros, self.asarray, self.arrays.like,
                                    self._critic, progress=self.episode_steps)
        self.views = bind_views(backend, self.bound_fields(obs_mode))
        # The critic's measurement of every env: the step's, with the rows reset or given a new goal
        # since re-measured (None without the critic: nothing reads it between steps).
        self._measured = self._measure(self.all_rows) if self._critic else None
        self.slots.declare("object_pose")
        self.slots.declare("object_scales")

    @classmethod
    def task_cameras(cls, options: Any) -> tuple:
        """Camera observations' cameras: "table" (fixed) and "wrist" (on the palm); see `cameras`."""
        return tool_cameras.CAMERAS

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

    # ---- task state read by users ----------------------------------------------------------
    @property
    def goal_pos(self) -> Any:
        """(N, 3) goal positions, env frame: a read-only view on the host, a copy on a device (goals
        change through `_set_goal`)."""
        return _read_only(self.task_state.goal_pos)

    @property
    def goal_quat(self) -> Any:
        """(N, 4) goal orientations, wxyz: a read-only view on the host, a copy on a device."""
        return _read_only(self.task_state.goal_quat)

    @property
    def tolerance(self) -> float:
        """The current success tolerance (before the keypoint-scale factor), shared by all envs (a
        host float: on a device, reading it waits for the device)."""
        return float(self.task_state.curriculum.tolerance)

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
        self.task_state.curriculum.set_reducer(reducer)

    # ---- wrapper hooks (mjvec.contract) ----------------------------------------------------
    def true_object_pose(self) -> tuple[Any, Any]:
        """ObjectPoseHooks: (pos (N, 3), quat (N, 4) wxyz) of the object from qpos (current), copies
        in the state's namespace."""
        return object_pose(self.indices, self.backend.qpos)

    def set_object_pose_source(self, source: Callable[[], tuple[Any, Any]]) -> Callable[[], None]:
        """ObjectPoseHooks: the policy's object pose becomes `source()` ((N, 3), (N, 4) wxyz);
        returns the release. One source at a time (a second raises ConfigError). The critic and the
        reward keep the true pose."""
        return self.slots.fill("object_pose", source)

    def set_object_scale_source(self, source: Callable[[], Any]) -> Callable[[], None]:
        """ObjectScaleHooks: the observed grasp-box scales become `source()` ((N, 3)); returns the
        release (one at a time)."""
        return self.slots.fill("object_scales", source)

    def observed_object_pose(self) -> tuple[Any, Any]:
        """The object pose the POLICY sees now: the slot's source, or the true pose."""
        source = self.slots.get("object_pose")
        return self.true_object_pose() if source is None else source()

    def observed_object_scales(self) -> Any:
        """(N, 3) grasp-box scales the policy sees (and obs keypoints use): the slot's source, or the true ones."""
        source = self.slots.get("object_scales")
        return self.indices.object_scales if source is None else source()

    @property
    def push_body_id(self) -> int:
        """PushHooks: the body random pushes act on: the object."""
        return self.indices.object_body_id

    @property
    def push_mass(self) -> Any:
        """PushHooks: (N,) the pushed body's mass per env: the tool's catalog mass."""
        return self.indices.object_mass

    def push_allowed(self) -> Any:
        """PushHooks: (N,) bool: a push may start where the object is lifted."""
        return _copy(self.task_state.lifted)

    @property
    def push_reference_mass(self) -> float:
        """PushReferenceMassHooks: the one mass the paper's run scales every env's push by: its env 0's
        tool, which is tool 0 of the source's 1,200-tool pool (not of this 600-tool catalog). The
        same in every shard."""
        return float(source_env0_tool().mass)

    def goal_segment_steps(self) -> Any:
        """GoalSegmentHooks: (N,) int: control steps since the current goal segment began (the reset
        or the last success); 0 after a reset and in the step that reached a goal (the source's progress)."""
        return _copy(self.task_state.progress)

    # ---- the MjVecEnv phases ---------------------------------------------------------------
    def _apply_action(self, actions: Any) -> None:
        cfg, state = self.cfg, self.task_state
        # A fresh array each step (see TaskState): copying it into the old one would cost a pass.
        compute = (kernels.joint_targets if kernels.applies(actions, state.targets, self.indices.joint_lower)
                   else tool_terms.compute_joint_targets)
        state.targets = compute(
            actions, state.targets, self.indices.joint_lower, self.indices.joint_upper,
            arm_step=cfg.dof_speed_scale * self.control_dt,
            arm_moving_average=cfg.arm_moving_average, hand_moving_average=cfg.hand_moving_average,
            num_arm=tool_terms.NUM_ARM_JOINTS,
        )
        if self._ctrl_whole:
            self.backend.ctrl[...] = state.targets
        else:
            self.backend.ctrl[:, self.indices.act_ids] = state.targets

    def _evaluate(self, active: Any) -> tuple[Any, Any, Any, dict[str, Any]]:
        xp, state = self.xp, self.task_state
        state.curriculum.begin_step()  # before the tolerance is used, as in the source
        measured = self._measure(self.all_rows)
        terms = evaluate(self.cfg, self.indices, state, measured, self.backend.qvel, state.curriculum.tolerance,
                         active)
        if self._critic:
            self._measured = measured
        commit(state, active, terms)
        new_goal = terms.success & ~terms.terminated
        if self.arrays.maybe(new_goal):  # (host: most steps reach no goal and end no episode)
            self._next_goal(Rows.of_mask(new_goal))
        finished = active & (terms.terminated | terms.truncated)
        if self.arrays.maybe(finished):
            finished = Rows.of_mask(finished)
            state.curriculum.finish(finished, finished.take(xp.astype(state.successes, xp.float64)))
        info = {
            "reward_terms": terms.reward_terms,
            "success": terms.success,
            "successes": _copy(state.successes),
            "tolerance": self.zeros((), xp.float64) + terms.tolerance,
            "keypoint_dist": terms.measured.keypoint_dist,
            "lifted": _copy(state.lifted),
            "tool_id": _copy(self.indices.tool_id_array),
        }
        return terms.reward, terms.terminated, terms.truncated, info

    def _observe(self) -> Any:
        scales = self.xp.astype(self.observed_object_scales(), self.indices.dtype)
        source = self.slots.get("object_pose")
        observed = self.true_object_pose() if source is None else source()
        true = observed if source is None or not self._critic else self.true_object_pose()
        obs = ObsInputs(self.cfg, self.indices, self.views, self.task_state, self.backend.qpos, self.backend.qvel,
                        observed=observed, true=true, scales=scales, measured=self._measured)
        return policy_and_critic(obs, self._critic)

    def _reset_info(self, rows: Rows) -> dict[str, Any]:
        """At reset: each env's tool id and the current success tolerance."""
        tolerance = self.zeros((), self.xp.float64) + self.task_state.curriculum.tolerance
        return {"tool_id": _copy(self.indices.tool_id_array), "tolerance": tolerance}

    def _success(self) -> Any:
        """Episode success for episode statistics: at least one goal reached in the episode."""
        return self.task_state.successes > 0

    # ---- goals and resets ------------------------------------------------------------------
    def _next_goal(self, rows: Rows) -> None:
        """Replace the goals of these envs by delta goals; re-arm their progress tracking."""
        state = self.task_state
        pos, quat = tool_terms.sample_delta_goal(self.rng, rows, rows.take(state.goal_pos), rows.take(state.goal_quat),
                                         self.cfg)
        self._set_goal(rows, pos, quat)
        if self._critic:
            self._measured = self._measured.with_goal(rows, rows.take(state.goal_kp_fixed))

    def _set_goal(self, rows: Rows, pos: Any, quat: Any) -> None:
        """New goals for `rows` (pos (rows, 3), quat (rows, 4) wxyz); re-arms their progress tracking."""
        self._set_goal_pose(rows, pos, quat)
        self.task_state.rearm_goal(rows)

    def _set_goal_pose(self, rows: Rows, pos: Any, quat: Any) -> None:
        """Move the goals of `rows` (and their ghosts) without touching the task's progress state."""
        rows, idx, xp = Rows.of(rows, self.num_envs), self.indices, self.xp
        pos, quat = xp.astype(self.asarray(pos), idx.dtype), xp.astype(self.asarray(quat), idx.dtype)
        self.task_state.set_goal_pose(rows, pos, quat, idx.fixed_offsets)
        # The ghost is drawn from mocap_pos/quat; the backend applies them at its next call.
        rows.put(self.views.mocap_pos[:, idx.goal_mocap], pos)
        rows.put(self.views.mocap_quat[:, idx.goal_mocap], quat)

    def _reset_envs(self, rows: Rows) -> None:
        state = self.task_state
        # The spawn follows the table (its height randomized by a reset event that already ran), as
        # the source's object_init_state does; so do the lift reference and the first goal's floor.
        refresh_table(state, self.backend, self.indices, self.asarray)
        rows.put(state.spawn_z, rows.take(state.table_z) + tool_scene.SPAWN_ABOVE_TABLE_CENTRE)
        spawn_z = rows.take(state.spawn_z)
        qpos, qvel, joint_pos = initial_state(self.rng, rows, self.cfg, self.indices, spawn_z, self.arrays.device)
        xp = self.xp
        ctrl = xp.zeros((rows.size, self.backend.model.nu), dtype=self.indices.dtype, device=self.arrays.device)
        ctrl[:, self._act_ids] = joint_pos
        self.backend.reset(rows.selector(), qpos, qvel, ctrl=ctrl)
        rows.put(self.targets, joint_pos)
        goal_pos, goal_quat = tool_terms.sample_first_goal(self.rng, rows, self.cfg, spawn_z)
        self._set_goal(rows, goal_pos, goal_quat)
        # The source records every env's success count at each of its resets, so an episode cut short
        # (by reset(), a reset mask or a simulation error) counts too; one that ended in a step was
        # already recorded then, with the same count.
        state.curriculum.finish(rows, rows.take(xp.astype(state.successes, xp.float64)))
        state.start_episode(rows)
        if self._critic:
            refresh_object_com(state, self.backend, self.indices, self.asarray)
            self._measured = self._measured.with_rows(rows, self._measure(rows))

    def _measure(self, rows: Rows) -> Any:
        """A `Measurement` of the rows of `rows` as they are now."""
        return measure(self.indices, rows.take(self.backend.qpos), rows.take(self.views.site_xpos),
                       rows.take(self.task_state.goal_kp_fixed))



def _read_only(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        view = value.view()
        view.flags.writeable = False
        return view
    return value.clone()
