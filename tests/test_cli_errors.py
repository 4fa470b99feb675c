"""`python -m mjvec` on bad input and at first contact: one stderr line and exit 2 for every user
error, checks before work, complete help, and an `info` that imports neither torch nor warp.

Oracles: the process's own exit status and stderr, a spy proving the env was never built, the
benchmark docstrings read directly, and the modules a fresh interpreter ended up importing.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pytest

import mjvec
from mjvec.cli import commands as cli
from tests.subprocesses import checkout_env

ROOT = Path(mjvec.__file__).resolve().parents[1]
TINY = ["--option", "num_tools=3", "--option", "randomization=none", "--option", "max_episode_steps=8"]


def run_cli(*argv: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mjvec", *argv], capture_output=True, text=True, timeout=timeout,
                          env=checkout_env())  # in the session's scratch cwd (conftest)


def assert_one_line_error(out: subprocess.CompletedProcess, match: str) -> None:
    assert out.returncode == 2, (out.returncode, out.stderr)
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and match in lines[0], out.stderr
    assert out.stdout == ""


@pytest.mark.parametrize(("argv", "match"), [
    (["rollout", "--seed", "-1"], "argument --seed: must be an int >= 0, got -1"),
    (["rollout", "--num-envs", "two"], "argument --num-envs: expected an int >= 1, got 'two'"),
    (["rollout", "--option", "num_envs=3"], "--option num_envs=3 collides with what rollout sets itself: use --num"),
    (["rollout", "--option", "autoreset_mode='disabled'"], "rollout runs with autoreset_mode='same_step'"),
    (["rollout", "--option", "render_size=(9, 9)"], "use --render-size H W"),
    (["info", "--option", "num_envs=2"], "--option num_envs=2 collides with what info sets itself"),
    (["rollout", "--env-id", "Nope-v0"], "'Nope-v0' is not registered"),
    (["frobnicate"], "argument command: invalid choice: 'frobnicate'"),
])
def test_usage_errors_print_one_line_and_exit_2(argv, match):
    assert_one_line_error(run_cli(*argv), match)


def test_outputs_are_checked_before_the_env_is_built(tmp_path, monkeypatch, capsys):
    built = []
    monkeypatch.setattr(gym, "make_vec", lambda *a, **k: built.append(a) or pytest.fail("env built"))
    not_a_folder = tmp_path / "file.txt"
    not_a_folder.write_text("x")
    cases = [
        (["--grid", str(not_a_folder / "grid.png")], rf"--grid '{not_a_folder / 'grid.png'}' cannot be written"),
        (["--grid", "/proc/self/grid.png"], "--grid '/proc/self/grid.png' cannot be written"),
        (["--gif", str(tmp_path)], rf"--gif '{tmp_path}' is a directory; give a file name"),
    ]
    for extra, match in cases:
        assert cli.main(["rollout", *TINY, *extra]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and match in err, err
    assert built == [] and sorted(p.name for p in tmp_path.iterdir()) == ["file.txt"]


def test_garbage_checkpoint_and_vecnormalize_files_are_named(tmp_path, capsys):
    garbage = tmp_path / "model.zip"
    garbage.write_bytes(b"not a zip at all")
    assert cli.main(["rollout", "--checkpoint", str(garbage), *TINY]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"--checkpoint '{garbage}' is not a loadable SB3 PPO checkpoint" in err


def test_garbage_vecnormalize_is_named(tmp_path, capsys):
    from stable_baselines3 import PPO

    from mjvec.integrations.sb3 import SB3VecEnv

    venv = SB3VecEnv(gym.make_vec(mjvec.ENV_ID, num_envs=2, num_tools=3, randomization=None,
                                  autoreset_mode="same_step"))
    PPO("MlpPolicy", venv, n_steps=8, batch_size=8, policy_kwargs={"net_arch": [8]}).save(tmp_path / "m.zip")
    venv.close()
    (tmp_path / "vecnormalize.pkl").write_bytes(b"\x80\x04garbage")
    assert cli.main(["rollout", "--checkpoint", str(tmp_path / "m.zip"), *TINY, "--num-envs", "2"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"--vecnormalize '{tmp_path / 'vecnormalize.pkl'}' is not a loadable" in err


@pytest.mark.parametrize(("value", "wrappers"), [
    ("none", []), ("NONE", []), ("None", []), ("'none'", []), ("paper", "paper"), ("Paper", "paper"),
])
def test_randomization_none_and_preset_names_are_case_insensitive(value, wrappers, capsys, monkeypatch):
    monkeypatch.setattr(cli, "backend_status", lambda: {})
    assert cli.main(["info", "--json", "--option", "num_tools=2", "--option", f"randomization={value}"]) == 0
    listed = json.loads(capsys.readouterr().out)["wrappers"]
    if wrappers == "paper":
        env = gym.make_vec(mjvec.ENV_ID, num_envs=1, num_tools=2, randomization="paper")
        wrappers = [type(e).__name__ for e in cli._chain(env)[:-1]]
        env.close()
        assert wrappers
    assert listed == wrappers


def test_help_shows_defaults_the_trust_warning_and_no_markup(capsys):
    assert cli.main(["rollout", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "envs in the batch (default: 8)" in text and "(default: 120)" in text and "(default: (180, 240))" in text
    assert "loading one runs code from the file. Load only checkpoints you trust." in text
    for argv in ([], ["list"], ["info"], ["bench"]):
        assert cli.main([*argv, "--help"]) == 0
        assert "`" not in capsys.readouterr().out


def test_bench_lists_complete_plain_descriptions(capsys):
    assert cli.main(["bench"]) == 0
    listing = " ".join(capsys.readouterr().out.split())
    for name in ("throughput", "randomization", "tools"):
        doc = ast.get_docstring(ast.parse((ROOT / "benchmarks" / f"{name}.py").read_text())).split("\n\n")[0]
        assert f"{name} {' '.join(doc.split()).replace('`', '')}" in listing
    assert "plain_backend" not in listing


def test_throughput_quick_keeps_explicit_threads():
    from benchmarks.throughput import parse_args

    quick = parse_args(["--quick", "--threads", "1"])
    assert (quick.threads, quick.num_envs, quick.repeats, quick.async_envs) == ([1], [256], 3, [])
    assert parse_args(["--quick"]).threads == [len(os.sched_getaffinity(0))]
    assert parse_args(["--num-envs", "64"]).threads == [1, 2]


def test_rollout_rates_are_rounded_and_gif_progress_is_shown(tmp_path):
    out = run_cli("rollout", "--num-envs", "2", "--steps", "4", "--gif", str(tmp_path / "r.gif"), "--render-size",
                  "24", "32", "--frame-every", "2", *TINY)
    assert out.returncode == 0, out.stderr
    rate = next(line for line in out.stdout.splitlines() if line.startswith("env_steps_per_s: "))
    assert rate.split(": ")[1].replace(",", "").isdigit()
    assert "rollout (rendering GIF frames)" in out.stderr and f"writing {tmp_path / 'r.gif'} (3 frames)" in out.stderr


def test_info_imports_neither_torch_nor_warp():
    code = ("import sys, json\nfrom mjvec import cli\ncli.main(['info', '--json'])\n"
            "print(json.dumps(sorted(m for m in ('torch', 'warp', 'mujoco_warp', 'stable_baselines3') "
            "if m in sys.modules)))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env=checkout_env())
    assert out.returncode == 0, out.stderr
    *info, imported = out.stdout.strip().splitlines()
    assert json.loads(imported) == []
    backends = json.loads("\n".join(info))["backends"]
    assert backends["cpu"] == "available"
    warp_installed = all(importlib.util.find_spec(m) is not None for m in ("mujoco_warp", "warp", "torch"))
    assert (backends["warp"] == "available") == warp_installed, backends
