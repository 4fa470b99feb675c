"""benchmarks.rne_fusion: its three sides step the same trajectory (fused and unfused also the same
contact forces, bit for bit), so each repeat times the same work (the benchmark itself is run by
hand: rule 9, never a timed test)."""

from __future__ import annotations

import pytest

from benchmarks import rne_fusion
from mjvec.backends.cpu import rne_post


@pytest.mark.parametrize("threads", [1, 2])
def test_the_three_sides_step_the_same_trajectory(threads: int) -> None:
    ms = rne_fusion.measure("ant.xml", 6, threads, repeats=2, calls=3, frame_skip=5)
    assert set(ms) == {"fused", "unfused", "step only"} and all(v > 0 for v in ms.values())


def test_without_the_fused_callback_it_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rne_post, "_FUSED", ["the fused callback did not compile (test)"])
    with pytest.raises(SystemExit, match="the fused callback is not available here"):
        rne_fusion.measure("ant.xml", 4, 1, repeats=1, calls=1, frame_skip=5)
