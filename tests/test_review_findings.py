"""Code review findings of issue 26: one WARNING per CPU simulation failure, `Rows.put_columns` on
the target's device, and numpy integers as `num_cubes`.

Oracles: the log records themselves (counted), a numpy `Rows` write of the same values (the host
selection path, no device involved) and torch's "meta" device (arrays with a device but no data,
on which mixing in a host tensor raises), and the env built with a Python int.
"""

from __future__ import annotations

import logging

import gymnasium as gym
import numpy as np
import pytest
import torch

import mjvec  # noqa: F401  (registers the tasks)
from mjvec.errors import ConfigError
from mjvec.xp import Rows
from tests.toy_env import ToyPendulumEnv


def test_a_cpu_simulation_failure_is_logged_once_at_warning(caplog: pytest.LogCaptureFixture) -> None:
    env = ToyPendulumEnv(4)
    env.reset(seed=0)
    env.backend.qvel[2] = np.nan  # a real MuJoCo failure in env 2 (MuJoCo resets it and warns)
    with caplog.at_level(logging.DEBUG):
        *_, info = env.step(np.zeros((4, *env.single_action_space.shape)))
    env.close()
    assert info["sim_error"].tolist() == [False, False, True, False]
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [(r.name, r.getMessage()) for r in warnings] == [
        ("mjvec.envs.base", "simulation error in envs [2] (global ids [2]): reset them and returned truncated=True")]
    # The backend's own account stays available, one level down.
    assert [r.name for r in caplog.records if r.levelno == logging.DEBUG and "failed" in r.getMessage()] == [
        "mjvec.backends.cpu.engine"]


def test_put_columns_builds_its_values_on_the_targets_device() -> None:
    mask = np.array([True, False, True, False, True])
    columns = np.array([0, 2])
    values = np.arange(10.0).reshape(5, 2)
    expected = np.zeros((5, 3))
    Rows.of_mask(mask).put_columns(expected, columns, values[mask])  # the host path: ids, no device
    target = torch.zeros((5, 3), dtype=torch.float64)
    Rows.of_mask(torch.as_tensor(mask)).put_columns(target, columns, values)  # device rows: all N rows
    np.testing.assert_array_equal(target.numpy(), expected)
    # On a device the host values must be moved there: on "meta", a host tensor mixed in raises.
    meta = torch.zeros((5, 3), device="meta")
    Rows.of_mask(torch.as_tensor(mask, device="meta")).put_columns(meta, columns, values)
    assert meta.device.type == "meta" and meta.dtype == torch.float32


def test_num_cubes_takes_numpy_integers_like_the_other_counts() -> None:
    kwargs = {"num_envs": 3, "num_threads": 1}
    numpy_env = gym.make_vec("CubeRotate-v0", num_cubes=np.int64(2), **kwargs)
    int_env = gym.make_vec("CubeRotate-v0", num_cubes=2, **kwargs)
    assert numpy_env.unwrapped.cube_ids.tolist() == [0, 1, 0]  # env g holds cube g % num_cubes
    np.testing.assert_array_equal(numpy_env.unwrapped.cube_ids, int_env.unwrapped.cube_ids)
    np.testing.assert_array_equal(numpy_env.reset(seed=3)[0], int_env.reset(seed=3)[0])
    numpy_env.close()
    int_env.close()
    for bad in (2.0, np.bool_(True), True):
        with pytest.raises(ConfigError, match=rf"num_cubes must be an int in \[1, \d+\].*got {bad!r}"):
            gym.make_vec("CubeRotate-v0", num_cubes=bad, **kwargs)
