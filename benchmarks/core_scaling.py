"""How much of k cores this machine gives k independent single-thread MuJoCo loops, in one run.

The ceiling under every k-thread figure: `T x r1` assumes each of T cores steps as fast as one core
stepping alone. Here no batch, thread pool or Python step is involved. Per XML (Gymnasium's five
locomotion tasks by default), each worker is a process of its own running plain ``mujoco.mj_step``:

- set up once: 32 states from the model's initial state plus small noise, each stepped a different
  number of steps under its own constant random controls, their states saved;
- timed: replay the saved states in turn (``mj_setState``, then ``mj_step`` of `--nstep` substeps),
  over and over for `--seconds`, so every block does the same work at every repeat.

"alone" is one worker; "together" is k of them started at one signal, each with its own copy of
the work. Interleaved (alone first on even repeats, together first on odd ones), repeated, medians.
Printed per XML: substeps/s alone, the k workers' summed substeps/s together, and together / (k x
alone): the share of k x r1 that k cores running MuJoCo at once reach on this machine. A k-thread
batch's physics / (k x r1) above that would need the batch to step faster than plain mj_step.

    python -m benchmarks.core_scaling [--xml humanoid.xml hopper.xml] [--cores 2] [--seconds 3] [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

from tqdm import tqdm

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_XMLS = ("ant.xml", "humanoid.xml", "half_cheetah.xml", "hopper.xml", "walker2d.xml")
STATES = 32  # saved states each worker replays in turn, on one MjData


def replay_rate(xml: str, nstep: int, seconds: float, ready: object = None) -> float:
    """Substeps/s of plain single-thread mj_step replaying a fixed set of states for `seconds`.

    `ready`: called after the set-up, before the clock starts (a worker waits there for its signal).
    """
    import mujoco
    import numpy as np

    model = mujoco.MjModel.from_xml_path(xml)
    data = mujoco.MjData(model)
    rng = np.random.default_rng(0)
    kind = mujoco.mjtState.mjSTATE_INTEGRATION
    states = []
    for i in range(STATES):
        mujoco.mj_resetData(model, data)
        data.qpos[:] += rng.uniform(-0.1, 0.1, model.nq)
        data.ctrl[:] = rng.uniform(-1.0, 1.0, model.nu)  # the models clamp it to their ctrlrange
        mujoco.mj_step(model, data, 1 + 10 * i)  # spread the states over an episode's start
        state = np.empty(mujoco.mj_stateSize(model, kind))
        mujoco.mj_getState(model, data, state, kind)
        states.append(state)
    if ready is not None:
        ready()
    units, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for state in states:
            mujoco.mj_setState(model, data, state, kind)
            mujoco.mj_step(model, data, nstep)
        units += STATES * nstep
    return units / (time.perf_counter() - t0)


def _worker(xml: str, nstep: int, seconds: float) -> None:
    """A worker process: set up, say "ready", wait for a line on stdin, run, print the rate."""
    def ready() -> None:
        print("ready", flush=True)
        sys.stdin.readline()

    print(replay_rate(xml, nstep, seconds, ready), flush=True)


def run_together(xml: str, k: int, nstep: int, seconds: float) -> list[float]:
    """The rates of k workers started at one signal (after every one of them has set up)."""
    procs = [subprocess.Popen([sys.executable, "-m", "benchmarks.core_scaling", "--worker", xml, str(nstep),
                               str(seconds)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT)
             for _ in range(k)]
    try:
        for p in procs:
            if p.stdout.readline().strip() != "ready":
                raise RuntimeError(f"a core_scaling worker for {xml} did not start (see its stderr above)")
        for p in procs:
            p.stdin.write("go\n")
            p.stdin.flush()
        return [float(p.communicate()[0]) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()


def scaling(alone: list[float], together: list[list[float]], k: int) -> dict[str, float]:
    """Medians over repeats: one worker's rate alone, k workers' summed rate, and its share of k x alone."""
    a = statistics.median(alone)
    t = statistics.median(sum(rates) for rates in together)
    return {"alone": a, "together": t, "share": t / (k * a)}


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        _worker(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))
        return
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--xml", nargs="+", default=list(DEFAULT_XMLS), help="a path, or a file of Gymnasium's assets")
    p.add_argument("--cores", type=int, default=2, help="k: workers run together")
    p.add_argument("--nstep", type=int, default=5, help="substeps per replayed state")
    p.add_argument("--seconds", type=float, default=3.0, help="timed seconds per worker and block")
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args()
    sys.path.insert(0, str(ROOT))
    from mjvec.tasks.gym_mujoco.specs import xml_path

    for name in args.xml:
        xml = str(xml_path(name))
        alone: list[float] = []
        together: list[list[float]] = []
        for r in tqdm(range(args.repeats), desc=name, leave=False):
            for side in (("alone", "together") if r % 2 == 0 else ("together", "alone")):
                if side == "alone":
                    alone += run_together(xml, 1, args.nstep, args.seconds)
                else:
                    together.append(run_together(xml, args.cores, args.nstep, args.seconds))
        s = scaling(alone, together, args.cores)
        print(f"{name}: one worker alone {s['alone']:,.0f} substeps/s | {args.cores} together {s['together']:,.0f} "
              f"| together / ({args.cores} x alone) {s['share']:.3f} (repeats {args.repeats}, "
              f"{args.seconds:g} s blocks)", flush=True)


if __name__ == "__main__":
    main()
