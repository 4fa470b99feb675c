"""CubeRotate-v0 on the Warp backend (warp's cpu device) vs the CPU backend.

Warp is float32 and its solver rounds differently, and the fingertips press on the cube, so the
two trajectories drift apart through the contacts: over 20 control steps of random actions in
[-0.2, 0.2] (4 envs, seeds 3, 4 and 5, autoresets included) the measured maxima on mujoco-warp 4.0
were 2.8e-8 on the first observation, 5.3e-5 rad on the hand joints, 2.1e-5 m on the cube
position and 2.3e-4 on the reward; by 40 steps two seeds reached 8e-3 and 1.1e-2 rad (contact chaos). The
tolerances below are about 20x the measured maxima; terminations must agree exactly.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import mjvec  # noqa: F401  (registers the tasks)

KW = {"num_envs": 4, "array_backend": "numpy"}


@pytest.mark.parametrize("seed", [3, 4])
def test_cpu_and_warp_agree_within_tolerance(seed):
    cpu = gym.make_vec("CubeRotate-v0", backend="cpu", num_threads=1, **KW)
    warp = gym.make_vec("CubeRotate-v0", backend="warp", device="cpu", **KW)
    assert cpu.single_observation_space == warp.single_observation_space
    oc, _ = cpu.reset(seed=seed)
    ow, _ = warp.reset(seed=seed)
    np.testing.assert_allclose(oc, ow, atol=1e-6)
    rng = np.random.default_rng(seed)
    for _ in range(20):
        a = rng.uniform(-0.2, 0.2, (4, 22))
        _, rc, tc, _, _ = cpu.step(a)
        _, rw, tw, _, _ = warp.step(a)
        qc, qw = cpu.unwrapped.backend.qpos, warp.unwrapped.backend.qpos
        np.testing.assert_allclose(qc[:, :22], qw[:, :22], atol=1e-3)
        np.testing.assert_allclose(qc[:, 22:25], qw[:, 22:25], atol=5e-4)
        np.testing.assert_allclose(rc, rw, atol=5e-3)
        np.testing.assert_array_equal(tc, tw)
    cpu.close()
    warp.close()
