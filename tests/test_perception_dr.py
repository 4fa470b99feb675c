"""Non-model randomization wrappers on SimToolReal-v0, each against an unwrapped run as oracle."""

from __future__ import annotations

import gymnasium as gym
import mujoco
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
from mjvec.rng import EnvRandom
from mjvec.tasks.simtoolreal.config import SimToolRealConfig

SMALL = {"num_tools": 6, "randomization": None, "num_threads": 1}
SLICES = {}
_pos = 0
for _name, _width in mjvec.tasks.simtoolreal.env.POLICY_LAYOUT:
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
    """A step's push is drawn before its physics from `lifted` as the previous step left it (the
    source's pre-physics step), and lasts that one step."""
    env = RandomPushes(gym.make_vec(mjvec.ENV_ID, num_envs=4, **SMALL), prob_range=(1.0, 1.0), mass_scale="per_env")
    base = env.unwrapped
    env.reset(seed=0)
    body = base.object_body_id
    base.lifted[:] = [True, False, True, False]  # as if the previous step's evaluation had set it
    env.step(_actions(env, 0))
    xfrc = base.backend.xfrc_applied[:, body]  # what this step's physics ran with
    np.testing.assert_array_equal(np.abs(xfrc[[1, 3]]), 0.0)
    assert (np.abs(xfrc[[0, 2]]) > 0).all()
    force_per_mass = np.abs(xfrc[[0, 2], :3]) / np.asarray(base.object_mass)[[0, 2], None]
    assert (force_per_mass < 20.0 * 6).all()
    base.lifted[:] = False
    env.step(_actions(env, 1))
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


def test_paper_preset_with_goal_refills_is_deterministic_across_num_envs() -> None:
    """Goals reached every second step, so every queue refills on goals: still a per-env function."""
    kw = {"num_tools": 6, "config": GOAL_EVERY_2}
    small = gym.make_vec(mjvec.ENV_ID, num_envs=3, num_threads=1, **kw)
    large = gym.make_vec(mjvec.ENV_ID, num_envs=7, num_threads=2, **kw)
    a, b = _run(small, 30), _run(large, 30)
    np.testing.assert_array_equal(a, b[:, :3])


@pytest.mark.parametrize(
    ("wrap", "match"),
    [
        (lambda e: ObservationNoise(e, "nope", 0.1), "block 'nope' is not one of the observation's blocks"),
        (lambda e: ObservationNoise(e, "joint_vel", -1.0), "scale must be a finite number >= 0"),
        (lambda e: ObservationNoise(e, "joint_vel", 0.1, distribution="laplace"),
         "distribution .laplace. is not one of"),
        (lambda e: ObservationNoise(e, "joint_vel", 0.1, key="critic"), "key .critic. has no named blocks"),
        (lambda e: ObservationDelay(e, -1), "max_delay must be an int >= 0"),
        (lambda e: ActionDelay(e, 1.5), "max_delay must be an int >= 0"),
        (lambda e: ObjectPoseLatency(e, pos_std=float("nan")), "pos_std must be finite"),
        (lambda e: ObjectScaleNoise(e, 1.2, 1.1), "need 0 < low <= high"),
        (lambda e: RandomPushes(e, prob_range=(0.0, 0.1)), "prob_range must satisfy"),
        (lambda e: RandomPushes(e, mass_scale="env0"),
         r"mass_scale='env0' is not allowed; allowed are \{per_env, reference\}"),
        (lambda e: RandomPushes(e, force_scale=-1.0), "force_scale must be finite and >= 0"),
        (lambda e: ObservationDelay(e, 2, refill_on_goal=1), "refill_on_goal must be True or False, got 1"),
    ],
)
def test_wrapper_argument_errors(wrap, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        wrap(gym.make_vec(mjvec.ENV_ID, num_envs=1, **SMALL))


def test_randomization_option_errors() -> None:
    with pytest.raises(ConfigError, match=r"'fancy' is not a preset of SimToolReal-v0; its presets are \{paper\}"):
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


def test_pose_noise_rotation_equals_quat_times_mujoco_axis_angle() -> None:
    """The pose noise's rotation (rotations.rotate_by_axis_angle) == q * mju_axisAngle2Quat(axis / |axis|,
    2 half) (mju_mulQuat): it acts in the object's frame, as the source's quat_matrix @ delta_matrix."""
    from mjvec.rotations import rotate_by_axis_angle

    rng = np.random.default_rng(3)
    axis, half = rng.normal(size=(50, 3)), rng.uniform(-0.5, 0.5, 50)
    quat = rng.normal(size=(50, 4))
    quat /= np.linalg.norm(quat, axis=1, keepdims=True)
    got = rotate_by_axis_angle(quat, axis, half)
    for i in range(50):
        np.testing.assert_allclose(got[i], _quat_times_axis_angle(quat[i], axis[i], 2 * half[i]), atol=1e-14)


def _quat_times_axis_angle(quat: np.ndarray, axis: np.ndarray, angle: float) -> np.ndarray:
    dq, out = np.zeros(4), np.zeros(4)
    mujoco.mju_axisAngle2Quat(dq, axis / np.linalg.norm(axis), angle)
    mujoco.mju_mulQuat(out, quat, dq)
    return out


# A goal reached every second step (huge tolerance, 2 near-goal steps): the goal-segment counter is
# 1 after odd steps and 0 after even ones, so the queues refill on a known schedule.
GOAL_EVERY_2 = SimToolRealConfig(tolerance_start=5.0, success_steps=2)


def test_object_pose_latency_replayed_from_the_streams_with_goal_refills() -> None:
    """Oracle: the wrapper's documented draws replayed by hand on the env's own streams; the queue
    of poses kept by hand, refilled at the reset and at each step that starts a goal segment; the
    noise rotation about a positive-octant axis, in the object's frame."""
    env = ObjectPoseLatency(gym.make_vec(mjvec.ENV_ID, num_envs=3, config=GOAL_EVERY_2, **SMALL), max_delay=9,
                            pos_std=0.01, rot_deg=5.0, refill_on_goal=True)
    base = env.unwrapped
    env.reset(seed=2)
    rng, ids = EnvRandom(base.global_env_ids, 2), np.arange(3)
    pose = np.concatenate(base.true_object_pose(), axis=1)
    history = [pose] * 10
    refills = 0
    for t in range(24):
        segment = base.goal_segment_steps()
        info = env.step(_actions(env, t))[-1]
        assert info["success"].all() == (t % 2 == 1)
        pose = np.concatenate(base.true_object_pose(), axis=1)
        history = [pose] * 10 if (segment == 0).all() else [pose, *history[:9]]
        refills += int((segment == 0).all())
        ages = rng.integers(ids, "dr/pose_delay", 0, 10)
        delayed = np.stack([history[a][e] for e, a in enumerate(ages)])
        noise = rng.normal(ids, "dr/pose_noise", (3,))
        axis = rng.uniform(ids, "dr/pose_rot_axis", 0.0, 1.0, (3,))
        half = rng.uniform(ids, "dr/pose_rot_angle", -np.radians(2.5), np.radians(2.5))
        pos, quat = base.observed_object_pose()
        np.testing.assert_allclose(pos, delayed[:, :3] + 0.01 * noise, atol=1e-12)
        for e in range(3):
            want = _quat_times_axis_angle(delayed[e, 3:], axis[e], 2 * half[e])
            np.testing.assert_allclose(quat[e], want, atol=1e-12)
    assert refills == 12


def test_observation_delay_refills_after_each_goal() -> None:
    """After the step that follows a success (counter 1) the fresh observation is delivered whatever
    age was drawn; the step after that can only be one step old."""
    kw = {**SMALL, "config": GOAL_EVERY_2}
    clean = _run(gym.make_vec(mjvec.ENV_ID, num_envs=4, **kw), 30)
    delayed = _run(ObservationDelay(gym.make_vec(mjvec.ENV_ID, num_envs=4, **kw), 2, refill_on_goal=True), 30)
    plain = _run(ObservationDelay(gym.make_vec(mjvec.ENV_ID, num_envs=4, **kw), 2), 30)
    for t in range(1, 31, 2):  # obs index t = after step t; odd steps start a goal segment
        np.testing.assert_array_equal(delayed[t], clean[t])
    for t in range(2, 31, 2):
        assert all(np.array_equal(delayed[t, e], clean[t, e]) or np.array_equal(delayed[t, e], clean[t - 1, e])
                   for e in range(4))
    assert any(not np.array_equal(plain[t], clean[t]) for t in range(3, 31, 2))  # without refills they lag


def test_action_delay_refills_after_each_goal() -> None:
    """The action arriving when the counter is 1 (after a goal segment's first step) refills the queue:
    it is applied as given, as in the source."""
    env = ActionDelay(gym.make_vec(mjvec.ENV_ID, num_envs=4, config=GOAL_EVERY_2, **SMALL), 2, refill_on_goal=True)
    base = env.unwrapped
    applied = []
    original = base._apply_action
    base._apply_action = lambda a: (applied.append(a.copy()), original(a))[1]
    env.reset(seed=0)
    given = []
    for t in range(30):
        given.append(np.clip(_actions(env, t), -1, 1))
        env.step(given[-1])
    for t in range(1, 30, 2):  # the counter is 1 after every odd-numbered (1-based) step: index t - 1 even
        np.testing.assert_array_equal(applied[t], given[t])
    plain = [k for k in range(2, 30, 2) if not np.array_equal(applied[k], given[k])]
    assert plain  # the other steps still draw delays


@pytest.mark.parametrize("mass_scale", ["reference", "per_env"])
def test_push_magnitudes_for_a_heavy_and_a_light_tool(mass_scale: str) -> None:
    """Tools 591 (a 0.39 kg hammer) and 592 (a 0.013 kg marker), always pushed once lifted: the
    wrench is the env's own normal draws x mass x 20 N/kg (force) and x 2 (torque), with mass the
    paper run's env-0 tool (0.0577 kg, so a 1.15 N std per axis) for both, or each tool's own."""
    env = RandomPushes(gym.make_vec(mjvec.ENV_ID, num_envs=2, env_id_offset=591, num_tools=600, num_threads=1,
                                    randomization=None), prob_range=(1.0, 1.0), mass_scale=mass_scale)
    base = env.unwrapped
    masses = np.asarray(base.object_mass)
    assert masses[0] > 0.38 and masses[1] < 0.013
    assert base.push_reference_mass == pytest.approx(0.0577, abs=1e-4)
    assert 20.0 * base.push_reference_mass == pytest.approx(1.154, abs=2e-3)
    env.reset(seed=6)
    qpos, qvel = base.backend.qpos.copy(), np.zeros((2, base.backend.model.nv))
    qpos[:, base.indices.obj_qpos + 2] = 1.2  # held high: lifted at the first evaluation
    base.backend.reset(np.arange(2), qpos, qvel)
    rng, ids = EnvRandom(base.global_env_ids, 6), np.arange(2)
    env.step(np.zeros((2, 29)))  # push draws made while not yet lifted: nothing pushed
    assert not env.pushed.any() and base.lifted.all()
    env.step(np.zeros((2, 29)))  # lifted now: both pushed (probability 1), for the next step
    mass = np.full((2, 1), base.push_reference_mass) if mass_scale == "reference" else masses[:, None]
    expected = np.zeros((2, 6))
    for row, (kind, scale) in enumerate((("force", 20.0), ("torque", 2.0))):
        for _ in range(2):  # steps 1 and 2 each drew once per env (p = 1: every draw pushes)
            rng.uniform(ids, f"dr/push_{kind}_draw")
        expected[:, 3 * row:3 * row + 3] = rng.normal(ids, f"dr/push_{kind}", (3,)) * mass * scale
    np.testing.assert_allclose(base.backend.xfrc_applied[:, base.object_body_id], expected, rtol=1e-15)


def test_a_delay_queues_compiled_read_is_the_fancy_index() -> None:
    """DelayQueue.read's compiled gather against the numpy index it replaces, for the queues' shapes
    and dtypes (an observation block of float32, float64 poses, a 1-D value), after wrapping pushes."""
    from mjvec.randomization.queues import DelayQueue
    from mjvec.xp import Rows

    rng = np.random.default_rng(5)
    for tail, dtype in (((7,), np.float64), ((3, 5), np.float32), ((), np.float64)):
        queue = DelayQueue(4)
        for _ in range(6):
            queue.push(rng.normal(size=(9, *tail)).astype(dtype), Rows.of_ids([], 9))
        ages = rng.integers(0, 4, 9)
        want = queue.buf[(queue.head + ages) % 4, np.arange(9)]
        got = queue.read(ages)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
