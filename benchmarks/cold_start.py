"""Cold start and memory of the 600-tool CPU backend vs one MjModel per tool + one MjData per env.

Each measurement runs in a fresh Python process (so RSS is its own), the cases interleaved and
repeated; medians are printed with their ratios:

- batched: `CpuBackend` over the 600-tool catalog (`tool_id = env_id % 600`) built, then one
  physics step: time to first step and RSS growth over the bare interpreter with mjvec imported;
- alone: the 600 scenes compiled one by one into 600 MjModels plus one MjData per env (what a
  user would do without a batched backend): time and RSS growth;
- one tool: the same batched backend with every env on tool 0: RSS growth (600 tools minus 1);
- set_models: the engine's other way to hold variants, one `mujoco.batch.Batch` per MjData layout
  with every env on its own tool model compiled alone (all 600 models kept alive).

    python -m benchmarks.cold_start [--num-envs 1200 4096] [--repeats 3]

Targets: <= 1 s to first step at 4,096 envs; 600-tool minus 1-tool RSS <= 0.05 GiB at 4,096 envs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

from tqdm import tqdm


def _rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    raise RuntimeError("no VmRSS in /proc/self/status")


def worker(kind: str, num_envs: int) -> dict:
    """Run one case in this process; return seconds and RSS growth (MiB)."""
    import mujoco

    from mjvec.backends.base import Scene
    from mjvec.backends.cpu import CpuBackend
    from mjvec.tasks.simtoolreal.scene import default_catalog, scene_spec

    catalog = default_catalog()
    scene_spec(0, catalog=catalog).compile()  # import-time caches out of the measurement
    rss0 = _rss_mib()
    t0 = time.perf_counter()
    if kind == "alone":
        models = [scene_spec(v, catalog=catalog).compile() for v in range(600)]
        datas = [mujoco.MjData(models[i % 600]) for i in range(num_envs)]
        mujoco.mj_step(models[0], datas[0])
        keep = (models, datas)
    elif kind == "set_models":
        import mujoco.batch

        models = [scene_spec(v, catalog=catalog).compile() for v in range(600)]
        layouts: dict[int, list[int]] = {}
        for env in range(num_envs):
            layouts.setdefault(models[env % 600].ngeom, []).append(env % 600)
        batches = []
        for tools in layouts.values():
            batch = mujoco.batch.Batch(models[tools[0]], len(tools), 0)
            batch.set_models([models[t] for t in tools])
            batch.step()
            batches.append(batch)
        keep = (models, batches)
    else:
        tools = 600 if kind == "batched" else 1
        backend = CpuBackend(Scene(tools, lambda v: scene_spec(v, catalog=catalog), num_envs), progress=False)
        backend.step(1)
        keep = backend
    seconds = time.perf_counter() - t0
    rss = _rss_mib() - rss0
    del keep
    return {"seconds": seconds, "rss_mib": rss}


def _run(kind: str, num_envs: int) -> dict:
    out = subprocess.run([sys.executable, "-m", "benchmarks.cold_start", "--worker", kind, str(num_envs)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--num-envs", type=int, nargs="+", default=[1200, 4096])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--worker", nargs=2, metavar=("KIND", "NUM_ENVS"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker[0], int(args.worker[1]))))
        return
    kinds = ("batched", "alone", "one_tool", "set_models")
    results: dict[tuple[str, int], list[dict]] = {(k, n): [] for k in kinds for n in args.num_envs}
    jobs = [(k, n) for _ in range(args.repeats) for n in args.num_envs for k in kinds]
    for kind, n in tqdm(jobs, desc="cold-start cases"):
        results[(kind, n)].append(_run(kind, n))

    def med(kind: str, n: int, key: str) -> float:
        return statistics.median(r[key] for r in results[(kind, n)])

    print(f"medians of {args.repeats} fresh processes each (2-core machine)")
    for n in args.num_envs:
        b_s, a_s, s_s = (med(k, n, "seconds") for k in ("batched", "alone", "set_models"))
        b_m, a_m, o_m, s_m = (med(k, n, "rss_mib") for k in kinds)
        print(f"num_envs={n}: batched 600 tools to first step {b_s:.2f} s; 600 scenes compiled alone + {n} "
              f"MjData {a_s:.2f} s (ratio batched/alone {b_s / a_s:.2f}); set_models {s_s:.2f} s")
        print(f"num_envs={n}: RSS batched 600 tools {b_m:.0f} MiB, 1 tool {o_m:.0f} MiB, "
              f"600-minus-1 {(b_m - o_m) / 1024:.3f} GiB; alone {a_m:.0f} MiB (ratio batched/alone "
              f"{b_m / a_m:.2f}); set_models {s_m:.0f} MiB")


if __name__ == "__main__":
    main()
