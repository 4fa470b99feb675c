"""mjvec.assets: tool catalog, robot constants vs the compiled model, scene batching contract."""

from __future__ import annotations

import collections
import hashlib
import os
import subprocess
import sys
from pathlib import Path

import mujoco
import numpy as np
import pytest

from mjvec.assets import _hand as hand
from mjvec.assets import robot
from mjvec.assets._frames import Frame
from mjvec.errors import ConfigError
from mjvec.tasks.simtoolreal import scene
from mjvec.tasks.simtoolreal.catalog import geometry as tool_geoms
from mjvec.tasks.simtoolreal.catalog import tools

REPO = Path(__file__).resolve().parents[1]
CATALOG = scene.default_catalog()


def _digest(catalog: tools.ToolCatalog) -> str:
    """Bit-exact fingerprint of every tool (float.hex keeps all 53 mantissa bits)."""
    h = hashlib.sha256()
    for t in catalog:
        floats = (*t.handle_dims, *(t.head_dims or ()), t.handle_density, t.head_density or 0.0)
        h.update(f"{t.tool_id}|{t.distribution}|{t.topology}|{[float(v).hex() for v in floats]}\n".encode())
    return h.hexdigest()


# ---------------------------------------------------------------------------------------------- catalog


def test_catalog_census():
    assert len(CATALOG) == 600
    assert CATALOG.counts_by_topology() == {"box_only": 50, "box_box": 250, "capsule_box": 300}
    assert collections.Counter(t.distribution for t in CATALOG) == dict.fromkeys(range(12), 50)
    assert [t.tool_id for t in CATALOG] == list(range(600))
    for name in tools.TOPOLOGY_CLASSES:
        ids = CATALOG.ids_of_topology(name)
        assert ids.dtype == np.int64 and np.all(np.diff(ids) > 0)
        assert all(CATALOG[int(i)].topology == name for i in ids)
    assert {CATALOG[int(i)].distribution for i in CATALOG.ids_of_topology("box_only")} == {7}
    assert {t.category for t in CATALOG} == {"hammer", "screwdriver", "marker", "spatula", "eraser", "brush"}


def test_tools_inside_their_distribution():
    for t in CATALOG:
        dist = tools.DISTRIBUTIONS[t.distribution]
        assert (t.category, t.handle_type, t.topology) == (dist.category, dist.handle_type, dist.topology)
        drawn = t.handle_dims if dist.handle_type == "box" else t.handle_dims[:2]
        assert np.all(np.array(drawn) >= dist.handle_min) and np.all(np.array(drawn) <= dist.handle_max)
        if dist.handle_type == "cyl":
            assert t.handle_dims[1] == t.handle_dims[2]
        assert 300.0 <= t.handle_density <= 600.0
        if dist.head_min is None:
            assert t.head_dims is None and t.head_density is None
        else:
            assert np.all(np.array(t.head_dims) >= dist.head_min) and np.all(np.array(t.head_dims) <= dist.head_max)
            low, high = (800.0, 2000.0) if dist.head_density == "heavy" else (300.0, 600.0)
            assert low <= t.head_density <= high
        np.testing.assert_array_equal(t.object_scales, np.array(t.handle_dims) / 0.04)
        np.testing.assert_array_equal(t.grasp_bbox, np.array(t.handle_dims))


def test_catalog_follows_the_source_draw_order():
    # Literal transcription of the source loop (one stream; per distribution densities then sizes).
    rs = np.random.RandomState(42)
    rows = []
    for d in tools.DISTRIBUTIONS:
        hd = rs.uniform(300.0, 600.0, size=50)
        if d.head_density is not None:
            rs.uniform(*(800.0, 2000.0) if d.head_density == "heavy" else (300.0, 600.0), size=50)
        hs = rs.uniform(d.handle_min, d.handle_max, size=(50, len(d.handle_min)))
        if d.head_min is not None:
            rs.uniform(d.head_min, d.head_max, size=(50, 3))
        rows += [(hd[k], hs[k][0]) for k in range(50)]
    order = list(range(600))
    rs.shuffle(order)
    assert [(t.handle_density, t.handle_dims[0]) for t in CATALOG] == [rows[i] for i in order]


def test_catalog_is_the_same_in_a_fresh_process():
    code = "from mjvec.assets import ToolCatalog; from tests.test_assets import _digest; print(_digest(ToolCatalog()))"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == _digest(tools.ToolCatalog())
    assert _digest(tools.ToolCatalog(seed=7)) != _digest(CATALOG)


def test_catalog_size_and_iteration():
    small = tools.ToolCatalog(seed=3, per_distribution=2)
    assert len(small) == 24 and len(list(small)) == 24
    assert sum(small.counts_by_topology().values()) == 24
    assert small[np.int64(5)] == small[5]
    assert "seed=3" in repr(small)


def test_analytic_mass_com_inertia():
    box = tools.Tool(0, 7, "eraser", "box_only", "box", (0.1, 0.04, 0.02), None, 500.0, None)
    assert box.mass == pytest.approx(500.0 * 0.1 * 0.04 * 0.02, rel=1e-12)
    assert box.com_x == 0.0 and box.head_center_x is None
    np.testing.assert_allclose(box.inertia, box.mass / 12 * np.array([0.0020, 0.0104, 0.0116]), rtol=1e-12)
    cap = tools.Tool(1, 4, "marker", "capsule_box", "cyl", (0.1, 0.02, 0.02), (0.02, 0.01, 0.01), 400.0, 400.0)
    handle = 400.0 * (np.pi * 0.01**2 * 0.1 + 4 / 3 * np.pi * 0.01**3)
    head = 400.0 * 0.02 * 0.01 * 0.01
    assert cap.mass == pytest.approx(handle + head, rel=1e-12)
    assert cap.head_center_x == pytest.approx(0.06)
    assert cap.com_x == pytest.approx(head * 0.06 / (handle + head), rel=1e-12)


# ------------------------------------------------------------------------------------ compiled scenes


@pytest.mark.parametrize("geometry", tools.TOOL_GEOMETRIES)
def test_every_tool_compiles_with_the_analytic_mass(geometry):
    """The tool body's explicit inertial is the catalog's analytic one, in the object's own frame."""
    for t in CATALOG:
        model = scene.compile_scene(t.tool_id, geometry)
        body = model.body(scene.OBJECT_BODY_NAME).id
        assert model.body_mass[body] == pytest.approx(t.mass, rel=1e-12)
        np.testing.assert_allclose(model.body_ipos[body], [t.com_x, 0, 0], rtol=0, atol=1e-15)
        np.testing.assert_array_equal(model.body_iquat[body], [1, 0, 0, 0])
        np.testing.assert_allclose(model.body_inertia[body], t.inertia, rtol=1e-12)
        assert model.body_simple[body] == 0  # a per-env COM must be writable for every tool
        goal = model.body(scene.GOAL_BODY_NAME).id
        assert model.body_mass[goal] == 0.0 and model.body_mocapid[goal] == 0


def test_analytic_inertial_equals_what_mujoco_derives_from_the_primitive_geoms():
    """Oracle for the catalog's formulas: MuJoCo's own geom-derived inertial (no explicit one)."""
    for t in CATALOG:
        spec = scene.scene_spec(t.tool_id)
        spec.body(scene.OBJECT_BODY_NAME).explicitinertial = False
        model = spec.compile()
        body = model.body(scene.OBJECT_BODY_NAME).id
        assert model.body_mass[body] == pytest.approx(t.mass, rel=1e-12)
        np.testing.assert_allclose(model.body_ipos[body], [t.com_x, 0, 0], rtol=0, atol=1e-15)
        # The compiler's principal axes are the object axes in some order (and sign).
        rot = np.zeros(9)
        mujoco.mju_quat2Mat(rot, model.body_iquat[body])
        world_inertia = rot.reshape(3, 3) @ np.diag(model.body_inertia[body]) @ rot.reshape(3, 3).T
        np.testing.assert_allclose(world_inertia, np.diag(t.inertia), rtol=1e-9, atol=1e-15)


def test_robot_constants_match_the_compiled_model():
    model = scene.compile_scene(0)
    assert len(robot.ARM_JOINT_NAMES) == 7 and len(robot.HAND_JOINT_NAMES) == 22 and len(robot.JOINT_NAMES) == 29
    assert robot.HAND_JOINT_NAMES[:6] == (
        "left_thumb_CMC_FE", "left_thumb_CMC_AA", "left_thumb_MCP_FE", "left_thumb_MCP_AA", "left_thumb_IP",
        "left_index_MCP_FE",
    )  # fmt: skip
    assert robot.HAND_JOINT_NAMES[17] == "left_pinky_CMC"
    for i, name in enumerate(robot.JOINT_NAMES):
        joint = model.joint(name)
        assert joint.id == i and model.jnt_qposadr[i] == i and model.jnt_dofadr[i] == i
        assert model.actuator(robot.ACTUATOR_NAMES[i]).id == i and model.actuator_trnid[i, 0] == i
    assert model.joint(scene.OBJECT_JOINT_NAME).id == 29 and model.jnt_qposadr[29] == 29
    np.testing.assert_array_equal(model.jnt_range[:29, 0], robot.JOINT_LOWER)
    np.testing.assert_array_equal(model.jnt_range[:29, 1], robot.JOINT_UPPER)
    np.testing.assert_array_equal(model.actuator_ctrlrange[:, 0], robot.JOINT_LOWER)
    np.testing.assert_array_equal(model.actuator_gainprm[:, 0], robot.JOINT_KP)
    np.testing.assert_array_equal(model.actuator_biasprm[:, 1], -robot.JOINT_KP)
    np.testing.assert_array_equal(model.actuator_biasprm[:, 2], -robot.JOINT_KD)
    np.testing.assert_array_equal(model.actuator_forcerange[:7, 1], 300.0)
    assert robot.JOINT_KP[7:12].tolist() == [6.95, 13.2, 4.76, 6.62, 0.9]
    assert robot.JOINT_LOWER[7 + 6] == -0.03491 and robot.JOINT_UPPER[7 + 8] == 1.3963
    assert np.all(robot.DEFAULT_JOINT_POS >= robot.JOINT_LOWER) and np.all(robot.DEFAULT_JOINT_POS <= robot.JOINT_UPPER)
    np.testing.assert_array_equal(robot.DEFAULT_JOINT_POS[7:], 0.0)
    assert model.dof_armature[:7].tolist() == [0.0] * 7 and model.dof_armature[7] == 0.0032
    assert model.dof_frictionloss[7 + 8] == pytest.approx(0.00378738)
    robot_bodies = [b for b in range(1, model.nbody) if model.body_rootid[b] == model.body("iiwa14_link_0").id]
    assert all(model.body_gravcomp[b] == 1.0 for b in robot_bodies)
    assert model.body_mass[model.body("iiwa14_link_1").id] == 5.76
    assert model.body_mass[model.body(robot.HAND_BODY_NAME).id] == pytest.approx(0.72045)


def test_reference_sites_and_home_pose():
    model = scene.compile_scene(0)
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, model.key(scene.HOME_KEYFRAME).id)
    mujoco.mj_forward(model, data)
    np.testing.assert_array_equal(data.qpos[:29], robot.DEFAULT_JOINT_POS)
    np.testing.assert_array_equal(data.qpos[29:32], scene.OBJECT_SPAWN_POS)
    palm = model.site(robot.PALM_SITE_NAME)
    assert model.body(palm.bodyid[0]).name == robot.PALM_BODY_NAME
    np.testing.assert_allclose(palm.pos, robot.PALM_OFFSET)
    link7 = data.body(robot.PALM_BODY_NAME)
    want = link7.xpos + link7.xmat.reshape(3, 3) @ np.array(robot.PALM_OFFSET)
    np.testing.assert_allclose(data.site(robot.PALM_SITE_NAME).xpos, want, atol=1e-12)
    for site, body in zip(robot.FINGERTIP_SITE_NAMES, robot.FINGERTIP_BODY_NAMES, strict=True):
        assert model.body(model.site(site).bodyid[0]).name == body
        np.testing.assert_allclose(model.site(site).pos, robot.FINGERTIP_OFFSET)
    # The home pose holds the palm face down over the table, fingers open.
    palm_x = data.body(robot.HAND_BODY_NAME).xmat.reshape(3, 3)[:, 0]
    assert palm_x[2] < -0.9 and data.site(robot.PALM_SITE_NAME).xpos[2] > scene.TABLE_TOP_Z + 0.1


def test_hand_has_no_self_contact_near_rest():
    """The reset distribution (default + 10% of the range) never starts in self-contact."""
    model = scene.compile_scene(0)
    data = mujoco.MjData(model)
    rng = np.random.default_rng(0)
    default = robot.DEFAULT_JOINT_POS
    robot_bodies = set(range(1, model.body(scene.OBJECT_BODY_NAME).id))
    for _ in range(300):
        u = rng.uniform(size=29)
        data.qpos[:29] = default + 0.1 * (u * (robot.JOINT_UPPER - default) + (1 - u) * (robot.JOINT_LOWER - default))
        data.qpos[29:32] = (0.0, 0.0, 2.0)  # tool out of reach
        mujoco.mj_forward(model, data)
        pairs = [(model.geom_bodyid[c.geom1], model.geom_bodyid[c.geom2]) for c in data.contact[: data.ncon]]
        assert not [p for p in pairs if min(p) > 0 and max(p) in robot_bodies], pairs  # table contact is fine


def test_self_collision_is_on_for_the_arm_and_the_hand():
    model = scene.compile_scene(0)
    geom = model.geom("left_index_DP_collision").id
    thumb = model.geom("left_thumb_DP_collision").id
    arm = model.geom("iiwa14_link_4_collision").id
    table = model.geom(scene.TABLE_GEOM_NAME).id

    def collides(a: int, b: int) -> bool:
        return bool(
            model.geom_contype[a] & model.geom_conaffinity[b] or model.geom_contype[b] & model.geom_conaffinity[a]
        )

    assert collides(geom, thumb) and collides(geom, table) and collides(arm, table)
    # As in the source (every robot pair but its adjacency table: tests/test_simtoolreal_source_rules.py).
    assert collides(arm, geom) and collides(arm, model.geom("iiwa14_link_2_collision").id)
    assert model.geom_friction[geom, 0] == robot.FINGERTIP_FRICTION and model.geom_condim[geom] == 4
    assert model.geom_friction[arm, 0] == 0.5
    assert model.ngeom <= 35  # about one primitive per link


def test_scene_layout_and_options():
    model = scene.compile_scene(int(CATALOG.ids_of_topology("capsule_box")[0]))
    opt = model.opt
    assert opt.timestep == pytest.approx(1 / 120) and opt.impratio == 10.0
    assert opt.integrator == mujoco.mjtIntegrator.mjINT_IMPLICITFAST and opt.solver == mujoco.mjtSolver.mjSOL_NEWTON
    assert opt.cone == mujoco.mjtCone.mjCONE_ELLIPTIC and opt.gravity.tolist() == [0.0, 0.0, -9.81]
    np.testing.assert_allclose(model.geom(scene.TABLE_GEOM_NAME).size, scene.TABLE_HALF_SIZE)
    assert scene.TABLE_TOP_Z == pytest.approx(0.53)
    assert model.geom(scene.FLOOR_GEOM_NAME).type[0] == mujoco.mjtGeom.mjGEOM_PLANE
    np.testing.assert_allclose(model.body(scene.OBJECT_BODY_NAME).pos, scene.OBJECT_SPAWN_POS)
    for prefix in ("object", "goal"):
        handle, head = model.geom(f"{prefix}_handle"), model.geom(f"{prefix}_head")
        assert handle.type[0] == mujoco.mjtGeom.mjGEOM_CAPSULE and head.type[0] == mujoco.mjtGeom.mjGEOM_BOX
    ghost = model.geom("goal_handle")
    assert ghost.contype[0] == 0 and ghost.conaffinity[0] == 0 and ghost.rgba[3] < 1.0
    assert model.geom("object_handle").friction[0] == 0.5


def test_tool_scene_spec_is_scene_spec_of_that_tool():
    a, b = scene.compile_scene(17, "mesh"), scene.tool_scene_spec(CATALOG[17], "mesh").compile()
    np.testing.assert_array_equal(a.geom_size, b.geom_size)
    np.testing.assert_array_equal(a.body_inertia, b.body_inertia)


def test_goal_ghost_does_not_change_dynamics():
    model = scene.compile_scene(5)
    runs = []
    for goal in ((0.0, 0.0, 0.88), (0.0, 0.0, 0.6)):  # the second one overlaps the falling tool
        data = mujoco.MjData(model)
        mujoco.mj_resetDataKeyframe(model, data, 0)
        data.mocap_pos[0] = goal
        mujoco.mj_step(model, data, 120)
        runs.append(data.qpos.copy())
    np.testing.assert_array_equal(runs[0], runs[1])


@pytest.mark.parametrize("geometry", tools.TOOL_GEOMETRIES)
def test_same_class_tools_differ_only_in_variant_fields(geometry):
    """Scenes of one topology class differ only in the tool's geometry and inertia (and what MuJoCo
    derives from them), and in mesh mode in the meshes' own data: nothing a backend must split on."""
    allowed = {
        "geom_size", "geom_pos", "geom_quat", "geom_rbound", "geom_aabb", "geom_rgba", "geom_dataid",
        "body_mass", "body_inertia", "body_ipos", "body_subtreemass", "body_invweight0",
        "dof_M0", "dof_invweight0", "dof_length", "bvh_aabb", "geom_sameframe",
    }  # fmt: skip
    tool_geoms_ = {"object_handle", "object_head", "goal_handle", "goal_head"}
    for name in tools.TOPOLOGY_CLASSES:
        ids = [int(i) for i in CATALOG.ids_of_topology(name)[:3]]
        models = [scene.compile_scene(i, geometry) for i in ids]
        for other in models[1:]:
            for field in dir(other):
                a, b = getattr(models[0], field, None), getattr(other, field, None)
                if isinstance(a, np.ndarray) and field.startswith("bvh_"):  # the meshes' rows follow the bodies'
                    n = int(other.body_bvhnum.sum())
                    a, b = a[:n], b[:n]
                if not isinstance(a, np.ndarray) or (a.shape == b.shape and np.array_equal(a, b)):
                    continue
                assert field in allowed or field.startswith(("mesh_", "oct_")), field
                if field.startswith("geom_"):
                    rows = np.flatnonzero(np.any((a != b).reshape(len(a), -1), axis=1))
                    assert {other.geom(int(r)).name for r in rows} <= tool_geoms_, field
            for kind in ("body", "joint", "geom", "site", "actuator", "key"):
                count = {"joint": "njnt", "actuator": "nu", "key": "nkey"}.get(kind, f"n{kind}")
                names = [[getattr(m, kind)(i).name for i in range(getattr(m, count))] for m in (models[0], other)]
                assert names[0] == names[1]
            assert other.stat.extent == scene.STAT_EXTENT


# -------------------------------------------------------------------------------------------- errors


def test_catalog_errors():
    with pytest.raises(ConfigError, match=r"tool_id 600 is out of range; allowed an int in 0\.\.599"):
        CATALOG[600]
    with pytest.raises(ConfigError, match=r"tool_id -1 is out of range"):
        CATALOG[-1]
    with pytest.raises(ConfigError, match=r"tool_id '3' is out of range"):
        CATALOG["3"]
    with pytest.raises(ConfigError, match=r"tool_id True is out of range"):
        CATALOG[True]
    with pytest.raises(ConfigError, match=r"seed -1 is not allowed; allowed an int in 0\.\.2\*\*32-1"):
        tools.ToolCatalog(seed=-1)
    with pytest.raises(ConfigError, match=r"seed 1\.5 is not allowed"):
        tools.ToolCatalog(seed=1.5)
    with pytest.raises(ConfigError, match=r"per_distribution 0 is not allowed; allowed an int >= 1"):
        tools.ToolCatalog(per_distribution=0)
    with pytest.raises(
        ConfigError, match=r"topology 'sphere' is not allowed; allowed \{box_box, box_only, capsule_box\}"
    ):
        CATALOG.ids_of_topology("sphere")


def test_scene_errors():
    with pytest.raises(ConfigError, match=r"tool_geometry 'sdf' is not allowed; allowed \{mesh, primitive\}"):
        scene.scene_spec(0, "sdf")
    with pytest.raises(ConfigError, match=r"tool_id 600 is out of range"):
        scene.scene_spec(600)
    with pytest.raises(ConfigError, match=r"tool_id 30 is out of range; allowed an int in 0\.\.23"):
        scene.compile_scene(30, catalog=tools.ToolCatalog(per_distribution=2))
    with pytest.raises(ConfigError, match=r"tool_geometry 'stl' is not allowed; allowed \{mesh, primitive\}"):
        scene.tool_scene_spec(CATALOG[0], "stl")
    spec = mujoco.MjSpec()
    with pytest.raises(ConfigError, match=r"tool geometry 'voxel' is not allowed; allowed \{mesh, primitive\}"):
        tool_geoms.add_tool_geoms(spec, spec.worldbody, CATALOG[0], geometry="voxel")


_GOOD = dict(
    tool_id=0, distribution=0, category="hammer", topology="box_box", handle_type="box",
    handle_dims=(0.2, 0.03, 0.02), head_dims=(0.04, 0.08, 0.04), handle_density=400.0, head_density=1000.0,
)  # fmt: skip


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"distribution": 12}, r"distribution 12 is out of range; allowed 0\.\.11"),
        ({"topology": "cone"}, r"topology 'cone' is not allowed; allowed \{box_box, box_only, capsule_box\}"),
        ({"handle_type": "sphere"}, r"handle_type 'sphere' is not allowed; allowed \{box, cyl\}"),
        ({"topology": "capsule_box"}, r"topology 'capsule_box' does not match the parts; allowed \{box_box\}"),
        ({"head_density": None}, r"head_dims and head_density must be both None or both set"),
        ({"handle_dims": (0.2, 0.03)}, r"handle_dims/head_dims need 3 entries"),
        ({"handle_dims": (0.2, -0.03, 0.02)}, r"dims and densities must be finite and > 0"),
        ({"handle_density": float("nan")}, r"dims and densities must be finite and > 0"),
        ({"handle_type": "cyl", "topology": "capsule_box", "distribution": 1}, r"a cyl handle is \(length, d, d\)"),
        ({"head_density": 0.0}, r"dims and densities must be finite and > 0"),
        ({"tool_id": -2}, r"tool_id -2 is not allowed; allowed an int >= 0"),
        (
            {"category": "brush"},
            r"category/handle_type 'brush'/'box' do not match distribution 0; allowed \{hammer/box\}",
        ),
    ],
)
def test_tool_validation(change, match):
    with pytest.raises(ConfigError, match=match):
        tools.Tool(**{**_GOOD, **change})


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (("x", "cone", (1, 1, 1), (2, 2, 2), None, None, None), r"handle_type 'cone' is not allowed; allowed \{box, "),
        (("x", "cyl", (1, 1, 1), (2, 2, 2), None, None, None), r"a cyl handle needs 2 dims"),
        (("x", "box", (1, 1, 1), (2, 2, 2), (1, 1, 1), None, None), r"must be all None or all set"),
        (("x", "box", (1, 1, 1), (2, 2, 2), (1, 1, 1), (2, 2, 2), "medium"),
         r"head_density 'medium' is not allowed; allowed \{heavy, light\}"),
    ],
)  # fmt: skip
def test_distribution_validation(args, match):
    with pytest.raises(ConfigError, match=match):
        tools.ToolDistribution(*args)


def test_hand_table_validation():
    with pytest.raises(ConfigError, match=r"joint range \[1\.0, 0\.0\] is empty"):
        hand.JointDrive(1.0, 0.0, 1.0, 1.0, 0.1, 0.001, 0.01)
    with pytest.raises(ConfigError, match=r"drive gains must be >= 0"):
        hand.JointDrive(0.0, 1.0, 1.0, -1.0, 0.1, 0.001, 0.01)
    with pytest.raises(ConfigError, match=r"hand link x needs exactly one of capsule and box"):
        hand.HandLink("x", "palm", Frame.urdf((0, 0, 0)), (), hand.PALM_INERTIAL)


# Literal joint origins of the source URDF (iiwa14_left_sharpa_adjusted_restricted.urdf), with its
# massless virtual links kept: an independent oracle for the folded 2-joint bodies of `_hand`.
_URDF_JOINTS = [
    ("left_thumb_CMC_FE", "palm", "thumb_CMC_VL", "0.01 -0.026 0.0212", "0 0 -1.5708"),
    ("left_thumb_CMC_AA", "thumb_CMC_VL", "left_thumb_MC", "0 -0.005 0", "1.5708 -0.7854 0"),
    ("left_thumb_MCP_FE", "left_thumb_MC", "thumb_MCP_VL", "0.065 -0.006 -0.010392", "-0.5236 0 0"),
    ("left_thumb_MCP_AA", "thumb_MCP_VL", "left_thumb_PP", "0 0 0", "1.5708 0 0"),
    ("left_thumb_IP", "left_thumb_PP", "left_thumb_DP", "0.039 0 0", "-1.5708 0 0"),
    ("left_index_MCP_FE", "palm", "index_MCP_VL", "0.001 -0.0303 0.0957", "0 -1.5708 -1.5708"),
    ("left_index_MCP_AA", "index_MCP_VL", "left_index_PP", "0 0 0", "1.5708 0 0"),
    ("left_index_PIP", "left_index_PP", "left_index_MP", "0.047 0 0", "-1.5708 0 0"),
    ("left_index_DIP", "left_index_MP", "left_index_DP", "0.0315 0 0", "0 0 0"),
    ("left_pinky_CMC", "palm", "left_pinky_MC", "0.01136 0.0263 0.0867", "-3.1416 0 3.1416"),
    ("left_pinky_MCP_FE", "left_pinky_MC", "pinky_MCP_VL", "0.00836 0.0048 0", "-1.5708 1.5708 0"),
    ("left_pinky_MCP_AA", "pinky_MCP_VL", "left_pinky_PP", "0 0 0", "1.5708 0 0"),
    ("left_pinky_PIP", "left_pinky_PP", "left_pinky_MP", "0.047 0 0", "-1.5708 0 0"),
    ("left_pinky_DIP", "left_pinky_MP", "left_pinky_DP", "0.0315 0 0", "0 0 0"),
]


def test_folded_hand_kinematics_match_the_urdf_chain():
    links = {"palm"} | {j[2] for j in _URDF_JOINTS}
    inertial = (
        '<inertial><mass value="0.01"/><inertia ixx="1e-6" iyy="1e-6" izz="1e-6" ixy="0" ixz="0" iyz="0"/></inertial>'
    )
    xml = "".join(f'<link name="{name}">{inertial}</link>' for name in sorted(links))
    for name, parent, child, xyz, rpy in _URDF_JOINTS:
        xml += (
            f'<joint name="{name}" type="revolute"><parent link="{parent}"/><child link="{child}"/>'
            f'<origin xyz="{xyz}" rpy="{rpy}"/><axis xyz="0 0 1"/>'
            '<limit lower="-3" upper="3" effort="1" velocity="1"/></joint>'
        )
    oracle = mujoco.MjModel.from_xml_string(f'<robot name="hand">{xml}</robot>')
    model = scene.compile_scene(0)
    data, odata = mujoco.MjData(model), mujoco.MjData(oracle)
    rng = np.random.default_rng(1)
    palm = data.body(robot.HAND_BODY_NAME)
    for _ in range(20):
        data.qpos[:29] = rng.uniform(robot.JOINT_LOWER, robot.JOINT_UPPER)
        for j in range(oracle.njnt):
            odata.qpos[oracle.jnt_qposadr[j]] = data.joint(oracle.joint(j).name).qpos[0]
        mujoco.mj_kinematics(model, data)
        mujoco.mj_kinematics(oracle, odata)
        for body in ("left_thumb_DP", "left_index_DP", "left_pinky_DP", "left_thumb_MC", "left_pinky_PP"):
            rot = palm.xmat.reshape(3, 3)
            ours_pos = rot.T @ (data.body(body).xpos - palm.xpos)
            ours_rot = rot.T @ data.body(body).xmat.reshape(3, 3)
            np.testing.assert_allclose(ours_pos, odata.body(body).xpos, atol=1e-4)  # URDF rounds pi to 1.5708
            np.testing.assert_allclose(ours_rot, odata.body(body).xmat.reshape(3, 3), atol=1e-4)


def test_a_headless_tools_inert_head_slot_changes_nothing_physical():
    """The inert slot keeps every scene on one geom layout; the tool is physically just its handle:
    no mass, no contact ever, not drawn, and the same trajectory as the scene without the slot."""
    tool = int(CATALOG.ids_of_topology("box_only")[0])
    with_slot = scene.scene_spec(tool)
    without = scene.scene_spec(tool)
    without.delete(without.geom("object_head"))
    models = [with_slot.compile(), without.compile()]
    inert = models[0].geom("object_head")
    assert not (models[0].geom_conaffinity & inert.contype[0]).any() and inert.conaffinity[0] == 0
    assert inert.group[0] > 2 and inert.rgba[3] == 0.0
    assert models[0].body_mass[inert.bodyid[0]] == models[1].body_mass[inert.bodyid[0]]
    datas = [mujoco.MjData(m) for m in models]
    rng = np.random.default_rng(0)
    for m, d in zip(models, datas, strict=True):
        mujoco.mj_resetDataKeyframe(m, d, 0)
    for _ in range(200):
        ctrl = datas[0].qpos[:29] + rng.uniform(-0.2, 0.2, 29)
        for m, d in zip(models, datas, strict=True):
            d.ctrl[:] = ctrl
            mujoco.mj_step(m, d, 2)
        assert not (datas[0].contact.geom[: datas[0].ncon] == inert.id).any()
    assert datas[0].ncon > 0  # the tool landed: contacts were exercised
    np.testing.assert_array_equal(datas[0].qpos, datas[1].qpos)
