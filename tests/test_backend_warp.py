"""WarpBackend (on warp's "cpu" device) vs independent oracles: what only the Warp engine does.

Oracles: each env's variant compiled alone and stepped by mujoco_warp alone in a world of its own
(`tests.warp_oracle.WarpOracle`; the batched worlds must match it to float32 round-off), and plain
MuJoCo C (`tests.scenes.Oracle`; float32 vs float64 plus mujoco_warp's own collision code, so within
the tolerances stated at each comparison). The backend contract itself, on both backends, is
tests/test_backend_contract.py.
"""

from __future__ import annotations

import re
import subprocess
import sys
from types import SimpleNamespace

import mujoco
import mujoco_warp as mjw
import numpy as np
import pytest
import torch
import warp as wp

from mjvec.backends import warp as warp_module
from mjvec.backends.base import Backend, FieldWrite, Scene
from mjvec.backends.cpu import CpuBackend
from mjvec.backends.warp import WarpBackend
from mjvec.backends.warp import build as warp_build
from mjvec.errors import ConfigError, InstallError, install_hint
from tests.devices import np_of, put, run_to_run_atol
from tests.scenes import Oracle, make_scene
from tests.subprocesses import checkout_env
from tests.warp_oracle import WARP_VS_ALONE, WarpOracle


def _backend(kind: str, num_variants: int, num_envs: int, make=make_scene, offset: int = 0, device: str = "cpu",
             **kw):
    scene = Scene(num_variants=num_variants, make_variant=make, num_envs=num_envs, env_id_offset=offset)
    if kind == "cpu":
        return CpuBackend(scene, num_threads=2, progress=False, **kw)
    return WarpBackend(scene, device=device, progress=False, **kw)


def _assert_same_run(be, got, want) -> None:
    """Two backends given the same inputs: bit-identical where `be` promises it, else within GPU_TOL."""
    np.testing.assert_allclose(np_of(got), np_of(want), rtol=0, atol=run_to_run_atol(be))


def _random_state(rng: np.random.Generator, model: mujoco.MjModel) -> tuple[np.ndarray, np.ndarray]:
    qpos = model.qpos0.copy()
    qpos[:2] += rng.uniform(-0.5, 0.5, 2)
    qpos[2:5] += rng.uniform(-0.02, 0.02, 3)
    return qpos, rng.uniform(-0.3, 0.3, model.nv)


def _resting(model: mujoco.MjModel, variants: np.ndarray, support: float, rng: np.random.Generator,
             gap: float = 0.003) -> tuple[np.ndarray, np.ndarray]:
    """Tools `gap` above the support (negative: that deep in it), clear of the arm, yawed.

    Yawed because mujoco_warp's native-CCD box-box path (3.11 and 4.0) drops contacts in some exactly
    axis-aligned placements that C keeps (see test_canary_native_ccd_box_box_drops_a_contact).
    """
    n = len(variants)
    qpos = np.tile(model.qpos0, (n, 1))
    qpos[:, 0] = rng.uniform(-0.5, 0.5, n)
    lowest = np.where(np.asarray(variants) % 3 == 0, 0.015, 0.025)  # handle box / head box half-height
    qpos[:, 2] = -0.13
    qpos[:, 3] = 0.11
    qpos[:, 4] = support + lowest + gap
    qpos[:, 5:9] = [np.cos(0.15), 0.0, 0.0, np.sin(0.15)]
    return qpos, np.zeros((n, model.nv))


# ---- Warp only: topology groups, writes, graphs, masked resets -------------------------------
def _table(table: bool):
    def make(v: int) -> mujoco.MjSpec:
        return make_scene(v, table=table)

    return make


def _contacts_per_env(be: WarpBackend) -> np.ndarray:
    counts = np.zeros(be.num_envs, np.int64)
    for _, d, env_ids in be.group_handles:
        worlds = d.contact.worldid.numpy()[: int(d.nacon.numpy()[0])]
        counts[env_ids] += np.bincount(worlds, minlength=env_ids.size)
    return counts


@pytest.mark.parametrize("table", [False, True], ids=["plane", "box_table"])
def test_each_topology_steps_like_its_variant_alone(table: bool) -> None:
    be = _backend("warp", 9, 18, make=_table(table))
    assert be.num_groups == 3
    oracle = WarpOracle(be.variant_of_env, make=_table(table)).start()
    rng = np.random.default_rng(1)
    touched = np.zeros(18, bool)
    for _ in range(60):
        ctrl = rng.uniform(-1, 1, (18, 2))
        put(be.ctrl, ctrl)
        assert not be.step(2).any()
        oracle.step(ctrl, 2)
        touched |= _contacts_per_env(be) > 0
    np.testing.assert_allclose(np_of(be.qpos), oracle.qpos(), rtol=0, atol=WARP_VS_ALONE)
    np.testing.assert_allclose(np_of(be.qvel), oracle.qvel(), rtol=0, atol=WARP_VS_ALONE)
    assert touched.all()  # every tool hit something: contacts were exercised in every world
    for m, _, env_ids in be.group_handles:  # each world's model has exactly its variant's geoms:
        assert {oracle.models[i].ngeom for i in env_ids} == {m.ngeom}  # no disabled slots to leak contacts


def _mesh_scene(v: int) -> mujoco.MjSpec:
    """The toy scene with a mesh tool (a box hull) whose size depends on v."""
    s = make_scene(0)
    obj = s.body("obj")
    for geom in list(obj.geoms):
        s.delete(geom)
    a, b, c = 0.03 + 0.01 * v, 0.02 + 0.005 * (v % 3), 0.015
    verts = [[x, y, z] for x in (-a, a) for y in (-b, b) for z in (-c, c)]
    s.add_mesh(name="tool_mesh", uservert=np.ravel(verts).tolist())
    obj.add_geom(name="handle", type=mujoco.mjtGeom.mjGEOM_MESH, meshname="tool_mesh", density=400)
    return s


# mujoco_warp warns that capsule (arm) vs mesh (tool) pairs get at most one contact: an upstream
# fidelity limit of mesh tools, the same in the oracle, so not what this test checks.
@pytest.mark.filterwarnings("ignore:MULTICCD is enabled")
def test_mesh_variants_select_their_mesh_per_world() -> None:
    be = _backend("warp", 4, 8, make=_mesh_scene)
    assert be.num_groups == 1 and be.model.nmesh == 4  # one pooled model, one mesh per variant
    m, _, _ = be.group_handles[0]
    handle = mujoco.mj_name2id(be.model, mujoco.mjtObj.mjOBJ_GEOM, "handle")
    np.testing.assert_array_equal(m.geom_dataid.numpy()[:, handle], be.variant_of_env)
    oracle = WarpOracle(be.variant_of_env, make=_mesh_scene).start()
    rng = np.random.default_rng(9)
    for _ in range(60):
        ctrl = rng.uniform(-1, 1, (8, 2))
        put(be.ctrl, ctrl)
        be.step(2)
        oracle.step(ctrl, 2)
    np.testing.assert_allclose(np_of(be.qpos), oracle.qpos(), rtol=0, atol=WARP_VS_ALONE)
    assert (np_of(be.qpos)[:, 4] < 0.3).all()  # every mesh tool landed on a support


# Warp vs MuJoCo C: tools dropped 3 mm onto the support, random arm targets, 0.5 s. Measured maxima
# of |qpos error| on mujoco-warp 4.0: plane 1.0e-7 (arm) and 1.2e-7 (tool); box table 8.7e-8 (arm)
# and 1.4e-4 (tool, resting on box head + handle tip, where mujoco_warp's float32 box-box contacts
# differ from C's); after per-env geometry writes (tests/test_warp_engine.py) up to 2.7e-6 (arm)
# and 3.3e-4 (tool).
C_TOLERANCE = {False: (1e-6, 1e-6), True: (1e-5, 2e-3)}  # (arm, tool)


@pytest.mark.parametrize("table", [False, True], ids=["plane", "box_table"])
def test_each_topology_matches_mujoco_c_over_a_short_horizon(table: bool) -> None:
    be = _backend("warp", 9, 9, make=_table(table))
    c = Oracle(be.variant_of_env, make=_table(table))
    rng = np.random.default_rng(2)
    qpos, qvel = _resting(be.model, be.variant_of_env, 0.2 if table else 0.0, rng)
    be.reset(np.arange(9), qpos, qvel)
    for i in range(9):
        c.reset(i, qpos[i], qvel[i])
    for _ in range(50):
        ctrl = rng.uniform(-1, 1, (9, 2))
        put(be.ctrl, ctrl)
        be.step(2)
        c.step(ctrl, 2)
    err = np.abs(np_of(be.qpos) - c.qpos())
    arm_tol, tool_tol = C_TOLERANCE[table]
    assert err[:, :2].max() < arm_tol, err[:, :2].max()
    assert err[:, 2:].max() < tool_tol, err[:, 2:].max(axis=1)
    assert (_contacts_per_env(be) > 0).all()


def _derived(be: WarpBackend, name: str) -> np.ndarray:
    return be.model_values(name)


DERIVED = ("body_subtreemass", "body_invweight0", "dof_invweight0", "actuator_acc0")


def test_mass_and_gravity_writes_match_mj_setconst() -> None:
    """Per-world writes + ONE recompute equal MuJoCo C's edit + mj_setConst to rtol 1e-5.

    Measured: derived constants within 1e-6 relative (float32 set_const vs float64 mj_setConst).
    """
    make = _table(False)
    be = _backend("warp", 9, 9, make=make)
    c = Oracle(be.variant_of_env, make=make)
    heavy, tilted = np.array([0, 4, 5, 7]), np.array([1, 4, 8])
    mass = be.defaults("body_mass")[heavy][:, [2, 3]] * np.array([1.5, 2.5])
    gravity = be.defaults("gravity")[tilted] + np.array([0.8, -0.5, 1.0])
    before = {name: _derived(be, name) for name in DERIVED}
    be.write_fields([FieldWrite("body_mass", heavy, np.array([2, 3]), mass),
                     FieldWrite("gravity", tilted, None, gravity)])
    for k, i in enumerate(heavy):
        c.models[i].body_mass[[2, 3]] = mass[k]
    for k, i in enumerate(tilted):
        c.models[i].opt.gravity[:] = gravity[k]
    for m, d in zip(c.models, c.datas, strict=True):
        mujoco.mj_setConst(m, d)
    untouched = np.setdiff1d(np.arange(9), np.union1d(heavy, tilted))
    for name in DERIVED:
        after = _derived(be, name)
        want = np.stack([np.asarray(getattr(m, name)).reshape(after.shape[1:]) for m in c.models])
        np.testing.assert_allclose(after, want, rtol=1e-5, atol=1e-6, err_msg=name)
        np.testing.assert_array_equal(after[untouched], before[name][untouched])  # not recomputed
    np.testing.assert_allclose(be.field_values("gravity"), np.stack([m.opt.gravity for m in c.models]), rtol=1e-7)
    # A second write replays the set_const graph captured by the first one: it must see new values.
    be.write_fields([FieldWrite("body_mass", np.array([2]), np.array([3]), be.defaults("body_mass")[[2]][:, [3]] / 2)])
    c.models[2].body_mass[3] /= 2
    mujoco.mj_setConst(c.models[2], c.datas[2])
    for name in DERIVED:
        want = np.asarray(getattr(c.models[2], name))
        np.testing.assert_allclose(_derived(be, name)[2].reshape(want.shape), want, rtol=1e-5, atol=1e-6)
    rng = np.random.default_rng(3)
    qpos, qvel = _resting(be.model, be.variant_of_env, 0.0, rng)
    be.reset(np.arange(9), qpos, qvel)
    for i in range(9):
        c.reset(i, qpos[i], qvel[i])
    for _ in range(50):
        ctrl = rng.uniform(-1, 1, (9, 2))
        put(be.ctrl, ctrl)
        be.step(2)
        c.step(ctrl, 2)
    np.testing.assert_allclose(np_of(be.qpos), c.qpos(), rtol=0, atol=1e-6)  # measured 1.8e-7


def _set_const_keeping_state(m: mujoco.MjModel, d: mujoco.MjData) -> None:
    """mj_setConst leaves d at qpos0; the backends keep each sim's state, so the oracle must too."""
    spec = mujoco.mjtState.mjSTATE_INTEGRATION
    state = np.empty(mujoco.mj_stateSize(m, spec))
    mujoco.mj_getState(m, d, state, spec)
    mujoco.mj_setConst(m, d)
    mujoco.mj_setState(m, d, state, spec)
    mujoco.mj_forward(m, d)


def test_graph_captured_before_a_write_sees_it() -> None:
    make = _table(False)
    be = _backend("warp", 1, 3, make=make)
    c = Oracle(be.variant_of_env, make=make)
    rng = np.random.default_rng(4)
    qpos, qvel = _resting(be.model, be.variant_of_env, 0.0, rng)
    be.reset(np.arange(3), qpos, qvel)
    for i in range(3):
        c.reset(i, qpos[i], qvel[i])
    for _ in range(5):
        be.step(2)  # captures the nstep=2 graph
        c.step(np.zeros((3, 2)), 2)
    step_graph = be._engine.runtimes[0].graphs[("step", 2, False)]  # (nstep, sensors at the last substep only)
    be.write_fields([FieldWrite("gravity", np.array([1]), None, np.array([[0.0, 0.0, 9.81]])),
                     FieldWrite("body_mass", np.array([2]), np.array([3]), be.defaults("body_mass")[[2]][:, [3]] * 3)])
    c.models[1].opt.gravity[:] = [0.0, 0.0, 9.81]
    c.models[2].body_mass[3] *= 3
    _set_const_keeping_state(c.models[2], c.datas[2])
    z0 = np_of(be.qpos)[:, 4].copy()
    for _ in range(20):
        be.step(2)
        c.step(np.zeros((3, 2)), 2)
    assert be._engine.runtimes[0].graphs[("step", 2, False)] is step_graph  # replayed, not re-captured
    assert np_of(be.qpos)[1, 4] > z0[1] + 0.01  # gravity flipped in world 1 only
    np.testing.assert_allclose(np_of(be.qpos), c.qpos(), rtol=0, atol=5e-7)  # measured 7.7e-8


@pytest.mark.parametrize("by", ["host_ids", "device_mask"])
@pytest.mark.parametrize("num_variants", [1, 9], ids=["one_group_zero_copy", "three_groups_gathered"])
def test_masked_reset_leaves_other_worlds_untouched(num_variants: int, by: str, warp_device: str) -> None:
    """A reset of env 4 by host ids, or by a device bool mask (the env's device path: every world
    runs the reset kernels and the forward, nothing is read back), changes nothing of the others
    (bit for bit where the backend promises run-to-run identity, else within GPU_TOL)."""
    make = _table(True)
    a, b = (_backend("warp", num_variants, 9, make=make, device=warp_device) for _ in range(2))
    xa, xb = a.bind("xpos"), b.bind("xpos")
    rng = np.random.default_rng(5)

    def step_both(n: int) -> None:
        for _ in range(n):
            ctrl = rng.uniform(-1, 1, (9, 2))
            for be in (a, b):
                put(be.ctrl, ctrl)
                be.step(2)

    step_both(30)
    qpos, qvel = _resting(a.model, a.variant_of_env[[4]], 0.2, rng, gap=-0.001)
    others = np.arange(9) != 4
    if by == "host_ids":
        a.reset(np.array([4]), qpos, qvel)
    else:
        full_q, full_v = np.zeros((9, a.model.nq)), np.full((9, a.model.nv), np.nan)  # unselected rows unused
        full_q[4], full_v[4] = qpos[0], qvel[0]
        on = a.qpos.device
        a.reset(torch.as_tensor(~others, device=on), torch.as_tensor(full_q, dtype=torch.float32, device=on),
                torch.as_tensor(full_v, dtype=torch.float32, device=on))
    for got, want in ((a.qpos, b.qpos), (a.qvel, b.qvel), (xa, xb)):  # bit-identical, xpos still stale
        _assert_same_run(a, np_of(got)[others], np_of(want)[others])
    np.testing.assert_allclose(np_of(a.qpos)[4], qpos[0], rtol=0, atol=1e-7)
    if by == "host_ids":  # a whole forward: contacts too (the device-mask reset ran kinematics only)
        counts_a = _contacts_per_env(a)
        c = Oracle(a.variant_of_env[[4]], make=make)
        c.reset(0, qpos[0], qvel[0])
        assert counts_a[4] == c.datas[0].ncon > 0  # contacts of the reset world are back (mujoco#3572)
        # The pooled contact buffer is not a bound output: after the group's forward it describes
        # every world's current qpos, i.e. what a forward of the untouched twin finds.
        b.forward()
        np.testing.assert_array_equal(counts_a[others], _contacts_per_env(b)[others])
    step_both(10)
    _assert_same_run(a, np_of(a.qpos)[others], np_of(b.qpos)[others])


@pytest.mark.parametrize("extra", [(), ("qacc",)], ids=["kinematic_outputs", "with_qacc"])
def test_masked_reset_computes_what_is_bound_like_a_full_forward(extra: tuple[str, ...], warp_device: str) -> None:
    """Oracle: a reset by host ids (always a whole forward). A device-mask reset with only kinematic
    outputs bound runs the kinematics stages alone: those outputs are bit-identical to the full
    forward's. Binding a field the kinematics do not make (qacc) brings the full forward back."""
    make = _table(True)
    names = ("xpos", "xquat", "cvel", "subtree_com", *extra)
    a, b = (_backend("warp", 9, 9, make=make, device=warp_device) for _ in range(2))
    views = [{n: be.bind(n) for n in names} for be in (a, b)]
    rng = np.random.default_rng(8)
    for _ in range(20):
        ctrl = rng.uniform(-1, 1, (9, 2))
        for be in (a, b):
            put(be.ctrl, ctrl)
            be.step(2)
    qpos, qvel = _resting(a.model, a.variant_of_env[[2, 7]], 0.2, rng)
    qvel[:, 3:] = rng.normal(size=(2, qvel.shape[1] - 3))  # moving: cvel is not trivially zero
    mask = np.isin(np.arange(9), [2, 7])
    full_q, full_v = np.zeros((9, a.model.nq)), np.zeros((9, a.model.nv))
    full_q[mask], full_v[mask] = qpos, qvel
    on = a.qpos.device
    a.reset(torch.as_tensor(mask, device=on), torch.as_tensor(full_q, dtype=torch.float32, device=on),
            torch.as_tensor(full_v, dtype=torch.float32, device=on))
    b.reset(np.array([2, 7]), qpos, qvel)
    for n in names:
        np.testing.assert_allclose(np_of(views[0][n]), np_of(views[1][n]), rtol=0, atol=run_to_run_atol(a), err_msg=n)
    assert np.abs(np_of(views[0]["cvel"])[mask]).max() > 0.1


@pytest.mark.parametrize("native_ccd", [True, False])
def test_canary_native_ccd_box_box_drops_a_contact(native_ccd: bool) -> None:
    """mujoco_warp (native CCD, the default; still so in 4.0.0) finds no contact for a box sunk 5 mm
    into the table at this aligned placement; C finds 4, and so does mujoco_warp's analytic box-box
    (NATIVECCD disabled, as SimToolReal's scene ships). Upstream: google-deepmind/mujoco_warp#1526,
    #1430. If a release fixes it, this fails: drop the yaw in `_resting` and this canary."""
    spec = make_scene(6)
    if not native_ccd:
        spec.option.disableflags |= mujoco.mjtDisableBit.mjDSBL_NATIVECCD
    mjm = spec.compile()
    qpos = mjm.qpos0.copy()
    qpos[2:9] = [-0.2, 0.15, 0.2 + 0.015 - 0.005, 1.0, 0.0, 0.0, 0.0]
    c = mujoco.MjData(mjm)
    c.qpos[:] = qpos
    mujoco.mj_forward(mjm, c)
    with wp.ScopedDevice("cpu"):
        m, d = mjw.put_model(mjm), mjw.make_data(mjm, nworld=1)
        wp.to_torch(d.qpos)[0] = torch.as_tensor(qpos, dtype=torch.float32)
        mjw.forward(m, d)
    assert c.ncon == 4
    assert int(d.nacon.numpy()[0]) == (0 if native_ccd else 4)


def test_eager_launches_equal_graph_replay() -> None:
    runs = []
    for use_graph in (True, False):
        be = _backend("warp", 3, 3, use_graph=use_graph)
        for it in range(10):
            put(be.ctrl, np.full((3, 2), 0.1 * it))
            be.step(2)
        q, v = _random_state(np.random.default_rng(0), be.model)
        be.reset(np.array([1]), q[None], v[None])
        be.step(2)
        runs.append((np_of(be.qpos).copy(), np_of(be.qvel).copy()))
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    np.testing.assert_array_equal(runs[0][1], runs[1][1])


def test_capabilities_and_zero_copy_views() -> None:
    be = _backend("warp", 1, 2)
    assert isinstance(be, Backend)
    caps = be.capabilities
    assert (caps.backend, caps.array_namespace, caps.device, caps.exact_variants) == ("warp", "torch", "cpu", False)
    cpu_fields = _backend("cpu", 1, 2).capabilities.fields
    assert set(caps.fields) == set(cpu_fields)  # one table of writable fields for both backends
    assert all(spec.dtype == np.float32 for spec in caps.fields.values())
    _, d, _ = be.group_handles[0]
    assert be.qpos.data_ptr() == wp.to_torch(d.qpos).data_ptr()  # one group: live Data views
    assert tuple(be.bind("site_xmat").shape[1:]) == (be.model.nsite, 9)
    multi = _backend("warp", 3, 3)
    _, d0, _ = multi.group_handles[0]
    assert multi.qpos.data_ptr() != wp.to_torch(d0.qpos).data_ptr()  # several groups: gathered copies


def test_warp_argument_errors() -> None:
    for device in ("cuda:7", "nonsense"):
        with pytest.raises(ConfigError, match="not available to warp"):
            WarpBackend(Scene(1, make_scene, 1), device=device, progress=False)
    with pytest.raises(ConfigError, match="device must be a warp device name"):
        WarpBackend(Scene(1, make_scene, 1), device=0, progress=False)
    with pytest.raises(ConfigError, match="needs a CUDA build of torch"):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(torch.cuda, "is_available", lambda: False)
            warp_build.check_torch_device(SimpleNamespace(is_cuda=True, alias="cuda:0"))
    with pytest.raises(ConfigError, match="njmax must be an int >= 1"):
        _backend("warp", 1, 1, njmax=2.5)
    with pytest.raises(ConfigError, match="nconmax must be an int >= 1"):
        _backend("warp", 1, 1, nconmax=0)
    with pytest.raises(ConfigError, match="use_graph must be True or False"):
        _backend("warp", 1, 1, use_graph="yes")
    be = _backend("warp", 1, 2)
    with pytest.raises(ConfigError, match="overflow_check_interval must be an int >= 1"):
        be.overflow_check_interval = 0
    for name in ("nope", "nacon"):  # nacon: pooled over worlds, not per world
        with pytest.raises(ConfigError, match=f"cannot bind MjData field '{name}'"):
            be.bind(name)
    with pytest.raises(ConfigError, match="not per world"):
        be.model_values("geom_type")


def _variant_with(change: str):
    def make(v: int) -> mujoco.MjSpec:
        s = make_scene(v)
        if change == "timestep":
            s.option.timestep = 0.005 * (v + 1)
        elif change == "density" and v == 1:
            s.option.density = 1.2  # mujoco_warp decides once per Model whether fluid forces run
        elif change == "body" and v == 1:
            s.worldbody.add_body(name="extra", pos=[1, 1, 1]).add_geom(name="extra_geom", size=[0.01, 0, 0])
        elif change == "fwdinv":
            s.option.enableflags |= int(mujoco.mjtEnableBit.mjENBL_FWDINV)
        return s

    return make


@pytest.mark.parametrize(
    ("change", "num_variants", "match"),
    [
        ("timestep", 2, "share one timestep"),
        ("density", 5, r"differ in \['opt.density'\], from which mujoco_warp derives flags"),
        ("body", 2, "variant groups differ in nbody"),
        ("fwdinv", 1, "mjENBL_FWDINV is unsupported"),
    ],
)
def test_scenes_warp_cannot_batch_are_refused(change: str, num_variants: int, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        _backend("warp", num_variants, num_variants, make=_variant_with(change))


def test_buffer_overflow_raises_and_undoes_the_step(warp_device: str) -> None:
    be = _backend("warp", 1, 2, make=_table(True), nconmax=1, overflow_check_interval=1, device=warp_device)
    qpos, qvel = _resting(be.model, be.variant_of_env, 0.2, np.random.default_rng(8), gap=-0.001)
    be.reset(np.arange(2), qpos, qvel)
    before = np_of(be.qpos).copy()
    with pytest.raises(ConfigError, match=r"overflowed \(\[.*NARROWPHASE.*in envs \[0, 1\].*larger nconmax"):
        be.step(1)
    np.testing.assert_array_equal(np_of(be.qpos), before)


@pytest.mark.parametrize("module", ["mujoco_warp", "torch"])
def test_missing_warp_extra_says_what_to_install(monkeypatch: pytest.MonkeyPatch, module: str) -> None:
    """The one install hint (`mjvec.errors.INSTALL_HINT`), as `python -m mjvec info` gives it: the
    checkout installed editable with the warp extra, with or without the CPU constraints file."""
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(InstallError, match=rf"{module}.*fix: {re.escape(install_hint('warp'))}$") as error:
        warp_module._import_warp()
    assert "pip install -e '.[warp]' in the mjvec checkout" in str(error.value)
    assert "-c constraints/cpu.txt" in str(error.value) and "pip install mjvec[" not in str(error.value)


def test_importing_the_package_does_not_import_warp() -> None:
    code = ("import sys, mjvec, mjvec.backends, mjvec.backends.base, mjvec.backends.cpu; "
            "bad = [m for m in ('warp', 'mujoco_warp', 'mjvec.backends.warp') if m in sys.modules]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True, env=checkout_env())
