"""PandaPickCube: a Franka Panda picks up a cube and brings it to a target position, MuJoCo
Playground's task (``mujoco_playground/_src/manipulation/franka_emika_panda/pick.py``) as an mjvec
vector env; docs/panda_pick_cube.md states what equals Playground and what does not.

Per control step (`ctrl_dt`, `substeps` physics steps of `sim_dt`), in Playground's order:

1. The 8 position targets move by action_scale x action from where they were, clipped to the
   actuators' ctrlrange; the physics steps.
2. Reward: Playground's 4 terms (`terms.REWARD_TERMS`), weighted, summed, clipped to [-1e4, 1e4];
   the reach flag (the gripper came within reach_distance of the box this episode) updates first,
   and gates box_target. ``info["reward_terms"]`` holds each weighted term.
3. Termination: the box out of the workspace (or below the floor), or a NaN state.

Episodes end on termination or after `episode_length` steps (truncated, by the base's counter). A
reset starts from the "home" keyframe (its joint angles and position targets) with the box moved
in x and y and a new target position (the mocap body "mocap_target" is moved there too, for
rendering), from the streams ``reset/box_xy`` and ``reset/target``.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import VectorEnv

from mjvec.contract import layout_size
from mjvec.envs.base import MjVecEnv
from mjvec.envs.memory import MemoryNeeds
from mjvec.errors import ConfigError
from mjvec.rotations import quat_from_axis_angle
from mjvec.tasks.panda_pick_cube import terms as panda_terms
from mjvec.tasks.panda_pick_cube.config import PandaPickCubeConfig
from mjvec.tasks.panda_pick_cube.indices import NUM_ACTUATORS, build_indices
from mjvec.xp import Rows
from mjvec.xp import copy_array as _copy

__all__ = ["BOUND_FIELDS", "PandaPickCubeEnv"]

BOUND_FIELDS = ("xpos", "xmat", "site_xpos", "site_xmat", "sensordata")


class PandaPickCubeEnv(MjVecEnv, VectorEnv):
    """The Panda pick-cube task over any backend (see the module docstring).

    backend: a `Backend` over `mjvec.tasks.panda_pick_cube.scene.scene_spec(config)`.
    config: the task constants (None: Playground's). Observation: Box(66) (`terms.POLICY_LAYOUT`,
    Playground's ``state``; Playground has no privileged state for this task). Remaining keyword
    arguments go to `MjVecEnv`.

    Records (live, the state's namespace): `indices` (`PandaIndices`), `target_pos` (N, 3) the
    episode's target position, `target_quat` (N, 4) its orientation (wxyz) and `target_mat` (N, 6)
    its rotation matrix's first two rows, `reached` (N,) bool the episode's reach flag.

    info (every step, (N, ...) arrays): reward_terms (weighted terms), reached_box (the reach flag
    after this step), out_of_bounds.
    """

    policy_layout = panda_terms.POLICY_LAYOUT

    def __init__(self, backend: Any, *, config: PandaPickCubeConfig | None = None, **base_kwargs: Any) -> None:
        cfg = PandaPickCubeConfig() if config is None else config
        if not isinstance(cfg, PandaPickCubeConfig):
            raise ConfigError(f"config must be a PandaPickCubeConfig, got {type(cfg).__name__}")
        self.cfg = cfg
        super().__init__(
            backend,
            single_observation_space=panda_terms.observation_space(),
            single_action_space=gym.spaces.Box(-1.0, 1.0, (NUM_ACTUATORS,), np.float32),
            frame_skip=cfg.substeps,
            max_episode_steps=cfg.episode_length,
            **base_kwargs,
        )
        f = backend.qpos.dtype
        self.indices = build_indices(backend.model, cfg, self.asarray, f)
        self._views = {name: backend.bind(name) for name in BOUND_FIELDS}
        self.target_pos = self.zeros((3,), f)
        self.target_quat = self.zeros((4,), f)
        self.target_quat[:, 0] = 1.0
        self.target_mat = panda_terms.target_rows(self.target_quat)
        self.reached = self.zeros((), self.xp.bool)

    @classmethod
    def memory_needs(cls, options: Any) -> MemoryNeeds:
        """What one env holds (`MjVecEnv.memory_needs`): the bound MjData fields, and about 20 values
        of task state and infos plus four observation-sized temporaries, float64."""
        return MemoryNeeds(BOUND_FIELDS, 8 * (20 + 4 * layout_size(panda_terms.POLICY_LAYOUT)))

    # ---- the MjVecEnv phases ---------------------------------------------------------------
    def _apply_action(self, actions: Any) -> None:
        xp, idx = self.xp, self.indices
        ctrl = self.backend.ctrl + self.cfg.action_scale * xp.astype(actions, self.target_pos.dtype)
        self.backend.ctrl[...] = xp.minimum(xp.maximum(ctrl, idx.ctrl_low), idx.ctrl_high)

    def _evaluate(self, active: Any) -> tuple[Any, Any, Any, dict[str, Any]]:
        xp, v = self.xp, self._views
        qpos, qvel = self.backend.qpos, self.backend.qvel
        terms, reached = panda_terms.reward_terms(self.cfg, self.indices, qpos, v["xpos"], v["xmat"], v["site_xpos"],
                                                  v["sensordata"], self.target_pos, self.target_mat, self.reached)
        reward, weighted = panda_terms.reward(self.cfg, terms)
        outside = panda_terms.out_of_bounds(self.cfg, self.indices, v["xpos"])
        done = outside | xp.any(xp.isnan(qpos), axis=1) | xp.any(xp.isnan(qvel), axis=1)
        self.reached[...] = xp.where(active, reached, self.reached)
        info = {"reward_terms": weighted, "reached_box": _copy(self.reached), "out_of_bounds": outside}
        return xp.astype(reward, xp.float64), done, xp.zeros_like(done), info

    def _observe(self) -> Any:
        v = self._views
        return panda_terms.observe(self.backend.qpos, self.backend.qvel, self.backend.ctrl, v["xpos"], v["xmat"],
                                   v["site_xpos"], v["site_xmat"], self.target_pos, self.target_mat, self.indices)

    def _reset_envs(self, rows: Rows) -> None:
        cfg, rng, idx, xp = self.cfg, self.rng, self.indices, self.xp
        f, device = idx.home_qpos.dtype, getattr(idx.home_qpos, "device", None)
        qpos = xp.zeros((rows.size, idx.nq), dtype=f, device=device) + idx.home_qpos
        box_xy = rng.uniform(rows, "reset/box_xy", -cfg.box_xy_range, cfg.box_xy_range, (2,))
        qpos[:, idx.box_qpos:idx.box_qpos + 2] += xp.astype(box_xy, f)
        (z_low, z_high), xy = cfg.target_z_range, cfg.target_xy_range
        target = idx.box_home + xp.astype(rng.uniform(rows, "reset/target", [-xy, -xy, z_low], [xy, xy, z_high],
                                                      (3,)), f)
        qvel = xp.zeros((rows.size, idx.nv), dtype=f, device=device)
        ctrl = xp.zeros((rows.size, NUM_ACTUATORS), dtype=f, device=device) + idx.home_ctrl
        mocap_pos = xp.zeros((rows.size, idx.nmocap, 3), dtype=f, device=device)
        mocap_pos[:, idx.target_mocap] = target
        mocap_quat = xp.zeros((rows.size, idx.nmocap, 4), dtype=f, device=device)
        mocap_quat[:, :, 0] = 1.0
        if cfg.sample_orientation:
            mocap_quat[:, idx.target_mocap] = xp.astype(self._target_turn(rows), f)
        self.backend.reset(rows.selector(), qpos, qvel, ctrl=ctrl, mocap_pos=mocap_pos, mocap_quat=mocap_quat)
        rows.put(self.target_pos, target)
        rows.put(self.target_quat, mocap_quat[:, idx.target_mocap])
        self.target_mat[...] = panda_terms.target_rows(self.target_quat)
        rows.put(self.reached, False)

    def _target_turn(self, rows: Rows) -> Any:
        """(K, 4) wxyz: a turn by U(0, max_target_angle) about a uniform [-1, 1]^3 direction,
        normalised (Playground's PandaPickCubeOrientation)."""
        xp = self.xp
        axis = self.rng.uniform(rows, "reset/target_axis", -1.0, 1.0, (3,))
        axis = axis / xp.linalg.vector_norm(axis, axis=-1, keepdims=True)
        angle = self.rng.uniform(rows, "reset/target_angle", 0.0, self.cfg.max_target_angle)
        return quat_from_axis_angle(axis, angle)

    def _reset_info(self, rows: Rows) -> dict[str, Any]:
        """At reset: each env's target position and orientation (wxyz)."""
        return {"target_pos": _copy(self.target_pos), "target_quat": _copy(self.target_quat)}
