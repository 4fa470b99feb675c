"""benchmarks.breakdown: the phases it times partition the step, and its draw-ahead-off cases
restore mjvec.rng's setting (the benchmark itself is run by hand: rule 9, never a timed test)."""

from __future__ import annotations

import mjvec.rng as mjvec_rng
from benchmarks import breakdown


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
