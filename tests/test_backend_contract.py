"""The backend contract (mjvec.backends.base.Backend) on every backend, through one factory fixture.

Each test runs once per backend (`backend` fixture: "cpu", and "warp" on the `warp_device`). Oracles:
each env's variant compiled alone, stepped alone (`Contract.oracle`: plain MuJoCo C for the CPU
backend, compared bit for bit; mujoco_warp in a world of its own for Warp, bit for bit on warp's CPU
device, within GPU_TOL on a GPU), and plain MuJoCo C for both (float32 tolerance on Warp, stated where
used). Engine-specific behaviour is tested in tests/test_backend_cpu.py and tests/test_backend_warp.py.
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass, field
from typing import Any

import mujoco
import numpy as np
import pytest

from mjvec.backends.base import Backend, FieldWrite, RecomputeLevel, Scene, combine_levels
from mjvec.backends.cpu import CpuBackend
from mjvec.errors import CapabilityError, ClosedError, ConfigError, FieldWriteError, ForkedProcessError
from tests.devices import GPU_TOL, np_of, put, run_to_run_atol
from tests.scenes import Oracle, make_scene


@dataclass
class Contract:
    """Builds backends of one kind and their oracles; closes the backends at teardown."""

    kind: str
    device: str
    made: list = field(default_factory=list)

    def backend(self, num_variants: int, num_envs: int, make=make_scene, offset: int = 0, **kw: Any) -> Any:
        scene = Scene(num_variants=num_variants, make_variant=make, num_envs=num_envs, env_id_offset=offset)
        if self.kind == "cpu":
            be = CpuBackend(scene, num_threads=2, progress=False, **kw)
        else:
            from mjvec.backends.warp import WarpBackend

            be = WarpBackend(scene, device=self.device, progress=False, **kw)
        self.made.append(be)
        return be

    def oracle(self, variants: np.ndarray, make=make_scene) -> Any:
        """Env i's variant alone, stepped by the same engine (see the module docstring)."""
        if self.kind == "cpu":
            return Oracle(variants, make=make)
        from tests.warp_oracle import WarpOracle

        return WarpOracle(variants, make=make, device=self.device).start()

    @property
    def alone_tol(self) -> float:
        """Batched vs `oracle`: bit-exact, except for a Warp backend on a GPU."""
        return GPU_TOL if self.kind == "warp" and self.device != "cpu" else 0.0

    @property
    def c_tol(self) -> float:
        """Kinematics of one state vs plain MuJoCo C: float64 is exact, float32 within round-off."""
        return 0.0 if self.kind == "cpu" else 1e-6

    def assert_alone(self, got: Any, want: np.ndarray) -> None:
        np.testing.assert_allclose(np_of(got), want, rtol=0, atol=self.alone_tol)


@pytest.fixture(params=["cpu", "warp"])
def kind(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def contract(kind: str, warp_device: str):
    """The backend factory of the suite (the Warp case is a `device` test, see tests/conftest.py)."""
    rig = Contract(kind, warp_device)
    yield rig
    for be in rig.made:
        be.close()


def random_state(rng: np.random.Generator, model: mujoco.MjModel) -> tuple[np.ndarray, np.ndarray]:
    """Arm joints and tool moved, tool in the air (no contact), random velocities."""
    qpos = model.qpos0.copy()
    qpos[:2] += rng.uniform(-0.5, 0.5, 2)
    qpos[2:5] += rng.uniform(-0.02, 0.02, 3)
    return qpos, rng.uniform(-0.3, 0.3, model.nv)


def random_states(rng: np.random.Generator, model: mujoco.MjModel, count: int) -> tuple[np.ndarray, np.ndarray]:
    states = [random_state(rng, model) for _ in range(count)]
    return np.stack([s[0] for s in states]), np.stack([s[1] for s in states])


# ---- stepping and resets -----------------------------------------------------------------------
def test_lockstep_with_partial_resets(contract: Contract) -> None:
    be = contract.backend(1, 6)
    assert isinstance(be, Backend)
    oracle = contract.oracle(be.variant_of_env)
    rng = np.random.default_rng(7)
    for it in range(40):
        ctrl = rng.uniform(-1, 1, (6, 2))
        xfrc = np.zeros((6, be.model.nbody, 6))
        xfrc[:, 3] = rng.uniform(-1, 1, (6, 6)) * [0.1, 0.1, 0.1, 1e-4, 1e-4, 1e-4]  # a wrench on the tool
        put(be.ctrl, ctrl)
        put(be.xfrc_applied, xfrc)
        assert not np_of(be.step(3)).any()
        oracle.step(ctrl, 3, xfrc)
        if it % 15 == 7:
            ids = np.array([1, 4])
            qpos, qvel = random_states(rng, be.model, 2)
            be.reset(ids, qpos, qvel)
            for k, i in enumerate(ids):
                oracle.reset(int(i), qpos[k], qvel[k])
            assert not np_of(be.ctrl)[ids].any() and not np_of(be.xfrc_applied)[ids].any()
    contract.assert_alone(be.qpos, oracle.qpos())
    contract.assert_alone(be.qvel, oracle.qvel())


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


def test_env_id_offset_keeps_global_assignment(contract: Contract) -> None:
    be = contract.backend(9, 6, offset=7)
    np.testing.assert_array_equal(be.variant_of_env, (7 + np.arange(6)) % 9)
    oracle = contract.oracle(be.variant_of_env)
    for _ in range(20):
        be.step(2)
        oracle.step(np.zeros((6, 2)), 2)
    contract.assert_alone(be.qpos, oracle.qpos())


def test_diverging_env_is_flagged_and_others_unaffected(contract: Contract) -> None:
    be = contract.backend(3, 6)
    oracle = contract.oracle(be.variant_of_env)
    xfrc = np.zeros((6, be.model.nbody, 6))
    obj = mujoco.mj_name2id(be.model, mujoco.mjtObj.mjOBJ_BODY, "obj")
    xfrc[2, obj, :3] = 1e300  # absurd push -> non-finite acceleration in env 2 only
    put(be.xfrc_applied, xfrc)
    xpos = be.bind("xpos")  # bound outputs of a failed env stay finite too
    failed = be.step(2)
    np.testing.assert_array_equal(np_of(failed), np.arange(6) == 2)
    assert np.isfinite(np_of(be.qpos)).all() and np.isfinite(np_of(xpos)).all()
    oracle.step(np.zeros((6, 2)), 2)
    ok = np.arange(6) != 2
    contract.assert_alone(np_of(be.qpos)[ok], oracle.qpos()[ok])


def _mocap_scene(v: int) -> mujoco.MjSpec:
    s = make_scene(v)
    goal = s.worldbody.add_body(name="goal", pos=[0.1, 0.2, 0.3], mocap=True)
    goal.add_geom(name="goal_geom", type=mujoco.mjtGeom.mjGEOM_SPHERE, size=[0.01, 0, 0], contype=0, conaffinity=0)
    return s


def test_reset_returns_inputs_and_mocap_to_the_model_defaults(contract: Contract) -> None:
    """reset = mj_resetData (ctrl, xfrc_applied, mocap poses back to the model's), then qpos/qvel,
    then forward: written-but-not-stepped inputs of a reset env do not survive; other envs keep theirs."""
    be = contract.backend(3, 3, make=_mocap_scene)
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
    c = Oracle(be.variant_of_env, make=_mocap_scene)
    for d in c.datas:
        d.mocap_pos[:] = 5.0
    c.step(np.zeros((3, 2)), 1)
    for d in c.datas:
        d.mocap_pos[:] = 7.0
    c.reset(2, *(z[0] for z in zero))
    c.reset(1, *(z[0] for z in zero))
    c.datas[2].mocap_pos[:] = 7.0
    np.testing.assert_allclose(np_of(xpos), np.stack([d.xpos for d in c.datas]), rtol=0, atol=contract.c_tol)


def _inputs_scene(v: int) -> mujoco.MjSpec:
    """The mocap scene with activation dynamics on the first arm actuator (na = 1)."""
    s = _mocap_scene(v)
    s.actuator("a_j1").set_to_position(kp=20.0, kv=1.0, timeconst=0.05)
    return s


# Warp (float32) vs MuJoCo C of one reset state (tool in the air), as a fraction of the field's largest
# magnitude: measured on warp's CPU device (mujoco-warp 4.0) 5.7e-6 for qacc (the free tool's small
# inertia amplifies float32 round-off), at most 8.3e-8 for poses, actuator forces and act_dot.
RESET_C_TOL = {"cpu": 0.0, "warp": 2e-5}


@pytest.mark.parametrize("by", ["host_ids", "device_mask"])
def test_reset_sets_the_given_inputs_before_its_one_forward(contract: Contract, by: str) -> None:
    """reset(ids, qpos, qvel, ctrl=, mocap_pos=, mocap_quat=, act=) equals plain MuJoCo's
    mj_resetData + the same state + ONE mj_forward, for the envs reset (of several groups); the
    others keep their state and outputs bit for bit."""
    be = contract.backend(9, 9, make=_inputs_scene)
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
    c = Oracle(be.variant_of_env[ids], make=_inputs_scene)
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


# ---- model fields ------------------------------------------------------------------------------
def test_defaults_are_each_variants_compiled_values(contract: Contract) -> None:
    be = contract.backend(9, 9)
    dtype = be.capabilities.fields["body_mass"].dtype
    for i, v in enumerate(be.variant_of_env):
        m = make_scene(int(v)).compile()
        np.testing.assert_array_equal(be.defaults("body_mass")[i], m.body_mass.astype(dtype))
        np.testing.assert_array_equal(be.defaults("body_inertia")[i], m.body_inertia.astype(dtype))
        np.testing.assert_array_equal(be.defaults("gravity")[i], m.opt.gravity.astype(dtype))
    with pytest.raises(ValueError, match="read-only"):
        be.defaults("body_mass")[0, 0] = 1.0
    # Writes do not move the defaults (relative DR is taken from them, so it never accumulates).
    be.write_fields([FieldWrite("body_mass", np.array([0]), np.array([3]), np.array([[9.0]]))])
    assert be.defaults("body_mass")[0, 3] != 9.0
    assert be.field_values("body_mass")[0, 3] == 9.0
    assert be.field_version("body_mass") == 1 and be.field_version("gravity") == 0


def test_absent_geom_slot_is_reported_and_harmless(contract: Contract) -> None:
    be = contract.backend(9, 9)
    head = mujoco.mj_name2id(be.model, mujoco.mjtObj.mjOBJ_GEOM, "head")
    present = be.geom_present[:, head]
    np.testing.assert_array_equal(present, be.variant_of_env % 3 != 0)
    be.write_fields([FieldWrite("geom_friction", np.arange(9), np.array([head]), np.full((9, 1, 3), 0.3))])
    np.testing.assert_allclose(be.field_values("geom_friction")[present, head], np.full((6, 3), 0.3), rtol=1e-7)


def test_geom_types_are_each_envs_own_variant_types(contract: Contract) -> None:
    """box+box and capsule+box may share a group; each env reports its own variant's slot types."""
    be = contract.backend(9, 9)
    types = be.geom_types
    for i, v in enumerate(be.variant_of_env):
        alone = make_scene(int(v)).compile()
        names = {alone.geom(k).name for k in range(alone.ngeom)}
        for j in range(be.model.ngeom):
            name = be.model.geom(j).name
            assert types[i, j] == (int(alone.geom(name).type[0]) if name in names else -1), (i, name)


def test_recompute_levels_combine_as_a_set() -> None:
    fixed, zero = RecomputeLevel.SET_CONST_FIXED, RecomputeLevel.SET_CONST_0
    assert combine_levels([fixed, zero]) == RecomputeLevel.SET_CONST
    assert combine_levels([RecomputeLevel.NONE, zero]) == zero
    assert combine_levels([]) == RecomputeLevel.NONE


@pytest.mark.parametrize(
    ("write", "error", "match"),
    [
        (FieldWrite("nope", np.array([0]), None, np.zeros((1, 3))), CapabilityError, "'nope' is not writable"),
        (FieldWrite("geom_dataid", np.array([0]), None, np.zeros((1, 6))), CapabilityError, "identity field"),
        (FieldWrite("geom_type", np.array([0]), None, np.zeros((1, 6))), CapabilityError, "identity field"),
        (FieldWrite("body_mass", np.array([0]), None, np.zeros((1, 2))), FieldWriteError, "expected \\(1, 4\\)"),
        (FieldWrite("body_mass", np.array([0]), np.array([3]), np.array([[np.nan]])), FieldWriteError, "finite"),
        (FieldWrite("body_mass", np.array([12]), np.array([3]), np.array([[1.0]])), FieldWriteError, "out of range"),
        (FieldWrite("body_mass", np.array([1, 1]), np.array([3]), np.ones((2, 1))), FieldWriteError, "duplicates"),
        (FieldWrite("body_mass", np.array([1]), np.array([9]), np.ones((1, 1))), FieldWriteError, "body ids"),
        (FieldWrite("body_mass", np.array([0.5]), None, np.ones((1, 4))), FieldWriteError, "integer"),
        (FieldWrite("gravity", np.array([0]), np.array([5]), np.ones((1, 1))), FieldWriteError, "option ids in .0, 3"),
        (FieldWrite("geom_size", np.array([0]), np.array([1]), -np.ones((1, 1, 3))), FieldWriteError,
         "must be positive"),
    ],
)
def test_write_errors_write_nothing(contract: Contract, write: FieldWrite, error: type, match: str) -> None:
    be = contract.backend(3, 12)
    good = FieldWrite("body_mass", np.array([2]), np.array([3]), np.array([[5.0]]))
    before = be.field_values("body_mass")
    with pytest.raises(error, match=match):
        be.check_writes([good, write])
    with pytest.raises(error, match=match):
        be.write_fields([good, write])
    np.testing.assert_array_equal(be.field_values("body_mass"), before)
    assert be.field_version("body_mass") == 0
    be.check_writes([good])  # a valid batch passes the check and writes nothing either
    np.testing.assert_array_equal(be.field_values("body_mass"), before)


# ---- state views -------------------------------------------------------------------------------
def test_bind_gathers_derived_fields_in_global_order(contract: Contract) -> None:
    be = contract.backend(9, 9)
    views = {name: be.bind(name) for name in ("xpos", "xmat", "xquat")}
    be.forward()
    c = Oracle(be.variant_of_env)
    for name, got in views.items():
        want = np.stack([getattr(d, name) for d in c.datas])
        assert np_of(got).shape == want.shape
        np.testing.assert_allclose(np_of(got), want, rtol=0, atol=contract.c_tol)


def test_bind_refuses_a_field_without_a_num_envs_view(contract: Contract) -> None:
    be = contract.backend(9, 9)  # the headless tools have fewer geoms: their own variant group
    assert be.num_groups >= 2
    with pytest.raises(ConfigError, match=r"MjData field 'geom_xpos' has a different shape in each variant group"):
        be.bind("geom_xpos")
    for name in ("body_mass", "geom_type"):
        with pytest.raises(ConfigError, match=rf"'{name}' is a model field, not an MjData field; read it with"):
            be.bind(name)


def test_write_input_reaches_the_next_step_and_is_checked(contract: Contract) -> None:
    """Oracle: the same push written straight into the xfrc_applied view of a twin backend."""
    be, twin, still = (contract.backend(3, 3) for _ in range(3))
    obj = mujoco.mj_name2id(be.model, mujoco.mjtObj.mjOBJ_BODY, "obj")
    wrench = np.array([[[0.0, 0.0, 2.0, 0.0, 0.0, 0.0]]])
    be.write_input("xfrc_applied", np.array([1]), np.array([obj]), wrench)
    xfrc = np.zeros((3, be.model.nbody, 6))
    xfrc[1, obj] = wrench[0, 0]
    put(twin.xfrc_applied, xfrc)
    for backend in (be, twin, still):
        backend.step(2)
    np.testing.assert_allclose(np_of(be.qpos), np_of(twin.qpos), rtol=0, atol=run_to_run_atol(be))
    moved = np.abs(np_of(be.qpos) - np_of(still.qpos)).max(axis=1)
    assert moved[1] > 1e-4 and moved[[0, 2]].max() <= run_to_run_atol(be)  # the push moved env 1 only
    with pytest.raises(CapabilityError, match="state input 'qpos' is not writable"):
        be.write_input("qpos", None, None, np.zeros((3, be.model.nq)))
    with pytest.raises(FieldWriteError, match=r"write_input\('ctrl'\) values must be finite"):
        be.write_input("ctrl", np.array([0]), None, np.full((1, 2), np.nan))


def test_reset_and_step_argument_errors(contract: Contract) -> None:
    be = contract.backend(1, 2)
    nq, nv = be.model.nq, be.model.nv
    with pytest.raises(ConfigError, match="reset expects qpos"):
        be.reset(np.array([0]), np.zeros((1, 3)), np.zeros((1, nv)))
    with pytest.raises(ConfigError, match="must be finite"):
        be.reset(np.array([0]), np.full((1, nq), np.nan), np.zeros((1, nv)))
    with pytest.raises(FieldWriteError, match="out of range"):
        be.reset(np.array([5]), np.zeros((1, nq)), np.zeros((1, nv)))
    with pytest.raises(ConfigError, match="nstep must be an int >= 1"):
        be.step(0)

    def bad_timestep(v: int) -> mujoco.MjSpec:
        s = make_scene(v)
        s.option.timestep = 0.005 * (v + 1)
        return s

    with pytest.raises(ConfigError, match="share one timestep"):
        contract.backend(2, 2, make=bad_timestep)


def test_scene_argument_errors() -> None:
    with pytest.raises(ConfigError, match="num_envs must be an int >= 1"):
        Scene(num_variants=2, make_variant=make_scene, num_envs=0)
    with pytest.raises(ConfigError, match="assignment must have shape"):
        Scene(num_variants=2, make_variant=make_scene, num_envs=3, assignment=np.zeros(2, int))
    with pytest.raises(ConfigError, match="outside"):
        Scene(num_variants=2, make_variant=make_scene, num_envs=2, assignment=np.array([0, 5]))


# ---- lifetime ----------------------------------------------------------------------------------
def test_a_forked_child_is_refused_and_the_parent_keeps_working(contract: Contract) -> None:
    """Engine threads and device contexts do not survive os.fork(): the child gets ForkedProcessError
    (not a hang, not a crash); the parent's backend is unaffected."""
    be = contract.backend(1, 2)
    be.step(1)
    pid = os.fork()
    if pid == 0:  # the child: report through the exit code, never return into pytest
        signal.alarm(20)  # a hang would be killed by SIGALRM (exit code -14)
        try:
            be.step(1)
            code = 1
        except ForkedProcessError as error:
            code = 0 if "os.fork()" in str(error) and "spawn" in str(error) else 2
        except BaseException:  # any other outcome is a failure, reported by its code
            code = 3
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert not np_of(be.step(1)).any()


def test_closed_backend_raises(contract: Contract) -> None:
    be = contract.backend(1, 2)
    be.close()
    be.close()
    for call in (lambda: be.step(1), lambda: be.write_fields([]), lambda: be.bind("xpos"), be.forward):
        with pytest.raises(ClosedError, match="closed"):
            call()
