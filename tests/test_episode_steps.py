"""`MjVecEnv.episode_steps`: the public per-env episode-step counter, and the time limit it drives.

Oracles: the step index itself (the counter counts evaluated steps), and for written values the
arithmetic they imply (an env written v reaches a limit of L after L - v more steps).
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import mjvec  # noqa: F401
from mjvec.errors import ConfigError

CUBE = {"num_cubes": 2, "randomization": None}
TOOLS = {"num_tools": 3, "randomization": None}


def _hold(env: gym.vector.VectorEnv) -> np.ndarray:
    """CubeRotate's zero action holds the rest pose, whose fingertips hold the cube: no drops."""
    return np.zeros(env.action_space.shape, np.float32)


def test_counter_counts_evaluated_steps_and_truncates_at_the_limit():
    env = gym.make_vec("CubeRotate-v0", num_envs=3, max_episode_steps=5, **CUBE)
    base = env.unwrapped
    env.reset(seed=0)
    assert base.max_episode_steps == 5 and base.episode_steps is base.progress
    np.testing.assert_array_equal(base.episode_steps, 0)
    for step in range(1, 6):
        _, _, term, trunc, _ = env.step(_hold(env))
        assert not term.any()
        np.testing.assert_array_equal(base.episode_steps, step)
        assert trunc.all() == (step == 5) and trunc.any() == (step == 5)
    env.step(_hold(env))  # NEXT_STEP autoreset: counts for nothing, the reset sets 0
    np.testing.assert_array_equal(base.episode_steps, 0)
    env.close()


@pytest.mark.parametrize("how", ["assign", "in_place"])
def test_written_counter_values_move_each_envs_time_limit(how):
    limit = 8
    env = gym.make_vec("CubeRotate-v0", num_envs=5, max_episode_steps=limit, autoreset_mode="disabled", **CUBE)
    base = env.unwrapped
    env.reset(seed=1)
    written = np.array([0, 3, 7, 8, 20], np.int64)
    if how == "assign":
        base.episode_steps = written
    else:
        base.episode_steps[:] = written
    first_truncation = np.full(5, -1)
    for step in range(1, limit + 1):
        _, _, term, trunc, _ = env.step(_hold(env))
        assert not term.any()
        first_truncation[(first_truncation < 0) & trunc] = step
        if trunc.any():
            env.reset(options={"reset_mask": trunc})
    # v < limit: limit - v more steps; v >= limit: at the next step.
    np.testing.assert_array_equal(first_truncation, np.maximum(limit - written, 1))
    env.close()


def test_warp_device_counter_is_a_live_tensor_whose_writes_are_honoured():
    torch = pytest.importorskip("torch")
    pytest.importorskip("mujoco_warp")
    env = gym.make_vec("SimToolReal-v0", num_envs=3, backend="warp", device="cpu", max_episode_steps=6,
                       array_backend="torch", autoreset_mode="same_step", **TOOLS)
    base = env.unwrapped
    env.reset(seed=2)
    assert isinstance(base.episode_steps, torch.Tensor) and base.episode_steps.dtype == torch.int64
    base.episode_steps = torch.tensor([0, 2, 5])
    actions = torch.zeros(env.action_space.shape)
    truncated = []
    for _ in range(6):
        _, _, term, trunc, _ = env.step(actions)
        assert not term.any()
        truncated.append(trunc.clone())
    first = torch.stack(truncated).to(torch.int64).argmax(0) + 1
    assert first.tolist() == [6, 4, 1]
    env.close()


def test_simtoolreal_success_restarts_the_count_so_the_episode_outlasts_the_limit(monkeypatch):
    """The source zeroes its progress counter on every success: an episode with a success at step
    10 and a limit of 12 is truncated at step 10 + 12 = 22."""
    env = gym.make_vec("SimToolReal-v0", num_envs=2, max_episode_steps=12, autoreset_mode="disabled", **TOOLS)
    task = env.unwrapped
    original = task._evaluate
    state = {"step": 0}

    def goal_at_object_until_first_success(active):
        state["step"] += 1
        if state["step"] <= 10:  # the goal sits on the object: 10 near-goal steps make a success
            pos, quat = task.true_object_pose()
            task._set_goal_pose(np.arange(2), pos, quat)
        return original(active)

    monkeypatch.setattr(task, "_evaluate", goal_at_object_until_first_success)
    env.reset(seed=1)
    for step in range(1, 23):
        _, _, term, trunc, info = env.step(np.zeros((2, 29)))
        assert not term.any()
        assert info["success"].all() == (step == 10)
        assert trunc.all() == (step == 22) and trunc.any() == (step == 22), step
        np.testing.assert_array_equal(task.episode_steps, step if step < 10 else step - 10)
    env.close()


@pytest.mark.parametrize("values, match", [
    (np.array([1, 2]), r"episode_steps must be 3 ints >= 0 \(one per env\), got shape \(2,\)"),
    (np.array([1.0, 2.0, 3.0]), r"got shape \(3,\) dtype float64"),
    (np.array([1, -1, 0]), r"with negative values"),
])
def test_bad_counter_writes_are_refused_and_change_nothing(values, match):
    env = gym.make_vec("CubeRotate-v0", num_envs=3, **CUBE)
    env.reset(seed=0)
    env.step(_hold(env))
    with pytest.raises(ConfigError, match=match):
        env.unwrapped.episode_steps = values
    np.testing.assert_array_equal(env.unwrapped.episode_steps, 1)
    env.close()


def test_bad_max_episode_steps_is_refused_by_the_base():
    from tests.toy_env import ToyPendulumEnv

    with pytest.raises(ConfigError, match=r"max_episode_steps must be an int >= 1 or None, got 0"):
        ToyPendulumEnv(2, max_episode_steps=0)
