"""The env-wrapper contract (mjvec.contract) is complete: every shipped wrapper works on an env that
offers exactly the contract's members and nothing else, and gives the same trajectory there as on
the env itself; ObservationNoise is task-neutral (any Box or Dict observation, Gaussian or uniform)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import mjvec
from mjvec import contract
from mjvec.backends.base import Backend, Scene
from mjvec.backends.cpu import CpuBackend
from mjvec.errors import ConfigError
from mjvec.randomization import (
    ActionDelay,
    DomainRandomization,
    EventTerm,
    ObjectPoseLatency,
    ObjectScaleNoise,
    ObservationDelay,
    ObservationNoise,
    RandomPushes,
)
from mjvec.rng import EnvRandom
from mjvec.tasks.simtoolreal.presets import paper
from mjvec.xp import Rows
from tests.third_task import PoleBalanceEnv, pole_spec

PROTOCOLS = [v for v in vars(contract).values()
             if isinstance(v, type) and getattr(v, "_is_protocol", False) and v.__module__ == contract.__name__]
MEMBERS = frozenset().union(*(contract.protocol_members(p) for p in PROTOCOLS))
# What any Gymnasium VectorEnv has (a wrapper's VectorWrapper base reads these), not the contract's.
VECTOR_ENV = ("observation_space", "action_space", "single_action_space", "metadata", "render_mode", "spec",
              "closed", "autoreset_mode")


BACKEND_MEMBERS = frozenset(contract.protocol_members(Backend))


class BackendOnly:
    """A real backend seen through exactly the `Backend` Protocol's members: anything else raises."""

    def __init__(self, real: Any) -> None:
        object.__setattr__(self, "_real", real)

    def __getattr__(self, name: str) -> Any:
        if name not in BACKEND_MEMBERS:
            raise AttributeError(f"{name!r} is not part of the Backend Protocol; a wrapper must not touch it")
        return getattr(self._real, name)


class ContractOnly(gym.vector.VectorEnv):
    """A real mjvec env seen through exactly the contract's members (its backend through exactly the
    Backend Protocol's): anything else raises."""

    def __init__(self, real: gym.vector.VectorEnv) -> None:
        self._real = real
        self.num_envs = real.num_envs
        for name in VECTOR_ENV:
            if hasattr(real, name):
                object.__setattr__(self, name, getattr(real, name))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name not in MEMBERS:
            raise AttributeError(f"{name!r} is not part of mjvec.contract; a wrapper must not touch it")
        value = getattr(self._real, name)
        return BackendOnly(value) if name == "backend" else value

    @property
    def unwrapped(self) -> ContractOnly:
        return self

    def reset(self, **kwargs: Any) -> Any:
        return self._real.reset(**kwargs)

    def step(self, actions: Any) -> Any:
        return self._real.step(actions)

    def close(self, **kwargs: Any) -> None:
        self._real.close()


def _stack(env: gym.vector.VectorEnv) -> gym.vector.VectorEnv:
    """Every shipped wrapper: the paper preset (scale noise, pose latency, joint noise, delays, pushes),
    uniform noise on another block, per-env-mass pushes and a model-field term."""
    env = ObservationNoise(paper(env), "keypoints_rel_goal", 0.01, distribution="uniform")
    env = RandomPushes(env, prob_range=(0.05, 0.1), force_scale=5.0, mass_scale="per_env")
    return DomainRandomization(env, [EventTerm("body_mass", 0.8, 1.2, targets=("object",))])


def _rollout(env: gym.vector.VectorEnv, steps: int = 12) -> list[np.ndarray]:
    out = [env.reset(seed=3)[0]]
    rng = np.random.default_rng(0)
    for _ in range(steps):
        out.append(env.step(rng.uniform(-1, 1, (env.num_envs, 29)))[0])
    return out


def test_every_shipped_wrapper_works_on_the_contract_alone_and_changes_nothing_there() -> None:
    kwargs = {"num_envs": 3, "num_tools": 3, "randomization": None, "max_episode_steps": 5}
    alone = _rollout(_stack(ContractOnly(gym.make_vec(mjvec.ENV_ID, **kwargs))))
    direct = _rollout(_stack(gym.make_vec(mjvec.ENV_ID, **kwargs)))
    for a, b in zip(alone, direct, strict=True):
        np.testing.assert_array_equal(a, b)
    assert {ObservationDelay, ActionDelay, ObjectPoseLatency, ObjectScaleNoise} <= {
        type(w) for w in _chain(_stack(gym.make_vec(mjvec.ENV_ID, **kwargs)))}


@pytest.mark.parametrize("env_id", ["playground/Go1JoystickFlatTerrain-v0", "playground/Go1JoystickRoughTerrain-v0"])
def test_the_go1_preset_and_noise_work_on_the_contract_alone_and_change_nothing_there(env_id: str) -> None:
    """The Go1 joystick tasks (a Dict observation, model-field DR of their own fields, the rough one's
    on a heightfield floor)."""
    from mjvec.tasks.go1_joystick.presets import paper as go1_paper

    def stack(env: gym.vector.VectorEnv) -> gym.vector.VectorEnv:
        return ObservationNoise(go1_paper(env), "joint_vel", 0.05, distribution="uniform")

    def rollout(env: gym.vector.VectorEnv) -> list[np.ndarray]:
        out = [env.reset(seed=3)[0]["policy"]]
        rng = np.random.default_rng(0)
        out += [env.step(rng.uniform(-1, 1, (env.num_envs, 12)))[0]["critic"] for _ in range(8)]
        return out

    kwargs = {"num_envs": 3, "obs_mode": "asymmetric", "array_backend": "numpy"}
    alone = rollout(stack(ContractOnly(gym.make_vec(env_id, **kwargs))))
    direct = rollout(stack(gym.make_vec(env_id, **kwargs)))
    for a, b in zip(alone, direct, strict=True):
        np.testing.assert_array_equal(a, b)


def _chain(env: Any) -> list[Any]:
    out = []
    while hasattr(env, "env"):
        out.append(env)
        env = env.env
    return out


def test_require_hooks_checks_every_member_a_wrapper_uses() -> None:
    """A member the contract does not declare cannot be reached (ContractOnly raises): the test above
    passing means require_hooks guarantees all that the wrappers touch."""
    env = ContractOnly(gym.make_vec(mjvec.ENV_ID, num_envs=2, num_tools=2, randomization=None))
    with pytest.raises(AttributeError, match=r"not part of mjvec\.contract"):
        _ = env.backend_private_state
    assert {"xp", "all_rows", "zeros", "asarray", "rng", "lifecycle", "backend", "observation_layouts"} <= MEMBERS


class DictPole(PoleBalanceEnv):
    """PoleBalance with a Dict observation of its own keys (no "policy" key)."""

    pole_layout = (("angle", 1), ("angular_velocity", 1))
    motor_layout = (("command", 1),)

    def __init__(self, backend: Any) -> None:
        super().__init__(backend, threshold=0.5, max_steps=50)
        self.single_observation_space = gym.spaces.Dict({
            "pole": gym.spaces.Box(-np.inf, np.inf, (2,), np.float32),
            "motor": gym.spaces.Box(-np.inf, np.inf, (1,), np.float32),
        })
        self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, self.num_envs)

    def _observe(self) -> dict[str, np.ndarray]:
        return {"pole": super()._observe(), "motor": self.backend.ctrl.astype(np.float32)}


def _dict_pole(num_envs: int = 4) -> DictPole:
    scene = Scene(num_variants=3, make_variant=pole_spec, num_envs=num_envs)
    return DictPole(CpuBackend(scene, num_threads=1, progress=False))


@pytest.mark.parametrize("distribution", ["gaussian", "uniform"])
def test_observation_noise_addresses_any_dict_key_by_its_declared_blocks(distribution: str) -> None:
    env = ObservationNoise(_dict_pole(), "angular_velocity", 0.05, distribution=distribution)
    clean = _dict_pole()
    obs, _ = env.reset(seed=4)
    want, _ = clean.reset(seed=4)
    rows = Rows.all(4, None)
    draws = EnvRandom(np.arange(4), 4)
    for k in range(3):
        stream = "dr/obs_noise/angular_velocity" + ("" if k else "/reset")
        if distribution == "uniform":
            noise = draws.uniform(rows, stream, -0.05, 0.05, (1,)).astype(np.float32)
        else:
            noise = draws.normal(rows, stream, (1,), dtype=np.float32) * 0.05
        np.testing.assert_array_equal(obs["pole"][:, 1:], want["pole"][:, 1:] + noise)
        np.testing.assert_array_equal(obs["pole"][:, :1], want["pole"][:, :1])  # other blocks and keys untouched
        np.testing.assert_array_equal(obs["motor"], want["motor"])
        action = np.full((4, 1), 0.3 * k)
        obs, *_ = env.step(action)
        want, *_ = clean.step(action)


def test_observation_noise_names_the_keys_and_blocks_it_knows() -> None:
    with pytest.raises(ConfigError, match=r"block 'tilt' is not one of the observation's blocks "
                                          r"\{'motor': \['command'\], 'pole': \['angle', 'angular_velocity'\]\}"):
        ObservationNoise(_dict_pole(), "tilt", 0.1)
    with pytest.raises(ConfigError, match=r"key 'camera' has no named blocks; keys with blocks are"):
        ObservationNoise(_dict_pole(), "angle", 0.1, key="camera")
