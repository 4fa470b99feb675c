"""``python -m mjvec eval`` on saved checkpoints: its numbers equal an independent rollout of the
same policy on the same held-out envs (one episode each, from reset(seed)); it writes the GIF and
grid it is asked for and refuses a policy trained on another task."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("torch")

from mjvec.cli import main
from mjvec.integrations import load_policy
from tests import policy_files as pf


def _first_episodes(env_id: str, policy, num_envs: int, offset: int, seed: int, **options):
    """(return, length, terminated) of each env's first episode: the oracle, written out plainly."""
    env = gym.make_vec(env_id, num_envs=num_envs, env_id_offset=offset, autoreset_mode="disabled", **options)
    obs, _ = env.reset(seed=seed)
    ret, length, term_first = np.zeros(num_envs), np.zeros(num_envs, int), np.zeros(num_envs, bool)
    open_ = np.ones(num_envs, bool)
    while open_.any():
        obs, reward, term, trunc, _ = env.step(policy(obs))
        ret += np.where(open_, reward, 0.0)
        length += open_
        term_first |= open_ & term
        open_ &= ~(term | trunc)
        if (term | trunc).any():
            obs, _ = env.reset(options={"reset_mask": term | trunc})
    variants = np.asarray(env.unwrapped.backend.variant_of_env)
    env.close()
    return ret, length, term_first, variants


def test_eval_of_a_ppo_checkpoint_equals_an_independent_rollout(tmp_path, capsys):
    path, _ = pf.ppo_checkpoint(tmp_path, env_id="CubeRotate-v0", asymmetric=False)
    argv = ["eval", "--checkpoint", str(path), "--num-envs", "6", "--env-id-offset", "500", "--seed", "9",
            "--option", "max_episode_steps=15", "--option", "num_cubes=4", "--option", "randomization=none", "--json"]
    assert main(argv) == 0
    summary = json.loads(capsys.readouterr().out)
    policy = load_policy(path)
    ret, length, term, variants = _first_episodes("CubeRotate-v0", policy, 6, 500, 9, max_episode_steps=15,
                                                  num_cubes=4, randomization=None)
    assert summary["env_id"] == "CubeRotate-v0" and summary["episodes"] == 6
    # CubeRotate-v0 defines no episode success: an episode succeeds when it reaches its time limit.
    assert summary["success_definition"] == "reached the time limit (not terminated)"
    assert summary["success_rate"] == pytest.approx(np.mean(~term))
    assert summary["return_mean"] == pytest.approx(ret.mean(), rel=1e-12)
    assert summary["length_mean"] == pytest.approx(length.mean())
    want = {int(v): {"episodes": int((variants == v).sum()), "successes": int((~term)[variants == v].sum())}
            for v in np.unique(variants)}
    assert {int(k): v for k, v in summary["per_variant"].items()} == want
    assert summary["failing_variants"] == sorted(v for v, row in want.items() if row["successes"] == 0)
    assert (variants == (500 + np.arange(6)) % 4).all()


def test_eval_of_an_exported_simtoolreal_policy_reports_tool_categories_and_writes_images(tmp_path, capsys):
    pytest.importorskip("onnxruntime")
    path, _ = pf.ppo_checkpoint(tmp_path, num_tools=3)
    prefix = tmp_path / "exported" / "policy"
    gif, grid = tmp_path / "eval.gif", tmp_path / "eval.png"
    argv = ["eval", "--checkpoint", str(path), "--num-envs", "3", "--option", "max_episode_steps=8",
            "--option", "randomization=none", "--export", str(prefix), "--gif", str(gif), "--grid", str(grid),
            "--grid-envs", "2", "--video-steps", "3", "--render-size", "48", "64"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "success rate: 0.000 (the env's episode success)" in text  # an untrained policy reaches no goal
    assert gif.is_file() and grid.is_file() and (tmp_path / "exported" / "policy.onnx").is_file()
    assert main(["eval", "--checkpoint", str(prefix) + ".onnx", "--num-envs", "3", "--option", "max_episode_steps=8",
                 "--option", "randomization=none", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["policy"] == "onnx" and summary["env_id"] == "SimToolReal-v0"
    assert summary["length_mean"] == 8 and summary["failing_variants"] == [0, 1, 2]
    assert sum(row["episodes"] for row in summary["per_category"].values()) == 3


def test_eval_refuses_a_policy_of_another_task(tmp_path, capsys):
    path, _ = pf.ppo_checkpoint(tmp_path, num_tools=3)
    argv = ["eval", "--checkpoint", str(path), "--env-id", "CubeRotate-v0", "--num-envs", "2"]
    assert main(argv) == 2  # refused by the contract check, before any step
    err = capsys.readouterr().err
    assert "first: task.env_id: policy 'SimToolReal-v0', env 'CubeRotate-v0'" in err
    assert main([*argv, "--allow-mismatch"]) == 2  # allowed, the observation check still refuses it
    err = capsys.readouterr().err
    assert "error: the policy expects 140-D observations, got shape (2, 95)" in err
