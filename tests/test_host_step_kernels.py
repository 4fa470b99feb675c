"""The env base's and the randomization wrappers' compiled host passes against the numpy lines they
stand in for, bit for bit: the step rules of `MjVecEnv._evaluate_step` and ObservationNoise's add."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from mjvec.envs.stepping import _host_rules
from mjvec.randomization.perception import _add_in_place


def _generic_rules(reward, term, trunc, active, failed, steps, max_steps):
    rewards = np.where(active, reward.astype(np.float64), 0.0)
    terminated = term.astype(bool) & active
    truncated = trunc.astype(bool)
    if max_steps is not None:
        truncated = truncated | ((steps >= max_steps) & ~terminated)
    return rewards, terminated, (truncated & active) | failed


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("max_steps", [None, 0, 5])
def test_the_step_rules_kernel_is_the_numpy_rules(dtype, max_steps) -> None:
    rng = np.random.default_rng(3)
    n = 400
    reward = rng.normal(size=n).astype(dtype)
    reward[:6] = [np.nan, -0.0, 0.0, np.inf, -np.inf, 1e-45]
    masks = [rng.random(n) < p for p in (0.3, 0.3, 0.8, 0.1)]
    steps = rng.integers(0, 9, n)
    got = _host_rules(reward, *masks, SimpleNamespace(steps=steps, max_steps=max_steps))
    want = _generic_rules(reward, *masks, steps, max_steps)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g.view(np.uint8) if g.dtype == bool else g.view(np.int64),
                                      w.view(np.uint8) if w.dtype == bool else w.view(np.int64))


def test_the_noise_add_is_numpys_float32_add_on_the_block_only() -> None:
    rng = np.random.default_rng(4)
    obs = rng.normal(size=(33, 20)).astype(np.float32)
    noise = (rng.normal(size=(33, 7)).astype(np.float32) * 0.1).astype(np.float32)
    obs[0, 5:8] = [np.inf, -0.0, 3.0e38]
    noise[0, :3] = [-np.inf, 0.0, 3.0e38]
    want = obs.copy()
    with np.errstate(all="ignore"):
        want[:, 5:12] = want[:, 5:12] + noise
    got = obs.copy()
    _add_in_place(got, 5, noise)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.where(np.isnan(want), 0, got.view(np.int32)),
                                  np.where(np.isnan(want), 0, want.view(np.int32)))
