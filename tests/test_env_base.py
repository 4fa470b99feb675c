"""MjVecEnv compliance tests on the toy pendulum task (tests/toy_env.py).

Oracles: plain mujoco stepping of the env's own variant, hand sums of rewards, a NEXT_STEP run as
the oracle of SAME_STEP, runs with other num_envs / threads / offsets, runs without a fault.
"""

from __future__ import annotations

import re

import gymnasium as gym
import mujoco
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from mjvec.envs.base import MjVecEnv, ResetNeededError
from mjvec.errors import ActionError, ActionTypeError, ConfigError
from tests.toy_env import FRAME_SKIP, TIMESTEP, ToyPendulumEnv, column, policy, rollout, variant_model


@pytest.fixture
def env():
    e = ToyPendulumEnv(4)
    yield e
    e.close()


# ---- construction, spaces, metadata --------------------------------------------------------
def test_spaces_and_metadata(env):
    assert isinstance(env, gym.vector.VectorEnv)
    assert env.observation_space == batch_space(env.single_observation_space, 4)
    assert env.action_space == batch_space(env.single_action_space, 4)
    assert env.metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP
    assert env.metadata["render_modes"] == ["rgb_array"]
    assert env.control_dt == pytest.approx(FRAME_SKIP * TIMESTEP)
    assert env.metadata["render_fps"] == pytest.approx(1.0 / (FRAME_SKIP * TIMESTEP))
    other = ToyPendulumEnv(2, autoreset_mode=AutoresetMode.SAME_STEP)
    assert other.metadata is not env.metadata and other.metadata["autoreset_mode"] is AutoresetMode.SAME_STEP
    np.testing.assert_array_equal(other.global_env_ids, [0, 1])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"autoreset_mode": "sometimes"}, r"autoreset_mode='sometimes'.*disabled, next_step, same_step"),
        ({"array_backend": "jax"}, r"array_backend='jax'.*\{numpy, torch\}"),
        ({"device": "cuda:0"}, r"device='cuda:0' needs array_backend='torch'"),
        ({"render_mode": "human"}, r"render_mode='human'.*rgb_array"),
        ({"render_mode": "rgb_array", "render_size": (0, 10)}, r"render_size must be a tuple"),
    ],
)
def test_constructor_errors(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        ToyPendulumEnv(2, **kwargs)


def test_frame_skip_and_space_errors():
    backend = ToyPendulumEnv(2).backend
    box = gym.spaces.Box(-1, 1, (1,), np.float32)
    with pytest.raises(ConfigError, match="frame_skip must be an int >= 1, got 0"):
        MjVecEnv(backend, single_observation_space=box, single_action_space=box, frame_skip=0)
    with pytest.raises(ConfigError, match=r"single_action_space must be a gymnasium\.spaces\.Box"):
        MjVecEnv(backend, single_observation_space=box, single_action_space=gym.spaces.Discrete(2), frame_skip=1)


def test_autoreset_mode_names():
    for name, mode in (("same_step", AutoresetMode.SAME_STEP), ("SameStep", AutoresetMode.SAME_STEP),
                       ("disabled", AutoresetMode.DISABLED), (AutoresetMode.NEXT_STEP, AutoresetMode.NEXT_STEP)):
        assert ToyPendulumEnv(1, autoreset_mode=name).metadata["autoreset_mode"] is mode


def test_missing_torch_is_install_error(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "torch", None)
    with pytest.raises(ImportError, match=r"pip install -e '\.\[train\]' in the mjvec checkout"):
        ToyPendulumEnv(2, array_backend="torch")


# ---- reset / step shapes and the plain-mujoco oracle ----------------------------------------
def test_shapes_dtypes_and_plain_mujoco_oracle(env):
    obs, info = env.reset(seed=3)
    assert obs.shape == (4, 3) and obs.dtype == np.float32 and info == {}
    # Oracle: each env's own variant compiled alone, stepped with plain mujoco from the same state.
    models = [variant_model(int(v)) for v in env.backend.variant_of_env]
    datas = [mujoco.MjData(m) for m in models]
    for i, d in enumerate(datas):
        d.qpos[:], d.qvel[:] = env.backend.qpos[i], env.backend.qvel[i]
    for t in range(5):
        action = policy(env.global_env_ids, t)
        obs, reward, term, trunc, info = env.step(action)
        assert obs.shape == (4, 3) and obs.dtype == np.float32
        assert reward.shape == (4,) and reward.dtype == np.float64
        assert term.dtype == bool and trunc.dtype == bool and not (term | trunc).any()
        for i, (m, d) in enumerate(zip(models, datas, strict=True)):
            d.ctrl[:] = action[i]
            mujoco.mj_step(m, d, nstep=FRAME_SKIP)
            np.testing.assert_allclose(obs[i, :2], np.r_[d.qpos, d.qvel].astype(np.float32), rtol=1e-6)
            assert reward[i] == pytest.approx(-abs(d.qpos[0]), abs=1e-12)
        assert set(info) == {"success", "_success", "angle", "_angle", "sim_error", "_sim_error"}
        assert info["_success"].all() and not info["sim_error"].any() and info["_sim_error"].all()


def test_step_before_reset_raises(env):
    with pytest.raises(ResetNeededError, match=r"call reset\(\) before step\(\)"):
        env.step(np.zeros((4, 1), np.float32))


# ---- action validation -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("actions", "error", "match"),
    [
        (np.zeros((3, 1)), ActionError, r"shape \(3, 1\); expected \(4, 1\)"),
        (np.zeros((4,)), ActionError, r"shape \(4,\); expected \(4, 1\)"),
        (np.zeros((4, 1), np.int64), ActionTypeError, "floating-point dtype, got int64"),
        (np.zeros((4, 1), bool), ActionTypeError, "floating-point dtype, got bool"),
        (np.zeros((4, 1), object), ActionTypeError, "floating-point dtype, got object"),
        ("left", ActionTypeError, "numpy array or a torch tensor"),
        (np.array([[0.0], [np.nan], [0.0], [np.inf]]), ActionError, r"NaN or infinite for envs \[1, 3\]"),
    ],
)
def test_action_errors_change_nothing(env, actions, error, match):
    env.reset(seed=0)
    qpos, ctrl = env.backend.qpos.copy(), env.backend.ctrl.copy()
    with pytest.raises(error, match=match):
        env.step(actions)
    np.testing.assert_array_equal(env.backend.qpos, qpos)
    np.testing.assert_array_equal(env.backend.ctrl, ctrl)
    assert env.last_applied is None


def test_out_of_range_actions_are_clipped(env):
    env.reset(seed=0)
    env.step(np.array([[5.0], [-5.0], [0.5], [-0.25]], np.float32))
    np.testing.assert_array_equal(env.last_applied, [[1.0], [-1.0], [0.5], [-0.25]])
    assert env.last_applied.dtype == np.float64


def test_torch_actions_and_outputs():
    torch = pytest.importorskip("torch")
    ref = rollout(ToyPendulumEnv(4), 6)
    env = ToyPendulumEnv(4, array_backend="torch", device="cpu")
    obs, _ = env.reset(seed=0)
    assert isinstance(obs, torch.Tensor) and obs.device == torch.device("cpu") and obs.dtype == torch.float32
    torch.testing.assert_close(obs, torch.as_tensor(ref[0][0]))
    for t in range(6):
        out = env.step(torch.as_tensor(policy(env.global_env_ids, t)))
        for k in range(4):
            assert isinstance(out[k], torch.Tensor) and out[k].device == torch.device("cpu")
            np.testing.assert_array_equal(out[k].numpy(), ref[t + 1][k])
        assert isinstance(out[4]["success"], np.ndarray)
    with pytest.raises(ActionTypeError, match=r"floating-point tensor, got dtype torch\.int64"):
        env.step(torch.zeros((4, 1), dtype=torch.int64))
    with pytest.raises(ConfigError, match="not a valid torch device"):
        ToyPendulumEnv(1, array_backend="torch", device="nonsense")


# ---- autoreset modes ---------------------------------------------------------------------------
def test_next_step_autoreset(env):
    other = ToyPendulumEnv(4)  # gets different actions on the reset steps, which must be ignored
    env.reset(seed=1)
    other.reset(seed=1)
    done_seen = False
    for t in range(40):
        prev_done = env.episodes.needs_reset.copy()
        angle_before = env.backend.qpos[:, 0].copy()
        action = policy(env.global_env_ids, t)
        obs, reward, term, trunc, info = env.step(action)
        other_out = other.step(np.where(prev_done[:, None], -action, action))
        for k in range(4):
            np.testing.assert_array_equal(other_out[k], (obs, reward, term, trunc)[k])
        done = term | trunc
        # The done step returns the terminal obs: the state the reward/termination were computed on.
        np.testing.assert_array_equal(obs[done, 0], info["angle"][done].astype(np.float32))
        if prev_done.any():
            done_seen = True
            ids = np.flatnonzero(prev_done)
            # Reset step: reward 0, not done, reset obs (|angle| <= 0.2 from _reset_envs), action ignored.
            assert (reward[ids] == 0).all() and not done[ids].any()
            assert (np.abs(obs[ids, 0]) <= 0.2).all() and (env.steps[ids] == 0).all()
            assert not info["_success"][ids].any() and info["_success"][~prev_done].all()
            assert not np.allclose(obs[ids, 0], angle_before[ids])
    assert done_seen


def test_same_step_matches_next_step_oracle():
    """SAME_STEP final_obs / final_info / reset obs equal what a NEXT_STEP run shows, same seed."""
    nxt, same = ToyPendulumEnv(4), ToyPendulumEnv(4, autoreset_mode="same_step")
    nxt.reset(seed=5)
    same.reset(seed=5)
    first_done = np.full(4, -1)
    for t in range(30):
        a = policy(nxt.global_env_ids, t)
        o_n, r_n, te_n, tr_n, i_n = nxt.step(a)
        o_s, r_s, te_s, tr_s, i_s = same.step(a)
        live = first_done < 0  # until each env's first episode ends, both runs are identical
        np.testing.assert_array_equal(r_s[live], r_n[live])
        np.testing.assert_array_equal(te_s[live], te_n[live])
        np.testing.assert_array_equal(tr_s[live], tr_n[live])
        done = (te_s | tr_s) & live
        if done.any():
            np.testing.assert_array_equal(i_s["_final_obs"], te_s | tr_s)
            np.testing.assert_array_equal(i_s["final_obs"][done], o_n[done])
            np.testing.assert_array_equal(i_s["final_info"]["success"][done], i_n["success"][done])
            assert i_s["_final_info"][done].all() and i_s["final_info"]["_success"][done].all()
            # NEXT_STEP shows the reset obs one step later; its rng draws are the same.
            o_next = nxt.step(policy(nxt.global_env_ids, t + 1))[0]
            np.testing.assert_array_equal(o_s[done], o_next[done])
            first_done[done] = t
            break
        np.testing.assert_array_equal(o_s, o_n)
        assert "final_obs" not in i_s
    assert (first_done >= 0).any()


def test_same_step_dict_obs_final_obs():
    env = ToyPendulumEnv(3, autoreset_mode="same_step", dict_obs=True)
    obs, _ = env.reset(seed=2)
    assert set(obs) == {"state", "target"} and obs["state"].shape == (3, 2)
    for t in range(30):
        prev = obs
        obs, _, term, trunc, info = env.step(policy(env.global_env_ids, t))
        if (term | trunc).any():
            done = term | trunc
            np.testing.assert_array_equal(info["final_obs"]["target"][done], prev["target"][done])
            return
    pytest.fail("no episode ended")


def test_disabled_mode_raises_then_reset_mask_works():
    env = ToyPendulumEnv(4, autoreset_mode="disabled", max_steps=3)
    env.reset(seed=0)
    for t in range(3):
        _, _, term, trunc, _ = env.step(policy(env.global_env_ids, t))
    done = term | trunc
    assert done.all()
    ids = np.flatnonzero(done).tolist()
    with pytest.raises(ResetNeededError, match=re.escape(f"envs {ids} are done and autoreset_mode is DISABLED")):
        env.step(policy(env.global_env_ids, 3))
    obs, _ = env.reset(options={"reset_mask": done})
    assert (np.abs(obs[:, 0]) <= 0.2).all()
    env.step(policy(env.global_env_ids, 3))


# ---- reset options and seeding -------------------------------------------------------------------
@pytest.mark.parametrize(
    ("mask", "error", "match"),
    [
        ([True, False, False, False], TypeError, "must be a numpy array"),
        (np.ones(3, bool), ValueError, r"must have shape `\(4,\)`"),
        (np.ones(4, np.int64), TypeError, "must have `dtype=np.bool_`"),
        (np.zeros(4, bool), ValueError, "at least one True value"),
    ],
)
def test_reset_mask_validation(env, mask, error, match):
    env.reset(seed=0)
    with pytest.raises(error, match=match):
        env.reset(options={"reset_mask": mask})


def test_reset_option_errors(env):
    with pytest.raises(ResetNeededError, match="first reset"):
        env.reset(options={"reset_mask": np.ones(4, bool)})
    env.reset(seed=0)
    with pytest.raises(ConfigError, match=r"unknown reset option\(s\) \['mask'\]; allowed keys are \{reset_mask\}"):
        env.reset(options={"mask": np.ones(4, bool)})
    with pytest.raises(ConfigError, match="reset options must be a dict"):
        env.reset(options=[1])


def test_reset_mask_partial_and_options_not_mutated(env):
    obs0, _ = env.reset(seed=0)
    for t in range(3):
        obs, *_ = env.step(policy(env.global_env_ids, t))
    mask = np.array([False, True, False, True])
    options = {"reset_mask": mask}
    obs_r, _ = env.reset(options=options)
    assert options == {"reset_mask": mask} and options["reset_mask"] is mask
    np.testing.assert_array_equal(mask, [False, True, False, True])
    np.testing.assert_array_equal(obs_r[~mask], obs[~mask])
    # Reset rows are fresh initial states: the 2nd draw of each env's streams.
    assert not np.array_equal(obs_r[mask], obs0[mask]) and (np.abs(obs_r[mask, 0]) <= 0.2).all()


def test_reset_mask_cancels_pending_autoreset(env):
    env.reset(seed=1)
    for t in range(40):
        *_, term, trunc, _ = env.step(policy(env.global_env_ids, t))
        if (term | trunc).any():
            break
    done = term | trunc
    obs_r, _ = env.reset(options={"reset_mask": done})
    obs, reward, *_ = env.step(policy(env.global_env_ids, t + 1))
    # A real step, not a second reset: the env moved away from the state reset() returned.
    assert not np.array_equal(obs[done], obs_r[done]) and (reward[done] != 0).all()


@pytest.mark.parametrize(
    ("seed", "match"),
    [(-1, "non-negative int, got -1"), ([1, 2], "got 2 seeds for num_envs=4"), (1.5, "got float 1.5"),
     (True, "got bool True"), ([0, 1, -2, 3], r"entries \[2\]")],
)
def test_seed_errors(env, seed, match):
    with pytest.raises(ConfigError, match=match):
        env.reset(seed=seed)


def test_same_seed_same_trajectory_and_none_does_not_reseed():
    a, b = rollout(ToyPendulumEnv(4), 30, seed=7), rollout(ToyPendulumEnv(4), 30, seed=7)
    for k in range(4):
        np.testing.assert_array_equal(column(a, k), column(b, k))
    env = ToyPendulumEnv(4)
    first, _ = env.reset(seed=7)
    second, _ = env.reset()  # no reseed: the next draws of the streams
    assert not np.array_equal(first, second)
    unseeded = [ToyPendulumEnv(2).reset()[0] for _ in range(2)]  # OS entropy
    assert not np.array_equal(*unseeded)


@pytest.mark.parametrize("other", [{"num_envs": 8}, {"num_threads": 2}, {"offset": 0}])
def test_trajectory_independent_of_batch_and_threads(other):
    """Env with global id g: same obs/rewards with 4 or 8 envs, 1 or 2 threads, or as a shard."""
    ref = rollout(ToyPendulumEnv(4, env_id_offset=4), 30, seed=11)
    if "offset" in other:
        alt, rows = rollout(ToyPendulumEnv(8), 30, seed=11), slice(4, 8)
    else:
        kw = {"num_threads": other.get("num_threads", 1)}
        n = other.get("num_envs", 4)
        alt, rows = rollout(ToyPendulumEnv(n, env_id_offset=4, **kw), 30, seed=11), slice(0, 4)
    for k in range(4):
        np.testing.assert_array_equal(column(alt, k, rows), column(ref, k))
    np.testing.assert_array_equal(alt[0][0][rows], ref[0][0])


def test_other_envs_resets_do_not_change_an_env_stream():
    plain, extra = ToyPendulumEnv(3), ToyPendulumEnv(3)
    plain.reset(seed=4)
    extra.reset(seed=4)
    for t in range(40):
        a = policy(plain.global_env_ids, t)
        o1 = plain.step(a)[0]
        o2 = extra.step(a)[0]
        np.testing.assert_array_equal(o1[0], o2[0])
        if t % 5 == 0:
            extra.reset(options={"reset_mask": np.array([False, True, True])})


def test_list_of_seeds():
    seeds = [10, 20, 30, 40]
    listed = rollout(ToyPendulumEnv(4), 20, seed=seeds)
    for i, s in enumerate(seeds):
        single = rollout(ToyPendulumEnv(4), 20, seed=s)
        np.testing.assert_array_equal(column(listed, 0, i), column(single, 0, i))


# ---- episode statistics and gymnasium wrappers -------------------------------------------------------
def test_record_episode_statistics_wrapper_and_native_under_partial_resets():
    wrapped = gym.wrappers.vector.RecordEpisodeStatistics(ToyPendulumEnv(4))
    native = ToyPendulumEnv(4, record_episode_statistics=True)
    wrapped.reset(seed=3)
    native.reset(seed=3)
    running, prev_done, checked = np.zeros(4), np.zeros(4, bool), 0
    for t in range(60):
        a = policy(native.global_env_ids, t)
        _, r, te, tr, info = wrapped.step(a)
        _, r2, _, _, info2 = native.step(a)
        np.testing.assert_array_equal(r, r2)
        running = np.where(prev_done, 0.0, running + r)  # hand sum; NEXT_STEP reset steps excluded
        done = te | tr
        if done.any():
            for stats in (info["episode"], info2["episode"]):
                np.testing.assert_allclose(stats["r"][done], running[done], rtol=1e-12)
            np.testing.assert_array_equal(info["episode"]["l"][done], info2["episode"]["l"][done])
            np.testing.assert_array_equal(info2["episode"]["success"], info2["success"] & done)
            checked += done.sum()
        prev_done = done
        if t in (7, 19):
            mask = np.array([True, False, False, True]) & ~done
            if mask.any():
                wrapped.reset(options={"reset_mask": mask.copy()})
                native.reset(options={"reset_mask": mask})
                running[mask], prev_done[mask] = 0.0, False
    assert checked >= 4


def test_normalize_observation_and_clip_action_wrappers():
    ref = ToyPendulumEnv(4)
    env = gym.wrappers.vector.NormalizeObservation(gym.wrappers.vector.ClipAction(ToyPendulumEnv(4)))
    env.reset(seed=0)
    ref.reset(seed=0)
    for t in range(10):
        big = 3.0 * policy(ref.global_env_ids, t)
        obs, *_ = env.step(big)
        raw, *_ = ref.step(np.clip(big, -1, 1))
        rms = env.obs_rms
        np.testing.assert_allclose(obs, (raw - rms.mean) / np.sqrt(rms.var + env.epsilon), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(env.unwrapped.last_applied, np.clip(big, -1, 1))
