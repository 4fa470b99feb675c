"""The per-env task state of SimToolReal-v0 (`TaskState`) and the operations that update rows of it.

Everything the task remembers between control steps besides the physics: PD targets, goals (with
what is derived from them), the reward's best-so-far distances, the lift latch, the success and
step counters, the last reward, the tolerance curriculum, and the object's centre of mass the
critic reads. Arrays live where the backend's state does and are updated in place, so a view
handed out (e.g. `SimToolRealEnv.lifted`) stays live; only `targets` is replaced, by every
action (as the action pipeline makes a new array anyway).

Distance sentinels (see `mjvec.tasks.simtoolreal.terms`): a best-so-far distance of -1 means
"unset": the next evaluation sets it to the current distance.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from mjvec.tasks.simtoolreal import scene as tool_scene
from mjvec.tasks.simtoolreal import terms as tool_terms
from mjvec.tasks.simtoolreal.config import SimToolRealConfig
from mjvec.tasks.simtoolreal.curriculum import ToleranceCurriculum
from mjvec.tasks.simtoolreal.indices import Array, AsArray, TaskIndices
from mjvec.xp import Rows, namespace_of

if TYPE_CHECKING:
    from mjvec.rng import EnvRandom

Zeros = Callable[[tuple[int, ...], Any], Array]  # zeros(tail, dtype) -> (N, *tail) zeros where the state lives


@dataclass(eq=False)
class TaskState:
    """Per-env task state, (N, ...) arrays in the state's namespace (J joints, F fingertips).

    targets (N, J): the PD targets last written to ctrl (a new array after each action).
    goal_pos (N, 3) env frame, goal_quat (N, 4) wxyz, and derived from them: goal_rot (N, 3, 3),
    goal_kp_fixed (N, 4, 3) the goal's fixed-size keypoints. lifted (N,) bool latch;
    closest_fingertip_dist (N, F) and closest_keypoint_dist (N,) best-so-far distances (-1:
    unset); near_goal_steps, successes (this episode) and progress (control steps since the reset
    or the last success), (N,) int64; last_reward (N,) float64. curriculum: the tolerance
    curriculum (shared by all envs). object_com (N, 3): the object's centre of mass in its body
    frame as of `com_version` (the backend's body_ipos write count), kept only for the critic
    (None otherwise). table_z (N,): each env's table centre height as of `table_version` (the
    backend's geom_pos write count); spawn_z (N,): each env's spawn height, set from its table at
    each of its resets (the source's object_init_state z: the reference of the lift reward and of
    the first goal's floor for the episode).
    """

    targets: Array
    goal_pos: Array
    goal_quat: Array
    goal_rot: Array
    goal_kp_fixed: Array
    lifted: Array
    closest_fingertip_dist: Array
    closest_keypoint_dist: Array
    near_goal_steps: Array
    successes: Array
    progress: Array
    last_reward: Array
    curriculum: ToleranceCurriculum
    object_com: Array | None
    table_z: Array
    spawn_z: Array
    com_version: int = -1
    table_version: int = 0

    def set_goal_pose(self, rows: Rows, pos: Array, quat: Array, fixed_offsets: Array) -> None:
        """Goals of `rows` become pos (rows, 3), quat (rows, 4) wxyz (in the state's dtype), with
        their rotation and fixed-size keypoints; the progress state is not touched."""
        rows.put(self.goal_pos, pos)
        rows.put(self.goal_quat, quat)
        rot = tool_terms.quat_to_mat(quat)
        rows.put(self.goal_rot, rot)
        rows.put(self.goal_kp_fixed, tool_terms.keypoints_from_rot(pos, rot, fixed_offsets))

    def rearm_goal(self, rows: Rows) -> None:
        """A new goal for `rows`: its best keypoint distance unset, its near-goal counter at 0."""
        rows.put(self.closest_keypoint_dist, -1.0)
        rows.put(self.near_goal_steps, 0)

    def start_episode(self, rows: Rows) -> None:
        """The episode counters and latches of `rows` back to their start (targets and goals are set
        by the reset itself)."""
        rows.put(self.lifted, False)
        rows.put(self.closest_fingertip_dist, -1.0)
        rows.put(self.successes, 0)
        rows.put(self.progress, 0)
        rows.put(self.last_reward, 0.0)


def new_state(num_envs: int, cfg: SimToolRealConfig, indices: TaskIndices, zeros: Zeros, asarray: AsArray,
              like: Any, critic: bool, progress: Array) -> TaskState:
    """The state before the first reset: identity goals, unset distances, zero counters.

    zeros / asarray: `MjVecEnv.zeros` / `MjVecEnv.asarray`; like: an array of the state's namespace
    and device (None on the host), for the curriculum; critic: keep `object_com`; progress: the
    (N,) int64 step counter to hold (the env base's live ``episode_steps``, which the base
    increments before each evaluation and zeroes at each reset).
    """
    f = indices.dtype
    xp = namespace_of(indices.joint_lower)
    goal_pos = zeros((3,), f)
    goal_rot = zeros((3, 3), f) + asarray(np.eye(3), f)
    return TaskState(
        targets=zeros((tool_terms.NUM_JOINTS,), f),
        goal_pos=goal_pos,
        goal_quat=zeros((4,), f) + asarray([1.0, 0.0, 0.0, 0.0], f),
        goal_rot=goal_rot,
        goal_kp_fixed=tool_terms.keypoints_from_rot(goal_pos, goal_rot, indices.fixed_offsets),
        lifted=zeros((), xp.bool),
        closest_fingertip_dist=zeros((tool_terms.NUM_FINGERTIPS,), f) - 1.0,
        closest_keypoint_dist=zeros((), f) - 1.0,
        near_goal_steps=zeros((), xp.int64),
        successes=zeros((), xp.int64),
        progress=progress,
        last_reward=zeros((), xp.float64),
        curriculum=ToleranceCurriculum(num_envs, cfg.tolerance_start, cfg.tolerance_decay, cfg.tolerance_min,
                                       cfg.curriculum_interval, cfg.curriculum_min_successes, like=like),
        object_com=zeros((3,), f) if critic else None,
        table_z=zeros((), f) + tool_scene.TABLE_POS[2],
        spawn_z=zeros((), f) + indices.spawn_z,
    )


def refresh_table(state: TaskState, backend: Any, indices: TaskIndices, asarray: AsArray) -> None:
    """Re-read each env's table height after a write to geom_pos (`mjvec.tasks.simtoolreal.presets.table_height`):
    the backend counts its writes per field, so this reads nothing back while none happen."""
    version = backend.field_version("geom_pos")
    if version != state.table_version:
        state.table_z[...] = asarray(backend.field_values("geom_pos")[:, indices.table_geom, 2], indices.dtype)
        state.table_version = version


def refresh_object_com(state: TaskState, backend: Any, indices: TaskIndices, asarray: AsArray) -> None:
    """Re-read the object-frame COM offsets after a write to body_ipos (a COM randomization term),
    likewise only when the backend's write count for it moved."""
    version = backend.field_version("body_ipos")
    if version != state.com_version:
        state.object_com[...] = asarray(backend.field_values("body_ipos")[:, indices.object_body_id], indices.dtype)
        state.com_version = version


def initial_state(rng: EnvRandom, rows: Rows, cfg: SimToolRealConfig, indices: TaskIndices, spawn_z: Array,
                  device: Any) -> tuple[Array, Array, Array]:
    """Draw the reset state of `rows` from their own streams: (qpos (rows, nq), qvel (rows, nv),
    joint_pos (rows, J)). The object spawns around (spawn x, spawn y, `spawn_z` (rows,)) with a
    random orientation; the joints around the default pose, within their ranges."""
    xp, f = namespace_of(indices.joint_lower), indices.dtype
    noise = xp.asarray(cfg.spawn_pos_noise, dtype=xp.float64, device=device)
    centre = xp.concat([xp.zeros((spawn_z.shape[0], 2), dtype=f, device=device) + indices.spawn_pos[:2],
                        xp.reshape(spawn_z, (-1, 1))], axis=1)
    obj_pos = centre + xp.astype(rng.uniform(rows, "reset/object_pos", -noise, noise, (3,)), f)
    obj_quat = xp.astype(rng.quaternion(rows, "reset/object_quat"), f)
    default, lower, upper = indices.default_joint_pos, indices.joint_lower, indices.joint_upper
    delta = xp.astype(rng.uniform(rows, "reset/joint_pos", lower - default, upper - default,
                                  (tool_terms.NUM_JOINTS,)), f)
    joint_pos = xp.clip(default + cfg.joint_pos_noise * delta, lower, upper)
    joint_vel = xp.astype(
        rng.uniform(rows, "reset/joint_vel", -cfg.joint_vel_noise, cfg.joint_vel_noise, (tool_terms.NUM_JOINTS,)), f
    )
    a = indices.obj_qpos
    qpos = xp.zeros((rows.size, indices.qpos0.shape[0]), dtype=f, device=device) + indices.qpos0
    qpos[:, indices.jnt_qpos] = joint_pos
    qpos[:, a:a + 3] = obj_pos
    qpos[:, a + 3:a + 7] = obj_quat
    qvel = xp.zeros((rows.size, indices.nv), dtype=f, device=device)
    qvel[:, indices.jnt_dof] = joint_vel
    return qpos, qvel, joint_pos
