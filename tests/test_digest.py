"""Trajectory digests: SimToolReal-v0 and CubeRotate-v0 with their paper presets, 300 steps with
autoresets (100-step episodes), on both backends, hashed bit for bit (observations, rewards,
terminations, truncations and the info arrays).

The expected digests were recorded before the package was reorganised into one package per task
(mjvec.tasks); a refactor must not change a single bit of any trajectory. A change that is meant to
change trajectories updates them here, with the reason in its commit message. The Warp digests hold
for warp's cpu device (float32 results may differ on a GPU).
"""

from __future__ import annotations

import hashlib

import gymnasium as gym
import numpy as np
import pytest

import mjvec  # noqa: F401  (registers the tasks)

STEPS = 300
NUM_ENVS = 6
EXPECTED = {
    ("SimToolReal-v0", "cpu"): "5e92ab60661eae27daedee1394087324",
    ("SimToolReal-v0", "warp"): "0125978e25b1e2f2b2a774924e03ef52",
    ("CubeRotate-v0", "cpu"): "7717a923a298fe24e40ea9d8eed5090f",
    ("CubeRotate-v0", "warp"): "690aa85f557797ac943166206ea4afaa",
}


def _update(digest, value) -> None:
    if isinstance(value, dict):
        for key in sorted(value):
            digest.update(key.encode())
            _update(digest, value[key])
    else:
        array = np.ascontiguousarray(np.asarray(value))
        digest.update(f"{array.dtype}{array.shape}".encode())
        digest.update(array.tobytes())


def trajectory_digest(env_id: str, backend: str) -> str:
    extra = {"device": "cpu"} if backend == "warp" else {"num_threads": 2}
    env = gym.make_vec(env_id, num_envs=NUM_ENVS, backend=backend, randomization="paper", array_backend="numpy",
                       max_episode_steps=100, **extra)
    digest = hashlib.blake2b(digest_size=16)
    obs, info = env.reset(seed=123)
    _update(digest, obs)
    rng = np.random.default_rng(0)
    low, high = env.single_action_space.low, env.single_action_space.high
    for _ in range(STEPS):
        action = rng.uniform(low, high, (NUM_ENVS, *env.single_action_space.shape)).astype(np.float32)
        obs, reward, terminated, truncated, info = env.step(action)
        for value in (obs, reward, terminated, truncated):
            _update(digest, value)
        _update(digest, {k: v for k, v in info.items() if isinstance(v, np.ndarray)})
    env.close()
    return digest.hexdigest()


@pytest.mark.parametrize(("env_id", "backend"), sorted(EXPECTED))
def test_trajectories_are_bit_identical_to_the_recorded_digest(env_id: str, backend: str) -> None:
    assert trajectory_digest(env_id, backend) == EXPECTED[(env_id, backend)]
