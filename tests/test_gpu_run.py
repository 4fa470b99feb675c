"""benchmarks/gpu_run.py's runner: a part that fails, one that outruns its limit and one the budget
leaves no time for do not stop the others, and everything lands in the three files the device
machine hands back. Oracle: what each synthetic part was made to do."""

from __future__ import annotations

import json
import sys
import tarfile
import time

from benchmarks.gpu_run import Part, run_parts


def _py(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def test_failures_timeouts_and_the_budget_leave_the_other_parts(tmp_path) -> None:
    out, work = tmp_path / "out", tmp_path / "work"
    out.mkdir()
    work.mkdir()
    result = work / "ok.json"
    parts = [
        Part("ok", _py(f"import json; open({str(result)!r}, 'w').write(json.dumps({{'x': 1}})); print('fine')"),
             10, 1, json=result),
        Part("fails", _py("import sys; print('bad'); sys.exit(3)"), 10, 1),
        Part("hangs", _py("import time; print('waiting', flush=True); time.sleep(60)"), 1.5, 1),
        Part("after", _py("print('still runs')"), 10, 1),
        Part("no_time", _py("print('never')"), 60, 30),  # needs 30 s; the budget leaves less
    ]
    t0 = time.perf_counter()
    summary = run_parts(parts, 12, out, work, {})
    assert time.perf_counter() - t0 < 12
    by = {p["name"]: p for p in summary["parts"]}
    assert by["ok"]["rc"] == 0 and by["ok"]["result"] == {"x": 1}
    assert by["fails"]["rc"] == 3 and not by["fails"]["timed_out"]
    assert by["hangs"]["timed_out"] and by["hangs"]["seconds"] < 5
    assert by["after"]["rc"] == 0
    assert by["no_time"] == {"name": "no_time", "skipped": True}
    assert summary["failed_or_skipped"] == ["fails", "hangs", "no_time"]
    assert sorted(p.name for p in out.iterdir()) == ["gpu_run.json", "gpu_run.log", "parts.tar.gz"]
    assert json.loads((out / "gpu_run.json").read_text())["failed_or_skipped"] == summary["failed_or_skipped"]
    log = (out / "gpu_run.log").read_text()
    for line in ("== fails: FAILED (exit 3)", "   bad", "== hangs: TIMED OUT", "   waiting", "   still runs",
                 "== no_time: SKIPPED"):
        assert line in log, line
    with tarfile.open(out / "parts.tar.gz") as tar:
        assert {"parts/ok.log", "parts/ok.json", "parts/fails.log", "parts/hangs.log"} <= set(tar.getnames())
