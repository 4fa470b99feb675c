"""ALL 600 tools batched through the CPU backend (tool_id = env_id % 600) step in lockstep with
`scene_spec(tool_id)` compiled alone and stepped by plain `mujoco.mj_step`, for both tool
geometries, over a horizon with hand-tool contact, random controls and random pushes."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from mjvec.assets import robot
from mjvec.backends.base import Scene
from mjvec.backends.cpu import CpuBackend
from mjvec.tasks.simtoolreal import scene
from mjvec.tasks.simtoolreal.catalog.tools import ToolCatalog
from mjvec.tasks.simtoolreal.scene import scene_spec

NUM_TOOLS = 600
CONTROL_STEPS = 150  # of 2 physics substeps each: 300 physics steps
PUSH_PROB = 0.1


def _initial_state(model: mujoco.MjModel, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(qpos (N, nq), qvel (N, nv)): arm at its home pose, each tool in front of the palm (along the
    palm site's z axis), in a random orientation."""
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, model.key(scene.HOME_KEYFRAME).id)
    mujoco.mj_forward(model, data)
    site = model.site(robot.PALM_SITE_NAME).id
    palm = data.site_xpos[site] + 0.04 * data.site_xmat[site].reshape(3, 3)[:, 2]
    obj = model.joint(scene.OBJECT_JOINT_NAME).qposadr[0]
    qpos = np.tile(data.qpos, (NUM_TOOLS, 1))
    qpos[:, obj:obj + 3] = palm + rng.uniform(-0.01, 0.01, (NUM_TOOLS, 3))
    quat = rng.normal(size=(NUM_TOOLS, 4))
    qpos[:, obj + 3:obj + 7] = quat / np.linalg.norm(quat, axis=1, keepdims=True)
    return qpos, np.zeros((NUM_TOOLS, model.nv))


def _controls(model: mujoco.MjModel, home: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """(N, nu): the arm jittering about home, the fingers closing over the first third of the run."""
    lo, hi = model.actuator_ctrlrange.T
    close = 0.3 + 0.5 * min(1.0, 3 * k / CONTROL_STEPS) + rng.uniform(-0.1, 0.1, (NUM_TOOLS, model.nu - 7))
    hand = lo[7:] + (hi[7:] - lo[7:]) * np.clip(close, 0.0, 1.0)
    arm = home[:7] + rng.uniform(-0.05, 0.05, (NUM_TOOLS, 7))
    return np.concatenate([arm, hand], axis=1)


def _diverged(data: mujoco.MjData) -> int:
    return sum(data.warning[int(w)].number for w in (mujoco.mjtWarning.mjWARN_BADQPOS, mujoco.mjtWarning.mjWARN_BADQVEL,
                                                   mujoco.mjtWarning.mjWARN_BADQACC))


def _hand_tool_contact(model: mujoco.MjModel, data: mujoco.MjData, tool_body: int) -> bool:
    if data.ncon == 0:
        return False
    bodies = model.geom_bodyid[data.contact.geom[: data.ncon]]
    roots = model.body_rootid[bodies]
    robot_root = model.body_rootid[model.body(robot.HAND_BODY_NAME).id]
    return bool(((bodies == tool_body).any(axis=1) & (roots == robot_root).any(axis=1)).any())


@pytest.mark.slow
@pytest.mark.parametrize("geometry", ["primitive", "mesh"])
def test_all_600_tools_step_like_each_scene_compiled_alone(geometry: str) -> None:
    catalog = ToolCatalog()

    def make(v: int) -> mujoco.MjSpec:
        return scene_spec(v, tool_geometry=geometry, catalog=catalog)

    backend = CpuBackend(Scene(NUM_TOOLS, make, NUM_TOOLS), num_threads=2, progress=False)
    assert backend.num_groups == 1  # box and capsule handles, with a head or an inert head slot
    np.testing.assert_array_equal(backend.variant_of_env, np.arange(NUM_TOOLS))
    models = [make(v).compile() for v in range(NUM_TOOLS)]
    datas = [mujoco.MjData(m) for m in models]
    rng = np.random.default_rng(0)
    qpos, qvel = _initial_state(models[0], rng)
    backend.reset(np.arange(NUM_TOOLS), qpos, qvel)
    for i, (m, d) in enumerate(zip(models, datas, strict=True)):
        d.qpos[:], d.qvel[:] = qpos[i], qvel[i]
        mujoco.mj_forward(m, d)
    tool = backend.model.body(scene.OBJECT_BODY_NAME).id
    touched = np.zeros(NUM_TOOLS, bool)
    for k in range(CONTROL_STEPS):
        ctrl = _controls(backend.model, qpos[0], k, rng)
        xfrc = np.zeros((NUM_TOOLS, backend.model.nbody, 6))
        push = rng.random(NUM_TOOLS) < PUSH_PROB
        xfrc[push, tool] = rng.normal(0.0, 2.0, (push.sum(), 6))
        backend.ctrl[:], backend.xfrc_applied[:] = ctrl, xfrc
        failed = backend.step(2)
        for i, (m, d) in enumerate(zip(models, datas, strict=True)):
            d.ctrl[:], d.xfrc_applied[:] = ctrl[i], xfrc[i]
            before = _diverged(d)
            mujoco.mj_step(m, d, 2)
            # A diverging simulation is reset by MuJoCo itself; the backend must flag exactly those.
            assert failed[i] == (_diverged(d) > before), i
            touched[i] |= _hand_tool_contact(m, d, tool)
    for name in ("qpos", "qvel"):
        oracle = np.stack([getattr(d, name) for d in datas])
        err = np.abs(getattr(backend, name) - oracle).max(axis=1)
        assert (err == 0).all(), f"{name}: {(err > 0).sum()} envs differ, worst {err.max():.3g} at tool {err.argmax()}"
    # What was compared includes the contacts that matter: the hand touched (nearly) every tool.
    assert touched.mean() > 0.9, touched.mean()
