"""The paper preset keeps the per-env stream promise, each against a run that differs only in what
must not matter: reset(seed) vs the first episode, a partial reset of another env, a refused step,
SAME_STEP's in-step reset vs a DISABLED run reset by hand (and SB3's terminal observation)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import mjvec
from mjvec.errors import ResetNeededError

# Short episodes so that autoresets (and their draws) happen inside every run.
SMALL = {"num_tools": 6, "num_threads": 1, "max_episode_steps": 12}


def make(num_envs: int = 4, **kw) -> gym.vector.VectorEnv:
    return gym.make_vec(mjvec.ENV_ID, num_envs=num_envs, **{**SMALL, **kw})


def actions(num_envs: int, t: int) -> np.ndarray:
    g = np.arange(num_envs)[:, None]
    return np.clip(0.8 * np.sin(0.17 * t + 0.3 * g + np.arange(29)[None, :]), -1.0, 1.0)


def rollout(env, steps: int, seed: int | None) -> dict[str, np.ndarray]:
    obs, _ = env.reset(seed=seed)
    out = {"obs": [obs], "reward": [], "term": [], "trunc": []}
    for t in range(steps):
        obs, reward, term, trunc, _ = env.step(actions(env.num_envs, t))
        for key, value in (("obs", obs), ("reward", reward), ("term", term), ("trunc", trunc)):
            out[key].append(value)
    return {k: np.stack(v) for k, v in out.items()}


def assert_runs_equal(a: dict[str, np.ndarray], b: dict[str, np.ndarray], rows=slice(None)) -> None:
    for key in a:
        np.testing.assert_array_equal(a[key][:, rows], b[key][:, rows], err_msg=key)


def test_reset_seed_repeats_the_first_episode_after_construction_exactly() -> None:
    env = make()
    first = rollout(env, 40, seed=7)
    assert first["trunc"].any(), "the run must include autoresets"
    second = rollout(env, 40, seed=7)
    third = rollout(env, 40, seed=7)
    assert_runs_equal(second, third)
    assert_runs_equal(first, second)
    env.close()


def test_partial_reset_of_one_env_leaves_the_others_bit_identical() -> None:
    plain, poked = make(), make()
    obs_a, _ = plain.reset(seed=3)
    obs_b, _ = poked.reset(seed=3)
    mask = np.array([True, False, False, False])
    for t in range(60):
        if t in (5, 23):
            reset_obs, _ = poked.reset(options={"reset_mask": mask})
            # The envs not reset return their previous observation rows unchanged.
            np.testing.assert_array_equal(reset_obs[1:], obs_b[1:])
        a = actions(4, t)
        obs_a, rew_a, term_a, trunc_a, _ = plain.step(a)
        obs_b, rew_b, term_b, trunc_b, _ = poked.step(a)
        np.testing.assert_array_equal(obs_a[1:], obs_b[1:], err_msg=f"step {t}")
        np.testing.assert_array_equal(rew_a[1:], rew_b[1:], err_msg=f"step {t}")
        np.testing.assert_array_equal(term_a[1:] | trunc_a[1:], term_b[1:] | trunc_b[1:])
    assert not np.array_equal(obs_a[0], obs_b[0])


def test_trajectories_do_not_depend_on_num_envs_with_partial_resets() -> None:
    small, large = make(4), make(8, num_threads=2)
    small.reset(seed=11)
    large.reset(seed=11)
    for t in range(40):
        if t == 9:
            large.reset(options={"reset_mask": np.arange(8) >= 4})
        a = actions(8, t)
        obs_s, rew_s, *_ = small.step(a[:4])
        obs_l, rew_l, *_ = large.step(a)
        np.testing.assert_array_equal(obs_s, obs_l[:4])
        np.testing.assert_array_equal(rew_s, rew_l[:4])


def test_refused_step_moves_no_queue_or_stream() -> None:
    tried, oracle = make(autoreset_mode="disabled"), make(autoreset_mode="disabled")
    tried.reset(seed=5)
    oracle.reset(seed=5)
    done = np.zeros(4, bool)
    t = 0
    while not done.any():
        a = actions(4, t)
        obs_a, _, term, trunc, _ = tried.step(a)
        obs_b, *_ = oracle.step(a)
        done = term | trunc
        t += 1
    for k in range(3):
        with pytest.raises(ResetNeededError, match="DISABLED"):
            tried.step(actions(4, 100 + k))
    obs_a, _ = tried.reset(options={"reset_mask": done})
    obs_b, _ = oracle.reset(options={"reset_mask": done})
    np.testing.assert_array_equal(obs_a, obs_b)
    for s in range(30):
        a = actions(4, t + s)
        obs_a, rew_a, term_a, trunc_a, _ = tried.step(a)
        obs_b, rew_b, term_b, trunc_b, _ = oracle.step(a)
        np.testing.assert_array_equal(obs_a, obs_b, err_msg=f"step {s} after the refused steps")
        np.testing.assert_array_equal(rew_a, rew_b)
        np.testing.assert_array_equal(term_a | trunc_a, term_b | trunc_b)
        done = term_a | trunc_a
        if done.any():
            tried.reset(options={"reset_mask": done})
            oracle.reset(options={"reset_mask": done})


def _same_step_vs_disabled(obs_mode: str, steps: int):
    """A SAME_STEP run and a DISABLED run reset by hand after every done step: per step, (same-step
    outputs, disabled outputs before the hand reset, disabled obs after it)."""
    same = make(autoreset_mode="same_step", obs_mode=obs_mode)
    disabled = make(autoreset_mode="disabled", obs_mode=obs_mode)
    obs_s, _ = same.reset(seed=2)
    obs_d, _ = disabled.reset(seed=2)
    yield None, (obs_s,), (obs_d,), obs_d
    for t in range(steps):
        a = actions(4, t)
        out_s = same.step(a)
        out_d = disabled.step(a)
        done = out_d[2] | out_d[3]
        after = disabled.reset(options={"reset_mask": done})[0] if done.any() else out_d[0]
        yield done, out_s, out_d, after


def _rows(obs, mask):
    return {k: v[mask] for k, v in obs.items()} if isinstance(obs, dict) else obs[mask]


def _equal(a, b, msg: str) -> None:
    if isinstance(a, dict):
        for k in a:
            np.testing.assert_array_equal(a[k], b[k], err_msg=f"{msg} [{k}]")
    else:
        np.testing.assert_array_equal(a, b, err_msg=msg)


@pytest.mark.parametrize("obs_mode", ["policy", "asymmetric"])
def test_same_step_final_obs_is_the_transformed_terminal_obs(obs_mode: str) -> None:
    """Oracle: a DISABLED run, reset by mask after each done step, sees at the done step exactly the
    observation the policy would have seen; SAME_STEP's final_obs must be it, and the whole SAME_STEP
    trajectory must equal the DISABLED one with its hand resets."""
    dones = 0
    for done, out_s, out_d, after in _same_step_vs_disabled(obs_mode, 30):
        if done is None:
            _equal(out_s[0], after, "reset obs")
            continue
        obs_s, rew_s, term_s, trunc_s, info_s = out_s
        _equal(obs_s, after, "obs")
        np.testing.assert_array_equal(rew_s, out_d[1])
        np.testing.assert_array_equal(term_s | trunc_s, done)
        if done.any():
            dones += int(done.sum())
            np.testing.assert_array_equal(info_s["_final_obs"], done)
            _equal(_rows(info_s["final_obs"], done), _rows(out_d[0], done), "final_obs")
    assert dones >= 4


def test_sb3_terminal_observation_is_what_the_policy_would_have_seen() -> None:
    pytest.importorskip("stable_baselines3")
    from mjvec.integrations.sb3 import SB3VecEnv

    venv = SB3VecEnv(make(autoreset_mode="same_step"))
    oracle = make(autoreset_mode="disabled")
    venv.seed(2)
    venv.reset()
    oracle.reset(seed=2)
    seen = 0
    for t in range(30):
        a = actions(4, t)
        venv.step_async(a)
        _, _, dones, infos = venv.step_wait()
        obs_d, _, term, trunc, _ = oracle.step(a)
        np.testing.assert_array_equal(dones, term | trunc)
        for i in np.flatnonzero(dones):
            np.testing.assert_array_equal(infos[i]["terminal_observation"], obs_d[i])
            seen += 1
        if dones.any():
            oracle.reset(options={"reset_mask": dones})
    assert seen >= 4
