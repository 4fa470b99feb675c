"""One step's observation, reward terms and termination of PandaPickCube, in MuJoCo Playground's
order and with its inputs (``PandaPickCube._get_obs``, ``_get_reward``, ``step``).

Sources (after a step: MuJoCo's outputs of the last substep's start, as Playground's, which reads
``data`` right after ``mjx.step``): qpos, qvel, ctrl (the position targets), the gripper site's
position and frame, the box body's position and frame, the floor contact sensors; the target
position is the task's own state (Playground's ``info["target_pos"]``), its orientation the
mocap target's quaternion (the identity unless the config samples one), as the first two rows of
its rotation matrix (`target_rows`).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from mjvec import portable
from mjvec.contract import layout_size
from mjvec.rotations import quat_to_mat_mj
from mjvec.tasks.panda_pick_cube.config import PandaPickCubeConfig
from mjvec.tasks.panda_pick_cube.indices import NUM_ACTUATORS, PandaIndices
from mjvec.xp import namespace_of

__all__ = ["MAX_REWARD", "POLICY_LAYOUT", "REWARD_TERMS", "observation_space", "observe", "out_of_bounds",
           "reward", "reward_terms", "target_rows"]

Array = Any
REWARD_TERMS = ("gripper_box", "box_target", "no_floor_collision", "robot_target_qpos")
MAX_REWARD = 10000.0  # Playground clips each step's reward (the weighted sum) to [-1e4, 1e4]
NQ, NV = 16, 15  # the arm's 9 joints and the box's free joint
POLICY_LAYOUT: tuple[tuple[str, int], ...] = (
    ("qpos", NQ),
    ("qvel", NV),
    ("gripper_pos", 3),
    ("gripper_mat", 6),        # the gripper site's rotation matrix, rows 2 and 3
    ("box_mat", 6),            # the box's rotation matrix, rows 2 and 3
    ("gripper_to_box", 3),     # box position - gripper position
    ("box_to_target", 3),      # target position - box position
    ("box_rot_err", 6),        # target matrix rows 1-2 - box matrix rows 1-2
    ("ctrl_err", NUM_ACTUATORS),  # position targets - the joint angles they drive
)


def _norm(x: Array) -> Array:
    xp = namespace_of(x)
    return xp.sqrt(xp.sum(x * x, axis=-1))


def target_rows(target_quat: Array) -> Array:
    """(N, 6): the first two rows of the target's rotation matrix, of its (N, 4) wxyz quaternion."""
    xp = namespace_of(target_quat)
    return xp.reshape(quat_to_mat_mj(target_quat), (target_quat.shape[0], 9))[:, :6]


def observe(qpos: Array, qvel: Array, ctrl: Array, xpos: Array, xmat: Array, site_xpos: Array, site_xmat: Array,
            target_pos: Array, target_mat: Array, idx: PandaIndices) -> Array:
    """(N, 66) float32: Playground's ``state`` (`POLICY_LAYOUT`); xmat / site_xmat are (N, n, 9),
    target_mat (N, 6) `target_rows`."""
    xp = namespace_of(qpos)
    gripper = site_xpos[:, idx.gripper_site]
    box_pos, box_mat = xpos[:, idx.box_body], xmat[:, idx.box_body]
    blocks = (qpos, qvel, gripper, site_xmat[:, idx.gripper_site, 3:], box_mat[:, 3:], box_pos - gripper,
              target_pos - box_pos, target_mat - box_mat[:, :6], ctrl - qpos[:, idx.actuated_qpos])
    return xp.concat([xp.astype(b, xp.float32) for b in blocks], axis=1)


def reward_terms(cfg: PandaPickCubeConfig, idx: PandaIndices, qpos: Array, xpos: Array, xmat: Array,
                 site_xpos: Array, sensordata: Array, target_pos: Array, target_mat: Array, reached: Array
                 ) -> tuple[dict[str, Array], Array]:
    """(each term's unweighted (N,) value, reached (N,) bool): `reached` is the episode's reach
    flag before this step, updated with this step's gripper-box distance before box_target reads
    it (as Playground's ``info["reached_box"]``)."""
    xp = namespace_of(qpos)
    box_pos, box_mat = xpos[:, idx.box_body], xmat[:, idx.box_body]
    pos_err = _norm(target_pos - box_pos)
    rot_err = _norm(target_mat - box_mat[:, :6])
    gripper_dist = _norm(box_pos - site_xpos[:, idx.gripper_site])
    reached = reached | (gripper_dist < cfg.reach_distance)
    floor = xp.any(sensordata[:, idx.floor_adr] > 0, axis=1)
    gripper_box, box_target, robot_target = portable.each(
        portable.tanh, 5.0 * gripper_dist, 5.0 * (0.9 * pos_err + 0.1 * rot_err),
        _norm(qpos[:, idx.arm_qpos] - idx.home_arm))
    terms = {
        "gripper_box": 1.0 - gripper_box,
        "box_target": (1.0 - box_target) * xp.astype(reached, qpos.dtype),
        "no_floor_collision": 1.0 - xp.astype(floor, qpos.dtype),
        "robot_target_qpos": 1.0 - robot_target,
    }
    return terms, reached


def reward(cfg: PandaPickCubeConfig, terms: dict[str, Array]) -> tuple[Array, dict[str, Array]]:
    """(reward (N,), weighted terms): clip(sum of weight x term, -1e4, 1e4), as Playground's."""
    scales = cfg.reward_scales.as_dict()
    weighted = {name: scales[name] * terms[name] for name in REWARD_TERMS}
    total = sum(weighted.values())
    return namespace_of(total).clip(total, -MAX_REWARD, MAX_REWARD), weighted


def out_of_bounds(cfg: PandaPickCubeConfig, idx: PandaIndices, xpos: Array) -> Array:
    """(N,) bool: the box left the workspace cube or fell below the floor (Playground's
    ``out_of_bounds``)."""
    xp = namespace_of(xpos)
    box_pos = xpos[:, idx.box_body]
    return xp.any(xp.abs(box_pos) > cfg.workspace_bound, axis=1) | (box_pos[:, 2] < 0.0)


def observation_space() -> gym.Space:
    """Box(66), unbounded, as Playground's."""
    return gym.spaces.Box(-np.inf, np.inf, (layout_size(POLICY_LAYOUT),), np.float32)
