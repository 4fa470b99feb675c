"""benchmarks.host_cache: its stand-ins replace the physics without moving the state, the backend's
own step is back afterwards, and its host figures leave out the backend's step and the resets (the
benchmark itself is run by hand: rule 9, never a timed test)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import mjvec  # noqa: F401
from benchmarks import host_cache


def _env(num_envs: int = 3) -> gym.vector.VectorEnv:
    env = gym.make_vec("mjvec/HalfCheetah-v5", num_envs=num_envs, num_threads=1)
    env.reset(seed=0)
    return env


def _actions(env: gym.vector.VectorEnv) -> np.ndarray:
    space = env.action_space
    return np.random.default_rng(1).uniform(space.low, space.high).astype(space.dtype)


def test_a_stand_in_steps_no_physics_and_the_backends_step_is_back_afterwards() -> None:
    env = _env()
    base = env.unwrapped
    calls = []
    qpos = base.backend.qpos.copy()
    with host_cache.stand_in(base.backend, lambda: calls.append(1)):
        for _ in range(4):
            env.step(_actions(env))
        np.testing.assert_array_equal(base.backend.qpos, qpos)  # the state did not move
    assert calls == [1, 1, 1, 1] and "step" not in vars(base.backend)
    env.step(_actions(env))
    assert not np.array_equal(base.backend.qpos, qpos)  # the backend's own step again
    env.close()


def test_restored_puts_back_an_instance_attribute_that_was_there() -> None:
    class Owner:
        def step(self) -> str:
            return "class"

    owner = Owner()
    owner.step = lambda: "instance"
    with host_cache.restored(owner, "step"):
        owner.step = lambda: "replaced"
        assert owner.step() == "replaced"
    assert owner.step() == "instance"
    with pytest.raises(RuntimeError, match="inside"), host_cache.restored(owner, "other"):
        owner.other = 1
        raise RuntimeError("inside")
    assert "other" not in vars(owner)


def test_each_mode_records_host_time_less_the_stand_in_and_the_resets(capsys) -> None:
    cases = host_cache.main(["--tasks", "mjvec/HalfCheetah-v5", "--num-envs", "3", "--threads", "1", "--steps", "8",
                             "--repeats", "2", "--evict-mib", "1"])
    (case,) = cases
    assert [len(case.samples[m]) for m in host_cache.MODES] == [2, 2, 2, 2]
    assert len(case.physics_seconds) == 1 + 2 and min(case.physics_seconds) > 0  # warm-up and repeats
    assert "step" not in vars(case.base.backend)
    assert all(value > 0 for value in case.medians().values())
    for mode in host_cache.MODES:  # only the physics mode moves the state
        before = case.base.backend.qpos.copy()
        case.run(mode)
        assert np.array_equal(case.base.backend.qpos, before) == (mode != "physics"), mode
    out = capsys.readouterr().out
    assert "mjvec/HalfCheetah-v5 num_envs=3 threads=1: host us per step, less resets: physics" in out
    assert "(1.00x warm)" in out


def test_the_spin_is_calibrated_to_its_rate() -> None:
    spin = host_cache.Spin(calibration=100_000)
    assert spin.rate > 0
    assert spin.iterations(0.0) == 0 and spin.iterations(-1.0) == 0
    assert spin.iterations(2.0) == round(2.0 * spin.rate)
