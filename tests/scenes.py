"""Small scenes for backend tests: a 2-link position-controlled arm plus a free tool.

`make_scene(v)` gives variant v, a pure function of v: topology v % 3 (box; box+box; capsule+box),
sizes growing with v so that larger variants reach outside a smaller canonical variant's BVH.
"""

from __future__ import annotations

import mujoco
import numpy as np

TOPOLOGIES = ("box", "box_box", "capsule_box")


def make_scene(v: int, *, table: bool = True) -> mujoco.MjSpec:
    s = mujoco.MjSpec()
    s.option.timestep = 0.005
    s.option.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
    s.worldbody.add_geom(name="floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[5, 5, 0.1])
    z0 = 0.0
    if table:
        s.worldbody.add_geom(name="table", type=mujoco.mjtGeom.mjGEOM_BOX, size=[0.4, 0.4, 0.1], pos=[0, 0, 0.1])
        z0 = 0.2
    arm = s.worldbody.add_body(name="link1", pos=[0.6, 0, z0 + 0.3])
    arm.add_joint(name="j1", type=mujoco.mjtJoint.mjJNT_HINGE, axis=[0, 0, 1], damping=0.5)
    arm.add_geom(name="l1", type=mujoco.mjtGeom.mjGEOM_CAPSULE, fromto=[0, 0, 0, -0.3, 0, 0], size=[0.03, 0, 0])
    link2 = arm.add_body(name="link2", pos=[-0.3, 0, 0])
    link2.add_joint(name="j2", type=mujoco.mjtJoint.mjJNT_HINGE, axis=[0, 1, 0], damping=0.5)
    link2.add_geom(name="l2", type=mujoco.mjtGeom.mjGEOM_CAPSULE, fromto=[0, 0, 0, -0.25, 0, -0.2], size=[0.03, 0, 0])
    for j in ("j1", "j2"):
        act = s.add_actuator(name=f"a_{j}", target=j, trntype=mujoco.mjtTrn.mjTRN_JOINT)
        act.set_to_position(kp=20.0, kv=1.0)
    obj = s.worldbody.add_body(name="obj", pos=[0.02, 0.01, z0 + 0.25], quat=[1, 0.1, 0.05, 0])
    obj.add_freejoint(name="free")
    length = 0.04 + 0.02 * v
    kind = TOPOLOGIES[v % 3]
    if kind == "capsule_box":
        obj.add_geom(name="handle", type=mujoco.mjtGeom.mjGEOM_CAPSULE, size=[0.015, length, 0],
                     quat=[np.sqrt(0.5), 0, np.sqrt(0.5), 0], density=400)
    else:
        obj.add_geom(name="handle", type=mujoco.mjtGeom.mjGEOM_BOX, size=[length, 0.02, 0.015], density=400)
    if kind != "box":
        obj.add_geom(name="head", type=mujoco.mjtGeom.mjGEOM_BOX, size=[0.02, 0.04, 0.025],
                     pos=[length + 0.02, 0, 0], density=1500)
    return s


class Oracle:
    """N independent MjModel/MjData pairs: env i is variant `variants[i]` compiled alone.

    Each env gets its own compiled model, so a test can edit env i's model directly (the oracle
    for per-env field writes) without touching the others.
    """

    def __init__(self, variants: np.ndarray, make=make_scene) -> None:
        self.variants = [int(v) for v in variants]
        self.models = [make(v).compile() for v in self.variants]
        self.datas = [mujoco.MjData(m) for m in self.models]
        for m, d in zip(self.models, self.datas, strict=True):
            mujoco.mj_forward(m, d)

    def step(self, ctrl: np.ndarray, nstep: int, xfrc: np.ndarray | None = None) -> None:
        for i, (m, d) in enumerate(zip(self.models, self.datas, strict=True)):
            d.ctrl[:] = ctrl[i]
            if xfrc is not None:
                d.xfrc_applied[:] = xfrc[i]
            mujoco.mj_step(m, d, nstep)

    def reset(self, i: int, qpos: np.ndarray, qvel: np.ndarray) -> None:
        m, d = self.models[i], self.datas[i]
        mujoco.mj_resetData(m, d)
        d.qpos[:] = qpos
        d.qvel[:] = qvel
        mujoco.mj_forward(m, d)

    def qpos(self) -> np.ndarray:
        return np.stack([d.qpos for d in self.datas])

    def qvel(self) -> np.ndarray:
        return np.stack([d.qvel for d in self.datas])
