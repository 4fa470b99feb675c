"""The reset part of the backend contract on every backend (the `contract` fixture, tests/conftest.py):
mj_resetData, then the given state (qpos, qvel and the inputs a task sets at reset: ctrl, mocap poses,
act), then ONE forward, by host ids and (device backends) by device mask; everything checked before
anything moves. Oracles: plain MuJoCo C doing the same calls, and each variant alone (`Contract.oracle`).
"""

from __future__ import annotations

from typing import Any

import mujoco
import numpy as np
import pytest

from mjvec.errors import ConfigError, FieldWriteError
from tests.backend_rig import Contract, inputs_scene, mocap_scene, random_states
from tests.devices import np_of, put
from tests.scenes import Oracle


@pytest.mark.parametrize("num_variants", [1, 9], ids=["one_group", "several_groups"])
def test_reset_to_the_same_state_twice_lands_on_it(contract: Contract, num_variants: int) -> None:
    """A reset to the same qpos twice (e.g. reset(seed=s) twice) lands on that qpos, and the envs then
    step like their variants alone from it."""
    be = contract.backend(num_variants, 9)
    qpos, qvel = random_states(np.random.default_rng(5), be.model, 9)
    dtype = np_of(be.qpos).dtype  # the state is stored as float32 on Warp: the request rounded once
    for _ in range(2):
        be.reset(np.arange(9), qpos, qvel)
        np.testing.assert_array_equal(np_of(be.qpos), qpos.astype(dtype))
        np.testing.assert_array_equal(np_of(be.qvel), qvel.astype(dtype))
    oracle = contract.oracle(be.variant_of_env)
    for i in range(9):
        oracle.reset(i, qpos[i], qvel[i])
    for _ in range(10):
        be.step(2)
        oracle.step(np.zeros((9, 2)), 2)
    contract.assert_alone(be.qpos, oracle.qpos())


def test_reset_returns_inputs_and_mocap_to_the_model_defaults(contract: Contract) -> None:
    """reset = mj_resetData (ctrl, xfrc_applied, mocap poses back to the model's), then qpos/qvel,
    then forward: written-but-not-stepped inputs of a reset env do not survive; other envs keep theirs."""
    be = contract.backend(3, 3, make=mocap_scene)
    mocap, xpos = be.bind("mocap_pos"), be.bind("xpos")
    zero = (np.zeros((1, be.model.nq)) + be.model.qpos0, np.zeros((1, be.model.nv)))
    put(mocap, np.full((3, 1, 3), 5.0))
    be.step(1)  # applied
    be.reset(np.array([2]), *zero)
    np.testing.assert_allclose(np_of(mocap)[:, 0], [[5, 5, 5], [5, 5, 5], [0.1, 0.2, 0.3]], rtol=1e-7)
    put(mocap, np.full((3, 1, 3), 7.0))  # pending at the reset of env 1: discarded there only
    put(be.ctrl, np.full((3, 2), 0.5))
    xfrc = np.zeros((3, be.model.nbody, 6))
    xfrc[:, 3, 2] = 1.0
    put(be.xfrc_applied, xfrc)
    be.reset(np.array([1]), *zero)
    np.testing.assert_allclose(np_of(mocap)[:, 0], [[7, 7, 7], [0.1, 0.2, 0.3], [7, 7, 7]], rtol=1e-7)
    np.testing.assert_array_equal(np_of(be.ctrl), [[0.5, 0.5], [0, 0], [0.5, 0.5]])
    np.testing.assert_array_equal(np_of(be.xfrc_applied)[:, 3, 2], [1, 0, 1])
    # The oracle: the same calls on MuJoCo C (mj_resetData, then the state, then mj_forward).
    c = Oracle(be.variant_of_env, make=mocap_scene)
    for d in c.datas:
        d.mocap_pos[:] = 5.0
    c.step(np.zeros((3, 2)), 1)
    for d in c.datas:
        d.mocap_pos[:] = 7.0
    c.reset(2, *(z[0] for z in zero))
    c.reset(1, *(z[0] for z in zero))
    c.datas[2].mocap_pos[:] = 7.0
    np.testing.assert_allclose(np_of(xpos), np.stack([d.xpos for d in c.datas]), rtol=0, atol=contract.c_tol)


# Warp (float32) vs MuJoCo C of one reset state (tool in the air), as a fraction of the field's largest
# magnitude: measured on warp's CPU device (mujoco-warp 4.0) 5.7e-6 for qacc (the free tool's small
# inertia amplifies float32 round-off), at most 8.3e-8 for poses, actuator forces and act_dot.
RESET_C_TOL = {"cpu": 0.0, "warp": 2e-5}


@pytest.mark.parametrize("by", ["host_ids", "device_mask"])
def test_reset_sets_the_given_inputs_before_its_one_forward(contract: Contract, by: str) -> None:
    """reset(ids, qpos, qvel, ctrl=, mocap_pos=, mocap_quat=, act=) equals plain MuJoCo's
    mj_resetData + the same state + ONE mj_forward, for the envs reset (of several groups); the
    others keep their state and outputs bit for bit."""
    be = contract.backend(9, 9, make=inputs_scene)
    if by == "device_mask" and be.capabilities.array_namespace == "numpy":
        pytest.skip("a reset by device mask is for backends whose state lives in device arrays")
    names = ("xpos", "actuator_force", "qacc", "act_dot", "mocap_pos", "mocap_quat", "act", "ctrl", "qpos", "qvel")
    views = {name: be.bind(name) for name in names}
    rng = np.random.default_rng(3)
    for _ in range(5):  # away from mj_resetData's values everywhere
        put(be.ctrl, rng.uniform(-1, 1, (9, 2)))
        be.step(2)
    before = {name: np_of(view).copy() for name, view in views.items()}
    ids = np.array([1, 4, 8])
    qpos, qvel = random_states(rng, be.model, ids.size)
    quat = rng.normal(size=(ids.size, 1, 4))
    inputs = {"ctrl": rng.uniform(-1, 1, (ids.size, 2)), "mocap_pos": rng.uniform(-0.5, 0.5, (ids.size, 1, 3)),
              "mocap_quat": quat / np.linalg.norm(quat, axis=-1, keepdims=True),
              "act": rng.uniform(-1, 1, (ids.size, 1))}
    if by == "host_ids":
        be.reset(ids, qpos, qvel, **inputs)
    else:
        import torch

        def rows(values: np.ndarray) -> Any:  # the selected rows in place, NaN (unused) elsewhere
            full = np.full((9, *values.shape[1:]), np.nan)
            full[ids] = values
            return torch.as_tensor(full, dtype=torch.float32, device=be.qpos.device)

        mask = torch.as_tensor(np.isin(np.arange(9), ids), device=be.qpos.device)
        be.reset(mask, rows(qpos), rows(qvel), **{name: rows(values) for name, values in inputs.items()})
    c = Oracle(be.variant_of_env[ids], make=inputs_scene)
    for k, (m, d) in enumerate(zip(c.models, c.datas, strict=True)):
        mujoco.mj_resetData(m, d)
        d.qpos[:], d.qvel[:] = qpos[k], qvel[k]
        for name, values in inputs.items():
            getattr(d, name)[...] = values[k]
        mujoco.mj_forward(m, d)
    others = np.setdiff1d(np.arange(9), ids)
    for name, view in views.items():
        want = np.stack([getattr(d, name) for d in c.datas])
        atol = RESET_C_TOL[contract.kind] * max(1.0, np.abs(want).max())
        np.testing.assert_allclose(np_of(view)[ids], want, rtol=0, atol=atol, err_msg=name)
        np.testing.assert_array_equal(np_of(view)[others], before[name][others], err_msg=name)
    assert np.abs(np_of(views["act_dot"])[ids]).min() > 0  # what ctrl and act drive: the forward saw both


def test_reset_refuses_inputs_the_model_lacks_and_bad_shapes_before_anything_moves(contract: Contract) -> None:
    be = contract.backend(3, 3)  # make_scene: two actuators without activation, no mocap body
    be.step(3)
    before = (np_of(be.qpos).copy(), np_of(be.qvel).copy())
    qpos, qvel = be.model.qpos0[None].copy(), np.zeros((1, be.model.nv))
    cases = [
        ({"act": np.zeros((1, 1))}, r"reset\(act=\.\.\.\) was given, but this model has no actuator activ.*\(na = 0\)"),
        ({"mocap_pos": np.zeros((1, 1, 3))}, r"no mocap bodies \(nmocap = 0\); drop mocap_pos"),
        ({"mocap_quat": np.zeros((1, 1, 4))}, r"no mocap bodies \(nmocap = 0\); drop mocap_quat"),
        ({"ctrl": np.zeros((1, 3))}, r"reset expects ctrl \(1, 2\), got \(1, 3\)"),
        ({"ctrl": np.full((1, 2), np.inf)}, r"reset ctrl must be finite"),
    ]
    for inputs, match in cases:
        with pytest.raises(ConfigError, match=match):
            be.reset(np.array([1]), qpos, qvel, **inputs)
    if be.capabilities.array_namespace == "torch":
        import torch

        on, nq, nv = be.qpos.device, be.model.nq, be.model.nv
        with pytest.raises(ConfigError, match=rf"a masked reset takes a \(3,\) bool mask and qpos \(3, {nq}\), "
                                              rf"qvel \(3, {nv}\), ctrl \(3, 2\); got torch.bool \(3,\), .*\(3, 1\)"):
            be.reset(torch.ones(3, dtype=torch.bool, device=on), torch.zeros((3, nq), device=on),
                     torch.zeros((3, nv), device=on), ctrl=torch.zeros((3, 1), device=on))
    np.testing.assert_array_equal(np_of(be.qpos), before[0])
    np.testing.assert_array_equal(np_of(be.qvel), before[1])


def test_reset_argument_errors(contract: Contract) -> None:
    be = contract.backend(1, 2)
    nq, nv = be.model.nq, be.model.nv
    with pytest.raises(ConfigError, match="reset expects qpos"):
        be.reset(np.array([0]), np.zeros((1, 3)), np.zeros((1, nv)))
    with pytest.raises(ConfigError, match="must be finite"):
        be.reset(np.array([0]), np.full((1, nq), np.nan), np.zeros((1, nv)))
    with pytest.raises(FieldWriteError, match="out of range"):
        be.reset(np.array([5]), np.zeros((1, nq)), np.zeros((1, nv)))
