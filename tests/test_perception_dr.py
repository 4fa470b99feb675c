"""Non-model randomization wrappers on SimToolReal-v0, each against an unwrapped run as oracle."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import mjvec
from mjvec.errors import ConfigError
from mjvec.randomization import (
    ActionDelay,
    ObjectPoseLatency,
    ObjectScaleNoise,
    ObservationDelay,
    ObservationNoise,
    RandomPushes,
)

SMALL = {"num_tools": 6, "randomization": None, "num_threads": 1}
SLICES = {}
_pos = 0
for _name, _width in mjvec.envs.simtoolreal.POLICY_LAYOUT:
    SLICES[_name] = slice(_pos, _pos + _width)
    _pos += _width


def _actions(env, t: int) -> np.ndarray:
    g = env.unwrapped.global_env_ids[:, None]
    return 0.5 * np.sin(0.1 * t + 0.3 * g + np.arange(29)[None, :])


def _run(env, steps: int, seed: int = 0) -> np.ndarray:
    obs = [env.reset(seed=seed)[0]]
    for t in range(steps):
        obs.append(env.step(_actions(env, t))[0])
    return np.stack(obs)


def test_observation_noise_touches_only_its_block_with_its_std() -> None:
    clean = _run(gym.make_vec(mjvec.ENV_ID, num_envs=4, **SMALL), 30)
    noisy = _run(ObservationNoise(gym.make_vec(mjvec.ENV_ID, num_envs=4, **SMALL), "joint_vel", 0.1), 30)
    diff = (noisy - clean).astype(np.float64)
    block = SLICES["joint_vel"]
    outside = np.ones(diff.shape[-1], bool)
    outside[block] = False
    np.testing.assert_array_equal(diff[..., outside], 0.0)
    assert 0.09 < diff[..., block].std() < 0.11
    assert abs(diff[..., block].mean()) < 0.01


def test_observation_delay_delivers_one_of_the_last_fresh_observations() -> None:
    clean = _run(gym.make_vec(mjvec.ENV_ID, num_envs=4, **SMALL), 40)
    delayed = _run(ObservationDelay(gym.make_vec(mjvec.ENV_ID, num_envs=4, **SMALL), 2), 40)
    np.testing.assert_array_equal(delayed[0], clean[0])
    ages = np.full(delayed.shape[:2], -1)
    for t in range(1, delayed.shape[0]):
        for e in range(4):
            for age in range(3):
                if np.array_equal(delayed[t, e], clean[max(t - age, 0), e]):
                    ages[t, e] = age
                    break
    assert (ages[1:] >= 0).all()
    assert set(np.unique(ages[3:])) == {0, 1, 2}


def test_action_delay_applies_one_of_the_last_actions() -> None:
    env = ActionDelay(gym.make_vec(mjvec.ENV_ID, num_envs=4, **SMALL), 2)
    base = env.unwrapped
    applied = []
    original = base._apply_action
    base._apply_action = lambda a: (applied.append(a.copy()), original(a))[1]
    env.reset(seed=0)
    given = []
    for t in range(30):
        a = np.clip(_actions(env, t), -1, 1)
        given.append(a)
        env.step(a)
    ages = []
    for t, a in enumerate(applied):
        for e in range(4):
            match = [k for k in range(3) if t - k >= 0 and np.array_equal(a[e], given[t - k][e])]
            assert match, (t, e)
            ages.append(match[0])
    assert set(ages) == {0, 1, 2}


def test_object_pose_latency_within_delay_and_noise_bounds() -> None:
    env = ObjectPoseLatency(gym.make_vec(mjvec.ENV_ID, num_envs=4, **SMALL), max_delay=9, pos_std=0.01, rot_deg=5.0)
    base = env.unwrapped
    env.reset(seed=0)
    history = [base.true_object_pose()]
    worst_pos, worst_ang = 0.0, 0.0
    for t in range(40):
        env.step(_actions(env, t))
        history.append(base.true_object_pose())
        pos, quat = base.observed_object_pose()
        for e in range(4):
            cands = history[-10:]
            d_pos = min(np.linalg.norm(pos[e] - p[e]) for p, _ in cands)
            d_ang = min(2 * np.arccos(min(1.0, abs(float(np.dot(quat[e], q[e]))))) for _, q in cands)
            worst_pos, worst_ang = max(worst_pos, d_pos), max(worst_ang, d_ang)
    assert worst_ang <= np.radians(5.0) + 1e-9
    assert 0.0 < worst_pos < 0.06  # 1 cm std noise, 3-D, 160 draws


def test_object_scale_noise_per_reset_within_range() -> None:
    env = ObjectScaleNoise(gym.make_vec(mjvec.ENV_ID, num_envs=4, **SMALL), 0.9, 1.1)
    base = env.unwrapped
    obs0 = env.reset(seed=0)[0]
    ratio0 = obs0[:, SLICES["object_scales"]] / base.object_scales
    assert ((ratio0 > 0.9 - 1e-6) & (ratio0 < 1.1 + 1e-6)).all() and np.ptp(ratio0) > 0
    obs1 = env.step(_actions(env, 0))[0]
    np.testing.assert_allclose(obs1[:, SLICES["object_scales"]] / base.object_scales, ratio0, rtol=1e-6)
    obs2 = env.reset(seed=1)[0]
    assert not np.allclose(obs2[:, SLICES["object_scales"]] / base.object_scales, ratio0)


def test_random_pushes_only_when_lifted_one_step_and_scaled_by_mass() -> None:
    env = RandomPushes(gym.make_vec(mjvec.ENV_ID, num_envs=4, **SMALL), prob_range=(1.0, 1.0))
    base = env.unwrapped
    env.reset(seed=0)
    body = base.object_body_id
    base.lifted[:] = [True, False, True, False]
    env.step(_actions(env, 0))
    base.lifted[:] = [True, False, True, False]  # the task may have updated it; pin it for the push draw
    env._on_step(base.control_dt)
    xfrc = base.backend.xfrc_applied[:, body]
    np.testing.assert_array_equal(np.abs(xfrc[[1, 3]]), 0.0)
    assert (np.abs(xfrc[[0, 2]]) > 0).all()
    force_per_mass = np.abs(xfrc[[0, 2], :3]) / np.asarray(base.object_mass)[[0, 2], None]
    assert (force_per_mass < 20.0 * 6).all()
    base.lifted[:] = False
    env._on_step(base.control_dt)
    np.testing.assert_array_equal(base.backend.xfrc_applied[:, body], 0.0)


def test_paper_preset_is_the_default_and_deterministic_across_num_envs() -> None:
    small = gym.make_vec(mjvec.ENV_ID, num_envs=4, num_tools=6, num_threads=1)
    large = gym.make_vec(mjvec.ENV_ID, num_envs=8, num_tools=6, num_threads=2)
    chain, env = [], small
    while hasattr(env, "env"):
        chain.append(type(env).__name__)
        env = env.env
    assert set(chain) == {"ObjectScaleNoise", "ObjectPoseLatency", "ObservationNoise", "ObservationDelay",
                          "ActionDelay", "RandomPushes"}
    a, b = _run(small, 60), _run(large, 60)
    np.testing.assert_array_equal(a, b[:, :4])
    assert np.isfinite(a).all()


@pytest.mark.parametrize(
    ("wrap", "match"),
    [
        (lambda e: ObservationNoise(e, "nope", 0.1), "block 'nope' is not one of"),
        (lambda e: ObservationNoise(e, "joint_vel", -1.0), "std must be finite and >= 0"),
        (lambda e: ObservationDelay(e, -1), "max_delay must be an int >= 0"),
        (lambda e: ActionDelay(e, 1.5), "max_delay must be an int >= 0"),
        (lambda e: ObjectPoseLatency(e, pos_std=float("nan")), "pos_std must be finite"),
        (lambda e: ObjectScaleNoise(e, 1.2, 1.1), "need 0 < low <= high"),
        (lambda e: RandomPushes(e, prob_range=(0.0, 0.1)), "prob_range must satisfy"),
    ],
)
def test_wrapper_argument_errors(wrap, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        wrap(gym.make_vec(mjvec.ENV_ID, num_envs=1, **SMALL))


def test_randomization_option_errors() -> None:
    with pytest.raises(ConfigError, match="'fancy' is not a preset; allowed are"):
        gym.make_vec(mjvec.ENV_ID, num_envs=1, num_tools=6, randomization="fancy")
    with pytest.raises(ConfigError, match="list of EventTerm"):
        gym.make_vec(mjvec.ENV_ID, num_envs=1, num_tools=6, randomization=[1, 2])


def test_single_env_entry_point_runs_with_the_paper_preset() -> None:
    from mjvec.envs.single import SingleEnv

    env = gym.make(mjvec.ENV_ID, num_tools=6, disable_env_checker=True)
    assert isinstance(env.unwrapped, SingleEnv)
    assert type(env.unwrapped.vec_env).__name__ == "RandomPushes"
    obs, _ = env.reset(seed=0)
    for _ in range(5):
        obs, reward, _, _, _ = env.step(env.action_space.sample())
    assert obs.shape == (140,) and np.isfinite(obs).all() and isinstance(reward, float)
    with pytest.raises(ConfigError, match="SingleEnv wraps an MjVecEnv"):
        SingleEnv(gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1")]))


def test_pose_noise_rotation_equals_mujoco_axis_angle_times_quat() -> None:
    """object_dr's written-out product == mju_axisAngle2Quat(axis / |axis|, 2 half) * q (mju_mulQuat)."""
    import mujoco

    from mjvec.randomization.object_dr import _rotate_by_axis_angle

    rng = np.random.default_rng(3)
    axis, half = rng.normal(size=(50, 3)), rng.uniform(-0.5, 0.5, 50)
    quat = rng.normal(size=(50, 4))
    quat /= np.linalg.norm(quat, axis=1, keepdims=True)
    got = _rotate_by_axis_angle(axis, half, quat)
    for i in range(50):
        dq, out = np.zeros(4), np.zeros(4)
        mujoco.mju_axisAngle2Quat(dq, axis[i] / np.linalg.norm(axis[i]), 2 * half[i])
        mujoco.mju_mulQuat(out, dq, quat[i])
        np.testing.assert_allclose(got[i], out, atol=1e-14)
