"""examples/ppo.py: the timeout-bootstrap advantage math against hand-computed values, a tiny
single-process run (CSV, checkpoint, finite losses), and a 2-process torchrun run (shards keep
global env ids; parameters stay identical on both ranks and differ from the initial ones)."""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import tyro  # noqa: F401  (the examples need it; CI installs the train extra)

from tests.policy_files import ppo_module

ROOT = Path(__file__).resolve().parents[1]
PPO = ROOT / "examples" / "ppo.py"


ppo = ppo_module()


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    env.setdefault("MUJOCO_GL", "osmesa")
    return env


def _run(cmd: list[str], timeout: float) -> subprocess.CompletedProcess:
    # In the scratch working directory (conftest), where MuJoCo's log file may go.
    result = subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, f"{' '.join(cmd)} failed:\n{result.stdout[-3000:]}\n{result.stderr[-5000:]}"
    return result


def _rows(path: Path) -> list[dict[str, float]]:
    """progress.csv rows as floats; an empty field (no episode ended in the iteration) is NaN."""
    with path.open() as f:
        return [{k: float(v) if v != "" else math.nan for k, v in row.items()} for row in csv.DictReader(f)]


# ---- advantages with timeout bootstrap ---------------------------------------------------------
def test_compute_advantages_bootstraps_truncation_with_final_value():
    # env 0: truncated at t=1, so step 1 bootstraps V(final_obs_1) = 4 instead of values[2].
    # env 1: terminated (and flagged truncated) at t=0: no bootstrap at all; final value 100 ignored.
    gamma, lam = 0.9, 0.5
    rewards = torch.tensor([[1.0, 1.0], [2.0, 1.0], [3.0, 1.0]])
    values = torch.tensor([[0.5, 1.0], [1.0, 1.0], [1.5, 1.0]])
    terminated = torch.tensor([[False, True], [False, False], [False, False]])
    truncated = torch.tensor([[False, True], [True, False], [False, False]])
    final_values = torch.tensor([[100.0, 100.0], [4.0, 100.0], [100.0, 100.0]])
    last_value = torch.tensor([2.0, 10.0])
    adv, ret = ppo.compute_advantages(rewards, values, terminated, truncated, final_values, last_value, gamma, lam)
    # env 0: t=2: 3 + .9*2 - 1.5 = 3.3; t=1: 2 + .9*4 - 1 = 4.6 (no carry over the boundary);
    #        t=0: (1 + .9*1 - .5) + .9*.5*4.6 = 1.4 + 2.07 = 3.47.
    # env 1: t=2: 1 + .9*10 - 1 = 9; t=1: (1 + .9 - 1) + .45*9 = 4.95; t=0: 1 + 0 - 1 = 0.
    expected = torch.tensor([[3.47, 0.0], [4.6, 4.95], [3.3, 9.0]])
    torch.testing.assert_close(adv, expected)
    torch.testing.assert_close(ret, expected + values)


def test_compute_advantages_without_dones_is_plain_gae():
    gamma, lam = 0.99, 0.95
    g = torch.Generator().manual_seed(0)
    rewards, values = torch.randn(5, 3, generator=g), torch.randn(5, 3, generator=g)
    last = torch.randn(3, generator=g)
    never = torch.zeros(5, 3, dtype=torch.bool)
    adv, _ = ppo.compute_advantages(rewards, values, never, never, torch.full((5, 3), 1e6), last, gamma, lam)
    # Independent oracle: sum_k (gamma*lam)^k delta_{t+k}.
    nxt = torch.cat([values[1:], last[None]])
    delta = rewards + gamma * nxt - values
    expected = torch.stack([sum((gamma * lam) ** (k - t) * delta[k] for k in range(t, 5)) for t in range(5)])
    torch.testing.assert_close(adv, expected)


def test_check_args_rejects_minibatches_that_do_not_divide_the_batch():
    with pytest.raises(ValueError, match=r"num_envs \* num_steps = 12 is not divisible by num_minibatches=5"):
        ppo.check_args(ppo.Args(num_envs=3, num_steps=4, num_minibatches=5))
    with pytest.raises(ValueError, match="--num-envs must be >= 1, got 0"):
        ppo.check_args(ppo.Args(num_envs=0))
    with pytest.raises(ValueError, match="--save-interval must be >= 0"):
        ppo.check_args(ppo.Args(save_interval=-1))
    ppo.check_args(ppo.Args(num_envs=3, num_steps=4, num_minibatches=4))


def test_min_log_std_floors_the_policy_spread_and_its_gradient():
    """--min-log-std: a log std below the floor samples at exp(floor) (rsl_rl's std_range clamp),
    one above it is unchanged, and the entropy bonus does not push a floored parameter."""
    args = ppo.Args(hidden=(8,), init_log_std=-3.0, min_log_std=-1.6)
    agent = ppo.Agent(4, 5, 3, args)
    obs = torch.zeros(2, 4)
    pi = agent.distribution(obs)
    torch.testing.assert_close(pi.stddev, torch.full((2, 3), math.exp(-1.6)))
    pi.entropy().sum().backward()
    assert torch.equal(agent.actor_logstd.grad, torch.zeros(3))
    with torch.no_grad():
        agent.actor_logstd.fill_(-1.0)
    torch.testing.assert_close(agent.distribution(obs).stddev, torch.full((2, 3), math.exp(-1.0)))
    free = ppo.Agent(4, 5, 3, dataclasses.replace(args, min_log_std=None))
    torch.testing.assert_close(free.distribution(obs).stddev, torch.full((2, 3), math.exp(-3.0)))


def test_running_mean_std_matches_numpy():
    rms = ppo.RunningMeanStd(2)
    g = torch.Generator().manual_seed(1)
    a, b = torch.randn(7, 2, generator=g) * 3 + 1, torch.randn(5, 2, generator=g) - 2
    rms.update(a)
    rms.update(b)
    both = torch.cat([a, b]).double()
    torch.testing.assert_close(rms.mean.double(), both.mean(0), atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(rms.var.double(), both.var(0, unbiased=False), atol=1e-4, rtol=1e-4)


# ---- what an iteration without finished episodes shows ---------------------------------------
def test_iteration_without_episodes_shows_dashes_and_empty_csv_fields(tmp_path):
    stats = {"episodes": 0.0, "return": 0.0, "success": 0.0, "length": 0.0, "reward": 8.0}
    row = ppo.log_row(1, 32, 2.0, dict(stats), {"policy_loss": 0.5}, 1e-3, 32)
    assert ppo.progress_postfix(row) == {"ret": "-", "succ": "-", "sps": "16"}
    log = ppo.CsvLog(tmp_path / "progress.csv")
    log.write(row)
    log.close()
    with (tmp_path / "progress.csv").open() as f:
        written = next(csv.DictReader(f))
    assert (written["mean_return"], written["mean_success"], written["mean_length"]) == ("", "", "")
    assert float(written["episodes"]) == 0 and float(written["mean_reward"]) == 0.25
    done = ppo.log_row(2, 64, 4.0, {**stats, "episodes": 2.0, "return": 3.0, "success": 1.0}, {}, 1e-3, 32)
    assert (done["mean_return"], done["mean_success"]) == (1.5, 0.5)
    assert ppo.progress_postfix(done) == {"ret": "1.5", "succ": "0.50", "sps": "16"}


# ---- end-to-end runs ---------------------------------------------------------------------------
def test_single_process_smoke_run_writes_csv_and_checkpoint(tmp_path):
    # 4 envs x 8 steps x 2 iterations; episodes of 5 steps so truncation bootstrap and stats run.
    _run([sys.executable, str(PPO), "--num-envs", "4", "--num-tools", "3", "--num-steps", "8",
          "--total-timesteps", "64", "--max-episode-steps", "5", "--asymmetric", "--hidden", "32", "32",
          "--out-dir", str(tmp_path), "--no-progress", "--save-interval", "1"], timeout=120)
    rows = _rows(tmp_path / "progress.csv")
    assert [r["global_step"] for r in rows] == [32.0, 64.0]
    for row in rows:
        for key in ("policy_loss", "value_loss", "entropy", "approx_kl", "sps", "mean_reward"):
            assert math.isfinite(row[key]), (key, row)
        assert row["episodes"] >= 4  # every env truncates at least once per 8 steps
        assert math.isfinite(row["mean_return"]) and 0.0 <= row["mean_success"] <= 1.0
        assert row["mean_length"] <= 5.0
    ckpt = torch.load(tmp_path / "checkpoint.pt", weights_only=True)  # plain data: no code runs
    assert ckpt["global_step"] == 64 and ckpt["world_size"] == 1
    args = ppo.Args(asymmetric=True, hidden=(32, 32))
    agent = ppo.Agent(140, 162, 29, args)
    agent.load_state_dict(ckpt["agent"])  # the saved agent has the asymmetric shapes
    assert float(agent.policy_norm.count) > 64  # normalizer statistics were updated and saved
    assert all(torch.isfinite(t).all() for t in ckpt["agent"].values())
    # --save-interval 1: one checkpoint per iteration beside the final one, each its iteration's agent
    first, second = (torch.load(tmp_path / f"checkpoint_{i}.pt", weights_only=True) for i in (1, 2))
    assert (first["global_step"], second["global_step"]) == (32, 64)
    assert all(torch.equal(second["agent"][k], v) for k, v in ckpt["agent"].items())
    assert not all(torch.equal(first["agent"][k], v) for k, v in ckpt["agent"].items())


@pytest.mark.parametrize("backend", ["cpu", pytest.param("warp", marks=pytest.mark.slow)])
def test_torchrun_two_ranks_shard_envs_and_keep_parameters_identical(tmp_path, backend):
    """On "warp" (warp's CPU device) the task and its curriculum run in torch: the reducer gets
    tensors and all-reduces them without reading them back."""
    num_envs, num_tools = 3, 5
    _run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", str(PPO),
          "--num-envs", str(num_envs), "--num-tools", str(num_tools), "--num-steps", "4", "--num-minibatches", "2",
          "--total-timesteps", "48", "--hidden", "32", "--randomization", "none", "--out-dir", str(tmp_path),
          "--no-progress", "--shard-report", "--curriculum-interval", "1", "--backend", backend], timeout=240)
    reports = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    for rank, report in enumerate(reports):
        assert report["world_size"] == 2 and report["rank"] == rank
        assert report["num_envs"] == num_envs
        assert report["env_id_offset"] == rank * num_envs
        ids = list(range(rank * num_envs, (rank + 1) * num_envs))
        assert report["global_env_ids"] == ids
        assert report["tool_ids"] == [g % num_tools for g in ids]  # tool identity is global
        assert report["global_step"] == 48
        # One curriculum over both ranks: with an interval of 1 it checks at each of the 8 control
        # steps, each check one all-reduce every rank joins (a rank alone would hang: timeout).
        assert report["curriculum_steps"] == 8 and report["curriculum_reductions"] == 8
    assert reports[0]["tolerance"] == reports[1]["tolerance"]
    assert reports[0]["init_param_digest"] == reports[1]["init_param_digest"]
    # Different data on each rank: only averaged gradients and pooled normalizer stats keep these equal.
    assert reports[0]["param_digest"] == reports[1]["param_digest"]
    assert reports[0]["param_digest"] != reports[0]["init_param_digest"]
    rows = _rows(tmp_path / "progress.csv")  # rank 0 only: 2 ranks x 3 envs x 4 steps per iteration
    assert [r["global_step"] for r in rows] == [24.0, 48.0]
    assert not (tmp_path / "progress.csv.rank1").exists()


GO1_PPO = ROOT / "mjvec" / "tasks" / "go1_joystick" / "agents" / "ppo.yaml"
GO1_PPO_CPU = GO1_PPO.with_name("ppo_cpu.yaml")


def test_a_task_config_file_sets_the_options_and_flags_override_it():
    args = ppo.parse_args(["--config", str(GO1_PPO), "--num-envs", "16", "--gamma", "0.9"])
    assert args.env_id == "playground/Go1JoystickFlatTerrain-v0" and args.asymmetric and args.randomization == "paper"
    assert (args.num_steps, args.num_minibatches, args.update_epochs, args.ent_coef) == (20, 32, 4, 0.01)
    assert args.hidden == (512, 256, 128) and args.config == GO1_PPO
    assert (args.num_envs, args.gamma) == (16, 0.9)  # the flags win
    assert ppo.parse_args(["--num-envs", "3"]) == ppo.Args(num_envs=3)
    # Playground trains Go1JoystickRoughTerrain with the same Brax config: the same file, another id.
    rough_id = "playground/Go1JoystickRoughTerrain-v0"
    rough = ppo.parse_args(["--config", str(GO1_PPO), "--env-id", rough_id])
    assert rough == dataclasses.replace(ppo.parse_args(["--config", str(GO1_PPO)]), env_id=rough_id)


def test_the_go1_cpu_config_is_playgrounds_with_its_four_stated_changes():
    """agents/ppo_cpu.yaml (the documented walking run) differs from agents/ppo.yaml (Playground's
    Brax config) in the envs, the initial action std, its floor and the budget, and nothing else."""
    playground = ppo.parse_args(["--config", str(GO1_PPO)])
    cpu = ppo.parse_args(["--config", str(GO1_PPO_CPU)])
    changed = {f.name for f in dataclasses.fields(ppo.Args) if getattr(playground, f.name) != getattr(cpu, f.name)}
    assert changed == {"config", "num_envs", "init_log_std", "min_log_std", "total_timesteps"}
    assert (cpu.num_envs, cpu.init_log_std, cpu.min_log_std) == (4096, -1.2, -1.6)
    assert playground.min_log_std is None and cpu.init_log_std > cpu.min_log_std
    # a whole number of iterations: the run ends where the documented checkpoint was written
    assert cpu.total_timesteps % (cpu.num_envs * cpu.num_steps) == 0


def test_a_config_file_with_an_unknown_option_is_refused(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("num_envs: 4\nnum_epochs: 3\n")
    with pytest.raises(SystemExit, match=r"bad.yaml: unknown options \['num_epochs'\]; the options are ppo.py's"):
        ppo.parse_args(["--config", str(bad)])


@pytest.mark.slow
def test_the_go1_config_trains_a_few_iterations(tmp_path):
    _run([sys.executable, str(PPO), "--config", str(GO1_PPO), "--num-envs", "8", "--num-minibatches", "4",
          "--total-timesteps", "320", "--hidden", "32", "--out-dir", str(tmp_path), "--no-progress"], timeout=180)
    rows = _rows(tmp_path / "progress.csv")
    assert [r["global_step"] for r in rows] == [160.0, 320.0]
    assert all(math.isfinite(r["mean_r_tracking_lin_vel"]) and r["mean_r_tracking_lin_vel"] > 0 for r in rows)
