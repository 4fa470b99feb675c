"""`python -m mjvec` (list, info, rollout, bench) and `mjvec.integrations.video`, against independent oracles:
the tool catalog counted directly, a rollout replayed in-process with the same seed and policy,
the benchmarks folder listed directly, and images read back with Pillow.
"""

from __future__ import annotations

import collections
import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from PIL import Image

import mjvec
from mjvec.backends.registry import BACKENDS
from mjvec.cli import commands as cli
from mjvec.cli import rollout as cli_rollout
from mjvec.errors import ConfigError, InstallError
from mjvec.integrations.video import write_gif, write_png
from mjvec.tasks.simtoolreal.catalog.tools import ToolCatalog
from mjvec.tasks.simtoolreal.registration import ENV_ID

ROOT = Path(mjvec.__file__).resolve().parents[1]
TINY = ["--option", "num_tools=3", "--option", "randomization=None", "--option", "max_episode_steps=8"]


def run_cli(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    base = dict(os.environ if env is None else env)
    base["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), base.get("PYTHONPATH")) if p)
    return subprocess.run([sys.executable, "-m", "mjvec", *argv], capture_output=True, text=True, timeout=120,
                          env=base)  # in the scratch working directory (conftest)


def test_list():
    out = run_cli("list")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "CubeRotate-v0  mjvec.tasks.cube_rotate.env:CubeRotateEnv  presets: paper",
        f"{ENV_ID}  mjvec.tasks.simtoolreal.env:SimToolRealEnv  presets: paper",
        *(f"mjvec/{name}  mjvec.tasks.gym_mujoco.env:GymMujocoEnv  presets: locomotion"
          for name in ("Ant-v5", "HalfCheetah-v5", "Hopper-v5", "Humanoid-v5", "Walker2d-v5")),
        *(f"playground/Go1Joystick{terrain}Terrain-v0  mjvec.tasks.go1_joystick.env:Go1JoystickEnv  presets: paper"
          for terrain in ("Flat", "Rough")),
        "playground/LeapCubeReorient-v0  mjvec.tasks.leap_cube_reorient.env:LeapCubeReorientEnv  presets: paper",
        *(f"playground/PandaPickCube{suffix}-v0  mjvec.tasks.panda_pick_cube.env:PandaPickCubeEnv  presets: none"
          for suffix in ("", "Orientation")),
    ]


def test_info_and_rollout_of_cube_rotate():
    out = run_cli("info", "CubeRotate-v0", "--json", "--option", "num_cubes=3")
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)
    assert info["observation_space"]["shape"] == [95] and info["action_space"]["shape"] == [22]
    assert info["variants"] == 3 and info["presets"] == ["paper"] and info["wrappers"] == []
    assert "num_cubes" in info["options"] and "num_tools" not in info["options"]
    assert info["control_dt"] == pytest.approx(0.05) and info["max_episode_steps"] == 400
    out = run_cli("rollout", "--env-id", "CubeRotate-v0", "--num-envs", "2", "--steps", "12", "--json",
                  "--option", "max_episode_steps=5")
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert summary["env_id"] == "CubeRotate-v0" and summary["episodes"] >= 2 and summary["obs_finite"]


def test_info_json_matches_catalog_and_env():
    out = run_cli("info", ENV_ID, "--json", "--option", "num_tools=2", "--option", "obs_mode='asymmetric'")
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)
    assert info["observation_space"]["policy"]["shape"] == [140]
    assert info["observation_space"]["critic"]["shape"] == [162]
    assert info["action_space"] == {"type": "Box", "shape": [29], "dtype": "float32", "low": -1.0, "high": 1.0}
    assert sum(w for _, w in info["policy_layout"]) == 140 and sum(w for _, w in info["critic_layout"]) == 162
    counts = collections.Counter(tool.topology for tool in ToolCatalog())
    assert info["tools"] == {"total": 600, "per_topology": dict(counts)}
    assert info["render_fps"] == pytest.approx(1 / info["control_dt"])
    assert info["wrappers"][0] == "RandomPushes"  # the paper's randomization is on by default
    assert set(info["backends"]) == set(BACKENDS) and info["backends"]["cpu"] == "available"
    assert "num_tools" in info["options"] and "randomization" in info["options"]
    assert info["variants"] == 2 and info["presets"] == ["paper"]


def test_info_text_and_errors(capsys, monkeypatch):
    # Backend availability is checked for real in test_info_json_matches_catalog_and_env.
    monkeypatch.setattr(cli, "backend_status", lambda: {"cpu": "available", "warp": "stub"})
    assert cli.main(["info", "--option", "num_tools=1", "--option", "randomization=None"]) == 0
    text = capsys.readouterr().out
    assert text.startswith(f"{ENV_ID}\n") and "tools: 600 (box_only 50, box_box 250, capsule_box 300)" in text
    assert "wrappers: none" in text and "backends: cpu: available; warp: stub" in text
    assert cli.main(["info", "Nope-v0"]) == 2
    assert "'Nope-v0' is not registered" in capsys.readouterr().err
    assert cli.main(["info", "--option", "num_tools"]) == 2
    assert "--option expects key=value" in capsys.readouterr().err
    assert cli.main(["info", "--option", "num_tool=3"]) == 2
    assert "unexpected keyword argument 'num_tool'" in capsys.readouterr().err


def replay(num_envs: int, steps: int, seed: int, options: dict, policy) -> list[float]:
    """The rollout's episode returns, computed in-process with gymnasium directly."""
    env = gym.make_vec(ENV_ID, num_envs=num_envs, autoreset_mode="same_step", record_episode_statistics=True,
                       **options)
    obs, _ = env.reset(seed=seed)
    returns = []
    for _ in range(steps):
        obs, _, _, _, info = env.step(policy(env, obs))
        if "episode" in info:
            returns.extend(info["episode"]["r"][info["_episode"]].tolist())
    env.close()
    return returns


def test_rollout_random_writes_grid_and_gif(tmp_path):
    # Without MUJOCO_GL or a display the command re-executes itself with osmesa.
    env = {k: v for k, v in os.environ.items() if k not in ("MUJOCO_GL", "PYOPENGL_PLATFORM", "DISPLAY")}
    grid, gif = tmp_path / "grid.png", tmp_path / "roll.gif"
    out = run_cli("rollout", "--num-envs", "4", "--steps", "16", "--seed", "3", "--grid", str(grid), "--gif",
                  str(gif), "--grid-envs", "3", "--frame-every", "4", "--render-size", "24", "32", "--json", *TINY,
                  env=env)
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    rng = np.random.default_rng(3)
    expected = replay(4, 16, 3, {"num_tools": 3, "randomization": None, "max_episode_steps": 8},
                      lambda env, obs: rng.uniform(env.action_space.low, env.action_space.high).astype(np.float32))
    assert summary["episodes"] == len(expected) >= 4
    assert summary["return_mean"] == pytest.approx(np.mean(expected), rel=1e-12)
    assert summary["policy"] == "random" and summary["obs_finite"] and summary["env_steps_per_s"] > 0
    image = Image.open(grid)
    assert image.size == (2 * 32, 2 * 24)  # 3 envs tiled 2 x 2
    assert np.asarray(image)[:24, :64].any()
    with Image.open(gif) as video:
        assert video.n_frames == summary["gif_frames"] == 1 + 16 // 4
        assert video.size == (64, 48)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import VecNormalize

    from mjvec.integrations.sb3 import SB3VecEnv

    folder = tmp_path_factory.mktemp("ckpt")
    venv = VecNormalize(SB3VecEnv(gym.make_vec(ENV_ID, num_envs=4, num_tools=3, randomization=None,
                                               max_episode_steps=8, autoreset_mode="same_step")))
    model = PPO("MlpPolicy", venv, n_steps=16, batch_size=32, n_epochs=1, seed=0, policy_kwargs={"net_arch": [16]})
    model.learn(64)
    model.save(folder / "final_model.zip")
    venv.save(str(folder / "vecnormalize.pkl"))
    venv.close()
    return folder


def test_rollout_checkpoint_uses_policy_and_vecnormalize(checkpoint, capsys):
    from stable_baselines3 import PPO

    # In-process (torch is already imported here); the subprocess path is tested above.
    argv = ["rollout", "--num-envs", "4", "--steps", "12", "--seed", "1", "--checkpoint",
            str(checkpoint / "final_model.zip"), "--json", *TINY]
    assert cli.main(argv) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["vecnormalize"] == str(checkpoint / "vecnormalize.pkl")
    model = PPO.load(checkpoint / "final_model.zip", device="cpu")
    with open(checkpoint / "vecnormalize.pkl", "rb") as f:
        stats = pickle.load(f)  # a VecNormalize without its venv: normalize_obs works
    expected = replay(4, 12, 1, {"num_tools": 3, "randomization": None, "max_episode_steps": 8},
                      lambda env, obs: model.predict(stats.normalize_obs(obs), deterministic=True)[0])
    assert summary["episodes"] == len(expected) == 4
    assert summary["return_mean"] == pytest.approx(np.mean(expected), rel=1e-9)


def test_rollout_errors(checkpoint, tmp_path, capsys):
    assert cli.main(["rollout", "--num-envs", "0"]) == 2
    assert "argument --num-envs: must be an int >= 1, got 0" in capsys.readouterr().err
    assert cli.main(["rollout", "--checkpoint", str(tmp_path / "missing.zip"), *TINY]) == 2
    assert "does not exist" in capsys.readouterr().err
    argv = ["rollout", "--checkpoint", str(checkpoint / "final_model.zip"), "--option", "obs_mode='asymmetric'", *TINY]
    assert cli.main(argv) == 2
    assert "does not match" in capsys.readouterr().err


def test_find_vecnormalize(tmp_path):
    (tmp_path / "checkpoints").mkdir()
    step_ckpt = tmp_path / "checkpoints" / "ppo_64_steps.zip"
    assert cli_rollout._find_vecnormalize(step_ckpt) is None
    (tmp_path / "checkpoints" / "vecnormalize.pkl").touch()
    assert cli_rollout._find_vecnormalize(step_ckpt) == tmp_path / "checkpoints" / "vecnormalize.pkl"
    (tmp_path / "checkpoints" / "ppo_vecnormalize_64_steps.pkl").touch()
    assert cli_rollout._find_vecnormalize(step_ckpt) == tmp_path / "checkpoints" / "ppo_vecnormalize_64_steps.pkl"


def test_bench_lists_and_runs(capsys, monkeypatch):
    out = run_cli("bench")
    assert out.returncode == 0, out.stderr
    listed = [line.split()[0] for line in out.stdout.splitlines()[1:] if not line.startswith(" " * 23)]
    runnable = [p.stem for p in (ROOT / "benchmarks").glob("*.py")
                if not p.stem.startswith("_") and 'if __name__ == "__main__":' in p.read_text()]
    assert listed == sorted(runnable) and "plain_backend" not in listed  # a helper module: prints nothing
    out = run_cli("bench", "cpu_backend", "--", "--help")  # runs python -m benchmarks.cpu_backend --help
    assert out.returncode == 0, out.stderr
    assert "usage:" in out.stdout and "cpu_backend" in out.stdout
    assert cli.main(["bench", "no_such_bench"]) == 2
    assert "unknown benchmark 'no_such_bench'" in capsys.readouterr().err
    monkeypatch.setattr(cli, "benchmarks_root", lambda: None)
    assert cli.main(["bench"]) == 1
    assert "no benchmarks/ folder" in capsys.readouterr().out


def test_write_png_and_gif_round_trip(tmp_path):
    frames = [np.full((6, 8, 3), 40 * k, np.uint8) for k in range(4)]
    frames[0][0, 0] = (255, 0, 0)
    path = write_png(tmp_path / "a" / "f.png", frames[0])
    np.testing.assert_array_equal(np.asarray(Image.open(path)), frames[0])
    path = write_gif(tmp_path / "v.gif", frames, fps=25)
    with Image.open(path) as gif:
        assert gif.n_frames == 4 and gif.info["duration"] == 40 and gif.info["loop"] == 0
        for k in range(4):
            gif.seek(k)
            assert tuple(gif.convert("RGB").getpixel((3, 3))) == (40 * k,) * 3


def test_video_errors(tmp_path):
    good = np.zeros((4, 4, 3), np.uint8)
    with pytest.raises(ConfigError, match="at least one frame"):
        write_gif(tmp_path / "v.gif", [], fps=10)
    with pytest.raises(ConfigError, match=r"fps must be a finite number > 0\.0"):
        write_gif(tmp_path / "v.gif", [good], fps=0)
    with pytest.raises(ConfigError, match=r"frame 1 must be an \(H, W, 3\) uint8 array"):
        write_gif(tmp_path / "v.gif", [good, good.astype(np.float32)], fps=10)
    with pytest.raises(ConfigError, match="all frames must have one shape"):
        write_gif(tmp_path / "v.gif", [good, np.zeros((2, 4, 3), np.uint8)], fps=10)
    with pytest.raises(ConfigError, match=r"frame must be an \(H, W, 3\) uint8 array"):
        write_png(tmp_path / "f.png", np.zeros((4, 4), np.uint8))


def test_video_without_pillow_raises_install_error(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "PIL", None)
    with pytest.raises(InstallError, match="pip install pillow"):
        write_png(tmp_path / "f.png", np.zeros((4, 4, 3), np.uint8))
