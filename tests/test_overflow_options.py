"""mujoco_warp's buffer sizes reach the Warp backend through make_vec and the CLI, and are refused
where they mean nothing; the overflow error names that route; overflow_check_interval is validated.

Oracles: the sizes mujoco_warp's own Data was built with, and the overflow the backend reports with
a buffer too small for the scene's contacts (the same env with the default sizes does not overflow).
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import mjvec  # noqa: F401  (registers the mjvec ids)
from mjvec.backends.base import Scene
from mjvec.errors import ConfigError
from tests.toy_env import pendulum_spec

ANT = "mjvec/Ant-v5"


def test_buffer_sizes_are_refused_on_a_backend_whose_buffers_grow():
    message = r"nconmax/njmax .*size the fixed contact and constraint buffers of \{warp\}; backend='cpu' grows"
    with pytest.raises(ConfigError, match=message):
        gym.make_vec(ANT, num_envs=1, nconmax=64)
    with pytest.raises(ConfigError, match=message):
        gym.make_vec(ANT, num_envs=1, backend="cpu", njmax=64)


@pytest.mark.parametrize("bad", [0, -1, 1.5, "10", True])
@pytest.mark.parametrize("name", ["nconmax", "njmax"])
def test_buffer_sizes_must_be_positive_ints(name, bad):
    with pytest.raises(ConfigError, match=rf"{name} must be an int >= 1 or None, got {bad!r}"):
        gym.make_vec(ANT, num_envs=1, backend="warp", device="cpu", **{name: bad})


@pytest.mark.parametrize("bad", [0, -1, 1.5, "10", True])
def test_overflow_check_interval_must_be_a_positive_int(bad):
    from mjvec.backends.warp import WarpBackend

    scene = Scene(num_variants=1, make_variant=pendulum_spec, num_envs=1)
    with pytest.raises(ConfigError, match=rf"overflow_check_interval must be an int >= 1, got {bad!r}"):
        WarpBackend(scene, device="cpu", overflow_check_interval=bad)


def test_make_vec_buffer_sizes_reach_mujoco_warp_and_fix_an_overflow():
    small = gym.make_vec(ANT, num_envs=2, backend="warp", device="cpu", array_backend="numpy", nconmax=1, njmax=40)
    try:
        be = small.unwrapped.backend
        data = be.group_handles[0][1]
        assert (int(data.naconmax), int(data.njmax)) == (2 * 1, 40)  # what mujoco_warp was given
        be.overflow_check_interval = 1
        small.reset(seed=0)
        with pytest.raises(ConfigError, match=r"overflowed .*gym\.make_vec\(\.\.\., nconmax=\.\.\., njmax=\.\.\.\)"
                                              r".*--nconmax N --njmax N"):
            for _ in range(20):
                small.step(np.zeros(small.action_space.shape, np.float32))
    finally:
        small.close()
    roomy = gym.make_vec(ANT, num_envs=2, backend="warp", device="cpu", array_backend="numpy", nconmax=64)
    try:
        roomy.unwrapped.backend.overflow_check_interval = 1
        roomy.reset(seed=0)
        for _ in range(20):
            roomy.step(np.zeros(roomy.action_space.shape, np.float32))
        assert int(roomy.unwrapped.backend.group_handles[0][1].naconmax) == 2 * 64
    finally:
        roomy.close()
