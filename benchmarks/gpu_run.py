"""One prepared device run: versions, the Warp device tests, and every `benchmarks.gpu` part, each
in its own process with its own time limit, so a failure or a timeout in one part leaves the rest.

Order (a fresh machine's cold kernel compile is measured by the first part that loads kernels):

1. machine: versions, the device, nvidia-smi;
2. first-step-cold: time to first step at the smallest size with the kernel cache as found (empty
   on a fresh machine: that is the first compile, reported as such);
3. tests: ``MJVEC_TEST_DEVICE=<device> pytest -m device`` (the backend contract, masked resets, the
   overflow check, the device task vs the host task, the no-sync spy, NaN action rows, determinism);
4. throughput-<N> for each size: env, host-task env, backend, raw graph replay, task share, with
   and without deterministic=True (one part per size);
5. memory (600 tools vs 1 at the largest size), first-step-warm, determinism (two same-seed runs);
6. cameras: RGB and depth frames/s at the two smallest sizes, 64x64 and 128x128 (`benchmarks.cameras --warp`).

Three files land in --out (a lent machine hands back at most 8): gpu_run.log (this runner's lines,
then each part's whole output), gpu_run.json (every part's command, exit status, seconds and
results) and parts.tar.gz (each part's own log and JSON, and the tests' JUnit XML, kept in --work
while it runs), each rewritten after every part, so a run cut short still leaves what it measured.
The whole run keeps within --budget-s: a part gets its nominal limit, or less so that every later
part keeps at least its minimum.

    bash benchmarks/gpu_run.sh                                         # on the GPU machine
    MJVEC_GPU_DEVICE=cpu MJVEC_GPU_SIZES="8 16" bash benchmarks/gpu_run.sh  # smoke test on warp's CPU device
    python -m benchmarks.gpu_run --device cpu --sizes 8 --fail-part tests --out out/gpu_smoke
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]  # the project root: `tests` and `benchmarks` import from here
# The files holding device tests (the `device` marker); naming them keeps pytest from importing the
# other test modules, whose RL-library imports the GPU machine's image does not carry.
DEVICE_TEST_FILES = ("tests/test_backend_contract.py", "tests/test_backend_reset.py", "tests/test_backend_warp.py",
                     "tests/test_device_task.py", "tests/test_determinism.py", "tests/test_cameras_warp.py")

@dataclass
class Part:
    name: str
    cmd: list[str]
    limit_s: float  # nominal time limit
    min_s: float = 20.0  # kept in reserve for this part while earlier ones run
    env: dict[str, str] = field(default_factory=dict)
    json: Path | None = None


def _parts(args: argparse.Namespace, work: Path) -> list[Part]:
    py, dev = sys.executable, args.device
    small, large = min(args.sizes), max(args.sizes)
    gpu = [py, "-m", "benchmarks.gpu", "--device", dev, "--tools", str(args.tools)]
    if args.torch_threads is not None:
        gpu += ["--torch-threads", str(args.torch_threads)]
    timing = ["--steps", str(args.steps), "--repeats", str(args.repeats)]
    smi = "nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || true"
    parts = [
        Part("machine", ["bash", "-c", f"{smi}; {py} -m benchmarks.gpu --probe machine --probe-args "
                                       f"'{json.dumps({'device': dev})}' --json {work / 'machine.json'}"], 60, 10,
             json=work / "machine.json"),
        Part("first-step-cold", [*gpu, "--part", "first-step", "--num-envs", str(small)], 180, 30),
        Part("tests", [py, "-m", "pytest", "-q", "-m", "device", "-p", "no:cacheprovider", *DEVICE_TEST_FILES,
                       f"--junitxml={work / 'tests.xml'}"], 150, 30, env={"MJVEC_TEST_DEVICE": dev}),
    ]
    for n in args.sizes:
        parts.append(Part(f"throughput-{n}", [*gpu, *timing, "--part", "throughput", "--num-envs", str(n)],
                          60 + 30 * n / max(large, 1), 25))
    parts += [
        Part("memory", [*gpu, "--part", "memory", "--num-envs", str(large)], 90, 20),
        Part("first-step-warm", [*gpu, "--part", "first-step", "--num-envs", str(small)], 45, 15),
        Part("determinism", [*gpu, "--part", "determinism", "--num-envs", str(small)], 60, 15),
        # Camera observations: rgb and depth frames/s of the "table" camera, 64x64 and 128x128.
        Part("cameras", [py, "-m", "benchmarks.cameras", "--warp", "--device", dev, "--tools", str(args.tools),
                         "--sizes", *(str(n) for n in args.sizes[:2]), "--resolutions", "64", "128",
                         "--steps", str(args.steps), "--repeats", str(args.repeats)], 150, 30),
    ]
    for part in parts:
        if part.cmd[:3] == [py, "-m", "benchmarks.cameras"]:
            part.json = work / f"{part.name}.json"
            part.cmd += ["--json", str(part.json)]
        if part.cmd[:3] == [py, "-m", "benchmarks.gpu"]:
            part.json = work / f"{part.name}.json"
            part.cmd += ["--json", str(part.json)]
        if part.name in args.fail_part:  # the runner's own test: this part fails, the others still run
            part.cmd = [py, "-c", f"import sys; print('injected failure of {part.name}'); sys.exit(3)"]
    return parts


def _run(part: Part, limit: float, work: Path, log: Any) -> dict[str, Any]:
    env = {**os.environ, **part.env}
    t0 = time.perf_counter()
    with open(work / f"{part.name}.log", "w") as f:
        f.write(f"$ {' '.join(part.cmd)}\n")
        f.flush()
        proc = subprocess.Popen(part.cmd, stdout=f, stderr=subprocess.STDOUT, env=env, cwd=ROOT,
                                start_new_session=True)
        try:
            rc = proc.wait(timeout=limit)
            timed_out = False
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)  # the part's whole process group: its probes and pytest workers too
            rc, timed_out = proc.wait(), True
    seconds = time.perf_counter() - t0
    lines = (work / f"{part.name}.log").read_text(errors="replace").splitlines()
    status = "TIMED OUT" if timed_out else ("ok" if rc == 0 else f"FAILED (exit {rc})")
    _say(log, f"== {part.name}: {status} after {seconds:.1f} s (limit {limit:.0f} s)")
    for k, line in enumerate(lines):  # the whole output in the log, its last lines on the console too
        (_say if k >= len(lines) - 25 else _write_only)(log, f"   {line}")
    result = json.loads(part.json.read_text()) if part.json is not None and part.json.exists() else None
    return {"name": part.name, "cmd": part.cmd, "rc": rc, "timed_out": timed_out, "seconds": seconds,
            "limit_s": limit, "result": result}


def _say(log: Any, line: str) -> None:
    print(line, flush=True)
    _write_only(log, line)


def _write_only(log: Any, line: str) -> None:
    log.write(line + "\n")
    log.flush()


def _save(out: Path, work: Path, summary: dict[str, Any]) -> None:
    (out / "gpu_run.json").write_text(json.dumps(summary, indent=1, default=str))
    with tarfile.open(out / "parts.tar.gz", "w:gz") as tar:
        tar.add(work, arcname="parts")


def _first_compile(done: list[dict[str, Any]]) -> str | None:
    results = {d["name"]: d["result"] for d in done if d.get("result")}
    cold = (results.get("first-step-cold") or {}).get("first_step")
    warm = (results.get("first-step-warm") or {}).get("first_step")
    if not cold:
        return None
    compiled = cold["cached_modules_after"] - cold["cached_modules_before"]
    line = (f"time to first step: {'cold' if cold['cold'] else 'warm (cache not empty)'} cache "
            f"{cold['total_s']:.1f} s ({compiled} modules compiled)")
    if warm:
        line += f", warm cache {warm['total_s']:.1f} s"
        if cold["cold"]:
            line += f": the first compile took about {cold['total_s'] - warm['total_s']:.1f} s"
    return line


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192, 16384])
    p.add_argument("--tools", type=int, default=600)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--torch-threads", type=int, default=None)
    p.add_argument("--budget-s", type=float, default=450.0, help="the whole run's time limit")
    p.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "out/gpu_run")))
    p.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "mjvec_gpu_run",
                   help="each part's files while the run lasts (packed into parts.tar.gz)")
    p.add_argument("--fail-part", action="append", default=[], help="make this part fail (tests the runner)")
    p.add_argument("--limit", action="append", default=[], metavar="PART=SECONDS", help="override a part's limit")
    args = p.parse_args()
    out, work = args.out.resolve(), args.work.resolve()
    shutil.rmtree(work, ignore_errors=True)
    for folder in (out, work):
        folder.mkdir(parents=True, exist_ok=True)
    parts = _parts(args, work)
    for item in args.limit:
        name, _, seconds = item.partition("=")
        part = next(q for q in parts if q.name == name)
        part.limit_s = float(seconds)
        part.min_s = min(part.min_s, part.limit_s)
    summary: dict[str, Any] = {"args": {k: str(v) for k, v in vars(args).items()},
                               "kernel_cache": os.environ.get("WARP_CACHE_PATH")}
    header = (f"gpu_run: device {args.device}, sizes {args.sizes}, {args.tools} tools, budget {args.budget_s:.0f} s, "
              f"WARP_CACHE_PATH={os.environ.get('WARP_CACHE_PATH')}, out {out}")
    summary = run_parts(parts, args.budget_s, out, work, summary, header)
    sys.exit(1 if summary["failed_or_skipped"] else 0)


def run_parts(parts: list[Part], budget_s: float, out: Path, work: Path, summary: dict[str, Any],
              header: str = "gpu_run") -> dict[str, Any]:
    """Run `parts` in order within `budget_s` (see the module docstring); returns the summary also
    saved in out/gpu_run.json, with "parts" (one entry per part) and "failed_or_skipped"."""
    deadline = time.perf_counter() + budget_s
    summary["parts"] = []
    with open(out / "gpu_run.log", "w") as log:
        _say(log, header)
        for k, part in enumerate(parts):
            left = deadline - time.perf_counter()
            # Keep the minimum of every later part that could still run at all (one that needs more
            # than is left will be skipped anyway and must not starve the others).
            reserve = sum(q.min_s for q in parts[k + 1:] if q.min_s < left)
            limit = min(part.limit_s, left - reserve)
            if limit < min(part.min_s, part.limit_s):
                _say(log, f"== {part.name}: SKIPPED ({limit:.0f} s left for it, needs {part.min_s:.0f} s)")
                summary["parts"].append({"name": part.name, "skipped": True})
                continue
            summary["parts"].append(_run(part, limit, work, log))
            _save(out, work, summary)
        compile_line = _first_compile(summary["parts"])
        if compile_line:
            _say(log, compile_line)
        summary["failed_or_skipped"] = [d["name"] for d in summary["parts"] if d.get("skipped") or d["rc"] != 0]
        _say(log, f"gpu_run: done; failed or skipped: {summary['failed_or_skipped'] or 'none'}; results in {out}")
    _save(out, work, summary)
    return summary

if __name__ == "__main__":
    main()
