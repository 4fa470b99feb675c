"""Gymnasium's MuJoCo suite: mjvec vs Gymnasium's vector envs and EnvPool, ratios measured in one run.

Every side runs in its own process (`benchmarks/_gym_worker.py`; EnvPool under the interpreter of
its own venv, never a dependency of mjvec), all alive at once and timed block by block in turn
(interleaved, repeated, medians), so machine noise hits them alike. Per task and num_envs:

- mjvec: ``gym.make_vec("mjvec/<task>", num_envs=N, num_threads=T)`` for each T;
- EnvPool: ``envpool.make_gymnasium("<task>", num_envs=N, batch_size=N, num_threads=T)``, same T
  (EnvPool 1.2.5 bundles its own MuJoCo, 3.x, so compare its single-env rate too);
- SyncVectorEnv of N ``gym.make("<task>")`` (one thread), and AsyncVectorEnv (one process per env)
  at the --async-envs sizes;
- r1: plain single-thread ``mujoco.mj_step`` on the XML compiled alone, replaying states the mjvec
  env stepped (bit-exact replays counted); L = T x r1 / frame_skip; mjvec's e2e / L, each block
  against the r1 replayed right after it (the median repeat, and the lowest and highest); and the
  physics' own rate inside those steps against T x r1 (what e2e / L reaches with no host work);
- where mjvec's time goes: the backend's physics, its mj_rnePostConstraint pass (the tasks that
  read contact forces), and the rest (the numpy task layer and the env base);
- peak RSS of each side's process (children included) minus its size before the env was built;
- each side's single-env single-thread rate (num_envs=1; Gymnasium: one env in a plain loop), and
  the raw engines side by side: plain ``mj_step`` on 32 MjData of the same XML under MuJoCo 4.0
  (mjvec's) and under the EnvPool venv's ``mujoco`` (install the version EnvPool 1.2.5 bundles
  there, ``pip install mujoco==3.6.0``; skipped if that venv has none).

    python -m benchmarks.gym_suite --envpool-python /work/envpool-venv/bin/python \\
        [--tasks Ant-v5 Humanoid-v5] [--num-envs 64 256 1024] [--threads 1 2] [--csv docs/gym_suite.csv]
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import subprocess
import sys
from pathlib import Path

from tqdm import tqdm

ROOT = Path(__file__).resolve().parents[1]
WORKER = ROOT / "benchmarks" / "_gym_worker.py"
ENGINE_ENVS = 32  # MjData the raw-engine side steps in turn


class Worker:
    """A side's process (see _gym_worker.py for the protocol)."""

    def __init__(self, python: str, side: str, task: str, num_envs: int, threads: int) -> None:
        self.label = f"{side} {num_envs}x{threads}"
        self.proc = subprocess.Popen([python, str(WORKER), side, task, str(num_envs), str(threads)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT,
                                     env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "MUJOCO_GL": "osmesa",
                                          "OMP_NUM_THREADS": "1"})
        first = self.proc.stdout.readline()
        if not first:
            raise SystemExit(f"{self.label}: the worker did not start (see its stderr above)")

    def ask(self, cmd: str, **kwargs: int) -> dict:
        self.proc.stdin.write(json.dumps({"cmd": cmd, **kwargs}) + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self) -> None:
        self.proc.stdin.write(json.dumps({"cmd": "quit"}) + "\n")
        self.proc.stdin.flush()
        self.proc.wait(timeout=120)


def steps_for(num_envs: int, budget: int) -> int:
    return max(2, budget // num_envs)


def measure(workers: dict[str, Worker], steps: dict[str, int], repeats: int, desc: str,
            r1: tuple[str, ...] = ()) -> dict[str, dict]:
    """Interleaved medians: env-steps/s of each worker, mjvec's physics/rne shares, r1 of the `r1` ones."""
    samples: dict[str, list[dict]] = {name: [] for name in workers}
    r1_samples: dict[str, list[dict]] = {name: [] for name in r1}
    for name, w in workers.items():  # warm-up
        w.ask("step", steps=steps[name])
    for _ in tqdm(range(repeats), desc=desc, leave=False):
        for name, w in workers.items():
            samples[name].append(w.ask("step", steps=steps[name]))
            if name in r1_samples:
                r1_samples[name].append(w.ask("r1"))
    out = {}
    for name, values in samples.items():
        n = int(workers[name].label.split()[1].split("x")[0])
        row = {"rate": statistics.median(steps[name] * n / v["seconds"] for v in values),
               "cores": statistics.median(v.get("cpu_s", 0.0) / v["seconds"] for v in values)}
        if "backend_s" in values[0]:
            row["physics_share"] = statistics.median((v["backend_s"] - v["rne_s"]) / v["seconds"] for v in values)
            row["rne_share"] = statistics.median(v["rne_s"] / v["seconds"] for v in values)
        if name in r1_samples:
            row["r1"] = statistics.median(v["units"] / v["seconds"] for v in r1_samples[name])
            row["exact"] = (sum(v["exact"] for v in r1_samples[name]), sum(v["total"] for v in r1_samples[name]))
            row["paired"] = [(steps[name] * n / v["seconds"], (v["backend_s"] - v["rne_s"]) / v["seconds"],
                              r["units"] / r["seconds"]) for v, r in zip(values, r1_samples[name], strict=True)]
        row["rss"] = workers[name].ask("rss")
        out[name] = row
    return out


def paired_ratios(paired: list[tuple[float, float, float]], threads: int, frame_skip: int) -> dict[str, float]:
    """Each repeat's block against the r1 replayed right after it, then medians over the repeats.

    `paired`: one (env-steps/s, physics share of the step, r1 substeps/s) per repeat. Returns
    e2e / (threads x r1 / frame_skip) as its median, lowest and highest repeat, and the physics'
    own rate inside the step (env-steps/s x frame_skip / share) against threads x r1: the engine's
    efficiency, which e2e cannot exceed by more than what the host work takes (e2e = that x share).
    """
    e2e = [rate * frame_skip / (threads * r1) for rate, _, r1 in paired]
    engine = [rate * frame_skip / share / (threads * r1) for rate, share, r1 in paired]
    return {"e2e": statistics.median(e2e), "e2e_low": min(e2e), "e2e_high": max(e2e),
            "engine": statistics.median(engine)}


def ratio_columns(paired: list[tuple[float, float, float]], threads: int, frame_skip: int) -> dict[str, float]:
    """`paired_ratios` as a row's columns (rounded): e2e_vs_limit, its low and high, physics_vs_limit."""
    r = paired_ratios(paired, threads, frame_skip)
    return {"e2e_vs_limit": round(r["e2e"], 3), "e2e_vs_limit_low": round(r["e2e_low"], 3),
            "e2e_vs_limit_high": round(r["e2e_high"], 3), "physics_vs_limit": round(r["engine"], 3)}


def ratio_text(row: dict, frame_skip: int) -> str:
    """A row's `ratio_columns` as printed: e2e / L with its range, then the physics' own ratio."""
    return (f"e2e/(T x r1/{frame_skip}) {row['e2e_vs_limit']:.3f} [{row['e2e_vs_limit_low']:.3f}-"
            f"{row['e2e_vs_limit_high']:.3f}], physics/(T x r1) {row['physics_vs_limit']:.3f}")


def mib(rss: dict) -> float:
    return (rss["peak"] - rss["baseline"]) / 2**20


def run_task(task: str, args: argparse.Namespace, frame_skip: int) -> list[dict]:
    """Every num_envs of one task; returns the CSV rows."""
    rows = []
    py = sys.executable
    for n in args.num_envs:
        workers = {f"mjvec {t}": Worker(py, "mjvec", task, n, t) for t in args.threads}
        if args.envpool_python:
            workers |= {f"envpool {t}": Worker(args.envpool_python, "envpool", task, n, t) for t in args.threads}
        workers["sync"] = Worker(py, "sync", task, n, 1)
        if n in args.async_envs:
            workers["async"] = Worker(py, "async", task, n, 1)
        steps = {name: steps_for(n, args.budget) for name in workers}
        res = measure(workers, steps, args.repeats, f"{task} {n} envs", r1=tuple(f"mjvec {t}" for t in args.threads))
        for w in workers.values():
            w.close()
        for t in args.threads:
            m = res[f"mjvec {t}"]
            ep = res.get(f"envpool {t}")
            row = {"task": task, "num_envs": n, "threads": t, "mjvec": round(m["rate"]),
                   "envpool": round(ep["rate"]) if ep else "", "sync": round(res["sync"]["rate"]),
                   "async": round(res["async"]["rate"]) if "async" in res else "",
                   "mjvec_vs_envpool": round(m["rate"] / ep["rate"], 3) if ep else "",
                   "mjvec_vs_sync": round(m["rate"] / res["sync"]["rate"], 2),
                   "mjvec_vs_async": round(m["rate"] / res["async"]["rate"], 2) if "async" in res else "",
                   "r1": round(m["r1"]), **ratio_columns(m["paired"], t, frame_skip),
                   "physics_share": round(m["physics_share"], 3), "rne_share": round(m["rne_share"], 3),
                   "mjvec_rss_mib": round(mib(m["rss"]), 1), "envpool_rss_mib": round(mib(ep["rss"]), 1) if ep else "",
                   "sync_rss_mib": round(mib(res["sync"]["rss"]), 1),
                   "async_rss_mib": round(mib(res["async"]["rss"]), 1) if "async" in res else ""}
            rows.append(row)
            print(f"{task} num_envs={n:5d} threads={t}: mjvec {m['rate']:8,.0f} env-steps/s"
                  + (f" | EnvPool {ep['rate']:8,.0f} (mjvec/EnvPool {row['mjvec_vs_envpool']:.3f})" if ep else "")
                  + f" | Sync {res['sync']['rate']:7,.0f} ({row['mjvec_vs_sync']:.2f}x)"
                  + (f" | Async {res['async']['rate']:7,.0f} ({row['mjvec_vs_async']:.2f}x)" if "async" in res else "")
                  + f" | {ratio_text(row, frame_skip)} (physics {row['physics_share']:.3f}, "
                  f"rnePostConstraint {row['rne_share']:.3f} of the step; r1 replays bit-exact {m['exact'][0]}/"
                  f"{m['exact'][1]}) | peak RSS MiB: mjvec {row['mjvec_rss_mib']}"
                  + (f", EnvPool {row['envpool_rss_mib']}" if ep else "") + f", Sync {row['sync_rss_mib']}"
                  + (f", Async {row['async_rss_mib']}" if "async" in res else ""), flush=True)
    return rows


def single_env_rates(task: str, args: argparse.Namespace) -> None:
    """Each side's single-env single-thread rate (the engines' own speed, side by side)."""
    py = sys.executable
    workers = {"mjvec": Worker(py, "mjvec", task, 1, 1), "gymnasium": Worker(py, "single", task, 1, 1),
               "engine 4.0": Worker(py, "engine", task, ENGINE_ENVS, 1)}
    if args.envpool_python:
        workers["envpool"] = Worker(args.envpool_python, "envpool", task, 1, 1)
        try:
            workers["engine envpool-venv"] = Worker(args.envpool_python, "engine", task, ENGINE_ENVS, 1)
        except SystemExit:
            print("(the EnvPool venv has no mujoco package: no raw-engine comparison)")
    steps = {name: args.budget // (4 * (ENGINE_ENVS if name.startswith("engine") else 1)) for name in workers}
    res = measure(workers, steps, args.repeats, f"{task} single env")
    versions = {name: w.ask("version")["mujoco"] for name, w in workers.items() if name.startswith("engine")}
    for w in workers.values():
        w.close()
    singles = {n: r for n, r in res.items() if not n.startswith("engine")}
    print(f"{task} single env, one thread (env-steps/s): "
          + ", ".join(f"{name} {row['rate']:,.0f}" for name, row in singles.items())
          + (f" | mjvec/EnvPool {res['mjvec']['rate'] / res['envpool']['rate']:.3f}" if "envpool" in res else "")
          + f" | mjvec/Gymnasium {res['mjvec']['rate'] / res['gymnasium']['rate']:.3f}", flush=True)
    if "engine envpool-venv" in res:
        old, new = res["engine envpool-venv"]["rate"], res["engine 4.0"]["rate"]
        print(f"{task} raw engine, plain mj_step x frame_skip on {ENGINE_ENVS} MjData, one thread (env-steps/s): "
              f"MuJoCo {versions['engine 4.0']} {new:,.0f}, MuJoCo {versions['engine envpool-venv']} {old:,.0f}"
              f" | {versions['engine 4.0']}/{versions['engine envpool-venv']} {new / old:.3f}", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description="mjvec's Gymnasium MuJoCo suite vs Gymnasium and EnvPool (ratios)")
    p.add_argument("--envpool-python", help="the python of a venv with envpool==1.2.5 (omit: no EnvPool column)")
    p.add_argument("--tasks", nargs="+", default=["Ant-v5", "Humanoid-v5"])
    p.add_argument("--num-envs", type=int, nargs="+", default=[64, 256, 1024])
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--async-envs", type=int, nargs="*", default=[64],
                   help="num_envs at which AsyncVectorEnv (one process per env) also runs")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--budget", type=int, default=2048, help="env steps per timed block")
    p.add_argument("--csv", type=Path)
    args = p.parse_args()
    sys.path.insert(0, str(ROOT))
    from mjvec.tasks.gym_mujoco import TASKS

    rows = []
    for task in args.tasks:
        single_env_rates(task, args)
        rows += run_task(task, args, TASKS[task].options().frame_skip)
    if args.csv is not None and rows:
        with open(args.csv, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)


if __name__ == "__main__":
    main()
