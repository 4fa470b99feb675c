"""Per-env geom size / position writes (and table height) vs scenes compiled alone with that geometry."""

from __future__ import annotations

import gymnasium as gym
import mujoco
import numpy as np
import pytest

import mjvec
from mjvec.backends._geometry import primitive_bounds
from mjvec.backends.base import FieldWrite, Scene
from mjvec.backends.cpu import CpuBackend
from mjvec.errors import ConfigError, FieldWriteError
from mjvec.randomization import DomainRandomization, EventTerm
from mjvec.tasks.simtoolreal.presets import table_height
from tests.scenes import Oracle, make_scene


def test_primitive_bounds_match_the_compiler() -> None:
    xml = """<mujoco><worldbody><body><freejoint/>
      <geom type="sphere" size=".1"/><geom type="capsule" size=".05 .2"/><geom type="cylinder" size=".05 .2"/>
      <geom type="ellipsoid" size=".1 .2 .3"/><geom type="box" size=".1 .2 .3"/></body></worldbody></mujoco>"""
    m = mujoco.MjModel.from_xml_string(xml)
    rbound, aabb = primitive_bounds(m.geom_type, m.geom_size[None])
    np.testing.assert_array_equal(rbound[0], m.geom_rbound)
    np.testing.assert_array_equal(aabb[0], m.geom_aabb)


def _pinned(v: int, *, handle_scale: float = 1.0, table_dz: float = 0.0, com_dx: float = 0.0) -> mujoco.MjSpec:
    """Variant v with its handle scaled, the table raised and/or the COM moved along x; mass and
    inertia pinned to the unscaled compile (a resize randomizes shape, not mass)."""
    ref = make_scene(v).compile()
    spec = make_scene(v)
    body = spec.body("obj")
    b = ref.body("obj").id
    body.explicitinertial = True
    body.mass, body.ipos, body.iquat = ref.body_mass[b], ref.body_ipos[b] + [com_dx, 0, 0], ref.body_iquat[b]
    body.inertia = ref.body_inertia[b]
    handle = spec.geom("handle")
    handle.size = np.asarray(handle.size) * handle_scale
    spec.geom("table").pos = np.asarray(spec.geom("table").pos) + np.array([0, 0, table_dz])
    return spec


def _run(be: CpuBackend, oracle: Oracle, steps: int = 120) -> None:
    rng = np.random.default_rng(0)
    for _ in range(steps):
        ctrl = rng.uniform(-1, 1, (be.num_envs, 2))
        be.ctrl[:] = ctrl
        be.step(2)
        oracle.step(ctrl, 2)


def _assert_geometry_like(be: CpuBackend, oracle: Oracle) -> None:
    """Each env's geom bounds and body BVH rows equal those of its scene compiled alone."""
    for i, m in enumerate(oracle.models):
        g, row = int(be.routing.group_of_env[i]), int(be.routing.row_of_env[i])
        batch = be.group_batches[g]
        nbvh = int(m.body_bvhnum.sum())
        for name in ("geom_size", "geom_rbound", "geom_aabb", "geom_pos", "body_ipos"):
            np.testing.assert_array_equal(be._rows(g, name)[row], getattr(m, name), err_msg=name)
        np.testing.assert_allclose(be._rows(g, "bvh_aabb")[row], m.bvh_aabb[:nbvh], rtol=0, atol=1e-15)
        assert batch.model.nbvh >= nbvh


@pytest.mark.parametrize("scale", [1.1, 2.0, 0.5])
def test_geom_size_write_equals_the_scene_compiled_with_that_size(scale: float) -> None:
    """Bounds and the body's BVH follow the new size per env, so even a doubled handle keeps every
    contact: the trajectory is the resized scene's, stepped alone."""
    be = CpuBackend(Scene(9, make_scene, 9), num_threads=2, progress=False)
    handle = mujoco.mj_name2id(be.model, mujoco.mjtObj.mjOBJ_GEOM, "handle")
    size = be.defaults("geom_size")[:, [handle]] * scale
    be.write_fields([FieldWrite("geom_size", np.arange(9), np.array([handle]), size)])
    oracle = Oracle(be.variant_of_env, make=lambda v: _pinned(v, handle_scale=scale))
    _assert_geometry_like(be, oracle)
    _run(be, oracle)
    np.testing.assert_array_equal(be.qpos, oracle.qpos())


@pytest.mark.parametrize("dz", [0.01, -0.05, 0.1])
def test_table_height_equals_the_scene_compiled_with_the_table_moved(dz: float) -> None:
    be = CpuBackend(Scene(9, make_scene, 9), num_threads=2, progress=False)
    table = mujoco.mj_name2id(be.model, mujoco.mjtObj.mjOBJ_GEOM, "table")
    pos = be.defaults("geom_pos")[:, [table]] + [0, 0, dz]
    be.write_fields([FieldWrite("geom_pos", np.arange(9), np.array([table]), pos)])
    oracle = Oracle(be.variant_of_env, make=lambda v: _pinned(v, table_dz=dz))
    _run(be, oracle)
    np.testing.assert_array_equal(be.qpos, oracle.qpos())


def _not_simple(v: int) -> mujoco.MjSpec:
    spec = make_scene(v)
    spec.body("obj").simple = False
    return spec


def test_com_write_moves_the_bvh_with_the_inertial_frame() -> None:
    """body_ipos is the frame of the body's BVH: a COM write refreshes the BVH rows too."""
    be = CpuBackend(Scene(9, _not_simple, 9), num_threads=2, progress=False)
    obj = be.model.body("obj").id
    ipos = be.defaults("body_ipos")[:, [obj]] + [0.03, 0, 0]
    be.write_fields([FieldWrite("body_ipos", np.arange(9), np.array([obj]), ipos)])
    oracle = Oracle(be.variant_of_env, make=lambda v: _pinned(v, com_dx=0.03))
    _assert_geometry_like(be, oracle)
    _run(be, oracle)
    np.testing.assert_array_equal(be.qpos, oracle.qpos())


def test_bad_geometry_writes_are_refused_and_nothing_is_written() -> None:
    be = CpuBackend(Scene(9, make_scene, 9), num_threads=2, progress=False)
    table = mujoco.mj_name2id(be.model, mujoco.mjtObj.mjOBJ_GEOM, "table")
    obj = be.model.body("obj").id
    com = FieldWrite("body_ipos", np.arange(9), np.array([obj]), be.defaults("body_ipos")[:, [obj]] + [0.01, 0, 0])
    with pytest.raises(FieldWriteError, match=r"body_ipos of bodies \['obj'\] .*envs \[0, 3, 6\].*simple = False"):
        be.write_fields([com])
    np.testing.assert_array_equal(be.field_values("body_ipos"), be.defaults("body_ipos"))
    mass_before, size_before = be.field_values("body_mass"), be.field_values("geom_size")
    good = FieldWrite("body_mass", np.array([0]), np.array([3]), np.array([[2.0]]))
    bad = FieldWrite("geom_size", [0], np.array([table]), np.array([[[0.0, 0.1, 0.1]]]))
    with pytest.raises(FieldWriteError, match="must be positive"):
        be.write_fields([good, bad])
    with pytest.raises(FieldWriteError, match="must be positive"):
        be.check_writes([bad])
    np.testing.assert_array_equal(be.field_values("body_mass"), mass_before)
    np.testing.assert_array_equal(be.field_values("geom_size"), size_before)


def test_table_height_term_on_simtoolreal_moves_the_table_per_env() -> None:
    env = gym.make_vec(mjvec.ENV_ID, num_envs=4, num_tools=6, randomization=[table_height()])
    env.reset(seed=0)
    be = env.unwrapped.backend
    table = mujoco.mj_name2id(be.model, mujoco.mjtObj.mjOBJ_GEOM, "table")
    dz = be.field_values("geom_pos")[:, table, 2] - be.defaults("geom_pos")[:, table, 2]
    np.testing.assert_allclose(dz, env.dr_params["table_height"][:, 0, 0], atol=1e-15)
    assert (np.abs(dz) <= 0.01).all() and np.ptp(dz) > 0
    for _ in range(20):
        obs, *_ = env.step(np.zeros((4, 29)))
    assert np.isfinite(obs).all()


def test_geom_size_terms_reject_meshes() -> None:
    term = EventTerm("geom_size", 0.9, 1.1, targets=("object_handle",))
    mesh_env = gym.make_vec(mjvec.ENV_ID, num_envs=2, num_tools=3, tool_geometry="mesh", randomization=None)
    with pytest.raises(ConfigError, match="mesh/plane/hfield geoms"):
        DomainRandomization(mesh_env, (term,))
    with pytest.raises(ConfigError, match="sizes must be positive"):
        EventTerm("geom_size", 0.0, 1.1, targets=("object_handle",))
    # Env 0's tool has no head (its slot is an inert primitive box); the other envs' heads are
    # meshes, and the term is refused at construction from each env's own slot types.
    headless = int(mjvec.tasks.simtoolreal.scene.default_catalog().ids_of_topology("box_only")[0])
    mixed = gym.make_vec(mjvec.ENV_ID, num_envs=3, tool_geometry="mesh", randomization=None, env_id_offset=headless)
    types = mixed.unwrapped.backend.geom_types[:, mixed.unwrapped.backend.model.geom("object_head").id]
    assert types[0] == mujoco.mjtGeom.mjGEOM_BOX and (types[1:] == mujoco.mjtGeom.mjGEOM_MESH).any()
    with pytest.raises(ConfigError, match=r"term 'geom_size' \(geom_size\): targets \['object_head'\]"):
        DomainRandomization(mixed, (EventTerm("geom_size", 0.9, 1.1, targets=("object_head",)),))
