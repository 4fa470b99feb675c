"""examples/go1_exploration.py: its counts against a plain loop, its table, and its refusals.

Oracles: a plain loop over the same envs (same seed) with the action noise drawn as the docstring
states (a generator keyed by (seed, the std's index), clipped to the action box): the script's
positive-reward fraction, mean reward and falls equal that loop's counts; and the physics of a
robot given zero actions (the default pose under PD): it stands, so it does not fall and Playground's
clipped reward is positive on most of its steps.
"""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

from tests.policy_files import example_module

N, SECONDS, STDS = 4, 0.4, (0.0, 0.8)


def _module():
    return example_module("go1_exploration.py", "go1_exploration")


def _plain_loop(args, std: float, key: int) -> dict:
    env = gym.make_vec(args.env_id, num_envs=N, randomization=args.randomization, num_threads=1)
    env.reset(seed=args.seed)
    rng = np.random.default_rng([args.seed, key])
    rewards, falls = [], 0
    for _ in range(round(SECONDS / env.unwrapped.control_dt)):
        noise = rng.normal(0.0, std, (N, 12))
        _, reward, terminated, _, _ = env.step(np.clip(noise, -1.0, 1.0).astype(np.float32))
        rewards.append(np.asarray(reward, np.float64))
        falls += int(np.asarray(terminated).sum())
    env.close()
    r = np.concatenate(rewards)
    return {"positive_fraction": float((r > 0).mean()), "mean_reward": float(r.mean()),
            "falls_per_1000": 1000 * falls / r.size}


def test_counts_equal_a_plain_loop_and_standing_earns_reward(tmp_path, capsys):
    module = _module()
    args = module.Args(stds=STDS, num_envs=N, seconds=SECONDS, num_threads=1, json=tmp_path / "r.json")
    rows = module.main(args)
    assert [r["std"] for r in rows] == list(STDS)
    for key, (row, std) in enumerate(zip(rows, STDS, strict=True)):
        expected = _plain_loop(args, std, key)
        for name, value in expected.items():
            assert row[name] == pytest.approx(value, rel=1e-12, abs=1e-15), (std, name)
    assert rows[0]["falls_per_1000"] == 0.0 and rows[0]["positive_fraction"] > 0.5  # standing: up, rewarded
    table = capsys.readouterr().out
    assert "| action std | steps with reward > 0 |" in table
    assert f"| 0 | {rows[0]['positive_fraction']:.3f} |" in table
    assert json.loads((tmp_path / "r.json").read_text())["rows"] == rows


@pytest.mark.parametrize(("overrides", "match"), [
    ({"stds": (0.3, -0.1)}, r"--stds must be finite and >= 0 .*got \[0.3, -0.1\]"),
    ({"stds": (float("nan"),)}, r"--stds must be finite and >= 0"),
    ({"stds": ()}, r"--stds must be finite and >= 0 \(at least one\), got \[\]"),
    ({"num_envs": 0}, r"--num-envs must be >= 1 and --seconds > 0, got 0 and"),
    ({"seconds": 0.0}, r"--num-envs must be >= 1 and --seconds > 0, got 256 and 0.0"),
])
def test_bad_arguments_are_refused_before_any_env(overrides, match, monkeypatch):
    module = _module()
    monkeypatch.setattr(module.gym, "make_vec", lambda *a, **k: pytest.fail("an env was made"))
    with pytest.raises(SystemExit, match=match):
        module.main(module.Args(**overrides))
