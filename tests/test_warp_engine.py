"""Warp-only checks on mujoco-warp 4.0: per-env claims, geometry writes, rendering, resting tools.

Oracles: a scene compiled alone with the new geometry and run in mujoco_warp alone (`WarpOracle`),
MuJoCo C (`Oracle`, mj_setConst), the source of the installed mujoco_warp (what it holds and
reads), and a plain `mujoco.Renderer` of the tool's own scene. Tolerances are measured maxima with
a stated margin. (The 300-step SimToolReal comparison with the CPU backend is in test_env_warp.py.)
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import mujoco
import mujoco_warp
import numpy as np
import pytest

import mjvec
from mjvec.backends.base import FieldWrite, Scene
from mjvec.backends.variants import model_arrays, option_fields
from mjvec.backends.warp import WarpBackend
from mjvec.backends.warp import build as B
from mjvec.errors import ConfigError, FieldWriteError
from mjvec.randomization import EventTerm
from mjvec.tasks.simtoolreal.presets import table_height
from mjvec.tasks.simtoolreal.scene import OBJECT_JOINT_NAME, TABLE_GEOM_NAME, TABLE_TOP_Z, default_catalog, scene_spec
from tests.devices import np_of, put
from tests.scenes import Oracle, make_scene
from tests.subprocesses import checkout_env
from tests.test_backend_warp import C_TOLERANCE, _mesh_scene
from tests.test_env_warp import _window_of_all_classes
from tests.warp_oracle import WARP_VS_ALONE, WarpOracle

_SRC = Path(mujoco_warp.__file__).parent / "_src"


# ---- what mujoco_warp holds and reads (the claims behind WARP_PER_ENV) ------------------------
def _sources() -> dict[str, str]:
    return {p.name: p.read_text() for p in _SRC.glob("*.py") if not p.name.endswith("_test.py")}


# Per-env names that mujoco_warp's sources mention, and where: docstrings and comments (set_const.py,
# io.py, types.py), the batched renderer (not used by the backend), and dof_length's sleep code.
_MENTIONS = {
    "actuator_length0": {"set_const.py"}, "dof_simplenum": {"io.py"}, "dof_length": {"set_const.py", "sleep.py",
                                                                                      "types.py"},
    "cam_output": {"render_util.py"}, "flex_rgba": {"render.py", "render_util.py", "types.py"},
    "mesh_facenormal": {"render.py", "render_util.py", "types.py"},
    "mesh_facetexcoord": {"render.py", "render_util.py", "types.py"},
    "mesh_texcoord": {"render.py", "render_util.py", "types.py"}, "mesh_texcoordadr": {"render_util.py"},
    "tex_adr": {"render_util.py"}, "tex_data": {"render.py", "render_util.py"}, "tex_height": {"render_util.py"},
    "tex_nchannel": {"render_util.py"}, "tex_type": {"render_util.py"}, "tex_width": {"render_util.py"},
}


def test_per_env_claims_hold_for_the_installed_mujoco_warp() -> None:
    """WARP_PER_ENV relies on: the not-held per-env arrays are never used by a simulation kernel, and
    put_model/make_data read only the per-world fields listed in BUILD_READS (and READ_NOT_HELD)."""
    texts = _sources()
    probe = mujoco.MjModel.from_xml_string("<mujoco/>")
    not_held = sorted(n for n in B.WARP_PER_ENV if not n.startswith("opt.") and n not in B.BATCHABLE)
    assert {"bvh_aabb", "dof_M0", "dof_length", "geom_sameframe"} <= set(not_held)
    mentions = {n: {f for f, t in texts.items() if re.search(rf"\b{n}\b", t)} for n in not_held}
    assert {n: f for n, f in mentions.items() if f} == _MENTIONS
    assert "dof_length" not in B._MODEL_SPECS or B.READ_ONLY_WHEN["dof_length"] == mujoco.mjtEnableBit.mjENBL_SLEEP
    io = texts["io.py"]
    build = io[: io.index("def put_data(")]
    reads = set(re.findall(r"mjm(?:_tmp)?\.(opt\.\w+|\w+)", build))
    known = set(model_arrays(probe)) | set(option_fields(probe))
    read_not_held = {r for r in reads & known
                     if (r[4:] not in B._OPTION_SPECS if r.startswith("opt.") else r not in B._MODEL_SPECS)}
    assert read_not_held - {"opt.impratio"} <= B.READ_NOT_HELD
    assert not (B.READ_NOT_HELD - {"flex_internal"}) & B.WARP_PER_ENV  # flex_internal: read via hasattr
    put_model = io[io.index("def put_model(") : io.index("def _get_padded_sizes(")]
    numpy_reads = set(re.findall(r"(?<![\w.])m\.(\w+)(?!\s*=[^=])", put_model)) & B.BATCHABLE
    per_world_reads = ((reads & B.WARP_PER_ENV) | numpy_reads) - {"opt.impratio"}
    assert per_world_reads == set(B.BUILD_READS)


# ---- per-env fields found by comparison, and the per-Model flags mujoco_warp derives ----------
def _gains_vary(v: int) -> mujoco.MjSpec:
    """make_scene(v) with per-variant position gains and joint damping (same topology per v % 3)."""
    s = make_scene(v)
    s.actuator("a_j1").set_to_position(kp=20.0 + 4.0 * v, kv=1.0)
    s.joint("j2").damping = np.array([0.5 + 0.1 * v, 0.0, 0.0])
    return s


def test_variants_differing_in_gains_and_damping_share_a_group_and_step_like_alone() -> None:
    be = WarpBackend(Scene(6, _gains_vary, 6), device="cpu", progress=False)
    assert be.num_groups == 3  # split by geom types only
    assert {"actuator_gainprm", "actuator_biasprm", "dof_damping"} <= set(be._groups[0].fields)
    alone = WarpOracle(be.variant_of_env, make=_gains_vary).start()
    rng = np.random.default_rng(3)
    for _ in range(40):
        ctrl = rng.uniform(-1, 1, (6, 2))
        put(be.ctrl, ctrl)
        be.step(2)
        alone.step(ctrl, 2)
    np.testing.assert_allclose(np_of(be.qpos), alone.qpos(), rtol=0, atol=WARP_VS_ALONE)


def _affine_motors(v: int) -> mujoco.MjSpec:
    """make_scene(v) with affine-gain motors whose velocity/length gain terms are zero."""
    s = make_scene(v)
    for name in ("a_j1", "a_j2"):
        act = s.actuator(name)
        act.gaintype, act.biastype = mujoco.mjtGain.mjGAIN_AFFINE, mujoco.mjtBias.mjBIAS_NONE
        act.gainprm = np.array([1.0] + [0.0] * 9)
        act.biasprm = np.zeros(10)
    return s


def test_actuator_writes_needing_a_code_path_the_model_left_out_are_refused() -> None:
    """mujoco_warp switches its coupled-actuator code on per Model, from the compiled gains: a
    write giving an affine gain a velocity term where the compile had none is refused."""
    be = WarpBackend(Scene(3, _affine_motors, 3), device="cpu", progress=False)
    gain = be.defaults("actuator_gainprm")[[1]].copy()
    gain[0, 0, 1] = 0.5
    bad = FieldWrite("actuator_gainprm", np.array([1]), None, gain)
    for call in (be.write_fields, be.check_writes):
        with pytest.raises(FieldWriteError, match=r"actuator writes in envs \[1\] would need mujoco_warp's"):
            call([bad])
    np.testing.assert_array_equal(be.field_values("actuator_gainprm"), be.defaults("actuator_gainprm"))
    gain[0, 0, 1], gain[0, 0, 0] = 0.0, 2.0  # the constant gain term needs no such path
    be.write_fields([FieldWrite("actuator_gainprm", np.array([1]), None, gain)])
    assert be.field_values("actuator_gainprm")[1, 0, 0] == 2.0


def test_inertia_write_recomputes_only_the_set_const_0_constants_like_mj_setconst() -> None:
    """body_inertia is a SET_CONST_0 write (mujoco_warp's KIN0 | INERT0 groups, a graph of its own):
    the derived constants of the written worlds match MuJoCo C's mj_setConst (measured 1.0e-6
    relative), the other worlds' stay bit-identical."""
    be = WarpBackend(Scene(6, make_scene, 6), device="cpu", progress=False)
    c = Oracle(be.variant_of_env)
    obj, envs = be.model.body("obj").id, np.array([1, 4])
    inertia = be.defaults("body_inertia")[envs][:, [obj]] * np.array([2.0, 1.5, 3.0])
    before = {name: be.model_values(name) for name in ("body_invweight0", "dof_invweight0", "body_subtreemass")}
    for _ in range(2):  # the second write replays the captured graph
        be.write_fields([FieldWrite("body_inertia", envs, np.array([obj]), inertia)])
        inertia = inertia * 1.25
    for k, i in enumerate(envs):
        c.models[i].body_inertia[obj] = inertia[k, 0] / 1.25
        mujoco.mj_setConst(c.models[i], c.datas[i])
    others = np.setdiff1d(np.arange(6), envs)
    for name, was in before.items():
        now = be.model_values(name)
        want = np.stack([np.asarray(getattr(m, name)).reshape(now.shape[1:]) for m in c.models])
        np.testing.assert_allclose(now[envs], want[envs], rtol=1e-5, atol=1e-7, err_msg=name)
        np.testing.assert_array_equal(now[others], was[others], err_msg=name)
    np.testing.assert_array_equal(be.model_values("body_subtreemass"), before["body_subtreemass"])  # not FIXED


# ---- geometry writes vs the scene compiled with that geometry -------------------------------
def _pinned(v: int, *, handle_size: np.ndarray | None = None, table_dz: float = 0.0) -> mujoco.MjSpec:
    """Variant v with the handle's size and/or the table's height set; the tool's mass and inertia
    pinned to the unchanged compile (a resize randomizes shape, not mass)."""
    ref = make_scene(v).compile()
    spec = make_scene(v)
    body, b = spec.body("obj"), ref.body("obj").id
    body.explicitinertial = True
    body.mass, body.ipos, body.iquat = ref.body_mass[b], ref.body_ipos[b], ref.body_iquat[b]
    body.inertia = ref.body_inertia[b]
    if handle_size is not None:
        spec.geom("handle").size = np.asarray(handle_size, np.float64)
    spec.geom("table").pos = np.asarray(spec.geom("table").pos) + np.array([0, 0, table_dz])
    return spec


def _rows(be: WarpBackend, name: str) -> np.ndarray:
    """(num_envs, *group tail) per-world rows of a model field, in each env's own group layout."""
    out = []
    for i in range(be.num_envs):
        g, r = int(be.routing.group_of_env[i]), int(be.routing.row_of_env[i])
        out.append(B.model_view(be._engine.worlds[g], name)[r].cpu().numpy())
    return out


def _static_pose(be: WarpBackend, geom: int) -> np.ndarray:
    """(num_envs, 3) Data.geom_xpos of canonical geom slot `geom` (mujoco_warp collides with it)."""
    out = np.zeros((be.num_envs, 3))
    for group, (_, d, env_ids) in zip(be._groups, be.group_handles, strict=True):
        out[env_ids] = d.geom_xpos.numpy()[:, group.geom_map[geom]]
    return out


def _run_both(be: WarpBackend, oracles: list, *, lowest: np.ndarray, support: float, steps: int = 50) -> None:
    """Tools placed 3 mm above the support (lowest point `lowest` below their origin), clear of the
    arm and yawed as in test_backend_warp's C comparison, then random arm targets for `steps` x 2 steps."""
    rng = np.random.default_rng(2)
    qpos = np.tile(be.model.qpos0, (be.num_envs, 1))
    qpos[:, 0] = rng.uniform(-0.5, 0.5, be.num_envs)
    qpos[:, 2:5] = np.stack([np.full(be.num_envs, -0.13), np.full(be.num_envs, 0.11), support + lowest + 0.003], 1)
    qpos[:, 5:9] = [np.cos(0.15), 0.0, 0.0, np.sin(0.15)]
    qvel = np.zeros((be.num_envs, be.model.nv))
    be.reset(np.arange(be.num_envs), qpos, qvel)
    for oracle in oracles:
        for i in range(be.num_envs):
            oracle.reset(i, qpos[i], qvel[i])
    for _ in range(steps):
        ctrl = rng.uniform(-1, 1, (be.num_envs, 2))
        put(be.ctrl, ctrl)
        assert not be.step(2).any()
        for oracle in oracles:
            oracle.step(ctrl, 2)


def _lowest(variants: np.ndarray, handle_scale: float = 1.0) -> np.ndarray:
    """How far below the tool's origin its lowest point is, lying flat (make_scene's geometry)."""
    return np.where(variants % 3 == 0, 0.015 * handle_scale, np.maximum(0.015 * handle_scale, 0.025))


@pytest.mark.parametrize("scale", [2.0, 0.5])
def test_geom_size_write_equals_the_scene_compiled_with_that_size(scale: float) -> None:
    """Bounds follow the new size per world, so even a doubled handle keeps every contact: the
    trajectory is the resized scene's, in mujoco_warp alone (bit-identical) and in C (float32 tolerance)."""
    be = WarpBackend(Scene(9, make_scene, 9), device="cpu", progress=False)
    handle = be.model.geom("handle").id
    size = be.defaults("geom_size")[:, [handle]] * scale  # float32 values, exact in float64
    be.write_fields([FieldWrite("geom_size", np.arange(9), np.array([handle]), size)])
    make = lambda v: _pinned(v, handle_size=size[v, 0])  # noqa: E731  (env i is variant i)
    alone = WarpOracle(be.variant_of_env, make=make).start()
    for i, (m, _) in enumerate(alone.worlds):
        for name in ("geom_size", "geom_rbound", "geom_aabb"):
            np.testing.assert_array_equal(_rows(be, name)[i].reshape(-1), getattr(m, name).numpy()[0].reshape(-1))
    c = Oracle(be.variant_of_env, make=make)
    _run_both(be, [alone, c], lowest=_lowest(be.variant_of_env, scale), support=0.2)
    np.testing.assert_allclose(np_of(be.qpos), alone.qpos(), rtol=0, atol=WARP_VS_ALONE)
    err = np.abs(np_of(be.qpos) - c.qpos())
    assert err[:, :2].max() < C_TOLERANCE[True][0], err[:, :2].max()
    assert err[:, 2:].max() < C_TOLERANCE[True][1], err[:, 2:].max()


@pytest.mark.parametrize("dz", [0.01, -0.05])
def test_table_height_write_equals_the_scene_compiled_with_the_table_moved(dz: float) -> None:
    """The table is a static geom: mujoco_warp places it once, from the template, so the backend
    sets each world's table pose itself. Measured: identical to the moved scene alone in mujoco_warp."""
    be = WarpBackend(Scene(9, make_scene, 9), device="cpu", progress=False)
    table = be.model.geom("table").id
    pos = be.defaults("geom_pos")[:, [table]].copy()
    pos[..., 2] += np.float32(dz)
    be.write_fields([FieldWrite("geom_pos", np.arange(9), np.array([table]), pos)])
    make = lambda v: _pinned(v, table_dz=float(pos[v, 0, 2] - make_scene(v).compile().geom_pos[table, 2]))  # noqa: E731
    alone = WarpOracle(be.variant_of_env, make=make).start()
    want = np.stack([d.geom_xpos.numpy()[0, table] for _, d in alone.worlds])
    np.testing.assert_array_equal(_static_pose(be, table), want)
    c = Oracle(be.variant_of_env, make=make)
    _run_both(be, [alone, c], lowest=_lowest(be.variant_of_env), support=0.2 + float(dz))
    np.testing.assert_allclose(np_of(be.qpos), alone.qpos(), rtol=0, atol=WARP_VS_ALONE)
    err = np.abs(np_of(be.qpos) - c.qpos())
    assert err[:, :2].max() < C_TOLERANCE[True][0], err[:, :2].max()
    assert err[:, 2:].max() < C_TOLERANCE[True][1], err[:, 2:].max()
    # A reset keeps the moved table (reset_data does not touch static geom poses).
    be.reset(np.arange(9), np.tile(be.model.qpos0, (9, 1)), np.zeros((9, be.model.nv)))
    np.testing.assert_array_equal(_static_pose(be, table), want)
    with pytest.raises(ConfigError, match="'geom_xpos' has a different shape in each variant group"):
        be.bind("geom_xpos")


def _shelf(v: int, dz: float = 0.0) -> mujoco.MjSpec:
    """make_scene(v) plus a static child body of the world carrying a box, raised by dz."""
    s = make_scene(v)
    shelf = s.worldbody.add_body(name="shelf", pos=[0.3, 0.3, 0.3 + dz], quat=[np.cos(0.2), 0, 0, np.sin(0.2)])
    shelf.add_geom(name="shelf_box", type=mujoco.mjtGeom.mjGEOM_BOX, size=[0.05, 0.05, 0.01], pos=[0.02, 0.0, 0.0])
    return s


def test_static_body_write_moves_its_geoms() -> None:
    """A body_pos write on a static body moves its geoms in every written world (mujoco_warp would
    keep their make_data poses), as in the scene compiled with the body moved, within float32."""
    be = WarpBackend(Scene(3, _shelf, 3), device="cpu", progress=False)
    body, geom = be.model.body("shelf").id, be.model.geom("shelf_box").id
    pos = be.defaults("body_pos")[:, [body]].copy()
    pos[[0, 2], 0, 2] += np.float32(0.05)
    be.write_fields([FieldWrite("body_pos", np.array([0, 2]), np.array([body]), pos[[0, 2]])])
    want = []
    for v, dz in zip(be.variant_of_env, (0.05, 0.0, 0.05), strict=True):
        oracle = WarpOracle(np.array([v]), make=lambda v, dz=dz: _shelf(v, dz)).start()
        want.append(oracle.worlds[0][1].geom_xpos.numpy()[0, oracle.models[0].geom("shelf_box").id])
    np.testing.assert_allclose(_static_pose(be, geom), want, rtol=0, atol=1e-7)  # float32 rounding of body_pos


def test_bad_geometry_writes_are_refused_and_nothing_is_written() -> None:
    be = WarpBackend(Scene(4, _mesh_scene, 4), device="cpu", progress=False)
    handle, table, floor = (be.model.geom(n).id for n in ("handle", "table", "floor"))
    before = be.field_values("geom_size")
    good = FieldWrite("geom_size", np.array([0]), np.array([table]), np.array([[[0.3, 0.3, 0.1]]]))
    for index, match in ((handle, r"geoms \['handle'\] cannot be written: they are \['mjGEOM_MESH'\]"),
                         (floor, r"geoms \['floor'\] cannot be written: they are \['mjGEOM_PLANE'\]")):
        bad = FieldWrite("geom_size", np.array([1]), np.array([index]), np.full((1, 1, 3), 0.1))
        for call in (be.write_fields, be.check_writes):
            with pytest.raises(FieldWriteError, match=match):
                call([good, bad])
    for values in ([[[0.0, 0.1, 0.1]]], [[[0.1, -0.1, 0.1]]]):
        with pytest.raises(FieldWriteError, match="must be positive"):
            be.check_writes([FieldWrite("geom_size", np.array([0]), np.array([table]), np.array(values))])
    np.testing.assert_array_equal(be.field_values("geom_size"), before)
    # A mesh geom may move: mujoco_warp has no body BVH and keeps a mesh's bounds in its own frame.
    be.write_fields([FieldWrite("geom_pos", np.array([2]), np.array([handle]), np.array([[[0.01, 0.0, 0.0]]]))])
    assert be.field_values("geom_pos")[2, handle, 0] == np.float32(0.01)


def test_table_height_and_size_terms_on_warp_simtoolreal() -> None:
    """table_height() and a geom_size term run on Warp through make_vec: each env's table sits at
    its drawn height (in the model and in the Data mujoco_warp collides with)."""
    term = EventTerm("geom_size", 0.9, 1.1, targets=("object_handle",))
    env = gym.make_vec(mjvec.ENV_ID, num_envs=4, num_tools=6, backend="warp", device="cpu", array_backend="numpy",
                       randomization=[table_height(), term])
    env.reset(seed=0)
    be = env.unwrapped.backend
    table = be.model.geom(TABLE_GEOM_NAME).id
    dz = be.field_values("geom_pos")[:, table, 2] - be.defaults("geom_pos")[:, table, 2]
    np.testing.assert_allclose(dz, env.dr_params["table_height"][:, 0, 0], atol=1e-7)
    np.testing.assert_array_equal(_static_pose(be, table)[:, 2], be.field_values("geom_pos")[:, table, 2])
    assert (np.abs(dz) <= 0.01 + 1e-7).all() and np.ptp(dz) > 0
    for _ in range(10):
        obs, *_ = env.step(np.zeros((4, 29)))
    assert np.isfinite(obs).all()
    env.close()


# ---- rendering: one renderer per group, each env drawn with its own model ---------------------
def test_warp_env_frames_equal_plain_renders_of_each_tool() -> None:
    """Envs of all three groups in one Warp env, each drawn with its own model (one renderer per
    group), against a plain render of its tool's scene compiled alone at the same state: equal but
    for a few edge pixels one intensity level apart (the Warp model holds its geometry in float32;
    measured at most 2 of 36,864 values, off by 1)."""
    n = 8
    env = gym.make_vec(mjvec.ENV_ID, num_envs=n, num_tools=600, env_id_offset=_window_of_all_classes(n, 1),
                       backend="warp", device="cpu", randomization=None, render_mode="rgb_array",
                       render_size=(96, 128))
    env.reset(seed=1)
    env.step(np.zeros((n, 29)))
    be, frames = env.unwrapped.backend, env.unwrapped.render()
    assert be.num_groups == 3
    tools = [int(t) for t in env.unwrapped.tool_ids]
    classes = [default_catalog()[t].topology for t in tools]
    for i in [classes.index(c) for c in ("box_only", "box_box", "capsule_box")]:
        model = scene_spec(tools[i]).compile()
        model.vis.global_.offheight, model.vis.global_.offwidth = 96, 128
        data = mujoco.MjData(model)
        data.qpos[:] = be.qpos[i]
        data.mocap_pos[:], data.mocap_quat[:] = be.bind("mocap_pos")[i], be.bind("mocap_quat")[i]
        mujoco.mj_forward(model, data)
        with mujoco.Renderer(model, 96, 128) as renderer:
            renderer.update_scene(data, camera=env.unwrapped.render_camera)
            want = renderer.render()
        diff = np.abs(frames[i].astype(np.int16) - want.astype(np.int16))
        assert diff.max() <= 1 and (diff > 0).sum() <= 20, (i, tools[i], classes[i], diff.max(), (diff > 0).sum())
    env.close()


# ---- every tool resting on the table: no phantom contacts ------------------------------------
_DEEP = 0.005  # a contact deeper than this on a tool resting 1 mm into the table is a phantom


def _quat(axis: str, degrees: float) -> np.ndarray:
    q = np.zeros(4)
    q[0], q["xyz".index(axis) + 1] = np.cos(np.radians(degrees) / 2), np.sin(np.radians(degrees) / 2)
    return q


def _mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    out = np.zeros(4)
    mujoco.mju_mulQuat(out, a, b)
    return out


# Flat on each of the six faces, on an edge, slightly tilted, on a corner, and flat but yawed.
ORIENTATIONS = np.array([
    _quat("x", 0), _quat("x", 180), _quat("x", 90), _quat("x", -90), _quat("y", 90), _quat("y", -90),
    _quat("x", 45), _quat("y", 45), _quat("x", 10), _quat("y", 2), _mul(_quat("x", 45), _quat("y", 35)),
    _quat("z", 30),
])


def resting_poses(model: mujoco.MjModel, sink: float = 0.001) -> np.ndarray:
    """(len(ORIENTATIONS), nq): qpos0 with the tool in each orientation, its lowest point `sink`
    below the table top (box and capsule geoms, from MuJoCo C's kinematics)."""
    joint = model.joint(OBJECT_JOINT_NAME)
    adr, body = int(joint.qposadr[0]), int(joint.bodyid[0])
    geoms = np.flatnonzero(model.geom_bodyid == body)
    data = mujoco.MjData(model)
    out = np.tile(model.qpos0, (len(ORIENTATIONS), 1))
    for k, q in enumerate(ORIENTATIONS):
        data.qpos[adr : adr + 7] = [0.0, 0.0, 0.0, *q]
        mujoco.mj_kinematics(model, data)
        low = np.inf
        for g in geoms:
            z, rz, size = data.geom_xpos[g, 2], data.geom_xmat[g].reshape(3, 3)[2], model.geom_size[g]
            capsule = model.geom_type[g] == mujoco.mjtGeom.mjGEOM_CAPSULE
            low = min(low, z - (abs(rz[2]) * size[1] + size[0] if capsule else np.abs(rz) @ size))
        out[k, adr : adr + 7] = [0.0, 0.0, TABLE_TOP_Z - sink - low, *q]
    return out


def tool_table_contacts(be: WarpBackend) -> tuple[np.ndarray, np.ndarray]:
    """(count, deepest distance) per env of the contacts between the tool and the table."""
    count, deepest = np.zeros(be.num_envs, np.int64), np.zeros(be.num_envs)
    for g, (_, d, env_ids) in enumerate(be.group_handles):
        model = be._groups[g].template
        n = int(d.nacon.numpy()[0])
        geom, dist, world = d.contact.geom.numpy()[:n], d.contact.dist.numpy()[:n], d.contact.worldid.numpy()[:n]
        tool = model.geom_bodyid == model.body("object").id
        table = model.geom(TABLE_GEOM_NAME).id
        sel = ((geom[:, 0] == table) & tool[geom[:, 1]]) | ((geom[:, 1] == table) & tool[geom[:, 0]])
        np.add.at(count, env_ids[world[sel]], 1)
        np.minimum.at(deepest, env_ids[world[sel]], dist[sel])
    return count, deepest


def _c_tool_table_contacts(model: mujoco.MjModel, qpos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(count, deepest distance) per pose of MuJoCo C's tool-table contacts."""
    data = mujoco.MjData(model)
    tool = model.geom_bodyid == model.body("object").id
    table = model.geom(TABLE_GEOM_NAME).id
    count, deepest = np.zeros(len(qpos), np.int64), np.zeros(len(qpos))
    for k, q in enumerate(qpos):
        data.qpos[:] = q
        mujoco.mj_forward(model, data)
        c = data.contact
        sel = ((c.geom1 == table) & tool[c.geom2]) | ((c.geom2 == table) & tool[c.geom1])
        count[k], deepest[k] = sel.sum(), np.min(c.dist[sel], initial=0.0)
    return count, deepest


@pytest.mark.parametrize("every", [pytest.param(1, marks=pytest.mark.slow), 25])
def test_every_tool_rests_on_the_table_without_phantom_contacts(every: int) -> None:
    """All 600 tools (slow; else every 25th, each topology included) x 12 resting poses (1 mm into the
    table) as worlds of one backend, one forward: no contact deeper than 5 mm (mujoco-warp 3.11 had
    such phantoms, 0.17-0.43 m deep), and per pose the same number of tool-table contacts as MuJoCo C,
    as deep to 1e-6 m (measured: all 7,200 poses equal in count, depths within 9.7e-8 m)."""
    poses = len(ORIENTATIONS)
    used = np.arange(0, 600, every)
    tools = np.repeat(used, poses)
    scene = Scene(600, scene_spec, tools.size, assignment=tools, name="simtoolreal")
    be = WarpBackend(scene, device="cpu", progress=False)
    models = [scene_spec(int(t)).compile() for t in used]
    qpos = np.concatenate([resting_poses(m) for m in models])
    be.reset(np.arange(tools.size), qpos, np.zeros((tools.size, be.model.nv)))
    count, deepest = tool_table_contacts(be)
    c = [_c_tool_table_contacts(m, qpos[t * poses : (t + 1) * poses]) for t, m in enumerate(models)]
    c_count, c_deepest = np.concatenate([x[0] for x in c]), np.concatenate([x[1] for x in c])
    assert (deepest > -_DEEP).all(), np.flatnonzero(deepest <= -_DEEP)
    np.testing.assert_array_equal(count, c_count)
    np.testing.assert_allclose(deepest, c_deepest, rtol=0, atol=1e-6)
    be.close()


# ---- one collision configuration per model: nothing leaks between models --------------------
_LEAK_CODE = """
import json, sys, numpy as np, mujoco, mujoco_warp as mjw, warp as wp, torch
wp.config.quiet = True
from mjvec.tasks.simtoolreal.scene import scene_spec
from tests.test_warp_engine import resting_poses
def contacts(native):
    spec = scene_spec(int(sys.argv[1]))
    if native:
        spec.option.disableflags &= ~int(mujoco.mjtDisableBit.mjDSBL_NATIVECCD)
    mjm = spec.compile()
    with wp.ScopedDevice("cpu"):
        m, d = mjw.put_model(mjm), mjw.make_data(mjm, nworld=12)
        wp.to_torch(d.qpos)[:] = torch.as_tensor(resting_poses(mjm), dtype=torch.float32)
        mjw.forward(m, d)
        n = int(d.nacon.numpy()[0])
        return sorted(zip(d.contact.worldid.numpy()[:n].tolist(), d.contact.geom.numpy()[:n].tolist(),
                          np.round(d.contact.dist.numpy()[:n], 7).tolist()))
print(json.dumps([contacts(flag == "on") for flag in sys.argv[2:]]))
"""


def _contacts_in_a_process(tool: int, *flags: str) -> list:
    out = subprocess.run([sys.executable, "-c", _LEAK_CODE, str(tool), *flags], check=True, capture_output=True,
                         text=True, env=checkout_env())
    import json

    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_collision_configuration_does_not_leak_between_models() -> None:
    """mujoco_warp 3.11 kept module-level pair-type lists that grew across models (a NATIVECCD model
    moved box-box pairs of a later one). 4.0 computes them per call: a box-box tool's contacts with
    NATIVECCD off are the same whether a NATIVECCD model was built and run before it or not."""
    tool = int(default_catalog().ids_of_topology("box_box")[0])
    alone_off, = _contacts_in_a_process(tool, "off")
    on, off_after_on = _contacts_in_a_process(tool, "on", "off")
    assert off_after_on == alone_off
    assert on != alone_off  # the two configurations give different contacts: a leak would show
