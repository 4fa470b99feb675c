"""MjVecEnv hooks and resources on the toy task: lifecycle events, simulation errors, rendering,
close, and the single-env adapter.

Oracles: a run without the fault, plain mujoco rendering of the env's own variant, the vector env
itself for the single-env adapter, and gymnasium's own env checker.
"""

from __future__ import annotations

import logging

import gymnasium as gym
import mujoco
import numpy as np
import pytest

from mjvec.envs.base import ResetNeededError
from mjvec.envs.single import SingleEnv, unbatch_info
from mjvec.errors import ClosedError, ConfigError
from tests.toy_env import ToyPendulumEnv, inject_fault, policy, variant_model


@pytest.fixture
def env():
    e = ToyPendulumEnv(4)
    yield e
    e.close()


# ---- lifecycle ---------------------------------------------------------------------------------
def test_lifecycle_events_and_order():
    env = ToyPendulumEnv(4, max_steps=4)
    calls = []

    def on_reset(rows):
        # Fired BEFORE the state reset: the env still has its step counter from the episode.
        ids = rows.ids
        calls.append(("reset", ids.tolist(), env.backend.qpos[ids, 0].copy(), env.steps[ids].copy()))

    env.lifecycle.subscribe("startup", lambda: calls.append(("startup", env.steps.copy())))
    env.lifecycle.subscribe("reset", on_reset)
    env.lifecycle.subscribe("interval", lambda dt: calls.append(("interval", dt)))
    allowed_events = r"unknown lifecycle event 'tick'; allowed events are \{interval, reset, startup\}"
    with pytest.raises(ConfigError, match=allowed_events):
        env.lifecycle.subscribe("tick", print)
    env.reset(seed=0)
    assert calls[0][0] == "startup" and calls[1][0] == "reset" and calls[1][1] == [0, 1, 2, 3]
    with pytest.raises(ConfigError, match="'startup' event already fired"):
        env.lifecycle.subscribe("startup", print)
    env.reset(seed=1)
    assert [c[0] for c in calls].count("startup") == 1
    calls.clear()
    for t in range(4):
        qpos_before = env.backend.qpos[:, 0].copy()
        env.step(policy(env.global_env_ids, t))
    assert [c for c in calls if c[0] == "interval"] == [("interval", env.control_dt)] * 4
    calls.clear()
    qpos_done = env.backend.qpos[:, 0].copy()
    env.step(policy(env.global_env_ids, 4))  # NEXT_STEP autoreset of all (truncated at 4 steps)
    _, ids, qpos_seen, steps_seen = next(c for c in calls if c[0] == "reset")
    assert ids == [0, 1, 2, 3] and (steps_seen == 4).all()
    # The hook sees the state before the reset: on the CPU backend (partial_step) the autoreset envs
    # were not stepped, so that is their terminal state.
    assert env.backend.capabilities.partial_step and np.array_equal(qpos_seen, qpos_done)
    assert not np.array_equal(qpos_seen, qpos_before)
    assert calls.index(("interval", env.control_dt)) < calls.index(next(c for c in calls if c[0] == "reset"))
    calls.clear()
    env.reset(options={"reset_mask": np.array([False, False, True, False])})
    assert [c[1] for c in calls] == [[2]]


def test_lifecycle_reset_fired_in_same_step_and_sim_error_paths():
    env = ToyPendulumEnv(4, autoreset_mode="same_step", max_steps=3)
    seen = []
    env.lifecycle.subscribe("reset", lambda rows: seen.append((rows.ids.tolist(),
                                                                env.mocap_pos[rows.ids, 0, 0].copy())))
    env.reset(seed=0)
    for t in range(3):
        target_before = env.mocap_pos[:, 0, 0].copy()
        env.step(policy(env.global_env_ids, t))
    assert seen[-1][0] == [0, 1, 2, 3]
    # Seen before the state reset: the old targets, which the reset then redraws.
    np.testing.assert_array_equal(seen[-1][1], target_before)
    assert not np.isin(env.mocap_pos[:, 0, 0], target_before).any()
    inject_fault(env, env_id=1, at_call=1)
    target_before = env.mocap_pos[1, 0, 0]
    env.step(policy(env.global_env_ids, 3))
    assert seen[-1][0] == [1] and seen[-1][1][0] == target_before != env.mocap_pos[1, 0, 0]


# ---- simulation errors ---------------------------------------------------------------------------
def test_sim_error_resets_flags_and_leaves_others_untouched(caplog):
    faulty, clean = ToyPendulumEnv(4, max_steps=50, threshold=10.0), ToyPendulumEnv(4, max_steps=50, threshold=10.0)
    faulty.reset(seed=9)
    clean.reset(seed=9)
    inject_fault(faulty, env_id=2, at_call=5)
    for t in range(12):
        a = policy(faulty.global_env_ids, t)
        with caplog.at_level(logging.WARNING, logger="mjvec.envs.base"):
            obs, r, te, tr, info = faulty.step(a)
        o2, r2, *_ = clean.step(a)
        assert "sim_error" in info and info["_sim_error"].all()
        if t == 4:
            assert info["sim_error"].tolist() == [False, False, True, False]
            assert tr[2] and not te[2] and r[2] == 0.0 and not info["_success"][2]
            assert "simulation error in envs [2]" in caplog.text
            # The oracle of the post-reset obs: the clean run resetting env 2 by mask now.
            o2, _ = clean.reset(options={"reset_mask": np.array([False, False, True, False])})
            np.testing.assert_array_equal(obs[2], o2[2])
        else:
            assert not info["sim_error"].any() and not tr.any()
        np.testing.assert_array_equal(obs, o2)
        others = np.array([True, True, t != 4, True])
        np.testing.assert_array_equal(r[others], r2[others])


def test_sim_error_during_autoreset_step_is_moot():
    env = ToyPendulumEnv(2, max_steps=2)
    env.reset(seed=0)
    env.step(policy(env.global_env_ids, 0))
    *_, trunc, _ = env.step(policy(env.global_env_ids, 1))
    assert trunc.all()
    inject_fault(env, env_id=1, at_call=1)
    _, reward, term, trunc, info = env.step(policy(env.global_env_ids, 2))
    assert not (term | trunc | info["sim_error"]).any() and (reward == 0).all()


def test_sim_error_same_step_final_obs_is_failed_state():
    env = ToyPendulumEnv(3, autoreset_mode="same_step", max_steps=50, threshold=10.0)
    env.reset(seed=0)
    inject_fault(env, env_id=0, at_call=2)
    env.step(policy(env.global_env_ids, 0))
    obs, _, _, tr, info = env.step(policy(env.global_env_ids, 1))
    assert tr.tolist() == [True, False, False] and info["_final_obs"].tolist() == [True, False, False]
    assert info["final_obs"][0, 0] == np.float32(info["angle"][0]) and (np.abs(obs[0, 0]) <= 0.2)


# ---- rendering -----------------------------------------------------------------------------------
def test_render_lazy_frames_per_variant_and_oracle():
    env = ToyPendulumEnv(4, render_mode="rgb_array", render_size=(64, 80))
    env.reset(seed=0)
    env.step(policy(env.global_env_ids, 0))
    frames = env.render()
    renderer = env._renderer
    assert len(frames) == 4 and renderer.num_renders == 0
    f0 = frames[0]
    assert f0.shape == (64, 80, 3) and f0.dtype == np.uint8 and renderer.num_renders == 1
    assert frames[0] is f0 and renderer.num_renders == 1
    assert frames[-1].shape == (64, 80, 3) and renderer.num_renders == 2
    assert len(frames[1:3]) == 2 and renderer.num_renders == 4
    with pytest.raises(IndexError, match="out of range"):
        frames[4]
    # Oracle: env 1's own variant compiled alone, with its qpos and mocap pose, default renderer.
    model = variant_model(int(env.backend.variant_of_env[1]))
    data = mujoco.MjData(model)
    data.qpos[:], data.mocap_pos[:] = env.backend.qpos[1], env.mocap_pos[1]
    mujoco.mj_forward(model, data)
    with mujoco.Renderer(model, 64, 80) as oracle:
        oracle.update_scene(data, camera="front")
        np.testing.assert_array_equal(frames[1], oracle.render())
    assert not np.array_equal(frames[1], frames[2])  # different variants (colors/lengths)
    # The sequence is a snapshot: stepping afterwards does not change frames not yet drawn.
    state = {k: v.copy() for k, v in frames._state.items()}
    env.step(policy(env.global_env_ids, 1))
    np.testing.assert_array_equal(frames._state["qpos"], state["qpos"])
    grid = env.render_grid([0, 1, 2])
    assert grid.shape == (128, 160, 3) and grid.dtype == np.uint8
    np.testing.assert_array_equal(grid[64:, 80:], 0)
    assert env.render_grid([3, 0, 1], ncols=3).shape == (64, 240, 3)
    with pytest.raises(ConfigError, match="render_grid env_ids"):
        env.render_grid([7])


def test_render_without_render_mode_warns_and_returns_none_but_render_grid_raises(env):
    """Gymnasium's convention for render() (tests/test_sync_vector_contract.py compares it with
    Gymnasium's own env); a grid is an explicit request for pixels, so it still raises."""
    env.reset(seed=0)
    with pytest.warns(UserWarning, match="without specifying any render mode"):
        assert env.render() is None
    with pytest.raises(ConfigError, match="render_mode is None; construct the env with render_mode='rgb_array'"):
        env.render_grid([0])


# ---- close -----------------------------------------------------------------------------------------
def test_close_is_idempotent_and_blocks_use():
    env = ToyPendulumEnv(2, render_mode="rgb_array", render_size=(32, 32))
    env.reset(seed=0)
    frames = env.render()
    frames[0]
    env.close()
    env.close()
    assert env.closed
    for call in (lambda: env.reset(), lambda: env.step(np.zeros((2, 1))), env.render, lambda: frames[1]):
        with pytest.raises(ClosedError, match="closed"):
            call()


def test_lifecycle_unsubscribe_and_bad_callback(env):
    calls = []
    unsubscribe = env.lifecycle.subscribe("interval", calls.append)
    env.reset(seed=0)
    env.step(policy(env.global_env_ids, 0))
    unsubscribe()
    env.step(policy(env.global_env_ids, 1))
    assert calls == [env.control_dt] and env.lifecycle.num_subscribers("interval") == 0
    with pytest.raises(ConfigError, match="callback for 'reset' must be callable"):
        env.lifecycle.subscribe("reset", 3)


# ---- task hook contract checks -------------------------------------------------------------------
class _BadInfo(ToyPendulumEnv):
    def _evaluate(self, active):
        reward, term, trunc, info = super()._evaluate(active)
        return reward, term, trunc, {**info, "episode": info["angle"]}


class _BadObs(ToyPendulumEnv):
    def _observe(self):
        return super()._observe()[:, :2]


def test_task_contract_violations_are_named():
    env = _BadInfo(2)
    env.reset(seed=0)
    with pytest.raises(ConfigError, match=r"_BadInfo\._evaluate info key 'episode' is reserved"):
        env.step(policy(env.global_env_ids, 0))
    with pytest.raises(ConfigError, match=r"_BadObs\._observe returned obs with shape \(2, 2\).*expects \(2, 3\)"):
        _BadObs(2).reset(seed=0)


# ---- single-env adapter ----------------------------------------------------------------------------
def _single(**kwargs) -> SingleEnv:
    kwargs.setdefault("autoreset_mode", "disabled")
    return SingleEnv(ToyPendulumEnv(1, **kwargs))


@pytest.mark.filterwarnings("ignore:.*Box observation space m")
def test_single_env_matches_vector_env_row_and_passes_env_checker():
    from gymnasium.utils.env_checker import check_env

    single = _single(render_mode="rgb_array", render_size=(32, 40), max_steps=5)
    vec = ToyPendulumEnv(3, render_mode="rgb_array", render_size=(32, 40), max_steps=5)
    assert isinstance(single, gym.Env) and single.observation_space == vec.single_observation_space
    obs, info = single.reset(seed=6)
    vobs, _ = vec.reset(seed=6)
    np.testing.assert_array_equal(obs, vobs[0])
    assert info == {}
    np.testing.assert_array_equal(single.render(), vec.render()[0])
    for t in range(5):
        action = policy(vec.global_env_ids, t)
        obs, reward, term, trunc, info = single.step(action[0])
        vobs, vreward, vterm, vtrunc, vinfo = vec.step(action)
        np.testing.assert_array_equal(obs, vobs[0])
        assert (reward, term, trunc) == (vreward[0], vterm[0], vtrunc[0]) and isinstance(reward, float)
        assert info["success"] == vinfo["success"][0] and not info["sim_error"]
    assert trunc
    with pytest.raises(ResetNeededError, match="DISABLED"):
        single.step(action[0])
    single.reset()
    single.step(action[0])
    check_env(_single(), skip_render_check=True)
    single.close()
    with pytest.raises(ClosedError):
        single.reset()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"num_envs": 2}, r"num_envs=2 \(needs 1\)"), ({"autoreset_mode": "next_step"}, r"needs 'disabled'")],
)
def test_single_env_config_errors(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        SingleEnv(ToyPendulumEnv(kwargs.get("num_envs", 1), autoreset_mode=kwargs.get("autoreset_mode", "disabled")))


def test_unbatch_info_respects_masks():
    info = {"a": np.array([1, 2]), "_a": np.array([False, True]), "b": {"c": np.array([3, 4])},
            "_b": np.array([True, True])}
    assert unbatch_info(info, 0) == {"b": {"c": 3}}
    assert unbatch_info(info, 1) == {"a": 2, "b": {"c": 4}}
