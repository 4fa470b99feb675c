"""`GymMujocoEnv`: one of Gymnasium's v5 MuJoCo locomotion tasks, batched (see docs/gym_mujoco.md).

Per control step, as Gymnasium's ``step``: the root position is read (``_apply_action``), the
action is written to ctrl, the physics runs ``frame_skip`` mj_steps (then mj_rnePostConstraint,
for the tasks that read contact forces), and the observation, reward, termination and infos are
computed from the new state with Gymnasium's expressions (`terms`). What is live: qpos and qvel
are the new state; xpos, xipos, cinert, cvel, qfrc_actuator and ten_* are those of the last
forward pass of the step (after an RK4 step, its last stage), as in Gymnasium, which reads MjData
right after ``mj_step``; cfrc_ext is mj_rnePostConstraint's from that same pass.

Resets: qpos0 plus noise and zero velocities plus noise (uniform or normal, the task's), drawn from
the env's own streams ``reset/qpos`` and ``reset/qvel`` (keyed by seed and global env id, so the
same seed draws different numbers than Gymnasium's ``np_random``); ``reset(options={"qpos": Q,
"qvel": V})`` sets the reset envs' state exactly instead (the draws are still made, so later
episodes do not depend on it). The reset observation's contact forces are those of a zero
``cfrc_ext``, as Gymnasium's: its reset runs mj_forward, which leaves cfrc_ext at mj_resetData's zero.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import gymnasium as gym
import mujoco
import numpy as np

from mjvec.assets.cameras import CameraSpec
from mjvec.assets.mjcf import load_spec
from mjvec.envs.base import MjVecEnv
from mjvec.envs.memory import MemoryNeeds
from mjvec.errors import ConfigError, allowed
from mjvec.tasks.gym_mujoco import terms as gym_terms
from mjvec.tasks.gym_mujoco.deployment import DeploymentHooks
from mjvec.tasks.gym_mujoco.options import GymMujocoOptions
from mjvec.tasks.gym_mujoco.specs import QVEL_CLIP, TASKS, TaskDef, observation_layout, xml_path
from mjvec.xp import Rows

__all__ = ["STATE_OPTIONS", "GymMujocoEnv"]

STATE_OPTIONS = ("qpos", "qvel")


def task_of(options: Any) -> TaskDef:
    """The suite task whose options class `options` is an instance of."""
    return next(task for task in TASKS.values() if type(options) is task.options)


@functools.lru_cache(maxsize=16)
def compiled(path: Path) -> mujoco.MjModel:
    """The compiled model of a file, for the per-env byte counts (compiled once per process)."""
    return load_spec(path).compile()


class GymMujocoEnv(DeploymentHooks, MjVecEnv):
    """A Gymnasium v5 MuJoCo task over a numpy-state backend (see the module docstring).

    task: the `TaskDef`; options: its options (the physics and reward constants); the remaining
    keyword arguments go to `MjVecEnv`.

    Renders with the model's "track" camera (Gymnasium's files all have one; the free camera otherwise).

    Attributes: ``task``, ``opts``, ``dt`` (timestep x frame_skip, Gymnasium's ``dt``),
    ``init_qpos`` / ``init_qvel`` (qpos0, zeros), ``max_episode_steps``, ``policy_layout`` (the observation's blocks),
    ``elapsed`` (control steps in the current episode: the base's ``episode_steps``, which a writer such
    as rsl_rl's ``init_at_random_ep_len`` moves).
    """

    def __init__(self, backend: Any, *, task: TaskDef, options: GymMujocoOptions, **env_options: Any) -> None:
        if backend.capabilities.array_namespace != "numpy":
            raise ConfigError(
                f"{task.env_id} computes its task on numpy state; the {backend.capabilities.backend!r} backend keeps "
                f"{backend.capabilities.array_namespace!r} state. Build it with gym.make_vec, which gives the task "
                "numpy views of any backend"
            )
        model = backend.model
        self.task, self.opts = task, options
        self.dt = float(model.opt.timestep) * options.frame_skip
        self.init_qpos = model.qpos0.copy()
        self.init_qvel = np.zeros(model.nv)
        self.policy_layout = observation_layout(task, options, model.nq, model.nv, model.nbody)
        self._skipped = model.nq - self.policy_layout[0][1]
        self._main_body = _body_id(model, options.main_body) if task.velocity == "body" else None
        # Every Gymnasium file has a body-tracking camera "track"; a user's file may not.
        cameras = {model.camera(i).name for i in range(model.ncam)}
        self.render_camera = "track" if "track" in cameras else -1
        bounds = model.actuator_ctrlrange.copy().astype(np.float32)  # Gymnasium's _set_action_space
        super().__init__(
            backend,
            single_observation_space=gym.spaces.Box(-np.inf, np.inf, (sum(w for _, w in self.policy_layout),),
                                                    np.float64),
            single_action_space=gym.spaces.Box(bounds[:, 0], bounds[:, 1], dtype=np.float32),
            frame_skip=options.frame_skip,
            max_episode_steps=options.episode_steps,
            **env_options,
        )
        self._views = {name: backend.bind(name) for name in self.bound_fields(task, options)}
        n = self.num_envs
        self._fresh = np.ones(n, bool)  # envs whose last call was a reset: cfrc_ext is observed as zero
        self._before: np.ndarray = np.zeros(n if task.planar else (n, 2))
        self._cost_input = np.zeros((n, model.nu), np.float32)
        self._masses: np.ndarray | None = None
        self._mass_total: np.ndarray | None = None
        self._mass_version = -1
        self._pending: dict[str, np.ndarray] = {}

    @property
    def elapsed(self) -> np.ndarray:
        """(N,) control steps in each env's current episode (the base's live ``episode_steps``)."""
        return self.episode_steps

    @classmethod
    def memory_needs(cls, options: Any) -> MemoryNeeds:
        """What one env holds (`MjVecEnv.memory_needs`): the fields it binds, its state and a step's
        temporaries (about ten observation-sized float64 arrays), plus, where contact forces are
        read, the one MjData per env that a persistent CPU batch keeps, counted as its whole buffer
        (of which a step touches less: about 200 KB per env resident for Ant and Humanoid, measured by
        benchmarks/gym_suite.py)."""
        task = task_of(options)
        model = compiled(xml_path(options.xml_file or task.xml))
        obs = model.nq + model.nv + 22 * model.nbody
        persistent = model.nbuffer if task.needs_contact_forces(options) else 0
        return MemoryNeeds(cls.bound_fields(task, options), 8 * (10 * obs + 64) + persistent)

    @classmethod
    def scene_options(cls, options: Any) -> dict[str, Any]:
        """Contact forces as mj_rnePostConstraint gives them, where the task reads them."""
        return {"rne_post_constraint": task_of(options).needs_contact_forces(options)}

    @classmethod
    def task_cameras(cls, options: Any) -> tuple:
        """Camera observations' camera: the model's own "track" camera (Gymnasium's files have one;
        it follows the robot's torso at a fixed offset), 64x64. A depth image from it does not show
        the torso itself (a rangefinder never sees its camera's body); legs and floor it does."""
        model = compiled(xml_path(options.xml_file or task_of(options).xml))
        if mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, "track") < 0:
            return ()
        return (CameraSpec("track", existing=True, depth_range=(0.0, 6.0)),)

    @staticmethod
    def bound_fields(task: TaskDef, options: Any) -> tuple[str, ...]:
        """The MjData fields the task binds (read by the memory estimate before anything is built)."""
        names = {"body": ("xpos",), "mass_center": ("xipos",), "qpos": ()}[task.velocity]
        if task.needs_contact_forces(options):
            names += ("cfrc_ext",)
        if task.name == "Humanoid-v5":
            names += ("cinert", "cvel", "qfrc_actuator", "ten_length", "ten_velocity")
        return names

    # ---- reset with a given state ---------------------------------------------------------------
    def reset(self, *, seed: Any = None, options: Mapping[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """`MjVecEnv.reset`, plus the options ``"qpos"`` ((num_envs, nq) or (nq,) for every env) and
        ``"qvel"`` ((num_envs, nv) or (nv,)): the envs reset now start exactly there instead of at
        the drawn state (rows of envs not reset are ignored). Validated before anything moves."""
        if not isinstance(options, Mapping) or not any(k in options for k in STATE_OPTIONS):
            return super().reset(seed=seed, options=options)
        state = {k: self._check_state(k, options[k]) for k in STATE_OPTIONS if k in options}
        rest = {k: v for k, v in options.items() if k not in STATE_OPTIONS}
        if self._pending:  # another reset of this env is running: let the base name the conflict
            return super().reset(seed=seed, options=rest or None)
        self._pending = state
        try:
            return super().reset(seed=seed, options=rest or None)
        finally:
            self._pending = {}

    def _check_state(self, key: str, value: Any) -> np.ndarray:
        width = self.backend.model.nq if key == "qpos" else self.backend.model.nv
        try:
            array = np.asarray(value, np.float64)
        except (TypeError, ValueError) as error:
            raise ConfigError(f"reset option {key!r} must be a float array, got {type(value).__name__}") from error
        if array.shape == (width,):
            array = np.broadcast_to(array, (self.num_envs, width))
        if array.shape != (self.num_envs, width):
            raise ConfigError(
                f"reset option {key!r} must have shape ({self.num_envs}, {width}) or ({width},), got {array.shape}")
        if not np.isfinite(array).all():
            raise ConfigError(f"reset option {key!r} must be finite")
        return array

    # ---- hooks ----------------------------------------------------------------------------------
    def _apply_action(self, actions: np.ndarray) -> None:
        # Gymnasium's control cost squares the float32 action (Humanoid's: the float64 ctrl).
        self._cost_input = actions.astype(np.float32) if self.task.ctrl_cost_on == "action" else actions
        self._refresh_masses()
        self._before = self._root_position()
        self.backend.ctrl[:] = actions

    def _refresh_masses(self) -> None:
        """Humanoid's mass centre weighs each env's current body masses (a mass EventTerm included)."""
        if self.task.velocity != "mass_center":
            return
        version = self.backend.field_version("body_mass")
        if version != self._mass_version:
            self._masses = np.asarray(self.backend.field_values("body_mass"), np.float64)
            self._mass_total = self._masses.sum(axis=1, keepdims=True)
            self._mass_version = version

    def _root_position(self) -> np.ndarray:
        """What Gymnasium differentiates for the forward velocity: qpos[0], main_body's xy or the mass centre."""
        if self.task.velocity == "qpos":
            return self.backend.qpos[:, 0].copy()
        if self.task.velocity == "body":
            return self._views["xpos"][:, self._main_body, :2].copy()
        return gym_terms.mass_center(self._masses, self._views["xipos"], self._mass_total)

    def _evaluate(self, active: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        task, opts, qpos, qvel = self.task, self.opts, self.backend.qpos, self.backend.qvel
        velocity = (self._root_position() - self._before) / self.dt
        x_velocity = velocity if task.planar else velocity[:, 0]
        forward = opts.forward_reward_weight * x_velocity
        ctrl_cost = gym_terms.control_cost(opts.ctrl_cost_weight, self._cost_input)
        info: dict[str, Any] = self._position_info(qpos)
        info["x_velocity"] = x_velocity
        if not task.planar:
            info["y_velocity"] = velocity[:, 1]
        info["reward_forward"], info["reward_ctrl"] = forward, -ctrl_cost
        rewards, costs = forward, ctrl_cost
        terminated = np.zeros(self.num_envs, bool)
        if task.healthy is not None:
            healthy = task.healthy(opts, qpos, qvel)
            survive = healthy * opts.healthy_reward
            rewards = forward + survive
            info["reward_survive"] = survive
            if opts.terminate_when_unhealthy:
                terminated = ~healthy
        if task.contact is not None:
            contact_cost = self._contact_cost()
            costs = ctrl_cost + contact_cost
            info["reward_contact"] = -contact_cost
        reward = rewards - costs
        # The base counts this step before evaluating (`episode_steps`) and truncates at the limit
        # unless terminated; Gymnasium's TimeLimit truncates even when terminated too.
        truncated = self.episode_steps >= opts.episode_steps
        self._fresh[active] = False
        return reward, terminated, truncated, info

    def _contact_cost(self) -> np.ndarray:
        opts = self.opts
        if "cfrc_ext" not in self._views:  # weight 0 and not observed: Gymnasium's cost is 0 x a finite sum
            return opts.contact_cost_weight * np.zeros(self.num_envs)
        if self.task.contact == "ant":
            return gym_terms.ant_contact_cost(opts.contact_cost_weight, self._views["cfrc_ext"],
                                              opts.contact_force_range)
        return gym_terms.humanoid_contact_cost(opts.contact_cost_weight, self._views["cfrc_ext"],
                                               opts.contact_cost_range)

    def _position_info(self, qpos: np.ndarray) -> dict[str, Any]:
        """The position infos of step and reset (Gymnasium's ``_get_reset_info`` keys)."""
        info: dict[str, Any] = {"x_position": qpos[:, 0].copy()}
        if not self.task.planar:
            info["y_position"] = qpos[:, 1].copy()
            info["distance_from_origin"] = gym_terms.distance_from_origin(qpos)
        if self.task.z_distance:
            info["z_distance_from_origin"] = qpos[:, 1] - self.init_qpos[1]
        if self.task.tendons:
            info["tendon_length"] = self._views["ten_length"].copy()
            info["tendon_velocity"] = self._views["ten_velocity"].copy()
        return info

    def _observe(self) -> np.ndarray:
        qpos, qvel, views, n = self.backend.qpos, self.backend.qvel, self._views, self.num_envs
        parts = [qpos[:, self._skipped:], np.clip(qvel, -QVEL_CLIP, QVEL_CLIP) if self.task.clip_qvel else qvel]
        blocks = dict(self.policy_layout)
        for name, rows in (("cinert", slice(1, None)), ("cvel", slice(1, None)), ("qfrc_actuator", slice(6, None))):
            if name in blocks:
                parts.append(views[name][:, rows].reshape(n, -1))
        if "cfrc_ext" in blocks:
            cfrc = views["cfrc_ext"]
            if self._fresh.any():
                cfrc = np.where(self._fresh[:, None, None], 0.0, cfrc)
            if self.task.contact == "ant":
                cfrc = np.clip(cfrc, *self.opts.contact_force_range)
            parts.append(cfrc[:, 1:].reshape(n, -1))
        return np.concatenate(parts, axis=1, dtype=np.float64)

    def _reset_envs(self, rows: Rows) -> None:
        scale, model = self.opts.reset_noise_scale, self.backend.model
        qpos = self.init_qpos + self.rng.uniform(rows, "reset/qpos", -scale, scale, (model.nq,))
        if self.task.qvel_noise == "normal":
            qvel = self.init_qvel + scale * self.rng.normal(rows, "reset/qvel", (model.nv,))
        else:
            qvel = self.init_qvel + self.rng.uniform(rows, "reset/qvel", -scale, scale, (model.nv,))
        if "qpos" in self._pending:
            qpos = rows.take(self._pending["qpos"]).copy()
        if "qvel" in self._pending:
            qvel = rows.take(self._pending["qvel"]).copy()
        self.backend.reset(rows.selector(), qpos, qvel)
        rows.put(self._fresh, True)

    def _reset_info(self, rows: Rows) -> dict[str, Any]:
        """Gymnasium's reset info: x_position (and y_position, distance_from_origin, z_distance_from_origin,
        tendon_length, tendon_velocity: the task's)."""
        return self._position_info(self.backend.qpos)


def _body_id(model: Any, body: int | str) -> int:
    """main_body as a body id (Gymnasium's ``data.body(main_body)`` takes an id or a name)."""
    names = [model.body(i).name for i in range(model.nbody)]
    if isinstance(body, str):
        if body not in names:
            raise ConfigError(
                f"main_body={body!r} is not a body of the model; its bodies are {allowed(names, limit=64)}")
        return names.index(body)
    if not 0 <= int(body) < model.nbody:
        raise ConfigError(f"main_body={body!r} is not a body id of the model (it has {model.nbody}: {allowed(names)})")
    return int(body)
