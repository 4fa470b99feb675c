"""benchmarks/playground.py's machinery (no timing): the raw-engine side builds the very model
mjvec steps, from the XML with plain MjSpec edits (so "MuJoCo 4.0 vs 3.6" compares engines on
one model), r1's replays of a Go1 batch are bit-exact, and the target and memory checks decide as
stated."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from benchmarks import playground
from benchmarks._gym_worker import _PlaygroundEngine
from mjvec.tasks.go1_joystick import Go1JoystickConfig
from mjvec.tasks.go1_joystick.scene import scene_spec
from tests.playground_oracle import numeric_fields
from tests.subprocesses import ROOT, checkout_env

TASKS = {"playground/Go1JoystickFlatTerrain-v0": "flat_terrain", "playground/Go1JoystickRoughTerrain-v0":
         "rough_terrain"}


@pytest.mark.parametrize("task", list(TASKS))
def test_the_raw_engine_side_steps_mjvecs_compiled_scene(task: str) -> None:
    engine = _PlaygroundEngine(task, 1)
    ours = scene_spec(Go1JoystickConfig(), TASKS[task]).compile()
    differing = [n for n in numeric_fields(ours) if not np.array_equal(getattr(ours, n), getattr(engine.model, n))]
    assert differing == []


def test_r1_replays_of_a_go1_batch_are_bit_exact(tmp_path) -> None:
    task = "playground/Go1JoystickFlatTerrain-v0"
    commands = "\n".join(json.dumps(c) for c in ({"cmd": "step", "steps": 8}, {"cmd": "r1"}, {"cmd": "quit"}))
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "_gym_worker.py"), "mjvec", task, "8", "1"],
                          input=commands + "\n", capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env=checkout_env())
    assert done.returncode == 0, done.stderr[-3000:]
    ready, step, r1 = (json.loads(line) for line in done.stdout.splitlines())
    assert ready == {"ready": True} and step["seconds"] > 0
    assert r1["total"] == 4 * 8 and r1["exact"] == r1["total"] and r1["units"] == r1["total"] * 5


def _row(n: int, speed: float | str, rss: float | str, e2e: float) -> dict:
    return {"num_envs": n, "mjvec_vs_envpool": speed, "rss_vs_envpool": rss, "e2e_vs_limit": e2e}


def test_misses_apply_each_target_where_the_issue_sets_it() -> None:
    assert playground.misses(_row(256, 1.0, 0.5, 0.9)) == []
    assert playground.misses(_row(64, 0.5, 0.2, 0.95)) == []  # the speed target starts at 256 envs
    assert [m.split()[0] for m in playground.misses(_row(1024, 0.99, 0.51, 0.89))] == ["speed", "RSS", "e2e"]
    assert [m.split()[0] for m in playground.misses(_row(1024, "", "", 0.95))] == []  # EnvPool not run


def test_envpool_is_skipped_where_its_extrapolated_peak_exceeds_the_memory(monkeypatch, capsys) -> None:
    gib = 2**30
    monkeypatch.setattr(playground, "mem_available", lambda: 20 * gib)
    assert playground._envpool_fits(256, {})
    peaks = {16: 1.0 * gib, 64: 3.4 * gib}  # 50 MiB per env plus 0.25 GiB
    assert playground._envpool_fits(256, peaks)  # 13.0 GiB < 14 GiB
    assert not playground._envpool_fits(1024, peaks)  # 51.4 GiB
    assert "EnvPool at num_envs=1024 skipped: its estimated peak RSS 51.4 GiB" in capsys.readouterr().out
    assert not playground._envpool_fits(1024, {64: 3.4 * gib})  # one size: proportional, 54.4 GiB
