"""The writable-field table: recompute levels read from MuJoCo's own mj_setConst table, checked
against plain mj_setConst on the SimToolReal scene (the independent oracle)."""

from __future__ import annotations

import copy

import mujoco
import numpy as np
import pytest

from mjvec.assets.mjcf import load_spec
from mjvec.backends import fields as F
from mjvec.backends.base import RecomputeLevel
from mjvec.tasks.gym_mujoco.specs import xml_path
from mjvec.tasks.simtoolreal.scene import default_catalog, scene_spec

MODEL = scene_spec(3).compile()
# The SimToolReal scene has no light and no material: their fields are checked on Gymnasium's Hopper.
LIT = load_spec(xml_path("hopper.xml")).compile()


def _model_of(name: str) -> mujoco.MjModel:
    value = getattr(MODEL.opt, name) if name in F.OPTION_FIELDS else getattr(MODEL, name)
    return MODEL if np.asarray(value).size else LIT


def _perturbed_outputs(name: str) -> list[str]:
    """The mj_setConst outputs that change when every entry of `name` moves (simple bodies' COM aside)."""
    model = _model_of(name)
    assert np.asarray(getattr(model.opt, name) if name in F.OPTION_FIELDS else getattr(model, name)).size, name
    outputs = [n for n in F.setconst_outputs() if np.asarray(getattr(model, n)).size]
    probe = copy.copy(model)
    value = getattr(probe.opt, name) if name in F.OPTION_FIELDS else getattr(probe, name)
    movable = (probe.body_simple == 0) if name == "body_ipos" else np.ones(len(np.atleast_1d(value)), bool)
    if name in F.OPTION_FIELDS:
        value[...] = value * 1.1 + 0.01
    else:
        value[movable] = value[movable] * 1.1 + 0.01
    mujoco.mj_setConst(probe, mujoco.MjData(probe))
    return [n for n in outputs if not np.array_equal(getattr(probe, n), getattr(model, n))]


@pytest.mark.parametrize("name", F.WRITABLE_FIELDS + F.OPTION_FIELDS)
def test_a_field_without_a_recompute_changes_no_constant_and_one_with_it_does(name: str) -> None:
    changed = _perturbed_outputs(name)
    if F.recompute_level(name) == RecomputeLevel.NONE:
        assert changed == [], changed
    else:
        assert changed, f"{name} is declared to need mj_setConst, but no derived constant moved"


def test_levels_follow_mujocos_table() -> None:
    level = F.recompute_level
    assert level("body_mass") == RecomputeLevel.SET_CONST  # subtree masses and the qpos0 inertia
    assert level("dof_armature") == RecomputeLevel.SET_CONST_0
    # Moving a geom: its bounds, its body's BVH and geom_sameframe are derived (the "fixed" group).
    assert RecomputeLevel.SET_CONST_FIXED in level("geom_pos")
    assert level("geom_friction") == level("actuator_gainprm") == level("gravity") == RecomputeLevel.NONE
    # The inertia at qpos0 (dof_M0), and the spring group that reads dof_M0.
    assert F.stale_groups("dof_armature") == (False, False, True, True)


def test_geom_pos_on_a_body_frame_geom_derives_its_sameframe_flag() -> None:
    """The compiler marks a geom at its body's origin mjSAMEFRAME_BODY (mj_kinematics then skips its
    offset); after a move, mj_setConst must clear that, exactly as compiling the moved geom does."""
    tool = int(default_catalog().ids_of_topology("box_box")[0])
    model = scene_spec(tool).compile()
    handle = model.geom("object_handle").id
    assert model.geom_sameframe[handle] == mujoco.mjtSameFrame.mjSAMEFRAME_BODY
    edited = copy.copy(model)
    edited.geom_pos[handle, 2] += 0.01
    mujoco.mj_setConst(edited, mujoco.MjData(edited))
    spec = scene_spec(tool)
    spec.geom("object_handle").pos = np.asarray(spec.geom("object_handle").pos) + np.array([0.0, 0.0, 0.01])
    compiled = spec.compile()
    assert edited.geom_sameframe[handle] == compiled.geom_sameframe[handle] != mujoco.mjtSameFrame.mjSAMEFRAME_BODY
    for name in ("geom_sameframe", "bvh_aabb", "dof_length", "geom_aabb", "geom_rbound"):
        np.testing.assert_array_equal(getattr(edited, name), getattr(compiled, name), err_msg=name)


def test_warp_runs_set_const_only_for_the_constants_it_holds() -> None:
    warp_build = pytest.importorskip("mjvec.backends.warp.build")
    import mujoco_warp as mjw

    groups = warp_build.recompute_groups(MODEL)
    assert groups["geom_size"] == groups["geom_pos"] == 0  # bounds: the backend's own refresh
    assert groups["body_mass"] & mjw.SetConstGroup.FIXED and groups["body_mass"] & mjw.SetConstGroup.INERT0
    assert groups["geom_friction"] == groups["gravity"] == 0
    assert set(groups) == set(F.WRITABLE_FIELDS) | set(F.OPTION_FIELDS)
