"""CpuBackend vs independent oracles: N plain MjModel/MjData stepped alone, direct MjModel edits."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from mjvec.backends.base import FieldWrite, RecomputeLevel, Scene, combine_levels
from mjvec.backends.cpu import CpuBackend
from mjvec.errors import CapabilityError, ConfigError, FieldWriteError
from tests.scenes import Oracle, make_scene


def _backend(num_variants: int, num_envs: int, threads: int = 2, **kw) -> CpuBackend:
    make = kw.pop("make", make_scene)
    scene = Scene(num_variants=num_variants, make_variant=make, num_envs=num_envs,
                  env_id_offset=kw.pop("offset", 0))
    return CpuBackend(scene, num_threads=threads, progress=False, **kw)


def _random_state(rng: np.random.Generator, oracle: Oracle, i: int) -> tuple[np.ndarray, np.ndarray]:
    m = oracle.models[i]
    qpos = m.qpos0.copy()
    qpos[:2] += rng.uniform(-0.5, 0.5, 2)
    qpos[2:5] += rng.uniform(-0.02, 0.02, 3)
    qvel = rng.uniform(-0.3, 0.3, m.nv)
    return qpos, qvel


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("nstep", [1, 3])
def test_lockstep_bit_exact_with_partial_resets(threads: int, nstep: int) -> None:
    be = _backend(1, 6, threads)
    oracle = Oracle(be.variant_of_env)
    rng = np.random.default_rng(threads * 10 + nstep)
    for it in range(60):
        ctrl = rng.uniform(-1, 1, (6, 2))
        be.ctrl[:] = ctrl
        assert not be.step(nstep).any()
        oracle.step(ctrl, nstep)
        if it % 15 == 7:
            ids = np.array([1, 4])
            states = [_random_state(rng, oracle, i) for i in ids]
            be.reset(ids, np.stack([s[0] for s in states]), np.stack([s[1] for s in states]))
            for i, (q, v) in zip(ids, states, strict=True):
                oracle.reset(int(i), q, v)
            assert np.array_equal(be.ctrl[ids], np.zeros((2, 2)))
    np.testing.assert_array_equal(be.qpos, oracle.qpos())
    np.testing.assert_array_equal(be.qvel, oracle.qvel())


@pytest.mark.parametrize("table", [False, True], ids=["plane", "box_table"])
def test_three_topologies_step_like_each_variant_alone(table: bool) -> None:
    def make(v: int) -> mujoco.MjSpec:
        return make_scene(v, table=table)

    be = _backend(9, 18, make=make)
    # box+box and capsule+box share one group (a slot's type is a per-variant row); box alone
    # has one geom fewer and gets its own.
    assert be.num_groups == 2
    oracle = Oracle(be.variant_of_env, make=make)
    rng = np.random.default_rng(1)
    for _ in range(150):
        ctrl = rng.uniform(-1, 1, (18, 2))
        be.ctrl[:] = ctrl
        be.step(2)
        oracle.step(ctrl, 2)
    np.testing.assert_array_equal(be.qpos, oracle.qpos())
    # The tools came to rest on the support, so contacts were exercised.
    assert (be.qpos[:, 4] < (0.3 if table else 0.1)).all()


def test_group_fields_are_exactly_the_fields_that_differ_between_variants() -> None:
    """The per-env fields are found by comparison: recompute the differing set here, independently."""
    be = _backend(9, 9)
    for group, batch in zip(be._groups, be.group_batches, strict=True):
        alone = [make_scene(v).compile() for v in group.variants]
        differ = set()
        for name in mujoco.batch.MODEL_FIELDS:
            values = [np.asarray(getattr(m.opt, name[4:]) if name.startswith("opt.") else getattr(m, name))
                      for m in alone]
            if name == "bvh_aabb":
                values = [v[: int(m.body_bvhnum.sum())] for v, m in zip(values, alone, strict=True)]
            if any(v.tobytes() != values[0].tobytes() for v in values[1:]):
                differ.add(name)
        expanded = {n for n in mujoco.batch.MODEL_FIELDS if batch.expanded(n) is not None}
        assert expanded == differ
        assert {"geom_size", "body_mass", "bvh_aabb"} <= differ or len(group.variants) == 1
        for name in expanded:
            for row, env in enumerate(group.env_ids):
                m = alone[group.variants.index(int(be.variant_of_env[env]))]
                want = m.bvh_aabb[: int(m.body_bvhnum.sum())] if name == "bvh_aabb" else getattr(m, name)
                np.testing.assert_array_equal(batch.expanded(name)[row], want)


def test_variants_with_another_bvh_tree_get_their_own_group() -> None:
    """A structure no engine holds per env (here the order of a body's BVH leaves) splits groups."""
    def make(v: int) -> mujoco.MjSpec:
        s = make_scene(1)
        head = s.geom("head")
        if v == 1:  # the head on the other side: the body's BVH lists its leaves in the other order
            head.pos = [-head.pos[0], 0, 0]
        return s

    models = [make(v).compile() for v in range(2)]
    body = models[0].body("obj").id
    adr = models[0].body_bvhadr[body]
    assert models[0].bvh_nodeid[adr + 1] != models[1].bvh_nodeid[adr + 1]
    be = _backend(2, 4, make=make)
    assert be.num_groups == 2
    oracle = Oracle(be.variant_of_env, make=make)
    for _ in range(100):
        be.step(2)
        oracle.step(np.zeros((4, 2)), 2)
    np.testing.assert_array_equal(be.qpos, oracle.qpos())


def test_env_id_offset_keeps_global_assignment() -> None:
    be = _backend(9, 6, offset=7)
    np.testing.assert_array_equal(be.variant_of_env, (7 + np.arange(6)) % 9)
    oracle = Oracle(be.variant_of_env)
    for _ in range(40):
        be.step(2)
        oracle.step(np.zeros((6, 2)), 2)
    np.testing.assert_array_equal(be.qpos, oracle.qpos())


def _edit(model: mujoco.MjModel, field: str, index, value) -> None:
    target = model.opt.gravity if field == "gravity" else getattr(model, field)
    if index is None:
        target[...] = value
    else:
        target[index] = value


WRITES = [
    ("body_mass", np.array([3]), lambda d: d * 1.7),
    ("body_inertia", np.array([3]), lambda d: d * 1.3),
    ("geom_friction", np.array([3]), lambda d: d * np.array([0.4, 1.0, 1.0])),
    ("dof_damping", np.array([0, 1]), lambda d: d + 0.8),
    ("dof_armature", np.array([0, 1]), lambda d: d + 0.05),
    ("actuator_gainprm", np.array([0, 1]), lambda d: d * 1.5),
    ("actuator_biasprm", np.array([0, 1]), lambda d: d * 1.5),
    ("gravity", None, lambda d: d + np.array([0.5, 0.0, -1.0])),
]


def test_write_fields_equal_direct_edit_plus_set_const() -> None:
    be = _backend(9, 12)
    oracle = Oracle(be.variant_of_env)
    touched = np.array([0, 4, 5, 10])
    writes = []
    for field, index, fn in WRITES:
        d = be.defaults(field)[touched]
        values = fn(d if index is None else d[:, index])
        writes.append(FieldWrite(field, touched, index, values))
        for k, i in enumerate(touched):
            _edit(oracle.models[i], field, index, values[k])
    before = {f: be.field_values(f) for f, _, _ in WRITES}
    be.write_fields(writes)
    for i in touched:
        mujoco.mj_setConst(oracle.models[i], oracle.datas[i])
    for field, index, _ in WRITES:
        after = be.field_values(field)
        untouched = np.setdiff1d(np.arange(12), touched)
        np.testing.assert_array_equal(after[untouched], before[field][untouched])
        for i in touched:
            got = after[i] if index is None else after[i][index]
            want = (oracle.models[i].opt.gravity if field == "gravity" else getattr(oracle.models[i], field))
            np.testing.assert_array_equal(got, want if index is None else want[index])
    rng = np.random.default_rng(3)
    for _ in range(80):
        ctrl = rng.uniform(-1, 1, (12, 2))
        be.ctrl[:] = ctrl
        be.step(2)
        oracle.step(ctrl, 2)
    np.testing.assert_array_equal(be.qpos, oracle.qpos())
    np.testing.assert_array_equal(be.qvel, oracle.qvel())


def test_defaults_are_each_variants_compiled_values() -> None:
    be = _backend(9, 9)
    for i, v in enumerate(be.variant_of_env):
        m = make_scene(int(v)).compile()
        np.testing.assert_array_equal(be.defaults("body_mass")[i], m.body_mass)
        np.testing.assert_array_equal(be.defaults("body_inertia")[i], m.body_inertia)
    with pytest.raises(ValueError, match="read-only"):
        be.defaults("body_mass")[0, 0] = 1.0
    # Writes do not move the defaults (relative DR is taken from them, so it never accumulates).
    be.write_fields([FieldWrite("body_mass", np.array([0]), np.array([3]), np.array([[9.0]]))])
    assert be.defaults("body_mass")[0, 3] != 9.0


def test_absent_geom_slot_is_reported_and_harmless() -> None:
    be = _backend(9, 9)
    head = mujoco.mj_name2id(be.model, mujoco.mjtObj.mjOBJ_GEOM, "head")
    present = be.geom_present[:, head]
    np.testing.assert_array_equal(present, be.variant_of_env % 3 != 0)
    be.write_fields([FieldWrite("geom_friction", np.arange(9), np.array([head]), np.full((9, 1, 3), 0.3))])
    np.testing.assert_array_equal(be.field_values("geom_friction")[present, head], np.full((6, 3), 0.3))


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
    ],
)
def test_write_errors_write_nothing(write: FieldWrite, error: type, match: str) -> None:
    be = _backend(3, 12)
    good = FieldWrite("body_mass", np.array([2]), np.array([3]), np.array([[5.0]]))
    before = be.field_values("body_mass")
    with pytest.raises(error, match=match):
        be.write_fields([good, write])
    np.testing.assert_array_equal(be.field_values("body_mass"), before)


def test_diverging_env_is_flagged_and_others_unaffected() -> None:
    be = _backend(3, 6)
    oracle = Oracle(be.variant_of_env)
    xfrc = np.zeros((6, be.model.nbody, 6))
    obj = mujoco.mj_name2id(be.model, mujoco.mjtObj.mjOBJ_BODY, "obj")
    xfrc[2, obj, :3] = 1e300  # absurd push -> non-finite acceleration in env 2 only
    be.xfrc_applied[:] = xfrc
    failed = be.step(2)
    np.testing.assert_array_equal(failed, np.arange(6) == 2)
    assert np.isfinite(be.qpos).all()
    oracle.step(np.zeros((6, 2)), 2)
    ok = np.arange(6) != 2
    np.testing.assert_array_equal(be.qpos[ok], oracle.qpos()[ok])


def test_scene_and_backend_argument_errors() -> None:
    with pytest.raises(ConfigError, match="num_envs must be an int >= 1"):
        Scene(num_variants=2, make_variant=make_scene, num_envs=0)
    with pytest.raises(ConfigError, match="assignment must have shape"):
        Scene(num_variants=2, make_variant=make_scene, num_envs=3, assignment=np.zeros(2, int))
    with pytest.raises(ConfigError, match="outside"):
        Scene(num_variants=2, make_variant=make_scene, num_envs=2, assignment=np.array([0, 5]))
    with pytest.raises(ConfigError, match="num_threads must be an int >= 1"):
        _backend(1, 2, threads=0)

    def bad_timestep(v: int) -> mujoco.MjSpec:
        s = make_scene(v)
        s.option.timestep = 0.005 * (v + 1)
        return s

    with pytest.raises(ConfigError, match="share one timestep"):
        _backend(2, 2, make=bad_timestep)
    be = _backend(1, 2)
    with pytest.raises(ConfigError, match="reset expects qpos"):
        be.reset(np.array([0]), np.zeros((1, 3)), np.zeros((1, 8)))
    with pytest.raises(ConfigError, match="nstep must be an int >= 1"):
        be.step(0)
    be.close()
    be.close()
    with pytest.raises(RuntimeError, match="closed"):
        be.step(1)


def test_bind_gathers_derived_fields_in_global_order() -> None:
    be = _backend(9, 9)
    xpos = be.bind("xpos")
    be.forward()
    oracle = Oracle(be.variant_of_env)
    np.testing.assert_array_equal(xpos, np.stack([d.xpos for d in oracle.datas]))


@pytest.mark.parametrize("num_variants", [1, 9], ids=["one_group", "three_groups"])
def test_reset_to_the_current_state_keeps_it(num_variants: int) -> None:
    """A reset to the same qpos twice (e.g. reset(seed=s) twice) lands exactly on that qpos."""
    be = _backend(num_variants, 9)
    oracle = Oracle(be.variant_of_env)
    rng = np.random.default_rng(5)
    ids = np.arange(9)
    states = [_random_state(rng, oracle, i) for i in ids]
    qpos, qvel = np.stack([s[0] for s in states]), np.stack([s[1] for s in states])
    for _ in range(2):
        be.reset(ids, qpos, qvel)
        np.testing.assert_array_equal(be.qpos, qpos)
        np.testing.assert_array_equal(be.qvel, qvel)
    for i in ids:
        oracle.reset(int(i), qpos[i], qvel[i])
    for _ in range(10):
        be.step(2)
        oracle.step(np.zeros((9, 2)), 2)
    np.testing.assert_array_equal(be.qpos, oracle.qpos())


def test_geom_types_are_each_envs_own_variant_types() -> None:
    """box+box and capsule+box share a group; each env reports its own variant's slot types."""
    be = _backend(9, 9, make=make_scene)
    types = be.geom_types
    for i, v in enumerate(be.variant_of_env):
        alone = make_scene(int(v)).compile()
        for j in range(be.model.ngeom):
            name = be.model.geom(j).name
            expected = int(alone.geom(name).type[0]) if name in {alone.geom(k).name for k in range(alone.ngeom)} else -1
            assert types[i, j] == expected, (i, name)


def test_bind_refuses_clearly_what_has_no_num_envs_view() -> None:
    """Every bind either gives a (num_envs, ...) array or a ConfigError naming the field and why."""
    one = _backend(1, 3)  # one group: every MjData field has one shape
    qld = one.bind("qLD")
    one.forward()
    np.testing.assert_array_equal(qld, np.stack([d.qLD for d in Oracle(one.variant_of_env).datas]))
    be = _backend(9, 9)  # two variant groups: the headless tools have fewer geoms and a "simple" body
    assert be.num_groups == 2
    for name in ("qLD", "geom_xpos"):
        with pytest.raises(ConfigError, match=rf"MjData field '{name}' has a different shape in each variant group"):
            be.bind(name)
    with pytest.raises(ConfigError, match=r"cannot bind MjData field 'efc_J': .*arena"):
        be.bind("efc_J")
    with pytest.raises(ConfigError, match=r"cannot bind MjData field 'nope': nope is not an MjData array field"):
        be.bind("nope")
    with pytest.raises(ConfigError, match=r"'body_mass' is a model field, not an MjData field; read it with"):
        be.bind("body_mass")
