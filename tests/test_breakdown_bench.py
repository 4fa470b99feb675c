"""benchmarks.breakdown: the phases it times partition the step, and its draw-ahead-off cases
restore mjvec.rng's setting (the benchmark itself is run by hand: rule 9, never a timed test)."""

from __future__ import annotations

import pytest

import mjvec.rng as mjvec_rng
from benchmarks import _floor_task, breakdown


def test_the_phases_partition_the_step_and_the_setting_is_restored(capsys) -> None:
    default = mjvec_rng.AHEAD_REQUESTS
    cases = breakdown.main(["--tasks", "SimToolReal-v0", "--num-envs", "4", "--threads", "1", "--steps", "6",
                            "--repeats", "1", "--draw-ahead-off"])
    assert mjvec_rng.AHEAD_REQUESTS == default
    assert [c.ahead for c in cases] == [default, 1]
    for case in cases:
        m = case.medians()
        assert m["physics"] > 0 and m["evaluate"] > 0 and m["observe"] > 0 and m["events"] > 0  # paper DR
        assert all(m[p] >= 0 for p in breakdown.PHASES if p != "other")
        assert abs(sum(m[p] for p in breakdown.PHASES) - m["step"]) < 1e-9
    out = capsys.readouterr().out
    assert "draw-ahead off" in out and out.count("SimToolReal-v0 num_envs=4 threads=1") == 2


def test_the_floor_task_does_nothing_but_step_and_the_budget_reaches_the_target(capsys) -> None:
    cases = breakdown.main(["--tasks", "mjvec/HalfCheetah-v5", "--num-envs", "3", "--threads", "1", "--steps", "8",
                            "--repeats", "1", "--floor"])
    floor = [c for c in cases if c.label[0] == _floor_task.FLOOR_TASK]
    assert [c.label for c in floor] == [(_floor_task.FLOOR_TASK, 3, 1)]
    base = floor[0].env.unwrapped
    assert int(base.episode_steps.max()) == int(base.episode_steps.min()) >= 8 * 2  # warm-up + one repeat, no resets
    m = floor[0].medians()
    assert m["resets"] == 0.0 and m["events"] < m["step"] and m["physics"] > 0
    assert abs(sum(m[p] for p in breakdown.PHASES) - m["step"]) < 1e-9
    # The budget is the host time at which physics / step is exactly the target.
    budget = breakdown.host_budget(m)
    assert m["physics"] / (m["physics"] + budget) == pytest.approx(breakdown.TARGET, rel=1e-12)
    out = capsys.readouterr().out
    assert f"{_floor_task.FLOOR_TASK} num_envs=3 threads=1" in out and out.count("host budget for 0.90") == 2
    assert _floor_task.register() == _floor_task.FLOOR_TASK  # a second registration is a no-op
