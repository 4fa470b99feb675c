"""Trajectory digests of SimToolReal-v0's asymmetric observation (policy + critic), 300 paper-preset
steps, on the paths tests/test_digest.py does not take: frequent successes (so new goals re-arm the
best distances the critic shows), autoresets in NEXT_STEP and SAME_STEP mode, and partial resets
(some reseeded) between steps.

The expected digests were recorded at commit 6fa7fef, before `SimToolRealEnv` became records and
pure builders (its critic then measured the distances again instead of reading the step's); a
refactor must not change a bit of them. The two next_step digests were re-recorded once, when
next_step autoreset steps began to carry the reset envs' reset info (the NEXT_STEP reset-info fix):
observations, rewards, terminations and truncations hashed alone were unchanged by it. All three were
re-recorded when SimToolReal-v0 was brought closer to the source (the policy's w >= 0 orientation, the
pushes drawn from the current lifted flag, the curriculum recording at every reset), and again when
mjvec's own float math became CPU-independent (`mjvec.portable`). The CPU next_step digest was
re-recorded when the CPU backend stopped stepping NEXT_STEP autoreset envs: only those envs' info
rows marked not meaningful changed (tests/test_partial_step.py checks the rest bit for bit against
the whole step; the same_step digest, which has no such steps, is unchanged). Same hashing and the same
per-libm-class recording as tests/test_digest.py (episode wall times left out). The Warp digest
holds for warp's cpu device.
"""

from __future__ import annotations

import hashlib

import gymnasium as gym
import numpy as np
import pytest

import mjvec  # noqa: F401  (registers the tasks)
from mjvec.tasks.simtoolreal.config import SimToolRealConfig
from tests.digests import expected, update

STEPS = 300
NUM_ENVS = 6
# A goal is reached at every step within a loose tolerance that the curriculum tightens often, and
# an episode ends after a few successes: new goals and autoresets happen throughout.
SUCCESSES = SimToolRealConfig(tolerance_start=1.0, success_steps=1, max_consecutive_successes=5, curriculum_interval=7,
                              curriculum_min_successes=1.0, max_episode_steps=100)
EXPECTED = {
    ("cpu", "next_step", True): {"glibc-fma": "607894b710a62e8dde37656f5fbb0df4",
                                 "glibc-no-fma": "06b205d7cffc8740b6af2462cd638b4a"},
    ("cpu", "same_step", False): {"glibc-fma": "b588587ce41d6a021393a8efff8fc18c",
                                  "glibc-no-fma": "d5ef32182077de1ab0744f1766cb7c38"},
    ("warp", "next_step", True): {"glibc-fma+torch-d9c56c39": "45ba3cc17940df3e71006ccb97428eb7",
                                  "glibc-fma+torch-d725f104": "bc276e466c429eb75549405a8b997fc1"},
}


def _step_info(info: dict) -> dict:
    info = {k: ({e: x for e, x in v.items() if e != "t"} if k == "episode" else v) for k, v in info.items()}
    return {k: v for k, v in info.items() if isinstance(v, (np.ndarray, dict)) and not k.startswith("final")}


def critic_digest(backend: str, mode: str, partial: bool) -> str:
    extra = {"device": "cpu"} if backend == "warp" else {"num_threads": 2}
    env = gym.make_vec("SimToolReal-v0", num_envs=NUM_ENVS, backend=backend, randomization="paper",
                       array_backend="numpy", obs_mode="asymmetric", autoreset_mode=mode,
                       record_episode_statistics=True, config=SUCCESSES, **extra)
    digest = hashlib.blake2b(digest_size=16)
    obs, info = env.reset(seed=123)
    update(digest, obs)
    update(digest, {k: v for k, v in info.items() if isinstance(v, np.ndarray)})
    rng = np.random.default_rng(0)
    low, high = env.single_action_space.low, env.single_action_space.high
    for t in range(STEPS):
        obs, reward, terminated, truncated, info = env.step(rng.uniform(low, high, (NUM_ENVS, 29)).astype(np.float32))
        for value in (obs, reward, terminated, truncated):
            update(digest, value)
        update(digest, _step_info(info))
        if "final_obs" in info:
            update(digest, info["final_obs"])
        if partial and t % 37 == 5:
            update(digest, env.reset(options={"reset_mask": rng.random(NUM_ENVS) < 0.5})[0])
        if partial and t % 53 == 7:
            update(digest, env.reset(seed=7 + t, options={"reset_mask": np.arange(NUM_ENVS) % 2 == 0})[0])
    env.close()
    return digest.hexdigest()


@pytest.mark.parametrize(("backend", "mode", "partial"), sorted(EXPECTED))
def test_critic_trajectories_are_bit_identical_to_the_recorded_digest(backend: str, mode: str, partial: bool) -> None:
    assert critic_digest(backend, mode, partial) == expected(EXPECTED, (backend, mode, partial),
                                                             torch_math=backend == "warp")
