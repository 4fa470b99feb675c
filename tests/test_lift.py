"""The hand, closed on a heavy tool, lifts it with the arm (spec section 8: "validate that the hand can
lift a 0.8 kg hammer"): the catalog's heaviest tool and a hammer at every range's maximum.

Scripted with plain MuJoCo and the model's own position actuators (the spec's gains, unchanged):
the arm holds the home pose, palm face down over the table; the tool is placed with its
handle across the fingers, just in front of the palm, next to its head; the four fingers close
into a hook grip (the thumb stays abducted out of the way) with gravity off, so the placement
cannot drift before the grip exists; then gravity is on and the arm raises the palm by `RISE`
over 1.5 s along a joint path from damped-least-squares IK. With the fingers left open the same
script drops the tool, which is what shows the grip (and not the placement) holds it.
"""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from mjvec.assets import robot
from mjvec.tasks.simtoolreal import scene
from mjvec.tasks.simtoolreal.catalog import tools

RISE = 0.10
# Hand pose before closing: the thumb abducted towards the wrist, clear of the handle.
THUMB_OPEN = {"left_thumb_CMC_FE": -0.17, "left_thumb_CMC_AA": -0.35, "left_thumb_MCP_FE": -0.52}
# Closing targets past where the handle stops the fingers, so each drive pushes with kp x error.
FINGERS_CLOSED = {"MCP_FE": 1.57, "PIP": 1.75, "DIP": 1.4}
# Handle centre in the palm frame: its inner face just clear of the palm's front face (+x).
HANDLE_IN_PALM = (0.023, 0.0, 0.075)
# The hand's span (index to pinky) starts this far from the handle's head end.
GRIP_FROM_HEAD = 0.045


def _pose(overrides: dict[str, float]) -> np.ndarray:
    q = np.array(robot.DEFAULT_JOINT_POS)
    for name, value in overrides.items():
        q[robot.JOINT_NAMES.index(name)] = value
    return np.clip(q, robot.JOINT_LOWER, robot.JOINT_UPPER)


def _place_tool(model: mujoco.MjModel, data: mujoco.MjData, tool, start: np.ndarray) -> None:
    """Robot at `start`; tool x axis along the palm's +y (head on the pinky side), handle in the palm."""
    data.qpos[:29] = start
    data.ctrl[:] = start
    mujoco.mj_kinematics(model, data)
    hand = data.body(robot.HAND_BODY_NAME)
    rot_hand = hand.xmat.reshape(3, 3)
    x_axis, z_axis = rot_hand[:, 1], rot_hand[:, 0]
    rot_tool = np.column_stack([x_axis, np.cross(z_axis, x_axis), z_axis])
    grasp_x = tool.handle_dims[0] / 2 - GRIP_FROM_HEAD
    data.qpos[29:32] = hand.xpos + rot_hand @ np.array(HANDLE_IN_PALM) - rot_tool @ np.array([grasp_x, 0.0, 0.0])
    mujoco.mju_mat2Quat(data.qpos[32:36], rot_tool.ravel())
    data.qvel[:] = 0.0
    mujoco.mj_forward(model, data)


def _ik(model: mujoco.MjModel, data: mujoco.MjData, target: np.ndarray, rot: np.ndarray) -> np.ndarray:
    """Arm joints that put the palm site at `target` with orientation `rot` (6-D damped least squares)."""
    work = mujoco.MjData(model)
    work.qpos[:] = data.qpos
    work.qpos[:7] = robot.DEFAULT_JOINT_POS[:7]
    site = model.site(robot.PALM_SITE_NAME).id
    jac_p, jac_r = np.zeros((3, model.nv)), np.zeros((3, model.nv))
    for _ in range(50):
        mujoco.mj_kinematics(model, work)
        mujoco.mj_comPos(model, work)
        now = work.site_xmat[site].reshape(3, 3)
        err_r = 0.5 * sum(np.cross(now[:, k], rot[:, k]) for k in range(3))
        mujoco.mj_jacSite(model, work, jac_p, jac_r, site)
        jac = np.vstack([jac_p[:, :7], jac_r[:, :7]])
        err = np.concatenate([target - work.site_xpos[site], err_r])
        work.qpos[:7] += jac.T @ np.linalg.solve(jac @ jac.T + 1e-6 * np.eye(6), err)
    return work.qpos[:7].copy()


def _grasp_and_lift(tool: tools.Tool, close: bool) -> dict[str, float]:
    """Run the script; returns the palm's and the tool's rise over the lift (m), and how far the tool
    moved in the palm frame since gravity was switched on (m)."""
    model = scene.tool_scene_spec(tool).compile()
    data = mujoco.MjData(model)
    start = _pose(THUMB_OPEN)
    closed = _pose({**THUMB_OPEN, **{f"left_{f}_{j}": v for f in ("index", "middle", "ring", "pinky")
                                     for j, v in FINGERS_CLOSED.items()}})  # fmt: skip
    _place_tool(model, data, tool, start)
    gravity = model.opt.gravity.copy()
    model.opt.gravity[:] = 0.0
    for i in range(120):  # 1 s: ramp the hand targets closed over the first half
        if close:
            data.ctrl[7:] = start[7:] + min(1.0, (i + 1) / 60) * (closed[7:] - start[7:])
        mujoco.mj_step(model, data)
    site, obj, hand = model.site(robot.PALM_SITE_NAME).id, model.body("object").id, model.body(robot.HAND_BODY_NAME).id

    def in_palm() -> np.ndarray:
        return data.xmat[hand].reshape(3, 3).T @ (data.xpos[obj] - data.xpos[hand])

    rel0 = in_palm()
    model.opt.gravity[:] = gravity
    mujoco.mj_step(model, data, 60)  # 0.5 s with gravity, before lifting
    palm0, tool0 = data.site_xpos[site].copy(), data.xpos[obj].copy()
    arm_goal = _ik(model, data, palm0 + np.array([0.0, 0.0, RISE]), data.site_xmat[site].reshape(3, 3).copy())
    arm_start = data.ctrl[:7].copy()
    steps = 180
    for i in range(steps):  # 1.5 s, smooth (cosine) joint-space ramp
        s = 0.5 - 0.5 * np.cos(np.pi * (i + 1) / steps)
        data.ctrl[:7] = (1 - s) * arm_start + s * arm_goal
        mujoco.mj_step(model, data)
    mujoco.mj_step(model, data, 60)
    return {
        "mass": tool.mass,
        "palm_rise": float(data.site_xpos[site][2] - palm0[2]),
        "tool_rise": float(data.xpos[obj][2] - tool0[2]),
        "slip": float(np.linalg.norm(in_palm() - rel0)),
    }


HEAVIEST = max(scene.default_catalog(), key=lambda t: t.mass)
# The spec asks for a 0.8 kg hammer; this one takes every hammer range to its maximum (heavier
# than any of the 600 catalog tools, whose heaviest is about 0.55 kg).
EXTREME_HAMMER = tools.Tool(0, 0, "hammer", "box_box", "box", (0.30, 0.04, 0.03), (0.06, 0.12, 0.06), 600.0, 2000.0)


@pytest.mark.parametrize("tool", [HEAVIEST, EXTREME_HAMMER], ids=["catalog_heaviest", "extreme_hammer"])
def test_closed_hand_lifts_a_heavy_tool(tool):
    out = _grasp_and_lift(tool, close=True)
    assert out["mass"] > 0.5
    assert out["palm_rise"] > 0.8 * RISE
    assert out["tool_rise"] == pytest.approx(out["palm_rise"], abs=0.01)
    assert out["slip"] < 0.01


def test_open_hand_drops_it():
    out = _grasp_and_lift(HEAVIEST, close=False)
    assert out["palm_rise"] > 0.8 * RISE
    assert out["tool_rise"] < 0.2 * out["palm_rise"]  # it fell to the table before the lift
    assert out["slip"] > 0.1


def test_extreme_hammer_is_heavier_than_the_spec_asks():
    assert EXTREME_HAMMER.mass > 0.8 > HEAVIEST.mass
