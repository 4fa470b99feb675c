"""Go1JoystickFlatTerrain / Go1JoystickRoughTerrain: a Unitree Go1 tracks a velocity command (lin x,
lin y, yaw rate) on flat ground or on Playground's heightfield, MuJoCo Playground's task
(``mujoco_playground/_src/locomotion/go1/joystick.py``) as an mjvec vector env (the terrain is the
scene's alone: the task reads nothing of it); docs/go1_joystick.md states what equals Playground and
what does not.

Per control step (`ctrl_dt`, `substeps` physics steps of `sim_dt`), in Playground's order:

1. (kicks on) the kick schedule advances and its force is written to the base's ``xfrc_applied``;
   position targets default pose + action_scale x action go to ctrl; the physics steps.
2. Feet: contact from the foot-floor contact sensors, first contact, air time and swing peak
   (`mjvec.tasks.locomotion.FeetState`); the fall termination (up-vector z < 0).
3. Reward: Playground's 16 terms (`terms.REWARD_TERMS`), weighted, summed, x control_dt, clipped to
   [0, 1e4]; ``info["reward_terms"]`` holds each weighted term (Playground's ``reward/<name>`` metrics).
4. End of step: last action <- action, feet committed, the command timer counts down and the
   command is resampled where it ran out (`mjvec.tasks.locomotion.CommandState`), new observation
   noise drawn. The observation shows the task state as it was before these updates (`Go1Shown`),
   as Playground's, which observes before them.

Episodes end on a fall (terminated) or after `episode_length` steps (truncated, by the base's
counter). A reset starts from the "home" keyframe with the base moved, turned and set moving at
random (Playground's ranges), a uniform command and fresh timers and kick schedule.

Streams (per env, keyed by seed and global id): ``reset/base_xy``, ``reset/yaw``,
``reset/base_vel``, the command's and kicks' (`mjvec.tasks.locomotion`), ``obs_noise`` (each step)
and ``obs_noise/reset``.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import VectorEnv

from mjvec.contract import layout_size
from mjvec.envs.arrays import to_numpy
from mjvec.envs.base import MjVecEnv
from mjvec.envs.memory import MemoryNeeds
from mjvec.errors import ConfigError, allowed
from mjvec.rotations import quat_from_axis_angle, quat_mul
from mjvec.tasks.go1_joystick import terms as go1_terms
from mjvec.tasks.go1_joystick.config import Go1JoystickConfig
from mjvec.tasks.go1_joystick.indices import NUM_JOINTS, build_indices
from mjvec.tasks.go1_joystick.observations import (
    CRITIC_LAYOUT,
    NOISY_WIDTH,
    OBS_MODES,
    POLICY_LAYOUT,
    Go1Shown,
    observation_space,
    observe,
    sensor,
)
from mjvec.tasks.locomotion import CommandState, FeetState, PushState
from mjvec.xp import Rows, assign_where
from mjvec.xp import copy_array as _copy

__all__ = ["BOUND_FIELDS", "Go1JoystickEnv"]

BOUND_FIELDS = ("sensordata", "site_xpos", "site_xmat", "actuator_force")


class Go1JoystickEnv(MjVecEnv, VectorEnv):
    """The Go1 joystick task over any backend (see the module docstring).

    backend: a `Backend` over `mjvec.tasks.go1_joystick.scene.scene_spec(config, terrain)`.
    config: the task constants (None: Playground's). obs_mode: "policy" -> Box(48);
    "asymmetric" -> Dict(policy=Box(48), critic=Box(123)). Remaining keyword arguments go to `MjVecEnv`.

    Records (live, the state's namespace): `indices` (`Go1Indices`), `commands` (`CommandState`),
    `feet` (`FeetState`), `pushes` (`PushState`), `shown` (`Go1Shown`), `last_act` (N, 12).

    info (every step, (N, ...) arrays): reward_terms (weighted terms), command (the command this
    step's reward tracked), velocity (N, 3): the base's local x, y velocity and yaw rate it tracked
    against, resampled (the envs whose command changed at the end of this step).
    """

    render_camera = "track"
    policy_layout = POLICY_LAYOUT
    critic_layout = CRITIC_LAYOUT

    def __init__(self, backend: Any, *, config: Go1JoystickConfig | None = None, obs_mode: str = "policy",
                 **base_kwargs: Any) -> None:
        cfg = Go1JoystickConfig() if config is None else config
        if not isinstance(cfg, Go1JoystickConfig):
            raise ConfigError(f"config must be a Go1JoystickConfig, got {type(cfg).__name__}")
        if obs_mode not in OBS_MODES:
            raise ConfigError(f"obs_mode={obs_mode!r} is not supported; allowed values are {allowed(OBS_MODES)}")
        self.cfg, self.obs_mode, self._critic = cfg, obs_mode, obs_mode == "asymmetric"
        super().__init__(
            backend,
            single_observation_space=observation_space(obs_mode),
            single_action_space=gym.spaces.Box(-1.0, 1.0, (NUM_JOINTS,), np.float32),
            frame_skip=cfg.substeps,
            max_episode_steps=cfg.episode_length,
            **base_kwargs,
        )
        xp, f = self.xp, backend.qpos.dtype
        self.indices = build_indices(backend.model, cfg, self.asarray, f)
        self._views = {name: backend.bind(name) for name in BOUND_FIELDS}
        self.commands = CommandState.create(cfg.commands, self.control_dt, self.zeros, f, xp.int64)
        self.feet = FeetState.create(self.zeros, 4, f, xp.bool)
        self.pushes = PushState.create(cfg.pushes, self.control_dt, self.zeros, f, xp.int64)
        self.last_act = self.zeros((NUM_JOINTS,), f)
        self.shown = Go1Shown(self.zeros((NUM_JOINTS,), f), self.zeros((3,), f), self.zeros((4,), xp.bool),
                              self.zeros((4,), f), self.zeros((NOISY_WIDTH,), f))
        self._action = self.zeros((NUM_JOINTS,), f)
        self._torso = np.array([self.indices.torso], np.int64)

    # ---- what the task needs per env (read by `mjvec.envs.memory` before anything is built) -----
    @classmethod
    def memory_needs(cls, options: Any) -> MemoryNeeds:
        """What one env holds (`MjVecEnv.memory_needs`): the bound MjData fields, and about 160
        values of task state and infos plus four observation-sized temporaries, float64."""
        width = layout_size(POLICY_LAYOUT) + (layout_size(CRITIC_LAYOUT) if options.obs_mode == "asymmetric" else 0)
        return MemoryNeeds(BOUND_FIELDS, 8 * (160 + 4 * width))

    # ---- the MjVecEnv phases ---------------------------------------------------------------
    def _apply_action(self, actions: Any) -> None:
        self._action = self.xp.astype(actions, self.last_act.dtype)
        self.backend.ctrl[...] = self.indices.default_pose + self.cfg.action_scale * self._action
        if self.cfg.pushes.enable:
            force = self.pushes.step(self.rng, self.indices.torso_mass)
            wrench = self.xp.concat([force, self.xp.zeros_like(force)], axis=1)[:, None, :]
            self.backend.write_input("xfrc_applied", None, self._torso, wrench)

    def _evaluate(self, active: Any) -> tuple[Any, Any, Any, dict[str, Any]]:
        xp, idx, v = self.xp, self.indices, self._views
        qpos, qvel, sensordata = self.backend.qpos, self.backend.qvel, v["sensordata"]
        contact = sensordata[:, idx.contact_adr] > 0
        step = self.feet.touch_down(contact, v["site_xpos"][:, idx.foot_sites, 2], self.control_dt)
        done = go1_terms.fallen(sensordata, idx)
        command = _copy(self.commands.command)
        reward, weighted = go1_terms.weighted_reward(self.cfg, idx, qpos, qvel, sensordata, v["site_xpos"],
                                                     v["actuator_force"], self._action, self.last_act, command,
                                                     step, done)
        mask = active[:, None]
        shown = self.shown
        assign_where(shown.last_act, mask, self.last_act)
        assign_where(shown.command, mask, command)
        assign_where(shown.last_contact, mask, self.feet.last_contact)
        assign_where(shown.air_time, mask, step.air_time)
        assign_where(self.last_act, mask, self._action)
        self.feet.commit(active, step)
        resampled = self.commands.advance(self.rng, active, done)
        self._draw_noise(Rows.of_mask(active), "obs_noise")
        gyro = sensor(sensordata, idx, "gyro")
        velocity = xp.concat([sensor(sensordata, idx, "local_linvel")[:, :2], gyro[:, 2:]], axis=1)
        info = {"reward_terms": weighted, "command": command, "velocity": velocity, "resampled": resampled}
        return xp.astype(reward, xp.float64), done, xp.zeros_like(done), info

    def _draw_noise(self, rows: Rows, stream: str) -> None:
        """This observation's noise for `rows`: U(-1, 1) x level x scale per noisy entry."""
        if self.cfg.noise_level == 0 or not rows.any():
            return
        u = self.rng.uniform(rows, stream, -1.0, 1.0, (NOISY_WIDTH,))
        rows.put(self.shown.noise, self.xp.astype(u, self.shown.noise.dtype) * self.indices.noise_scale)

    def _observe(self) -> Any:
        v, idx = self._views, self.indices
        push_force = self.backend.xfrc_applied[:, idx.torso, :3]
        push_due = self.xp.astype(self.pushes.due(), push_force.dtype)
        return observe(self.backend.qpos, self.backend.qvel, v["sensordata"], v["site_xmat"], v["actuator_force"],
                       push_force, push_due, idx, self.shown, self._critic)

    def _reset_envs(self, rows: Rows) -> None:
        cfg, rng, idx, xp = self.cfg, self.rng, self.indices, self.xp
        f = idx.home_qpos.dtype
        qpos = xp.zeros((rows.size, idx.home_qpos.shape[0]), dtype=f, device=getattr(idx.home_qpos, "device", None))
        qpos = qpos + idx.home_qpos
        qpos[:, 0:2] += xp.astype(rng.uniform(rows, "reset/base_xy", -cfg.reset_xy, cfg.reset_xy, (2,)), f)
        yaw = rng.uniform(rows, "reset/yaw", -cfg.reset_yaw, cfg.reset_yaw)
        z_axis = xp.zeros((rows.size, 3), dtype=yaw.dtype, device=getattr(yaw, "device", None))
        z_axis[:, 2] = 1.0
        qpos[:, 3:7] = xp.astype(quat_mul(xp.astype(qpos[:, 3:7], yaw.dtype), quat_from_axis_angle(z_axis, yaw)), f)
        qvel = xp.zeros((rows.size, idx.nv), dtype=f, device=getattr(qpos, "device", None))
        qvel[:, 0:6] = xp.astype(rng.uniform(rows, "reset/base_vel", -cfg.reset_base_vel, cfg.reset_base_vel, (6,)), f)
        self.backend.reset(rows.selector(), qpos, qvel, ctrl=qpos[:, 7:])
        self.commands.reset(rng, rows)
        self.feet.reset(rows)
        self.pushes.reset(rng, rows)
        rows.put(self.last_act, 0.0)
        rows.put(self.shown.last_act, 0.0)
        rows.put(self.shown.command, rows.take(self.commands.command))
        rows.put(self.shown.last_contact, False)
        rows.put(self.shown.air_time, 0.0)
        rows.put(self.shown.noise, 0.0)
        self._draw_noise(rows, "obs_noise/reset")

    # ---- steering -----------------------------------------------------------------------------
    def set_command(self, command: Any, env_ids: Any = None) -> None:
        """Give the envs `env_ids` (local ids, host ints; None: every env) the velocity command
        `command`: (3,) for all of them or (K, 3) one row each, lin x and lin y in m/s and the yaw
        rate in rad/s, finite (the config's sampling ranges do not bound it). It is the command in
        force from now on: the next step's reward tracks it and the observation that step returns
        shows it. The resampling timers go on (`CommandConfig.mean_resample_s`; a long mean holds
        the command) and a reset draws a new command. For steering and for evaluating tracking."""
        ids = np.arange(self.num_envs) if env_ids is None else np.asarray(env_ids).reshape(-1)
        if ids.dtype.kind not in "iu" or ids.size != np.unique(ids).size or ((ids < 0) | (ids >= self.num_envs)).any():
            raise ConfigError(f"set_command: env_ids must be distinct ints in [0, {self.num_envs}), got {env_ids!r}")
        values = np.asarray(to_numpy(command), dtype=np.float64)
        if values.shape not in ((3,), (ids.size, 3)) or not np.isfinite(values).all():
            raise ConfigError(f"set_command: command must be finite, of shape (3,) or ({ids.size}, 3) "
                              f"(lin x, lin y, yaw rate per env), got shape {values.shape}"
                              + ("" if np.isfinite(values).all() else " with non-finite values"))
        full = np.array(to_numpy(self.commands.command), dtype=np.float64)
        full[ids] = values
        self.commands.command[...] = self.asarray(full, self.commands.command.dtype)

    def _reset_info(self, rows: Rows) -> dict[str, Any]:
        """At reset: each env's command."""
        return {"command": _copy(self.commands.command)}
