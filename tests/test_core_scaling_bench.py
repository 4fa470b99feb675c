"""benchmarks/core_scaling.py's machinery (no timing asserted): the share of k x alone is taken
from medians over repeats of summed rates, the workers start together and report, and a worker
that cannot start is named."""

from __future__ import annotations

import pytest

from benchmarks.core_scaling import run_together, scaling
from mjvec.tasks.gym_mujoco.specs import xml_path


def test_share_is_the_summed_rate_over_k_times_alone() -> None:
    # Two workers that each ran at 0.9 of one alone: 0.9 of 2 x alone, whatever the repeat order.
    out = scaling(alone=[100.0, 110.0, 90.0], together=[[90.0, 90.0], [85.0, 95.0], [100.0, 98.0]], k=2)
    assert out["alone"] == 100.0
    assert out["together"] == 180.0  # median of 180, 180, 198
    assert out["share"] == pytest.approx(0.9)


def test_workers_start_together_and_report_their_rates() -> None:
    rates = run_together(str(xml_path("hopper.xml")), 2, 2, 0.2)
    assert len(rates) == 2 and all(r > 0 for r in rates)


def test_a_worker_that_cannot_start_is_named(tmp_path) -> None:
    missing = tmp_path / "missing.xml"
    with pytest.raises(RuntimeError, match=r"core_scaling worker for .*missing\.xml did not start"):
        run_together(str(missing), 1, 1, 0.1)
