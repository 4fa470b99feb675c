"""CpuBackend vs independent oracles (N plain MjModel/MjData stepped alone, direct MjModel edits): what
only the CPU engine does (thread counts, its grouping by mujoco.batch's per-env fields, bit-exact
writes). The backend contract on both backends is tests/test_backend_contract.py."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from mjvec.backends.base import FieldWrite, Scene
from mjvec.backends.cpu import CpuBackend
from mjvec.errors import ConfigError
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


@pytest.mark.parametrize("threads", [0, True, 2.5])
def test_num_threads_must_be_a_positive_int(threads) -> None:
    with pytest.raises(ConfigError, match="num_threads must be an int >= 1"):
        _backend(1, 2, threads=threads)


def test_bind_refuses_clearly_what_has_no_num_envs_view() -> None:
    """Every bind either gives a (num_envs, ...) array or a ConfigError naming the field and why."""
    one = _backend(1, 3)  # one group: every MjData field has one shape
    qld = one.bind("qLD")
    one.forward()
    np.testing.assert_array_equal(qld, np.stack([d.qLD for d in Oracle(one.variant_of_env).datas]))
    be = _backend(9, 9)  # two variant groups: the headless tools have fewer geoms and a "simple" body
    assert be.num_groups == 2
    with pytest.raises(ConfigError, match=r"MjData field 'qLD' has a different shape in each variant group"):
        be.bind("qLD")  # its sparsity follows the bodies' compile
    with pytest.raises(ConfigError, match=r"cannot bind MjData field 'efc_J': .*arena"):
        be.bind("efc_J")
    with pytest.raises(ConfigError, match=r"cannot bind MjData field 'nope': nope is not an MjData array field"):
        be.bind("nope")
