"""The partial step: a NEXT_STEP autoreset env is not stepped on a backend that declares
``capabilities.partial_step`` (the CPU backend), since its reset discards that physics.

Oracles: at the backend, the same scene stepped whole (the stepped envs must match it bit for bit)
and the skipped envs' own state before the call (it must not move); at the env, the same task whose
backend is made to step every env (what the step did before): observations, rewards,
terminations, truncations and every info row its mask marks meaningful must be identical.
"""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import numpy as np
import pytest

import mjvec  # noqa: F401  (registers the tasks)
from mjvec.backends.base import Scene
from mjvec.backends.cpu import CpuBackend
from mjvec.errors import CapabilityError, ConfigError
from tests.scenes import make_scene


def _backend(num_envs: int, *, rne: bool = False, threads: int = 2) -> CpuBackend:
    scene = Scene(num_variants=9, make_variant=make_scene, num_envs=num_envs, rne_post_constraint=rne)
    return CpuBackend(scene, num_threads=threads, progress=False)


def _states(be: CpuBackend) -> np.ndarray:
    """(num_envs, nstate) every env's whole integration state, in env order."""
    groups, rows = be.routing.group_of_env, be.routing.row_of_env
    return np.stack([be.group_batches[g].state[r] for g, r in zip(groups, rows, strict=True)])


# What a step moves: the state (the inputs are the caller's) and outputs of the last forward pass.
MOVED = ("time", "qpos", "qvel", "qacc_warmstart", "qacc", "xpos")


def _moved(be: CpuBackend) -> dict[str, np.ndarray]:
    return {name: be.bind(name).copy() for name in MOVED}


@pytest.mark.parametrize("rne", [False, True], ids=["plain", "rne_post_constraint"])
def test_skipped_envs_keep_their_state_and_the_others_step_as_a_whole_step(rne: bool) -> None:
    part, whole = _backend(18, rne=rne), _backend(18, rne=rne)
    assert part.num_groups == 2 and part.capabilities.partial_step
    rng = np.random.default_rng(4)
    for it in range(40):
        ctrl = rng.uniform(-1, 1, (18, 2))
        part.ctrl[:], whole.ctrl[:] = ctrl, ctrl
        skip = rng.random(18) < 0.3
        skip[0] = it % 2 == 0  # whole groups skipped or not, some steps
        before = _moved(part)
        assert not part.step(3, skip=skip).any()
        after = _states(part)
        for name, values in _moved(part).items():
            np.testing.assert_array_equal(values[skip], before[name][skip], err_msg=name)
        whole.step(3)
        np.testing.assert_array_equal(after[~skip], _states(whole)[~skip])
        np.testing.assert_array_equal(part.qpos[~skip], whole.qpos[~skip])
        if rne:
            np.testing.assert_array_equal(part.bind("cfrc_ext")[~skip], whole.bind("cfrc_ext")[~skip])
        # the oracle catches up: its skipped envs take the partial backend's state
        _copy_states(whole, part, np.flatnonzero(skip))
    assert np.abs(part.qvel).max() > 0.05  # the bodies moved: the comparison saw physics


def _copy_states(dst: CpuBackend, src: CpuBackend, ids: np.ndarray) -> None:
    groups, rows = dst.routing.group_of_env, dst.routing.row_of_env
    for i in ids:
        dst.group_batches[groups[i]].state[rows[i]] = src.group_batches[groups[i]].state[rows[i]]
    dst.forward(ids)


def test_a_skip_of_nobody_is_a_whole_step() -> None:
    part, whole = _backend(9), _backend(9)
    for be in (part, whole):
        be.ctrl[:] = 0.5
    part.step(2, skip=np.zeros(9, bool))
    whole.step(2)
    np.testing.assert_array_equal(_states(part), _states(whole))


def test_skip_errors_name_the_mask_and_the_capability() -> None:
    be = _backend(4)
    with pytest.raises(ConfigError, match=r"takes a \(4,\) numpy bool mask .* got int64 \(4,\)"):
        be.step(1, skip=np.zeros(4, np.int64))
    with pytest.raises(ConfigError, match=r"takes a \(4,\) numpy bool mask .* got bool \(3,\)"):
        be.step(1, skip=np.zeros(3, bool))
    with pytest.raises(ConfigError, match=r"takes a \(4,\) numpy bool mask .* got list"):
        be.step(1, skip=[False] * 4)
    be._capabilities = dataclasses.replace(be.capabilities, partial_step=False)
    with pytest.raises(CapabilityError, match=r"'cpu' backend steps every env .*partial_step is False"):
        be.step(1, skip=np.zeros(4, bool))


# ---- the env: the partial step against the whole step, bit for bit ---------------------------------------

TASKS = {
    "mjvec/Hopper-v5": {},
    "mjvec/Ant-v5": {},  # contact forces: mj_rnePostConstraint after the step
    "CubeRotate-v0": {"randomization": "paper"},
    "SimToolReal-v0": {"randomization": "paper", "max_episode_steps": 7},
    "playground/Go1JoystickFlatTerrain-v0": {"randomization": "paper", "max_episode_steps": 9},
}


def _whole_stepping(env: gym.vector.VectorEnv) -> list[int]:
    """Make env's backend step every env (the oracle); returns a list counting the skips it dropped."""
    backend, dropped = env.unwrapped.backend, []
    inner = backend.step

    def step(nstep: int = 1, *, skip: np.ndarray | None = None) -> np.ndarray:
        if skip is not None:
            dropped.append(int(skip.sum()))
        return inner(nstep)

    backend.step = step
    return dropped


def _meaningful(x: object, y: object, key: str, mask: np.ndarray | None = None) -> list[str]:
    """Keys whose values differ (info rows only where their "_key" mask is True)."""
    if isinstance(x, dict):
        out = []
        for k in x:
            if not k.startswith("_"):
                m = x.get("_" + k)
                out += _meaningful(x[k], y[k], f"{key}/{k}", None if m is None else np.asarray(m))  # type: ignore[index]
        return out
    a, b = np.asarray(x), np.asarray(y)
    if mask is not None:
        a, b = a[mask], b[mask]
    return [] if np.array_equal(a, b, equal_nan=a.dtype.kind == "f") else [key]


@pytest.mark.parametrize("env_id", sorted(TASKS))
def test_an_autoreset_env_not_stepped_changes_no_meaningful_bit(env_id: str) -> None:
    envs = [gym.make_vec(env_id, num_envs=8, num_threads=2, **TASKS[env_id]) for _ in range(2)]
    dropped = _whole_stepping(envs[1])
    for env in envs:
        env.reset(seed=11)
    rng = np.random.default_rng(2)
    space, autoresets = envs[0].action_space, 0
    for t in range(40):
        autoresets += int(envs[0].unwrapped.episodes.needs_reset.sum())
        action = rng.uniform(space.low, space.high).astype(space.dtype)
        (obs, rew, term, trunc, info), oracle = envs[0].step(action), envs[1].step(action)
        differ = _meaningful({"obs": obs, "rew": rew, "term": term, "trunc": trunc, "info": info},
                             dict(zip(("obs", "rew", "term", "trunc", "info"), oracle, strict=True)), "")
        assert not differ, f"step {t}: {differ}"
    assert autoresets >= 3 and sum(dropped) == autoresets  # the partial env skipped every autoreset
    for env in envs:
        env.close()


def test_same_step_mode_steps_every_env() -> None:
    env = gym.make_vec("mjvec/Hopper-v5", num_envs=4, num_threads=1, autoreset_mode="same_step")
    dropped = _whole_stepping(env)
    env.reset(seed=0)
    for _ in range(60):
        env.step(env.action_space.sample())
    assert dropped == []
    env.close()
