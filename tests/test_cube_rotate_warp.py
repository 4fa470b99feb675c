"""CubeRotate-v0 on the Warp backend (warp's cpu device) vs the CPU backend.

Warp is float32 and its solver rounds differently, so the comparison has a stated tolerance
(measured on mujoco-warp 4.0 over 40 control steps of random actions, 4 envs): first observations
within 1e-6 (measured 3.0e-8); hand joint positions within 1e-4 rad (measured 1.2e-6); cube
positions within 1e-4 m (measured 3.5e-6); rewards within 1e-3 (measured 5.4e-5); terminations equal.
"""

from __future__ import annotations

import os

os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import gymnasium as gym
import numpy as np

import mjvec  # noqa: F401  (registers the tasks)

KW = {"num_envs": 4, "autoreset_mode": "disabled", "array_backend": "numpy"}


def test_cpu_and_warp_agree_within_tolerance():
    cpu = gym.make_vec("CubeRotate-v0", backend="cpu", num_threads=1, **KW)
    warp = gym.make_vec("CubeRotate-v0", backend="warp", device="cpu", **KW)
    assert cpu.single_observation_space == warp.single_observation_space
    oc, _ = cpu.reset(seed=3)
    ow, _ = warp.reset(seed=3)
    np.testing.assert_allclose(oc, ow, atol=1e-6)
    rng = np.random.default_rng(0)
    for _ in range(40):
        a = rng.uniform(-0.5, 0.5, (4, 22))
        _, rc, tc, _, _ = cpu.step(a)
        _, rw, tw, _, _ = warp.step(a)
        qc, qw = cpu.unwrapped.backend.qpos, warp.unwrapped.backend.qpos
        np.testing.assert_allclose(qc[:, :22], qw[:, :22], atol=1e-4)
        np.testing.assert_allclose(qc[:, 22:25], qw[:, 22:25], atol=1e-4)
        np.testing.assert_allclose(rc, rw, atol=1e-3)
        np.testing.assert_array_equal(tc, tw)
    cpu.close()
    warp.close()
