"""benchmarks/gym_suite.py's ratio arithmetic (no timing): each repeat's block is paired with the
r1 replayed right after it, and the physics' efficiency is what e2e / L would be with no host work."""

from __future__ import annotations

import pytest

from benchmarks.gym_suite import paired_ratios, ratio_columns, ratio_text


def test_each_block_is_paired_with_its_own_r1() -> None:
    # The machine sped up and slowed down between repeats, and rate and r1 moved together: each
    # repeat's e2e / L is 0.9, which the median of the pairs keeps.
    paired = [(90.0, 0.9, 250.0), (360.0, 0.9, 1000.0), (180.0, 0.9, 500.0)]
    out = paired_ratios(paired, threads=2, frame_skip=5)
    assert (out["e2e"], out["e2e_low"], out["e2e_high"]) == (pytest.approx(0.9),) * 3
    # Pairs 0.225, 1.8 and 1.8: the median pair is 1.8, where the median rate over the median r1
    # (180 x 5 / (2 x 500)) would say 0.9.
    out = paired_ratios([(90.0, 0.9, 1000.0), (180.0, 0.9, 250.0), (360.0, 0.9, 500.0)], threads=2, frame_skip=5)
    assert out["e2e"] == pytest.approx(1.8)
    assert (out["e2e_low"], out["e2e_high"]) == (pytest.approx(0.225), pytest.approx(1.8))


def test_the_physics_efficiency_is_e2e_over_the_physics_share() -> None:
    # 1,000 env-steps/s, 4 substeps each, the physics 80 % of the step, r1 2,500 substeps/s on 2
    # threads: the physics alone ran 5,000 substeps/s, 1.0 of 2 x r1; e2e / L is 0.8.
    out = paired_ratios([(1000.0, 0.8, 2500.0)], threads=2, frame_skip=4)
    assert out["e2e"] == pytest.approx(0.8)
    assert out["engine"] == pytest.approx(1.0)
    assert out["engine"] * 0.8 == pytest.approx(out["e2e"])


def test_the_columns_and_the_printed_text_carry_the_same_ratios() -> None:
    columns = ratio_columns([(90.0, 0.9, 1000.0), (180.0, 0.9, 250.0), (360.0, 0.9, 500.0)], threads=2, frame_skip=5)
    assert columns == {"e2e_vs_limit": 1.8, "e2e_vs_limit_low": 0.225, "e2e_vs_limit_high": 1.8,
                       "physics_vs_limit": 2.0}
    assert ratio_text(columns, 5) == "e2e/(T x r1/5) 1.800 [0.225-1.800], physics/(T x r1) 2.000"
