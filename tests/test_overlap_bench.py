"""benchmarks.overlap: its halves are the whole batch's envs (the same global ids, tools and random
streams: their reset observations, side by side, equal the whole env's bit for bit), a block steps
every env of a side, and the halves-barrier side steps both halves once per step, joined (the
benchmark itself is run by hand: rule 9, never a timed test)."""

from __future__ import annotations

from typing import Any

import numpy as np

from benchmarks import overlap


def test_the_halves_are_the_whole_batchs_envs_and_a_block_steps_them_all(capsys) -> None:
    cases = overlap.main(["--tasks", "SimToolReal-v0", "--num-envs", "6", "--threads", "2", "--steps", "3",
                          "--repeats", "1"])
    case = cases[("SimToolReal-v0", 6, 2)]
    assert set(case) == {"whole", "halves", "halves-split", "halves-barrier"}
    whole = case["whole"].envs[0].unwrapped
    for name in ("halves", "halves-split", "halves-barrier"):
        halves = [env.unwrapped for env in case[name].envs]
        assert [h.num_envs for h in halves] == [3, 3]
        np.testing.assert_array_equal(np.concatenate([h.global_env_ids for h in halves]), whole.global_env_ids)
        assert [h.backend.num_threads for h in halves] == ([2, 2] if name == "halves" else [1, 1])
    for side in case.values():
        assert len(side.rates) == 1 and side.rates[0] > 0  # the timed block (after the warm-up one)
    out = capsys.readouterr().out
    assert out.count("SimToolReal-v0 num_envs=6 threads=2: whole") == 1 and "halves-split" in out
    assert "halves-barrier" in out


def test_halves_reset_to_the_whole_batchs_states() -> None:
    whole = overlap.Side("SimToolReal-v0", [(0, 6, 1)], 1)
    halves = overlap.Side("SimToolReal-v0", [(0, 3, 1), (3, 3, 1)], 1)
    try:
        obs = [env.reset(seed=5)[0] for env in (*whole.envs, *halves.envs)]
        np.testing.assert_array_equal(np.concatenate(obs[1:]), obs[0])
    finally:
        whole.close()
        halves.close()


def test_the_barrier_side_steps_both_halves_in_lockstep() -> None:
    cases = overlap.sides("CubeRotate-v0", 6, 2, steps=3)
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


def test_with_a_policy_each_step_acts_on_the_observation_the_last_step_returned() -> None:
    """--policy: every step's actions are the env's own Policy's, computed from exactly the
    observation its previous step (or the reset) returned, and within the action space."""
    side = overlap.Side("playground/Go1JoystickFlatTerrain-v0", [(0, 3, 1), (3, 3, 1)], 4, policy=True)
    try:
        seen: list[tuple[int, Any, Any]] = []  # (env, obs the policy got, actions it gave)
        returned: list[tuple[int, Any]] = [(k, side.obs[k]) for k in range(2)]

        def recorded(k: int, policy: overlap.Policy, env: Any) -> Any:
            step = env.step

            def act(obs: Any) -> Any:
                out = policy(obs)
                seen.append((k, obs, out))
                return out

            def stepped(actions: Any) -> Any:
                out = step(actions)
                returned.append((k, out[0]))
                return out

            env.step = stepped
            return act

        side.policies = [recorded(k, p, e) for k, (p, e) in enumerate(zip(side.policies, side.envs, strict=True))]
        side.run()
        for k in range(2):
            mine = [obs for j, obs in returned if j == k]
            got = [(obs, a) for j, obs, a in seen if j == k]
            assert len(got) == 4 and len(mine) == 5  # the reset's obs and each step's
            space = side.envs[k].action_space
            for (obs, actions), before in zip(got, mine[:-1], strict=True):
                assert obs is before  # the policy saw what the env had just returned
                assert actions.shape == space.shape and actions.dtype == space.dtype
                assert np.all(actions >= space.low) and np.all(actions <= space.high)
            assert isinstance(got[0][0], dict) and set(got[0][0]) == {"policy", "critic"}  # Go1's asymmetric obs
        assert len(side.rates) == 1 and side.rates[0] > 0
    finally:
        side.close()
