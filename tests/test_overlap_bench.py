"""benchmarks.overlap: its sides hold the whole batch's global env ids, and the halves-barrier side
steps both halves once per step, joined (the benchmark itself is run by hand: rule 9)."""

from __future__ import annotations

import numpy as np

from benchmarks import overlap


def test_the_sides_split_the_whole_batchs_ids_and_the_barrier_steps_both_halves_in_lockstep() -> None:
    cases = overlap.sides("CubeRotate-v0", 6, 2, steps=3)
    assert list(cases) == ["whole", "halves", "halves-split", "halves-barrier"]
    whole_ids = cases["whole"].envs[0].unwrapped.global_env_ids
    for name in ("halves", "halves-split", "halves-barrier"):
        ids = np.concatenate([env.unwrapped.global_env_ids for env in cases[name].envs])
        assert ids.tolist() == whole_ids.tolist(), name
    barrier = cases["halves-barrier"]
    calls: list[tuple[int, int]] = []  # (half, step) in the order the steps finished
    for k, env in enumerate(barrier.envs):
        step = env.step

        def counted(actions, k=k, step=step):
            out = step(actions)
            calls.append((k, sum(1 for c in calls if c[0] == k)))
            return out

        env.step = counted
    barrier.run()
    assert sorted(calls) == [(k, i) for k in (0, 1) for i in range(3)]
    for i in range(3):  # joined every step: no half is a step ahead when the other finishes one
        done_before = calls[: calls.index((0, i))] + calls[: calls.index((1, i))]
        assert all(j <= i for _, j in done_before)
    assert len(barrier.rates) == 1 and barrier.rates[0] > 0
    for side in cases.values():
        side.close()
