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
from mjvec.errors import CapabilityError, ConfigError, FieldWriteError
from mjvec.randomization import DomainRandomization, EventTerm, table_height
from tests.scenes import Oracle, make_scene


def test_primitive_bounds_match_the_compiler() -> None:
    xml = """<mujoco><worldbody><body><freejoint/>
      <geom type="sphere" size=".1"/><geom type="capsule" size=".05 .2"/><geom type="cylinder" size=".05 .2"/>
      <geom type="ellipsoid" size=".1 .2 .3"/><geom type="box" size=".1 .2 .3"/></body></worldbody></mujoco>"""
    m = mujoco.MjModel.from_xml_string(xml)
    rbound, aabb = primitive_bounds(m.geom_type, m.geom_size[None])
    np.testing.assert_array_equal(rbound[0], m.geom_rbound)
    np.testing.assert_array_equal(aabb[0], m.geom_aabb)


def _resized(v: int, scale: float) -> mujoco.MjSpec:
    """Variant v with its handle scaled by `scale`, mass/inertia pinned to the unscaled compile."""
    ref = make_scene(v).compile()
    spec = make_scene(v)
    body = spec.body("obj")
    b = ref.body("obj").id
    body.explicitinertial = True
    body.mass, body.ipos, body.iquat = ref.body_mass[b], ref.body_ipos[b], ref.body_iquat[b]
    body.inertia = ref.body_inertia[b]
    handle = spec.geom("handle")
    handle.size = np.asarray(handle.size) * scale
    return spec


def _run(be: CpuBackend, oracle: Oracle, steps: int = 120) -> None:
    rng = np.random.default_rng(0)
    for _ in range(steps):
        ctrl = rng.uniform(-1, 1, (be.num_envs, 2))
        be.ctrl[:] = ctrl
        be.step(2)
        oracle.step(ctrl, 2)


def test_geom_size_write_equals_the_scene_compiled_with_that_size() -> None:
    be = CpuBackend(Scene(9, make_scene, 9), num_threads=2, bvh_margin=0.03, progress=False)
    handle = mujoco.mj_name2id(be.model, mujoco.mjtObj.mjOBJ_GEOM, "handle")
    scale = 1.1
    size = be.defaults("geom_size")[:, [handle]] * scale
    be.write_fields([FieldWrite("geom_size", np.arange(9), np.array([handle]), size)])
    oracle = Oracle(be.variant_of_env, make=lambda v: _resized(v, scale))
    for i, m in enumerate(oracle.models):
        g = m.geom("handle").id
        slot = be.field_values("geom_size")[i, handle]
        np.testing.assert_array_equal(slot, m.geom_size[g])
    _run(be, oracle)
    np.testing.assert_allclose(be.qpos, oracle.qpos(), atol=1e-9)


def test_table_height_equals_the_scene_compiled_with_the_table_moved() -> None:
    def raised(v: int) -> mujoco.MjSpec:
        spec = make_scene(v)
        spec.geom("table").pos = np.asarray(spec.geom("table").pos) + np.array([0, 0, 0.01])
        return spec

    be = CpuBackend(Scene(9, make_scene, 9), num_threads=2, bvh_margin=0.02, progress=False)
    table = mujoco.mj_name2id(be.model, mujoco.mjtObj.mjOBJ_GEOM, "table")
    pos = be.defaults("geom_pos")[:, [table]] + [0, 0, 0.01]
    be.write_fields([FieldWrite("geom_pos", np.arange(9), np.array([table]), pos)])
    oracle = Oracle(be.variant_of_env, make=raised)
    _run(be, oracle)
    np.testing.assert_array_equal(be.qpos, oracle.qpos())


def test_a_write_outside_the_bvh_is_refused_and_nothing_is_written() -> None:
    be = CpuBackend(Scene(9, make_scene, 9), num_threads=2, progress=False)
    table = mujoco.mj_name2id(be.model, mujoco.mjtObj.mjOBJ_GEOM, "table")
    mass_before, pos_before = be.field_values("body_mass"), be.field_values("geom_pos")
    pos = be.defaults("geom_pos")[:, [table]] + [0, 0, 0.01]
    good = FieldWrite("body_mass", np.array([0]), np.array([3]), np.array([[2.0]]))
    expected = r"'table' in envs .* outside its body's collision BVH.*bvh_margin >= 0\.010"
    with pytest.raises(FieldWriteError, match=expected):
        be.write_fields([good, FieldWrite("geom_pos", np.arange(9), np.array([table]), pos)])
    np.testing.assert_array_equal(be.field_values("body_mass"), mass_before)
    np.testing.assert_array_equal(be.field_values("geom_pos"), pos_before)
    with pytest.raises(FieldWriteError, match="must be positive"):
        be.write_fields([FieldWrite("geom_size", [0], np.array([table]), np.array([[[0.0, 0.1, 0.1]]]))])
    with pytest.raises(ConfigError, match="bvh_margin must be a float"):
        CpuBackend(Scene(1, make_scene, 1), bvh_margin=-1.0, progress=False)


def test_table_height_term_on_simtoolreal_moves_the_table_per_env() -> None:
    env = gym.make_vec(mjvec.ENV_ID, num_envs=4, num_tools=6, randomization=[table_height()], bvh_margin=0.01)
    env.reset(seed=0)
    be = env.unwrapped.backend
    table = mujoco.mj_name2id(be.model, mujoco.mjtObj.mjOBJ_GEOM, "table")
    dz = be.field_values("geom_pos")[:, table, 2] - be.defaults("geom_pos")[:, table, 2]
    np.testing.assert_allclose(dz, env.dr_params["table_height"][:, 0, 0], atol=1e-15)
    assert (np.abs(dz) <= 0.01).all() and np.ptp(dz) > 0
    for _ in range(20):
        obs, *_ = env.step(np.zeros((4, 29)))
    assert np.isfinite(obs).all()
    # Without the margin the term is refused at construction: both ends of its range are dry-run.
    with pytest.raises(ConfigError, match=r"term 'table_height' \(geom_pos\) at its range end -0.01: .*bvh_margin"):
        gym.make_vec(mjvec.ENV_ID, num_envs=2, num_tools=6, randomization=[table_height()])
    with pytest.raises(ConfigError, match="a gaussian draw is unbounded"):
        gym.make_vec(mjvec.ENV_ID, num_envs=2, num_tools=6, bvh_margin=0.05,
                     randomization=[EventTerm("geom_height", 0.0, 0.001, targets=("table",), operation="add",
                                              distribution="gaussian")])


def test_geom_size_terms_reject_meshes_and_warp_does_not_declare_them() -> None:
    term = EventTerm("geom_size", 0.9, 1.1, targets=("object_handle",))
    mesh_env = gym.make_vec(mjvec.ENV_ID, num_envs=2, num_tools=3, tool_geometry="mesh", randomization=None)
    with pytest.raises(ConfigError, match="mesh/plane/hfield geoms"):
        DomainRandomization(mesh_env, (term,))
    with pytest.raises(ConfigError, match="sizes must be positive"):
        EventTerm("geom_size", 0.0, 1.1, targets=("object_handle",))
    # Env 0's tool has no head (its slot is absent there); the other envs' heads are meshes, and
    # the term is refused at construction from each env's own slot types.
    headless = int(mjvec.assets.scene.default_catalog().ids_of_topology("box_only")[0])
    mixed = gym.make_vec(mjvec.ENV_ID, num_envs=3, tool_geometry="mesh", randomization=None, env_id_offset=headless)
    types = mixed.unwrapped.backend.geom_types[:, mixed.unwrapped.backend.model.geom("object_head").id]
    assert types[0] == -1 and (types[1:] == mujoco.mjtGeom.mjGEOM_MESH).any()
    with pytest.raises(ConfigError, match=r"term 'geom_size' \(geom_size\): targets \['object_head'\]"):
        DomainRandomization(mixed, (EventTerm("geom_size", 0.9, 1.1, targets=("object_head",)),))
    warp_env = gym.make_vec(mjvec.ENV_ID, num_envs=2, num_tools=3, backend="warp", device="cpu", randomization=None)
    with pytest.raises(CapabilityError, match="'geom_size' is not writable on the 'warp' backend"):
        DomainRandomization(warp_env, (term,))


def test_check_writes_raises_like_write_fields_and_writes_nothing() -> None:
    be = CpuBackend(Scene(9, make_scene, 9), num_threads=2, bvh_margin=0.02, progress=False)
    table = mujoco.mj_name2id(be.model, mujoco.mjtObj.mjOBJ_GEOM, "table")
    before = be.field_values("geom_pos").copy()
    ok = FieldWrite("geom_pos", np.arange(9), np.array([table]), be.defaults("geom_pos")[:, [table]] + [0, 0, 0.015])
    far = FieldWrite("geom_pos", np.arange(9), np.array([table]), be.defaults("geom_pos")[:, [table]] + [0, 0, 0.05])
    be.check_writes([ok])
    with pytest.raises(FieldWriteError, match=r"'table' .* outside its body's collision BVH"):
        be.check_writes([far])
    with pytest.raises(FieldWriteError, match=r"'table' .* outside its body's collision BVH"):
        be.write_fields([far])
    np.testing.assert_array_equal(be.field_values("geom_pos"), before)  # the dry runs wrote nothing
    be.write_fields([ok])
    np.testing.assert_array_equal(be.field_values("geom_pos")[:, table], ok.values[:, 0])
