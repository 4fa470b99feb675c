"""SimToolReal-v0 rules checked against the authors' env.py, where the port had drifted from it.

- The first goal's floor is, by default, the source's ``_clip_goal_z``: spawn z - lift offset +
  lift threshold (liftingBonusThreshold), so it follows `lift_threshold` and `lift_offset`.
- With the table's height randomized (`mjvec.randomization.table_height`), the tool spawns over the
  table where it is, and the lift reward, `lifted` and the first goal's floor are measured from
  that spawn height, as the source's object_init_state z is set from each reset's table height.
- A NEXT_STEP autoreset step draws no random push for the envs it resets: they are not pushed and
  their push streams stay where they were.

Oracles: the source's formulas on the env's own state (table heights read from the backend, the
tool's height after the step), and the env's random streams replayed with `mjvec.rng.EnvRandom`.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import mjvec
from mjvec.randomization import RandomPushes, table_height
from mjvec.rng import EnvRandom
from mjvec.tasks.simtoolreal import scene as S
from mjvec.tasks.simtoolreal.config import SimToolRealConfig
from mjvec.xp import Rows

SMALL = {"num_tools": 3, "backend": "cpu", "num_threads": 1}


def test_the_first_goal_floor_follows_the_lift_rule_by_default():
    cfg = SimToolRealConfig(lift_threshold=0.25)
    env = gym.make_vec(mjvec.ENV_ID, num_envs=64, randomization=None, config=cfg, **SMALL)
    env.reset(seed=2)
    z = np.asarray(env.unwrapped.goal_pos)[:, 2]
    floor = 0.63 - 0.05 + 0.25  # the source: object_init_state z - 0.05 + liftingBonusThreshold
    assert (z >= floor - 1e-12).all() and np.isclose(z, floor).sum() >= 10  # (0.83 - 0.6) / 0.35 of them
    env.close()
    assert cfg.goal_min_height_above_spawn is None and cfg.goal_floor_above_spawn == pytest.approx(0.20)
    explicit = SimToolRealConfig(lift_threshold=0.25, goal_min_height_above_spawn=0.1)
    assert explicit.goal_floor_above_spawn == 0.1


def test_a_randomized_table_height_moves_the_spawn_the_lift_reference_and_the_goal_floor():
    n = 48
    env = gym.make_vec(mjvec.ENV_ID, num_envs=n, randomization=[table_height(0.03, 0.06)], **SMALL)
    task = env.unwrapped
    env.reset(seed=5)
    table_z = task.backend.field_values("geom_pos")[:, task.backend.model.geom(S.TABLE_GEOM_NAME).id, 2]
    assert (table_z >= S.TABLE_POS[2] + 0.03 - 1e-12).all() and np.ptp(table_z) > 0.01  # each env its own table
    spawn_z = table_z + 0.25  # the source: tableResetZ (this reset's draw) + tableObjectZOffset
    rng = EnvRandom(task.global_env_ids, 5)
    noise = np.array(task.cfg.spawn_pos_noise)
    draw = rng.uniform(np.arange(n), "reset/object_pos", -noise, noise, (3,))
    np.testing.assert_allclose(task.true_object_pose()[0], draw + np.stack([0 * spawn_z, 0 * spawn_z, spawn_z], 1),
                               atol=1e-12)
    goal_z = np.asarray(task.goal_pos)[:, 2]
    floor = spawn_z - 0.05 + 0.15
    assert (goal_z >= floor - 1e-12).all() and np.isclose(goal_z, floor).sum() >= 8
    # The lift reward of a step, from the tool's height after it and the env's own spawn height.
    _, _, _, _, info = env.step(np.zeros((n, 29), np.float32))
    z = task.true_object_pose()[0][:, 2]
    want = 20.0 * np.clip(z - spawn_z + 0.05, 0.0, 0.5)
    np.testing.assert_allclose(info["reward_terms"]["lift"], want, atol=1e-9)
    assert np.abs(want - 20.0 * np.clip(z - 0.63 + 0.05, 0.0, 0.5)).min() > 0.5  # from 0.63 it would differ
    env.close()


def test_an_autoreset_step_draws_no_push_for_the_envs_it_resets():
    """Env 1 truncates in step 1, so step 2 autoresets it (NEXT_STEP) instead of stepping it: it is
    not pushed in step 2, and its push-draw streams advanced once (step 1), the others' twice."""
    n, seed = 4, 7
    env = RandomPushes(gym.make_vec(mjvec.ENV_ID, num_envs=n, randomization=None, **SMALL), prob_range=(0.9, 0.9))
    task = env.unwrapped
    env.reset(seed=seed)
    action = np.zeros((n, 29), np.float32)
    task.lifted[:] = True  # pushes are allowed where the tool is lifted
    task.episode_steps[1] = task.max_episode_steps - 1  # env 1's episode ends with step 1
    _, _, _, truncated, _ = env.step(action)
    assert truncated.tolist() == [False, True, False, False]
    env.step(action)
    assert not env.force_pushed[1] and not env.torque_pushed[1] and not env.pushed[1]
    oracle = EnvRandom(task.global_env_ids, seed)
    for kind in ("force", "torque"):
        stream = f"dr/push_{kind}_draw"
        drawn = {1: 1, 0: 2, 2: 2, 3: 2}  # draws each env's stream gave so far
        for env_id, count in drawn.items():
            for _ in range(count + 1):  # the oracle's draw after `count` of them
                want = oracle.uniform(Rows.of_ids([env_id], n), stream, 0.0, 1.0)
            got = task.rng.uniform(Rows.of_ids([env_id], n), stream, 0.0, 1.0)
            assert got.tolist() == want.tolist(), (kind, env_id)
    np.testing.assert_array_equal(task.autoresetting(), [False, True, False, False])
    env.close()


def _corners(pos: np.ndarray, quat: np.ndarray, dims: np.ndarray) -> np.ndarray:
    """(N, 4, 3) the grasp-box keypoints (the source's 4 corners, half-extents 1.5 x dims / 2)."""
    import mujoco

    signs = np.array([[1, 1, 1], [1, 1, -1], [-1, -1, 1], [-1, -1, -1]], float)
    out = np.empty((pos.shape[0], 4, 3))
    for i in range(pos.shape[0]):
        rot = np.empty(9)
        mujoco.mju_quat2Mat(rot, quat[i])
        out[i] = pos[i] + (signs * 0.75 * dims[i]) @ rot.reshape(3, 3).T
    return out


def test_the_observation_of_a_success_step_already_shows_the_new_goal():
    """The documented deviation (docs/simtoolreal.md): the goal a success draws is in the
    observation of that same step (the source's appears one observation later)."""
    from mjvec.tasks.simtoolreal.terms import POLICY_LAYOUT, layout_slices

    cfg = SimToolRealConfig(tolerance_start=5.0, success_steps=1)  # every env succeeds at its first step
    env = gym.make_vec(mjvec.ENV_ID, num_envs=4, randomization=None, config=cfg, **SMALL)
    task = env.unwrapped
    env.reset(seed=3)
    old_goal = (np.array(task.goal_pos), np.array(task.goal_quat))
    obs, _, _, _, info = env.step(np.zeros((4, 29), np.float32))
    assert info["success"].all()
    new_goal = (np.asarray(task.goal_pos), np.asarray(task.goal_quat))
    assert not np.allclose(new_goal[0], old_goal[0])
    pos, quat = task.true_object_pose()
    dims = np.asarray(task.handle_dims)
    got = obs[:, layout_slices(POLICY_LAYOUT)["keypoints_rel_goal"]].reshape(4, 4, 3)
    want = _corners(pos, quat, dims) - _corners(*new_goal, dims)
    np.testing.assert_allclose(got, want, atol=1e-5)  # float32 observation
    assert np.abs(got - (_corners(pos, quat, dims) - _corners(*old_goal, dims))).max() > 0.01
    env.close()
