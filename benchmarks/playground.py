"""mjvec's MuJoCo Playground tasks (the two Go1 joysticks, LeapCubeReorient, PandaPickCube and
PandaPickCubeOrientation): mjvec vs EnvPool 1.2.5's C++ port and Gymnasium's AsyncVectorEnv,
ratios measured in one run.

The machinery is `benchmarks/gym_suite.py`'s (its `Worker`, `measure`, `single_env_rates` and the
sides of `benchmarks/_gym_worker.py`; the task table in `benchmarks/_engines.py`): every side in its
own process, timed block by block in turn (interleaved, repeated, medians). Per task, num_envs and
thread count T, one interleaved group of:

- mjvec: ``gym.make_vec("playground/<task>-v0", num_envs=N, num_threads=T)`` (CPU backend, no
  randomization, random actions, autoresets);
- EnvPool: ``envpool.make_gymnasium("MuJoCoPlayground/<task>-v1", num_envs=N, batch_size=N,
  num_threads=T)`` under the interpreter of its own venv (scripts/setup_envpool.sh);
- (T = 1, at the --async-envs sizes) AsyncVectorEnv of N ``gym.make("playground/<task>-v0")``
  (mjvec's single env, one process each);
- r1: plain single-thread ``mujoco.mj_step`` on the task's model compiled alone (mjvec's scene_spec
  of the task: the scene with Playground's model edits), replaying states the mjvec env stepped
  (bit-exact replays counted); L = T x r1 / substeps (the task's, `PLAYGROUND_TASKS`); mjvec's
  e2e / L, each block against the r1 replayed right after it (the median repeat, and the lowest
  and highest), the physics' own rate inside the steps against T x r1, and the backend's physics
  share of mjvec's step;
- peak RSS of each side's process (children included) minus its size before the side's packages
  were imported;
- the CPU cores each side kept busy while timed (its process's CPU time / wall time, all threads).

One group per T (not all sides at once, as gym_suite does): EnvPool builds one MjModel per env
(its peak grew by about 41-51 MiB per env on the Go1 scenes, 67 on Leap's, 39-41 on Panda's,
measured at 8 and 32 envs), so two EnvPool processes of 256 envs do not fit a small machine.
EnvPool is skipped at a num_envs whose estimated peak (extrapolated from its peaks at the smaller
sizes, `_envpool_fits`) exceeds 70 % of the memory available; the output says so.
AsyncVectorEnv's processes each compile the scene (a few hundred MiB each at their peak), hence
--async-envs. Before the groups, each side's single-env rate and the raw engines side by side
(plain ``mj_step`` on 32 MjData of the scene with the model edits of EnvPool's port,
`PLAYGROUND_TASKS`, MuJoCo 4.0 here vs the EnvPool venv's mujoco 3.6.0, the version EnvPool 1.2.5
links).

Targets printed against: mjvec >= 1.0x EnvPool at >= 256 envs, peak RSS <= 0.5x EnvPool's,
e2e >= 0.90 of L.

    python -m benchmarks.playground --envpool-python .venv-envpool/bin/python \\
        [--tasks playground/LeapCubeReorient-v0 ...] [--num-envs 64 256 1024] [--threads 1 2] [--csv out.csv]

(--tasks: default all five.)
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

from benchmarks._engines import PLAYGROUND_TASKS
from benchmarks.gym_suite import Worker, measure, mib, ratio_columns, ratio_text, single_env_rates, steps_for

ROOT = Path(__file__).resolve().parents[1]
TASKS = tuple(PLAYGROUND_TASKS)
SPEED_TARGET, RSS_TARGET, E2E_TARGET, SPEED_FROM_ENVS = 1.0, 0.5, 0.90, 256


def mem_available() -> int:
    """MemAvailable of this machine, in bytes."""
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


def _envpool_fits(n: int, measured: dict[int, float]) -> bool:
    """EnvPool's estimated peak at n envs fits in 70 % of the memory available now. The estimate
    extrapolates its measured peaks (num_envs -> bytes) linearly from the two largest sizes (one:
    proportionally); True before anything was measured."""
    if not measured:
        return True
    sizes = sorted(measured)[-2:]
    if len(sizes) == 1:
        need = measured[sizes[0]] * n / sizes[0]
    else:
        (a, b), (pa, pb) = sizes, (measured[s] for s in sizes)
        need = pb + (pb - pa) / (b - a) * (n - b)
    free = mem_available()
    if need > 0.7 * free:
        print(f"EnvPool at num_envs={n} skipped: its estimated peak RSS {need / 2**30:.1f} GiB (extrapolated "
              f"from its peaks at num_envs {', '.join(map(str, sizes))}) exceeds 70 % of the "
              f"{free / 2**30:.1f} GiB available", flush=True)
        return False
    return True


def misses(row: dict) -> list[str]:
    """The targets this row misses."""
    out = []
    if row["num_envs"] >= SPEED_FROM_ENVS and row["mjvec_vs_envpool"] != "" and row["mjvec_vs_envpool"] < SPEED_TARGET:
        out.append(f"speed {row['mjvec_vs_envpool']:.3f}x EnvPool < {SPEED_TARGET}")
    if row["rss_vs_envpool"] != "" and row["rss_vs_envpool"] > RSS_TARGET:
        out.append(f"RSS {row['rss_vs_envpool']:.3f}x EnvPool's > {RSS_TARGET}")
    if row["e2e_vs_limit"] < E2E_TARGET:
        out.append(f"e2e {row['e2e_vs_limit']:.3f} of L < {E2E_TARGET}")
    return out


def _row(task: str, n: int, t: int, res: dict, substeps: int) -> dict:
    m, ep, asy = res[f"mjvec {t}"], res.get(f"envpool {t}"), res.get("async")
    return {"task": task, "num_envs": n, "threads": t, "mjvec": round(m["rate"]),
            "envpool": round(ep["rate"]) if ep else "", "async": round(asy["rate"]) if asy else "",
            "mjvec_vs_envpool": round(m["rate"] / ep["rate"], 3) if ep else "",
            "mjvec_vs_async": round(m["rate"] / asy["rate"], 2) if asy else "",
            "r1": round(m["r1"]), **ratio_columns(m["paired"], t, substeps),
            "physics_share": round(m["physics_share"], 3), "exact": f"{m['exact'][0]}/{m['exact'][1]}",
            "mjvec_cores": round(m["cores"], 2), "envpool_cores": round(ep["cores"], 2) if ep else "",
            "mjvec_rss_mib": round(mib(m["rss"]), 1), "envpool_rss_mib": round(mib(ep["rss"]), 1) if ep else "",
            "async_rss_mib": round(mib(asy["rss"]), 1) if asy else "",
            "rss_vs_envpool": round(mib(m["rss"]) / mib(ep["rss"]), 3) if ep else ""}


def _print(row: dict, substeps: int) -> None:
    ep = row["envpool"] != ""
    print(f"{row['task']} num_envs={row['num_envs']:5d} threads={row['threads']}: mjvec {row['mjvec']:8,d} env-steps/s"
          + (f" | EnvPool {row['envpool']:8,d} (mjvec/EnvPool {row['mjvec_vs_envpool']:.3f})" if ep else
             " | EnvPool not run")
          + (f" | Async {row['async']:7,d} ({row['mjvec_vs_async']:.2f}x)" if row["async"] != "" else "")
          + f" | {ratio_text(row, substeps)} (physics {row['physics_share']:.3f} of the step; "
          f"r1 {row['r1']:,d} substeps/s, replays bit-exact {row['exact']}) | CPU cores busy: mjvec "
          f"{row['mjvec_cores']}" + (f", EnvPool {row['envpool_cores']}" if ep else "") + " | peak RSS MiB: mjvec "
          f"{row['mjvec_rss_mib']}"
          + (f", EnvPool {row['envpool_rss_mib']} ({row['rss_vs_envpool']:.3f}x)" if ep else "")
          + (f", Async {row['async_rss_mib']}" if row["async"] != "" else "")
          + "".join(f" | MISS: {m}" for m in misses(row)), flush=True)


def run_task(task: str, args: argparse.Namespace, substeps: int) -> list[dict]:
    """Every num_envs and thread count of one task; returns the CSV rows."""
    rows, peaks = [], {}
    py = sys.executable
    for n in sorted(args.num_envs):
        with_envpool = bool(args.envpool_python) and _envpool_fits(n, peaks)
        for t in args.threads:
            workers = {f"mjvec {t}": Worker(py, "mjvec", task, n, t)}
            if with_envpool:
                workers[f"envpool {t}"] = Worker(args.envpool_python, "envpool", task, n, t)
            if t == min(args.threads) and n in args.async_envs:
                workers["async"] = Worker(py, "async", task, n, 1)
            steps = {name: steps_for(n, args.budget) for name in workers}
            res = measure(workers, steps, args.repeats, f"{task} {n} envs x {t}", r1=(f"mjvec {t}",))
            for w in workers.values():
                w.close()
            if f"envpool {t}" in res:
                rss = res[f"envpool {t}"]["rss"]
                peaks[n] = max(peaks.get(n, 0.0), rss["peak"] - rss["baseline"])
            row = _row(task, n, t, res, substeps)
            _print(row, substeps)
            rows.append(row)
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description="mjvec's Playground tasks vs EnvPool and AsyncVectorEnv (ratios)")
    p.add_argument("--envpool-python", help="the python of a venv with envpool==1.2.5 (omit: no EnvPool column)")
    p.add_argument("--tasks", nargs="+", default=list(TASKS), choices=TASKS)
    p.add_argument("--num-envs", type=int, nargs="+", default=[64, 256, 1024])
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--async-envs", type=int, nargs="*", default=[64],
                   help="num_envs at which AsyncVectorEnv (one process per env) also runs")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--budget", type=int, default=2048, help="env steps per timed block")
    p.add_argument("--no-single", action="store_true", help="skip the single-env and raw-engine rates")
    p.add_argument("--csv", type=Path)
    args = p.parse_args()
    rows = []
    for task in args.tasks:
        if not args.no_single:
            single_env_rates(task, args)
        rows += run_task(task, args, PLAYGROUND_TASKS[task].substeps)
    missed = [(r, m) for r in rows for m in misses(r)]
    print(f"targets (>= {SPEED_TARGET}x EnvPool at >= {SPEED_FROM_ENVS} envs, <= {RSS_TARGET}x its RSS, e2e >= "
          f"{E2E_TARGET}): {len(missed)} misses" + "".join(
              f"\n  {r['task']} {r['num_envs']}x{r['threads']}: {m}" for r, m in missed), flush=True)
    if args.csv is not None and rows:
        with open(args.csv, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)


if __name__ == "__main__":
    main()
