"""CubeRotate-v0's compiled kernels (mjvec.tasks.cube_rotate.kernels) against the numpy functions they
stand in for, bit for bit: on states real episodes reach, on adversarial values (signed zeros,
values far beyond the observation clip, quaternions with w < 0, nan and inf), and through whole
episodes with and without the paper preset."""

from __future__ import annotations

import types

import gymnasium as gym
import numpy as np
import pytest

import mjvec  # noqa: F401  (registers the tasks)
from mjvec.tasks.cube_rotate import kernels as cube_kernels
from mjvec.tasks.cube_rotate import terms as cube_terms

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _env(num_envs: int = 12, steps: int = 15, **kwargs) -> gym.vector.VectorEnv:
    env = gym.make_vec("CubeRotate-v0", num_envs=num_envs, num_threads=1, **kwargs)
    env.reset(seed=3)
    rng = np.random.default_rng(2)
    for _ in range(steps):
        env.step(rng.uniform(-1, 1, env.action_space.shape).astype(np.float32))
    return env


def _generic(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cube_kernels, "observe", lambda env: None)
    monkeypatch.setattr(cube_kernels, "evaluate", lambda env, active: None)


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.uint8)


def _assert_same(got: np.ndarray, want: np.ndarray, what: str) -> None:
    """Equal bits; where both are nan the sign and payload are not compared."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, what
    nan = np.isnan(want) if want.dtype.kind == "f" else np.zeros(want.shape, bool)
    if want.dtype.kind == "f":
        np.testing.assert_array_equal(np.isnan(got), nan, err_msg=what)
    np.testing.assert_array_equal(_bits(np.where(nan, 0, got)), _bits(np.where(nan, 0, want)), err_msg=what)


def _adversarial(a: np.ndarray, rng: np.random.Generator, specials: list[float]) -> np.ndarray:
    out = a.copy()
    flat = out.reshape(-1)
    picks = rng.choice(flat.size, size=max(1, flat.size // 5), replace=False)
    flat[picks] = np.asarray(specials)[rng.integers(0, len(specials), picks.size)]
    return out


def _swap_state(task, qpos: np.ndarray, qvel: np.ndarray, site_xpos: np.ndarray, force: np.ndarray) -> None:
    task.backend = types.SimpleNamespace(qpos=qpos, qvel=qvel, model=task.backend.model, num_envs=task.num_envs)
    task._site_xpos, task._actuator_force = site_xpos, force


def _both(task, active: np.ndarray, monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernels' observation and evaluation (with the state they move on) against numpy's."""
    saved = task.targets.copy(), task._prev_quat.copy()
    got_obs = cube_kernels.observe(task)
    fused = cube_kernels.evaluate(task, active)
    moved = task.targets.copy(), task._prev_quat.copy()
    np.copyto(task.targets, saved[0])
    np.copyto(task._prev_quat, saved[1])
    with monkeypatch.context() as m:
        _generic(m)
        want_obs = task._observe()
        want = task._evaluate(active)
    assert got_obs is not None and fused is not None
    _assert_same(got_obs, want_obs, "observation")
    rows, reward, angvel_z, drop = fused
    reward_w, drop_w, _, info_w = want
    _assert_same(reward, reward_w, "reward")
    _assert_same(drop, drop_w, "dropped")
    _assert_same(angvel_z, info_w["cube_angvel_z"], "cube_angvel_z")
    for name, row in zip(cube_terms.REWARD_TERMS, rows, strict=True):
        _assert_same(row, info_w["reward_terms"][name], name)
    _assert_same(moved[0], task.targets, "targets")
    _assert_same(moved[1], task._prev_quat, "previous orientation")


@pytest.mark.parametrize(("num_envs", "steps"), [(12, 0), (12, 15), (12, 40), (1, 15), (2, 15)])
def test_kernels_give_numpys_bits_on_episode_states(num_envs: int, steps: int,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """One env included: numpy then sums the energy's one (contiguous) row pairwise, not in sequence."""
    env = _env(num_envs=num_envs, steps=steps)
    task = env.unwrapped
    active = np.ones(task.num_envs, bool)
    active[::3] = num_envs == 1
    _both(task, active, monkeypatch)


@pytest.mark.parametrize("num_envs", [12, 1])
def test_kernels_give_numpys_bits_on_adversarial_states(num_envs: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Signed zeros, values beyond the clip, w < 0 rows; nan and inf in everything but the cube's
    orientation (the observation kernel takes those too); forces and velocities over six decades
    (so the order of the energy's sum shows); the layout's width."""
    env = _env(num_envs=num_envs)
    task = env.unwrapped
    rng = np.random.default_rng(9)
    specials = [0.0, -0.0, 1e6, -1e6, 1e-300, -5e-324, 11.0, -11.0, 50.0]
    base = [np.array(a, copy=True) for a in (task.backend.qpos, task.backend.qvel, task._site_xpos,
                                                task._actuator_force)]
    for trial in range(6):
        spread = [a * 10.0 ** rng.uniform(-3, 3, a.shape) for a in base]
        qpos, qvel, sites, force = (_adversarial(a, rng, specials + ([np.nan, np.inf] if trial % 2 else []))
                                    for a in spread)
        quat = qpos[:, task._cube_qpos + 3:task._cube_qpos + 7]
        quat[:] = rng.normal(size=quat.shape)  # finite, unnormalized, w of either sign
        quat[0] = [-0.0, 1.0, -0.0, 0.0] if trial < 3 else task._prev_quat[0]  # the last: no turn
        quat[-1] = task._prev_quat[-1]  # no turn: the small-angle branch
        task._actions = rng.uniform(-1, 1, task._actions.shape)
        task._actions[0, :4] = [-0.0, 0.0, 1e-300, -1e200]
        task._step_targets = _adversarial(task._step_targets, rng, specials)
        _swap_state(task, qpos, qvel, sites, force)
        _both(task, rng.random(task.num_envs) < 0.7, monkeypatch)
    assert cube_kernels.observe(task).shape == (task.num_envs, cube_terms.layout_size(cube_terms.POLICY_LAYOUT))


def test_a_non_finite_turn_or_another_layout_takes_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    """A nan or inf in the cube's orientation makes the evaluation kernel refuse with nothing
    written; actions whose rows are not contiguous (numpy would sum them in another order), another
    policy layout and a float32 state take the numpy functions."""
    env = _env()
    task = env.unwrapped
    qpos = np.array(task.backend.qpos, copy=True)
    qpos[4, task._cube_qpos + 5] = np.nan
    _swap_state(task, qpos, np.array(task.backend.qvel), np.array(task._site_xpos), np.array(task._actuator_force))
    saved = task.targets.copy(), task._prev_quat.copy()
    active = np.ones(task.num_envs, bool)
    assert cube_kernels.evaluate(task, active) is None
    _assert_same(task.targets, saved[0], "targets untouched")
    _assert_same(task._prev_quat, saved[1], "previous orientation untouched")
    qpos[4, task._cube_qpos + 5] = 0.5
    task._actions = np.asfortranarray(task._actions)
    assert cube_kernels.evaluate(task, active) is None
    task._actions = np.ascontiguousarray(task._actions)
    assert cube_kernels.evaluate(task, active) is not None
    task.policy_layout = cube_terms.POLICY_LAYOUT[:-1]  # a subclass's own layout: not the kernel's
    assert cube_kernels.observe(task) is None
    del task.policy_layout
    assert cube_kernels.observe(task) is not None
    task.backend.qpos = qpos.astype(np.float32)
    assert cube_kernels.observe(task) is None


@pytest.mark.parametrize("preset", ["none", "paper"])
def test_whole_episodes_are_the_same_with_and_without_the_kernels(preset: str,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Two runs of 60 steps with resets (the same seed and actions): every observation, reward,
    flag and info the same bits."""

    def run() -> list:
        env = gym.make_vec("CubeRotate-v0", num_envs=10, num_threads=1, randomization=preset)
        out = [env.reset(seed=11)]
        rng = np.random.default_rng(4)
        for _ in range(60):
            out.append(env.step(rng.uniform(-1, 1, env.action_space.shape).astype(np.float32)))
        return out

    calls = {"observe": 0, "evaluate": 0}
    for name in calls:
        inner = getattr(cube_kernels, name)

        def counted(*args, _inner=inner, _name=name):
            out = _inner(*args)
            calls[_name] += out is not None
            return out

        monkeypatch.setattr(cube_kernels, name, counted)
    fused = run()
    assert calls["observe"] >= 60 and calls["evaluate"] == 60
    _generic(monkeypatch)
    plain = run()
    flat_fused, flat_plain = [], []
    for record, into in ((fused, flat_fused), (plain, flat_plain)):
        for item in record:
            for part in item:
                if isinstance(part, dict):
                    into.extend(_flatten(part))
                else:
                    into.append(("", np.asarray(part)))
    assert [k for k, _ in flat_fused] == [k for k, _ in flat_plain]
    for (key, got), (_, want) in zip(flat_fused, flat_plain, strict=True):
        _assert_same(got, want, key)


def _flatten(info: dict, prefix: str = "") -> list:
    out = []
    for key in sorted(info):
        value = info[key]
        if isinstance(value, dict):
            out.extend(_flatten(value, f"{prefix}{key}/"))
        else:
            out.append((prefix + key, np.asarray(value)))
    return out
