"""The backend contract (mjvec.backends.base.Backend) on every backend, through one factory fixture.

Each test runs once per backend (the `contract` fixture, tests/conftest.py: "cpu", and "warp" on the
`warp_device`); its reset part is tests/test_backend_reset.py. Oracles:
each env's variant compiled alone, stepped alone (`Contract.oracle`: plain MuJoCo C for the CPU
backend, compared bit for bit; mujoco_warp in a world of its own for Warp, bit for bit on warp's CPU
device, within GPU_TOL on a GPU), and plain MuJoCo C for both (float32 tolerance on Warp, stated where
used). Engine-specific behaviour is tested in tests/test_backend_cpu.py and tests/test_backend_warp.py.
"""

from __future__ import annotations

import os
import signal

import mujoco
import numpy as np
import pytest

from mjvec.backends.base import Backend, FieldWrite, RecomputeLevel, Scene, combine_levels
from mjvec.errors import CapabilityError, ClosedError, ConfigError, FieldWriteError, ForkedProcessError
from tests.backend_rig import Contract, random_states
from tests.devices import np_of, put, run_to_run_atol
from tests.scenes import Oracle, make_scene


# ---- stepping ---------------------------------------------------------------------------
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


def test_step_and_scene_argument_errors(contract: Contract) -> None:
    with pytest.raises(ConfigError, match="nstep must be an int >= 1"):
        contract.backend(1, 2).step(0)

    def bad_timestep(v: int) -> mujoco.MjSpec:
        s = make_scene(v)
        s.option.timestep = 0.005 * (v + 1)
        return s

    with pytest.raises(ConfigError, match="share one timestep"):
        contract.backend(2, 2, make=bad_timestep)
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
