"""LeapCubeReorient: a LEAP hand turns a cube in its palm to goal orientations that keep moving,
MuJoCo Playground's task (``mujoco_playground/_src/manipulation/leap_hand/reorient.py``,
``CubeReorient``) as an mjvec vector env; docs/leap_cube_reorient.md states what equals Playground
and what does not. (mjvec's own CubeRotate-v0 is another task.)

Per control step (`ctrl_dt`, `substeps` physics steps of `sim_dt`), in Playground's order:

1. Relative control: targets = clip(ctrl + action_scale x action, ctrlrange), blended with the
   previous targets by ema_alpha, go to ctrl; (perturbations on) the cube's push is written to its
   ``xfrc_applied`` (`perturbations`); the physics steps.
2. Success: the cube's orientation error (from its and the goal's frame sensors) < success_threshold;
   ``steps_since_last_success`` and ``success_count`` follow it. Termination: the cube below
   -0.05 m or a NaN in the state.
3. Observation: fresh noise (joint angles, cube position and quaternion, the optional random pose
   injection) and the error histories pushed (`LeapObserved`), showing the previous action.
4. Reward: Playground's seven terms (`terms.REWARD_TERMS`), weighted, summed, x control_dt, plus
   success_reward on success; ``info["reward_terms"]`` holds each weighted term (Playground's
   ``reward/<name>`` metrics).
5. The goal: its angular velocity is redrawn on success (goal_spin_base + U(-jitter, jitter) per
   axis) and decays otherwise; the goal (a mocap body) turns by it over goal_spin_dt_factor x
   control_dt (applied at the next physics step, as Playground's ``data.mocap_quat``). Then
   last_last_act <- last_act <- action.

Episodes end on a fall (terminated) or after `episode_length` steps (truncated, by the base's
counter). A reset (Playground's ``reset``): hand joints default + N(0, hand_pose_std) clipped to the
ctrlrange (also the targets), the cube jittered about `cube_start` with a uniform orientation, a
uniform goal orientation, everything at rest.

Streams (per env, keyed by seed and global id): ``reset/goal``, ``reset/hand``, ``reset/cube_pos``,
``reset/cube_quat``, ``reset/pert_*`` and ``pert/direction`` (perturbations on), ``goal/spin``
(each step), ``obs_noise/<part>`` (each step) and ``obs_noise/reset/<part>``.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import VectorEnv

from mjvec.contract import layout_size
from mjvec.envs.base import MjVecEnv
from mjvec.envs.memory import MemoryNeeds
from mjvec.errors import ConfigError, allowed
from mjvec.tasks.leap_cube_reorient import terms as leap_terms
from mjvec.tasks.leap_cube_reorient.config import LeapCubeReorientConfig
from mjvec.tasks.leap_cube_reorient.observations import (
    OBS_MODES,
    LeapObserved,
    critic_layout,
    observation_space,
    observe,
    ori_entries,
    policy_layout,
)
from mjvec.tasks.leap_cube_reorient.perturbations import LeapPerturbations
from mjvec.tasks.leap_cube_reorient.terms import NUM_JOINTS, build_indices, normalize
from mjvec.xp import Rows

__all__ = ["BOUND_FIELDS", "LeapCubeReorientEnv"]

BOUND_FIELDS = ("sensordata", "actuator_force", "mocap_quat")
INJECT_POS = 0.5  # half-width (m) of an injected random cube position (Playground's)


class LeapCubeReorientEnv(MjVecEnv, VectorEnv):
    """The LEAP cube reorientation task over any backend (see the module docstring).

    backend: a `Backend` over `mjvec.tasks.leap_cube_reorient.scene.scene_spec(config)`.
    config: the task constants (None: Playground's). obs_mode: "policy" -> Box(57);
    "asymmetric" -> Dict(policy=Box(57), critic=Box(128)) (widths for history_len 1). Remaining
    keyword arguments go to `MjVecEnv`.

    Records (live, the state's namespace): `indices` (`LeapIndices`), `shown` (`LeapObserved`),
    `last_act`, `last_last_act` (N, 16), `goal_spin` (N, 3) rad/s, `success_count` and
    `steps_since_last_success` (N,) int64, `perturbations` (`LeapPerturbations`, drawn only with
    pert_enable).

    info (every step, (N, ...) arrays): reward_terms (weighted terms), success (bool),
    orientation_error (rad), success_count, steps_since_last_success.
    """

    render_camera = "side"

    def __init__(self, backend: Any, *, config: LeapCubeReorientConfig | None = None, obs_mode: str = "policy",
                 **base_kwargs: Any) -> None:
        cfg = LeapCubeReorientConfig() if config is None else config
        if not isinstance(cfg, LeapCubeReorientConfig):
            raise ConfigError(f"config must be a LeapCubeReorientConfig, got {type(cfg).__name__}")
        if obs_mode not in OBS_MODES:
            raise ConfigError(f"obs_mode={obs_mode!r} is not supported; allowed values are {allowed(OBS_MODES)}")
        self.cfg, self.obs_mode, self._critic = cfg, obs_mode, obs_mode == "asymmetric"
        self.policy_layout, self.critic_layout = policy_layout(cfg.history_len), critic_layout(cfg.history_len)
        super().__init__(
            backend,
            single_observation_space=observation_space(obs_mode, cfg.history_len),
            single_action_space=gym.spaces.Box(-1.0, 1.0, (NUM_JOINTS,), np.float32),
            frame_skip=cfg.substeps,
            max_episode_steps=cfg.episode_length,
            **base_kwargs,
        )
        xp, f, h = self.xp, backend.qpos.dtype, cfg.history_len
        self.indices = build_indices(backend.model, cfg, self.asarray, f)
        self._views = {name: backend.bind(name) for name in BOUND_FIELDS}
        self.last_act = self.zeros((NUM_JOINTS,), f)
        self.last_last_act = self.zeros((NUM_JOINTS,), f)
        self.goal_spin = self.zeros((3,), f)
        self.success_count = self.zeros((), xp.int64)
        self.steps_since_last_success = self.zeros((), xp.int64)
        self.shown = LeapObserved(self.zeros((NUM_JOINTS,), f), self.zeros((NUM_JOINTS * h,), f),
                                  self.zeros((3 * h,), f), self.zeros((6 * h,), f), self.zeros((NUM_JOINTS,), f))
        self.perturbations = LeapPerturbations.create(cfg, self.zeros, f, xp.int64)
        self._action = self.zeros((NUM_JOINTS,), f)
        self._cube = np.array([self.indices.cube_body], np.int64)

    @classmethod
    def memory_needs(cls, options: Any) -> MemoryNeeds:
        """What one env holds (`MjVecEnv.memory_needs`): the bound MjData fields, and about 200
        values of task state and infos plus four observation-sized temporaries, float64."""
        h = options.task_config().history_len
        width = layout_size(policy_layout(h)) + (layout_size(critic_layout(h)) if options.obs_mode == "asymmetric"
                                                 else 0)
        return MemoryNeeds(BOUND_FIELDS, 8 * (200 + 25 * h + 4 * width))

    # ---- the MjVecEnv phases ---------------------------------------------------------------
    def _apply_action(self, actions: Any) -> None:
        xp, idx, cfg = self.xp, self.indices, self.cfg
        self._action = xp.astype(actions, self.last_act.dtype)
        ctrl = self.backend.ctrl
        targets = xp.clip(ctrl + cfg.action_scale * self._action, idx.lower, idx.upper)
        if cfg.ema_alpha != 1.0:
            targets = cfg.ema_alpha * targets + (1.0 - cfg.ema_alpha) * ctrl
        ctrl[...] = targets
        if cfg.pert_enable:
            wrench = self.perturbations.wrench(self.rng, idx.cube_mass, self.control_dt)
            self.backend.write_input("xfrc_applied", None, self._cube, wrench[:, None, :])

    def _evaluate(self, active: Any) -> tuple[Any, Any, Any, dict[str, Any]]:
        xp, idx, cfg, v = self.xp, self.indices, self.cfg, self._views
        qpos, qvel, sensordata = self.backend.qpos, self.backend.qvel, v["sensordata"]
        error = leap_terms.orientation_error(idx.read(sensordata, "cube_orientation"),
                                             idx.read(sensordata, "cube_goal_orientation"))
        success = active & (error < cfg.success_threshold)
        self.steps_since_last_success[...] = xp.where(
            success, 0, xp.where(active, self.steps_since_last_success + 1, self.steps_since_last_success))
        self.success_count[...] = xp.where(success, self.success_count + 1, self.success_count)
        done = leap_terms.terminated(qpos, qvel, sensordata, idx)
        rows = Rows.of_mask(active)
        rows.put(self.shown.last_act, rows.take(self.last_act))
        self._observe_state(rows, "obs_noise")
        terms = leap_terms.reward_terms(idx, qpos, qvel, sensordata, v["actuator_force"], self._action,
                                        self.last_act, self.last_last_act, done, error)
        reward, weighted = leap_terms.reward(cfg, terms, success)
        self._advance_goal(rows, success)
        mask = active[:, None]
        self.last_last_act[...] = xp.where(mask, self.last_act, self.last_last_act)
        self.last_act[...] = xp.where(mask, self._action, self.last_act)
        self.perturbations.advance(active)
        info = {"reward_terms": weighted, "success": success, "orientation_error": error,
                "success_count": self.success_count + 0, "steps_since_last_success": self.steps_since_last_success + 0}
        return xp.astype(reward, xp.float64), done, xp.zeros_like(done), info

    def _advance_goal(self, rows: Rows, success: Any) -> None:
        """Playground's goal spin: redraw w on success, else decay it; turn the goal by it."""
        xp, cfg = self.xp, self.cfg
        if not rows.any():
            return
        draw = self.zeros((3,), self.goal_spin.dtype)
        rows.put(draw, xp.astype(self.rng.uniform(rows, "goal/spin", -cfg.goal_spin_jitter, cfg.goal_spin_jitter,
                                                  (3,)), draw.dtype))
        spin = xp.where(success[:, None], cfg.goal_spin_base + draw, cfg.goal_spin_decay * self.goal_spin)
        rows.put(self.goal_spin, rows.take(spin))
        goal = self._views["mocap_quat"][:, self.indices.goal_mocap]
        turned = leap_terms.spin_goal(rows.take(goal), rows.take(self.goal_spin),
                                      cfg.goal_spin_dt_factor * self.control_dt)
        rows.put(goal, turned)

    def _observe_state(self, rows: Rows, stream: str) -> None:
        """Draw this observation's noise for `rows` and push their error histories (Playground's
        ``_get_obs`` up to the state it stores in ``info``)."""
        if not rows.any():
            return
        xp, idx, cfg, shown = self.xp, self.indices, self.cfg, self.shown
        level, scales, f = cfg.noise_level, cfg.noise_scales, self.last_act.dtype
        sensordata = rows.take(self._views["sensordata"])
        joint = rows.take(self.backend.qpos)[:, :NUM_JOINTS]
        pos, quat = idx.read(sensordata, "cube_position"), idx.read(sensordata, "cube_orientation")
        if level > 0:
            joint = joint + xp.astype(self.rng.uniform(rows, f"{stream}/joint_pos", -1.0, 1.0, (NUM_JOINTS,)),
                                      f) * (level * scales.joint_pos)
            quat = normalize(quat + xp.astype(self.rng.normal(rows, f"{stream}/cube_ori", (4,)), f)
                             * (level * scales.cube_ori))
            pos = pos + xp.astype(self.rng.uniform(rows, f"{stream}/cube_pos", -1.0, 1.0, (3,)), f) * (
                level * scales.cube_pos)
        if level > 0 and cfg.random_ori_injection_prob > 0:
            hit = self.rng.uniform(rows, f"{stream}/inject", 0.0, 1.0) < cfg.random_ori_injection_prob
            m = xp.astype(hit, f)[:, None] * level
            rand_pos = xp.astype(self.rng.uniform(rows, f"{stream}/inject_pos", -INJECT_POS, INJECT_POS, (3,)), f)
            rand_quat = xp.astype(self.rng.quaternion(rows, f"{stream}/inject_quat"), f)
            pos, quat = pos * (1 - m) + rand_pos * m, quat * (1 - m) + rand_quat * m
        goal = idx.read(sensordata, "cube_goal_orientation")
        newest = {
            "joint_history": joint - rows.take(self.backend.ctrl),
            "pos_history": idx.read(sensordata, "palm_position") - pos,
            "ori_history": ori_entries(quat, goal),
        }
        rows.put(shown.joint_pos, joint)
        for name, value in newest.items():
            history = getattr(shown, name)
            old = rows.take(history)
            rows.put(history, xp.concat([value, old[:, :old.shape[1] - value.shape[1]]], axis=1))

    def _observe(self) -> Any:
        wrench = self.backend.xfrc_applied[:, self.indices.cube_body, :]
        return observe(self.backend.qpos, self.backend.qvel, self._views["sensordata"], wrench,
                       self.perturbations.direction, self.indices, self.shown, self.cfg.history_len, self._critic)

    def _reset_envs(self, rows: Rows) -> None:
        cfg, rng, idx, xp = self.cfg, self.rng, self.indices, self.xp
        f = idx.default_pose.dtype
        hand = xp.clip(idx.default_pose + cfg.hand_pose_std * xp.astype(rng.normal(rows, "reset/hand", (NUM_JOINTS,)),
                                                                        f), idx.lower, idx.upper)
        start = self.asarray(np.asarray(cfg.cube_start), f)
        cube_pos = start + xp.astype(rng.uniform(rows, "reset/cube_pos", -cfg.cube_start_jitter,
                                                 cfg.cube_start_jitter, (3,)), f)
        cube_quat = xp.astype(rng.quaternion(rows, "reset/cube_quat"), f)
        qpos = xp.concat([hand, cube_pos, cube_quat], axis=1)
        qvel = xp.zeros((rows.size, idx.nv), dtype=f, device=getattr(qpos, "device", None))
        nmocap = self._views["mocap_quat"].shape[1]
        mocap_pos = xp.zeros((rows.size, nmocap, 3), dtype=f, device=getattr(qpos, "device", None))
        mocap_pos[:, idx.goal_mocap] = idx.home_mpos
        mocap_quat = xp.zeros((rows.size, nmocap, 4), dtype=f, device=getattr(qpos, "device", None))
        mocap_quat[:, :, 0] = 1.0
        mocap_quat[:, idx.goal_mocap] = xp.astype(rng.quaternion(rows, "reset/goal"), f)
        self.backend.reset(rows.selector(), qpos, qvel, ctrl=hand, mocap_pos=mocap_pos, mocap_quat=mocap_quat)
        for state in (self.last_act, self.last_last_act, self.goal_spin, self.success_count,
                      self.steps_since_last_success, self.shown.joint_history, self.shown.pos_history,
                      self.shown.ori_history, self.shown.last_act):
            rows.put(state, 0)
        if self.cfg.pert_enable:
            self.perturbations.reset(rng, rows)
        self._observe_state(rows, "obs_noise/reset")

    def _reset_info(self, rows: Rows) -> dict[str, Any]:
        """At reset: each env's goal orientation (wxyz)."""
        return {"goal_quat": self._views["mocap_quat"][:, self.indices.goal_mocap] + 0}
