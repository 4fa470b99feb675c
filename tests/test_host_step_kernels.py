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


def test_the_mass_center_kernel_is_gymnasiums_expression_per_env() -> None:
    """Humanoid-v5's mass centre, compiled, against Gymnasium's own line run on each env alone:
    ``(np.sum(mass * xipos, axis=0) / np.sum(mass))[0:2]``, with per-env (randomized) masses, large
    and small positions, and the kept total given or not."""
    from mjvec.tasks.gym_mujoco.terms import mass_center

    rng = np.random.default_rng(8)
    n, nbody = 300, 14
    masses = rng.uniform(0.0, 8.0, (n, nbody)) * rng.choice([1e-3, 1.0, 1e3], (n, 1))
    masses[:, 0] = 0.0  # the world body
    xipos = rng.normal(size=(n, nbody, 3)) * rng.choice([1e-6, 1.0, 1e6], (n, nbody, 1))
    want = np.stack([(np.sum(masses[e][:, None] * xipos[e], axis=0) / np.sum(masses[e][:, None]))[0:2]
                     for e in range(n)])
    for got in (mass_center(masses, xipos), mass_center(masses, xipos, masses.sum(axis=1, keepdims=True))):
        assert got.shape == (n, 2)
        np.testing.assert_array_equal(got.view(np.int64), want.view(np.int64))
