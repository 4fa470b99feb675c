"""Before/after ratios of two commits of mjvec, measured in one run (interleaved, repeated, medians).

Each ref's `mjvec/` is extracted from git into a temporary folder and imported by its own worker
process; the two workers build the same env (SimToolReal-v0, 600 tools, paper randomization, or
the task --task names, with its paper preset where it has one; same seed and random actions) and
take turns running blocks of steps: before, after, before, after, ...
Each block reports its wall time and the time inside the backend's `step` (the physics), so the
script prints the end-to-end ratio and the ratio of the task layer (everything but the physics).

    python -m benchmarks.before_after --before 187938a --after HEAD [--num-envs 64 1024] [--threads 1 2] [--stress]
        [--task playground/LeapCubeReorient-v0]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from tqdm import tqdm

log = logging.getLogger(__name__)

STRESS_TASK = "SimToolReal-v0"  # the default task, and the one whose terms --stress adds

# Runs inside the worker, with the ref's mjvec first on sys.path (cwd). Reads "run" lines from
# stdin and answers "<wall seconds> <physics seconds>" per block of steps.
WORKER = """
import sys, time
import numpy as np, gymnasium as gym
import mjvec
n, threads, steps, stress = (int(a) for a in sys.argv[1:5])
task = sys.argv[5]
if stress:  # benchmarks.randomization's stress case: model-field terms at every reset of short episodes
    from mjvec.randomization import DomainRandomization, EventTerm
    env = gym.make_vec(mjvec.ENV_ID, num_envs=n, num_threads=threads, randomization="paper", max_episode_steps=60)
    env = DomainRandomization(env, [EventTerm("body_mass", 0.8, 1.2, targets=("object",)),
                                    EventTerm("geom_friction", 0.8, 1.2, targets=("object_.*",)),
                                    EventTerm("dof_damping", 0.8, 1.2, targets=("iiwa14_joint_.*",)),
                                    EventTerm("actuator_kp", 0.8, 1.2, targets=(".*_act",))])
else:
    from mjvec.envs.registry import get_task
    preset = "paper" if "paper" in get_task(task).presets else None
    env = gym.make_vec(task, num_envs=n, num_threads=threads, randomization=preset)
backend = env.unwrapped.backend
inner, spent = backend.step, [0.0]
def timed_step(nstep=1, **kwargs):
    t0 = time.perf_counter()
    out = inner(nstep, **kwargs)
    spent[0] += time.perf_counter() - t0
    return out
backend.step = timed_step
env.reset(seed=0)
space = env.single_action_space
actions = np.random.default_rng(0).uniform(space.low, space.high, (8, n, *space.shape)).astype(np.float32)
k = 0
def block():
    global k
    spent[0] = 0.0
    t0 = time.perf_counter()
    for _ in range(steps):
        env.step(actions[k % 8])
        k += 1
    return time.perf_counter() - t0, spent[0]
for _ in range(max(1, 30 // steps)):
    block()
print("ready", flush=True)
for line in sys.stdin:
    wall, physics = block()
    print(wall, physics, flush=True)
"""


class Worker:
    """One process running one ref's env; `block()` -> (wall s, physics s) of `steps` steps."""

    def __init__(self, src: Path, num_envs: int, threads: int, steps: int, stress: bool, task: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", WORKER, str(num_envs), str(threads), str(steps), str(int(stress)), task], cwd=src,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )
        if self._read() != "ready":
            raise RuntimeError(f"the worker for {src} did not start")

    def _read(self) -> str:
        assert self.proc.stdout is not None
        return self.proc.stdout.readline().strip()

    def block(self) -> tuple[float, float]:
        assert self.proc.stdin is not None
        self.proc.stdin.write("run\n")
        self.proc.stdin.flush()
        wall, physics = (float(x) for x in self._read().split())
        return wall, physics

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def extract(ref: str, root: Path) -> Path:
    """Write `ref`'s mjvec/ package under root/<sha>; returns that folder."""
    rev = subprocess.run(["git", "rev-parse", "--short", ref], check=True, capture_output=True, text=True)
    sha = rev.stdout.strip()
    dest = root / sha
    dest.mkdir()
    archive = subprocess.run(["git", "archive", ref, "mjvec"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def compare(srcs: dict[str, Path], num_envs: int, threads: int, repeats: int, stress: bool,
            task: str) -> dict[str, tuple[float, float]]:
    """Median (env-steps/s, task-layer seconds per step) of each ref, blocks interleaved."""
    steps = max(4, 2048 // num_envs)
    workers = {name: Worker(src, num_envs, threads, steps, stress, task) for name, src in srcs.items()}
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in workers}
    try:
        for _ in tqdm(range(repeats), desc=f"{num_envs} envs x {threads} thr", leave=False):
            for name, worker in workers.items():
                samples[name].append(worker.block())
    finally:
        for worker in workers.values():
            worker.close()
    return {
        name: (statistics.median(steps * num_envs / w for w, _ in s), statistics.median((w - p) / steps for w, p in s))
        for name, s in samples.items()
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--before", required=True)
    p.add_argument("--after", default="HEAD")
    p.add_argument("--num-envs", type=int, nargs="+", default=[64, 1024])
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--stress", action="store_true",
                   help="benchmarks.randomization's stress case: the paper preset plus mass, friction, damping "
                        "and gain terms at every reset of 60-step episodes (model writes and their recompute)")
    p.add_argument("--task", default=STRESS_TASK, help="the env id (its paper preset where it has one)")
    args = p.parse_args()
    if args.stress and args.task != STRESS_TASK:
        p.error(f"--stress adds SimToolReal-v0's terms; it does not apply to --task {args.task}")
    logging.basicConfig(level=logging.WARNING)
    with tempfile.TemporaryDirectory() as tmp:
        srcs = {"before": extract(args.before, Path(tmp)), "after": extract(args.after, Path(tmp))}
        print(f"{args.task}: before = {args.before} ({srcs['before'].name}), after = {args.after} "
              f"({srcs['after'].name})")
        for n in args.num_envs:
            for threads in args.threads:
                r = compare(srcs, n, threads, args.repeats, args.stress, args.task)
                (b_rate, b_task), (a_rate, a_task) = r["before"], r["after"]
                print(f"num_envs={n:5d} threads={threads}: env-steps/s before {b_rate:9,.0f} after {a_rate:9,.0f} "
                      f"(after/before {a_rate / b_rate:.3f}) | task layer ms/step before {b_task * 1e3:7.2f} "
                      f"after {a_task * 1e3:7.2f} (after/before {a_task / b_task:.3f})", flush=True)


if __name__ == "__main__":
    main()
