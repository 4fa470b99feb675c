"""The Go1 joystick task's compiled reward (mjvec.tasks.go1_joystick.kernels) against the
namespace-generic reward terms it stands in for, bit for bit: on states real episodes reach, on
adversarial values (nan, signed zeros, infinities, values past the joint limits and the reward's
clip), and through whole episodes on both terrains."""

from __future__ import annotations

import dataclasses
import hashlib

import gymnasium as gym
import numpy as np
import pytest

from mjvec.tasks.go1_joystick import kernels, observations
from mjvec.tasks.go1_joystick import terms as go1_terms
from mjvec.tasks.locomotion import FeetStep

FLAT = "playground/Go1JoystickFlatTerrain-v0"
ROUGH = "playground/Go1JoystickRoughTerrain-v0"


# The generic numpy path warns (overflow, invalid) on the adversarial inputs, as it should.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _generic(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kernels, "applies", lambda *arrays: False)


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.uint8)


def _assert_same(got: np.ndarray, want: np.ndarray, what: str) -> None:
    """The same bits, a nan's sign and payload aside (which of two nans an operation returns is
    the compiler's operand order): nan where nan."""
    assert got.shape == want.shape and got.dtype == want.dtype, what
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan, err_msg=what)
    np.testing.assert_array_equal(_bits(np.where(nan, 0, got)), _bits(np.where(nan, 0, want)), err_msg=what)


def _spoil(a: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    out = np.array(a, dtype=np.float64)
    flat = out.reshape(-1)
    picks = rng.choice(flat.size, size=max(1, flat.size // 40), replace=False)
    specials = np.array([np.nan, 0.0, -0.0, np.inf, -np.inf, 1e3, -1e3, 1e200, -1e-300, 5.0, -5.0])
    flat[picks] = specials[rng.integers(0, specials.size, picks.size)]
    return out


def _inputs(env: gym.vector.VectorEnv, rng: np.random.Generator | None) -> tuple:
    """weighted_reward's arguments at the env's current state; with rng, adversarial copies."""
    base = env.unwrapped
    v, idx = base._views, base.indices
    sd = v["sensordata"]
    contact = sd[:, idx.contact_adr] > 0
    step = base.feet.touch_down(contact, v["site_xpos"][:, idx.foot_sites, 2], base.control_dt)
    done = go1_terms.fallen(sd, idx)
    args = [base.backend.qpos, base.backend.qvel, sd, v["site_xpos"], v["actuator_force"], base._action,
            base.last_act, np.array(base.commands.command)]
    if rng is None:
        return (base.cfg, idx, *args, step, done)
    args = [_spoil(a, rng) for a in args]
    air_time = _spoil(step.air_time, rng)
    first = rng.random(step.contact.shape) < 0.5
    # Two envs far past the reward's clip: a landing foot after a long flight, a moving command.
    air_time[:2, 0], first[:2, 0], args[7][:2] = 1e9, True, (1.0, 0.0, 0.0)
    step = FeetStep(rng.random(step.contact.shape) < 0.5, first, air_time, _spoil(step.swing_peak, rng))
    return (base.cfg, idx, *args, step, rng.random(done.shape) < 0.3)


def test_the_kernel_has_every_reward_term() -> None:
    assert kernels.NUM_TERMS == len(go1_terms.REWARD_TERMS)


@pytest.mark.parametrize("adversarial", [False, True])
@pytest.mark.parametrize("task", [FLAT, ROUGH])
def test_reward_is_the_generic_terms_bits(task: str, adversarial: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    env = gym.make_vec(task, num_envs=32, num_threads=1, randomization="paper")
    env.reset(seed=4)
    rng = np.random.default_rng(0)
    for _ in range(3):
        for _ in range(15):
            env.step(rng.uniform(-1, 1, env.action_space.shape).astype(np.float32))
        args = _inputs(env, np.random.default_rng(int(rng.integers(1 << 30))) if adversarial else None)
        assert kernels.applies(*args[2:10])
        reward, weighted = go1_terms.weighted_reward(*args)
        with monkeypatch.context() as m:
            _generic(m)
            want_reward, want_weighted = go1_terms.weighted_reward(*args)
        assert list(weighted) == list(want_weighted) == list(go1_terms.REWARD_TERMS)
        for name in go1_terms.REWARD_TERMS:
            _assert_same(weighted[name], want_weighted[name], name)
        _assert_same(reward, want_reward, "reward")
        if adversarial:
            assert np.isnan(reward).any() and (reward == go1_terms.MAX_REWARD).any()
    env.close()


@pytest.mark.parametrize("critic", [False, True])
def test_observation_is_the_generic_blocks_bits(critic: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    env = gym.make_vec(FLAT, num_envs=24, num_threads=1, randomization="paper")
    env.reset(seed=2)
    base, rng = env.unwrapped, np.random.default_rng(3)
    for _ in range(20):
        env.step(rng.uniform(-1, 1, env.action_space.shape).astype(np.float32))
    v, idx, shown = base._views, base.indices, base.shown
    push_force = base.backend.xfrc_applied[:, idx.torso, :3]
    arrays = [base.backend.qpos, base.backend.qvel, v["sensordata"], v["site_xmat"], v["actuator_force"],
              push_force, np.asarray(base.pushes.due(), np.float64)]
    for spoiled in (False, True):
        args = [_spoil(a, rng) for a in arrays] if spoiled else arrays
        seen = shown
        if spoiled:
            seen = dataclasses.replace(shown, last_act=_spoil(shown.last_act, rng), command=_spoil(shown.command, rng),
                                       last_contact=rng.random(shown.last_contact.shape) < 0.5,
                                       air_time=_spoil(shown.air_time, rng), noise=_spoil(shown.noise, rng))
        got = observations.observe(*args, idx, seen, critic)
        with monkeypatch.context() as m:
            _generic(m)
            want = observations.observe(*args, idx, seen, critic)
        for part in ("policy", "critic") if critic else (None,):
            g, w = (got[part], want[part]) if part else (got, want)
            _assert_same(g, w, str(part))
    env.close()


def _episode_digest(task: str, obs_mode: str, num_envs: int) -> str:
    env = gym.make_vec(task, num_envs=num_envs, num_threads=1, randomization="paper", obs_mode=obs_mode)
    digest = hashlib.sha256()
    obs, _ = env.reset(seed=9)
    rng = np.random.default_rng(5)
    for _ in range(80):  # random actions: falls, resets and landings in the run
        obs, reward, terminated, truncated, info = env.step(
            rng.uniform(-1, 1, env.action_space.shape).astype(np.float32))
        for part in (obs["policy"], obs["critic"]) if isinstance(obs, dict) else (obs,):
            digest.update(_bits(part))
        digest.update(_bits(reward))
        for name in go1_terms.REWARD_TERMS:
            digest.update(_bits(info["reward_terms"][name]))
        digest.update(np.asarray(terminated | truncated).tobytes())
    env.close()
    return digest.hexdigest()


@pytest.mark.parametrize(("task", "obs_mode", "num_envs"),
                         [(FLAT, "policy", 16), (ROUGH, "asymmetric", 16), (FLAT, "policy", 1)])
def test_episodes_are_the_generic_terms_bits(task: str, obs_mode: str, num_envs: int,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    compiled = _episode_digest(task, obs_mode, num_envs)
    _generic(monkeypatch)
    assert _episode_digest(task, obs_mode, num_envs) == compiled
