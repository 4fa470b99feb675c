"""SimToolReal-v0's compiled kernels (mjvec.tasks.simtoolreal.kernels) against the namespace-generic
functions they stand in for, bit for bit: on states a real episode reaches, on adversarial values
(nan, signed zeros, values far beyond the observation clip, quaternions with w < 0), and through
whole episodes in both observation modes."""

from __future__ import annotations

import dataclasses
import hashlib

import gymnasium as gym
import numpy as np
import pytest

import mjvec
from mjvec import rotations
from mjvec.tasks.simtoolreal import kernels, step_terms
from mjvec.tasks.simtoolreal import observations as obs_mod
from mjvec.tasks.simtoolreal import terms as tool_terms

# The generic numpy path warns (overflow, invalid) on the adversarial inputs, as it should.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _generic(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kernels, "applies", lambda *arrays: False)


def _env(num_envs: int = 16, obs_mode: str = "policy", steps: int = 12) -> gym.vector.VectorEnv:
    env = gym.make_vec(mjvec.ENV_ID, num_envs=num_envs, num_threads=1, randomization="paper", obs_mode=obs_mode)
    env.reset(seed=5)
    rng = np.random.default_rng(1)
    for _ in range(steps):
        env.step(rng.uniform(-1, 1, env.action_space.shape).astype(np.float32))
    return env


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.uint8)


def _assert_same(got: np.ndarray, want: np.ndarray, what: str = "") -> None:
    """The same bits, except that a nan's sign and payload are not compared (which nan an operation
    on two nans returns is the compiler's choice of operand order): nan where nan."""
    assert got.shape == want.shape and got.dtype == want.dtype, what
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan, err_msg=what)
    np.testing.assert_array_equal(_bits(np.where(nan, 0, got)), _bits(np.where(nan, 0, want)), err_msg=what)


def _adversarial(a: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A copy of a with some entries replaced by nan, +-0.0, +-inf, huge and tiny values."""
    out = a.copy()
    flat = out.reshape(-1)
    picks = rng.choice(flat.size, size=max(1, flat.size // 6), replace=False)
    specials = np.array([np.nan, -np.nan, 0.0, -0.0, np.inf, -np.inf, 1e6, -1e6, 1e-300, -5e-324, 11.0, -11.0])
    flat[picks] = specials[rng.integers(0, specials.size, picks.size)]
    return out


def _inputs(env: gym.vector.VectorEnv, rng: np.random.Generator | None) -> obs_mod.ObsInputs:
    """The env's current observation inputs; with rng, adversarial copies of every array read."""
    base = env.unwrapped
    views, state = base.views, base.task_state
    pose = base.true_object_pose()
    scales = np.asarray(base.observed_object_scales(), np.float64)
    if rng is None:
        return obs_mod.ObsInputs(base.cfg, base.indices, views, state, base.backend.qpos, base.backend.qvel,
                                 observed=pose, true=pose, scales=scales, measured=None)
    spoil = lambda a: _adversarial(np.asarray(a), rng)  # noqa: E731
    views = dataclasses.replace(views, site_xpos=spoil(views.site_xpos), xquat=spoil(views.xquat))
    quat = spoil(pose[1])
    quat[::3, 0] = -np.abs(quat[::3, 0])  # w < 0: canonical_quat flips these
    fake_state = _StateView(state, targets=spoil(state.targets), goal_pos=spoil(state.goal_pos),
                            goal_rot=spoil(state.goal_rot))
    observed = (spoil(pose[0]), quat)
    return obs_mod.ObsInputs(base.cfg, base.indices, views, fake_state, spoil(base.backend.qpos),
                             spoil(base.backend.qvel), observed=observed, true=observed, scales=spoil(scales),
                             measured=None)


class _StateView:
    """The task state with some arrays replaced (the builders only read it)."""

    def __init__(self, state: object, **arrays: np.ndarray) -> None:
        self._state, self._arrays = state, arrays

    def __getattr__(self, name: str) -> object:
        return self._arrays[name] if name in self._arrays else getattr(self._state, name)


def test_the_kernels_constants_are_the_terms() -> None:
    np.testing.assert_array_equal(kernels._SIGNS, tool_terms.KEYPOINT_SIGNS)
    np.testing.assert_array_equal(kernels._XYZW, rotations._XYZW)
    assert kernels.NUM_ARM == tool_terms.NUM_ARM_JOINTS


@pytest.mark.parametrize("adversarial", [False, True])
def test_policy_observation_is_the_generic_functions_bits(adversarial: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    env = _env()
    for seed in range(4):
        obs = _inputs(env, np.random.default_rng(seed) if adversarial else None)
        assert kernels.applies(obs.qpos, obs.views.site_xpos, obs.state.targets)
        got = obs_mod.policy_and_critic(obs, critic=False)
        with monkeypatch.context() as m:
            _generic(m)
            want = obs_mod.policy_and_critic(obs, critic=False)
        assert got.shape == (16, 140) and got.dtype == np.float32
        _assert_same(got, want)
        if not adversarial:
            np.testing.assert_array_equal(_bits(got), _bits(want))
        if adversarial:
            assert np.isnan(got).any() and (np.abs(got[~np.isnan(got)]) == env.unwrapped.cfg.obs_clip).any()
    env.close()


@pytest.mark.parametrize("adversarial", [False, True])
def test_measure_is_the_generic_functions_bits(adversarial: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    env = _env()
    base = env.unwrapped
    rng = np.random.default_rng(3)
    spoil = (lambda a: _adversarial(np.asarray(a), rng)) if adversarial else np.asarray
    for _ in range(4):
        args = (base.indices, spoil(base.backend.qpos), spoil(base.views.site_xpos),
                spoil(base.task_state.goal_kp_fixed))
        got = step_terms.measure(*args)
        with monkeypatch.context() as m:
            _generic(m)
            want = step_terms.measure(*args)
        for field in dataclasses.fields(want):
            _assert_same(getattr(got, field.name), getattr(want, field.name), field.name)
    env.close()


def _spoiled_state(state: object, rng: np.random.Generator) -> _StateView:
    """The task state with adversarial distances, counters near their limits and random latches."""
    n = state.lifted.shape[0]
    closest_tip = _adversarial(np.asarray(state.closest_fingertip_dist), rng)
    closest_tip[::4] = -1.0  # unset
    return _StateView(state, lifted=rng.random(n) < 0.5, closest_fingertip_dist=closest_tip,
                      closest_keypoint_dist=np.where(rng.random(n) < 0.3, -1.0, _adversarial(
                          np.asarray(state.closest_keypoint_dist), rng)),
                      near_goal_steps=rng.integers(0, 12, n), successes=rng.integers(0, 51, n),
                      progress=rng.integers(0, 601, n), spawn_z=_adversarial(np.asarray(state.spawn_z), rng))


@pytest.mark.parametrize("num_envs", [1, 16])
@pytest.mark.parametrize("adversarial", [False, True])
def test_evaluate_is_the_generic_rules_bits(num_envs: int, adversarial: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every StepTerms field; one env too (numpy sums its joint speeds in another order there)."""
    env = _env(num_envs, steps=30)
    base = env.unwrapped
    rng = np.random.default_rng(num_envs)
    decided = 0
    for _ in range(12):
        measured = base._measure(base.all_rows)
        state, qvel = base.task_state, base.backend.qvel
        tolerance = state.curriculum.tolerance
        active = rng.random(num_envs) < 0.8
        if adversarial:
            state, qvel = _spoiled_state(state, rng), _adversarial(np.asarray(qvel), rng)
            measured = dataclasses.replace(measured, fingertip_dist=np.abs(_adversarial(measured.fingertip_dist, rng)),
                                           keypoint_dist=np.abs(_adversarial(measured.keypoint_dist, rng)))
            tolerance = np.asarray(rng.choice([0.0, 0.01, 0.1, np.inf]))
        got = step_terms.evaluate(base.cfg, base.indices, state, measured, qvel, tolerance, active)
        with monkeypatch.context() as m:
            _generic(m)
            m.setattr(kernels, "state_applies", lambda state: False)
            want = step_terms.evaluate(base.cfg, base.indices, state, measured, qvel, tolerance, active)
        for field in dataclasses.fields(want):
            g, w = getattr(got, field.name), getattr(want, field.name)
            if field.name == "reward_terms":
                assert list(g) == list(w) == list(step_terms.REWARD_TERMS)
                for name in w:
                    _assert_same(g[name], np.asarray(w[name]), name)
            elif field.name not in ("measured", "tolerance"):
                _assert_same(g, np.asarray(w), field.name)
        decided += int(got.success.sum() + got.terminated.sum())
    assert decided or not adversarial or num_envs == 1  # the rules' branches were reached
    env.close()


def test_joint_targets_are_the_generic_functions_bits() -> None:
    env = _env()
    base, cfg, rng = env.unwrapped, env.unwrapped.cfg, np.random.default_rng(8)
    idx = base.indices
    for _ in range(5):
        actions = _adversarial(rng.uniform(-1.5, 1.5, (16, 29)), rng)
        prev = _adversarial(np.asarray(base.task_state.targets), rng)
        options = {"arm_step": cfg.dof_speed_scale * base.control_dt, "arm_moving_average": cfg.arm_moving_average,
                   "hand_moving_average": cfg.hand_moving_average, "num_arm": tool_terms.NUM_ARM_JOINTS}
        got = kernels.joint_targets(actions, prev, idx.joint_lower, idx.joint_upper, **options)
        want = tool_terms.compute_joint_targets(actions, prev, idx.joint_lower, idx.joint_upper, **options)
        _assert_same(got, want, "targets")
    env.close()


def _episode_digest(obs_mode: str, num_envs: int = 12) -> str:
    env = gym.make_vec(mjvec.ENV_ID, num_envs=num_envs, num_threads=1, randomization="paper", obs_mode=obs_mode,
                       max_episode_steps=40)
    digest = hashlib.sha256()
    obs, _ = env.reset(seed=11)
    rng = np.random.default_rng(2)
    for _ in range(90):  # past the 40-step episodes: autoresets measure single rows
        obs, reward, terminated, truncated, info = env.step(
            rng.uniform(-1, 1, env.action_space.shape).astype(np.float32))
        for part in (obs["policy"], obs["critic"]) if isinstance(obs, dict) else (obs,):
            digest.update(_bits(part))
        digest.update(_bits(reward))
        digest.update(_bits(info["keypoint_dist"]))
        digest.update(np.asarray(terminated | truncated).tobytes())
    env.close()
    return digest.hexdigest()


@pytest.mark.parametrize(("obs_mode", "num_envs"), [("policy", 12), ("asymmetric", 12), ("policy", 1)])
def test_episodes_are_the_generic_functions_bits(obs_mode: str, num_envs: int,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    compiled = _episode_digest(obs_mode, num_envs)
    _generic(monkeypatch)
    monkeypatch.setattr(kernels, "state_applies", lambda state: False)
    assert _episode_digest(obs_mode, num_envs) == compiled


def test_commit_is_the_generic_masked_copies() -> None:
    """kernels.commit against step_terms.commit's numpy lines (a masked copy per state array): the
    active rows take the new values (nan, signed zeros and extreme values included), the others keep
    theirs; an array of another dtype makes it decline (False) and write nothing."""
    from types import SimpleNamespace

    from mjvec.xp import assign_where

    env = _env(9, steps=20)
    state = env.unwrapped.task_state
    rng = np.random.default_rng(8)
    names = ("lifted", "closest_fingertip_dist", "closest_keypoint_dist", "near_goal_steps", "successes", "progress")
    fresh = {name: _adversarial(np.asarray(getattr(state, name)), rng) if getattr(state, name).dtype.kind == "f"
             else rng.integers(0, 2, getattr(state, name).shape).astype(getattr(state, name).dtype) for name in names}
    terms = SimpleNamespace(reward=_adversarial(rng.normal(size=9), rng), **fresh)
    active = rng.random(9) < 0.6
    want = {name: np.asarray(getattr(state, name)).copy() for name in (*names, "last_reward")}
    for name in want:
        assign_where(want[name], active.reshape(-1, *(1,) * (want[name].ndim - 1)),
                     terms.reward if name == "last_reward" else getattr(terms, name))
    assert kernels.commit(state, active, terms)
    for name, w in want.items():
        _assert_same(np.asarray(getattr(state, name)), w, name)
    before = np.asarray(state.successes).copy()
    assert not kernels.commit(state, active, SimpleNamespace(**{**vars(terms), "successes": terms.successes + 0.5}))
    np.testing.assert_array_equal(state.successes, before)
    env.close()
