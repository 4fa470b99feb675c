"""A task author's mistakes get a ConfigError naming the hook or argument and what it must be.

Each case is the working third task (tests/third_task.py) with one mistake; before, each stopped
with a raw Python error (not enough values to unpack, a numpy TypeError, 'MjModel' has no
attribute 'compile', max() of an empty sequence, cannot unpack a function, namespaces split into
letters) or, for an options field named like a make_vec argument, silently lost the value.
Oracle: the same task without the mistake builds and steps (the last test).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import gymnasium as gym
import numpy as np
import pytest

from mjvec.envs.registry import register_task, unregister_task
from mjvec.errors import ConfigError
from tests import third_task as T

ID = "AuthorMistake-v0"


@pytest.fixture(autouse=True)
def _unregister():
    yield
    from mjvec.envs.registry import registered_tasks

    if ID in registered_tasks():
        unregister_task(ID)


def _register(**changes):
    args = dict(env_class=T.PoleBalanceEnv, options=T.PoleBalanceOptions,
                variants=lambda opts: (T.NUM_POLES, T.pole_spec),
                env_kwargs=lambda opts: {"threshold": opts.threshold, "max_steps": T.DEFAULT_MAX_STEPS})
    args.update(changes)
    return register_task(ID, **args)


def _step_once(env_class: type) -> None:
    _register(env_class=env_class)
    env = gym.make_vec(ID, num_envs=2)
    try:
        env.reset(seed=0)
        env.step(np.zeros((2, 1), np.float32))
    finally:
        env.close()


def test_evaluate_must_return_four_values():
    class ThreeValues(T.PoleBalanceEnv):
        def _evaluate(self, active):
            return super()._evaluate(active)[:3]

    with pytest.raises(ConfigError, match=r"ThreeValues\._evaluate must return a tuple \(reward, terminated, "
                                          r"truncated, info\) of 4 items, got a tuple of 3"):
        _step_once(ThreeValues)


def test_evaluate_rewards_must_be_arrays_not_lists():
    class ListReward(T.PoleBalanceEnv):
        def _evaluate(self, active):
            reward, *rest = super()._evaluate(active)
            return (reward.tolist(), *rest)

    with pytest.raises(ConfigError, match=r"ListReward\._evaluate returned reward as a list; it must be an array "
                                          r"of the env's namespace \(self\.xp\), shape \(2,\)"):
        _step_once(ListReward)


def test_make_variant_must_return_an_mjspec_not_a_compiled_model():
    _register(variants=lambda opts: (T.NUM_POLES, lambda v: T.pole_spec(v).compile()))
    with pytest.raises(ConfigError, match=r"AuthorMistake-v0: make_variant\(0\) returned a MjModel; it must return "
                                          r"a fresh mujoco\.MjSpec .*leave out \.compile\(\)"):
        gym.make_vec(ID, num_envs=2)


@pytest.mark.parametrize(("variants", "got"), [
    (lambda opts: (0, T.pole_spec), r"num_variants=0"),
    (lambda opts: T.pole_spec, r"got <function pole_spec"),
    (lambda opts: (2.0, T.pole_spec), r"num_variants=2\.0"),
    (lambda opts: (2, "spec"), r"make_variant='spec'"),
])
def test_variants_must_return_a_count_and_a_builder(variants, got):
    _register(variants=variants)
    with pytest.raises(ConfigError, match=r"AuthorMistake-v0: variants\(opts\) must return \(num_variants, "
                                          r"make_variant\): an int >= 1 and a callable v -> MjSpec; " + got):
        gym.make_vec(ID, num_envs=2)


def test_namespaces_must_be_a_sequence_not_a_str():
    with pytest.raises(ConfigError, match=r"namespaces must be a sequence of names, \('numpy',\) or \('numpy', "
                                          r"'torch'\), not the str 'numpy'; write namespaces=\('numpy',\)"):
        _register(namespaces="numpy")


@pytest.mark.parametrize("field", ["num_envs", "vectorization_mode", "wrappers", "vector_kwargs"])
def test_an_option_named_like_a_make_vec_argument_is_refused(field):
    options = dataclasses.make_dataclass("Shadowing", [(field, int, dataclasses.field(default=3))],
                                         bases=(T.PoleBalanceOptions,), frozen=True)
    with pytest.raises(ConfigError, match=rf"options field {field!r} of Shadowing is an argument of gym\.make_vec "
                                          r"itself, so it would never reach the options.*rename it"):
        _register(options=options)


def test_the_task_without_a_mistake_builds_and_steps():
    @dataclass(frozen=True)
    class Fine(T.PoleBalanceOptions):
        pass

    _register(options=Fine, namespaces=["numpy"])
    env = gym.make_vec(ID, num_envs=2)
    try:
        env.reset(seed=0)
        reward = env.step(np.zeros((2, 1), np.float32))[1]
        assert reward.shape == (2,) and np.all(reward <= 0)
    finally:
        env.close()
