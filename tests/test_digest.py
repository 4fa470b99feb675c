"""Trajectory digests: SimToolReal-v0 and CubeRotate-v0 with their paper presets, 300 steps with
autoresets (100-step episodes), on both backends, hashed bit for bit (observations, rewards,
terminations, truncations and the info arrays).

A refactor must not change a single bit of any trajectory; a change that is meant to change
trajectories re-records them here (`python -m tests.digests`), with the reason in its commit
message. They were last re-recorded when mjvec's own float math became CPU-independent
(`mjvec.portable`), and the CPU ones again when the CPU backend stopped stepping NEXT_STEP
autoreset envs (tests/test_partial_step.py): what changed are only the info rows of those envs in
those steps, which their masks mark as not meaningful (computed from the unstepped state instead of
a discarded step's); everything else is bit-identical, checked there against the whole step. Each
digest is recorded per C-library math class (tests/digests.py): it holds
on every CPU of that class, with any numpy SIMD dispatch and any OpenBLAS kernel
(tests/test_portability.py runs this file under each). The Warp digests hold for warp's cpu device
(float32 results may differ on a GPU), per torch CPU math as well (tests/digests.py).
"""

from __future__ import annotations

import hashlib

import gymnasium as gym
import numpy as np
import pytest

import mjvec  # noqa: F401  (registers the tasks)
from tests.digests import expected, update

STEPS = 300
NUM_ENVS = 6
EXPECTED = {
    ("SimToolReal-v0", "cpu"): {"glibc-fma": "27b9a40640d1111e515c77580a18e39b",
                                "glibc-no-fma": "f331ec137d836132c60e3569961cf7d3"},
    ("SimToolReal-v0", "warp"): {"glibc-fma+torch-d9c56c39": "4771d9f4ad8dcfb4853024db1f143d6a",
                                 "glibc-fma+torch-d725f104": "5fa1736ffb9ae9d6838ae895e8d0f4b6"},
    ("CubeRotate-v0", "cpu"): {"glibc-fma": "99c79eb5aafdb1efb2c71d3b4d558a05",
                               "glibc-no-fma": "04000e43794be97bf032dbc9f1b99a32"},
    ("CubeRotate-v0", "warp"): {"glibc-fma+torch-d9c56c39": "f3de5bd4033c846603baf6d138a2dddc",
                                "glibc-fma+torch-d725f104": "f3de5bd4033c846603baf6d138a2dddc"},
}


def trajectory_digest(env_id: str, backend: str) -> str:
    extra = {"device": "cpu"} if backend == "warp" else {"num_threads": 2}
    env = gym.make_vec(env_id, num_envs=NUM_ENVS, backend=backend, randomization="paper", array_backend="numpy",
                       max_episode_steps=100, **extra)
    digest = hashlib.blake2b(digest_size=16)
    obs, info = env.reset(seed=123)
    update(digest, obs)
    rng = np.random.default_rng(0)
    low, high = env.single_action_space.low, env.single_action_space.high
    for _ in range(STEPS):
        action = rng.uniform(low, high, (NUM_ENVS, *env.single_action_space.shape)).astype(np.float32)
        obs, reward, terminated, truncated, info = env.step(action)
        for value in (obs, reward, terminated, truncated):
            update(digest, value)
        update(digest, {k: v for k, v in info.items() if isinstance(v, np.ndarray)})
    env.close()
    return digest.hexdigest()


@pytest.mark.parametrize(("env_id", "backend"), sorted(EXPECTED))
def test_trajectories_are_bit_identical_to_the_recorded_digest(env_id: str, backend: str) -> None:
    assert trajectory_digest(env_id, backend) == expected(EXPECTED, (env_id, backend), torch_math=backend == "warp")
