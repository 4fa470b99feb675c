"""Tasks are found, not listed: every `mjvec.tasks` subpackage with a registration module, and every
installed ``mjvec.tasks`` entry point, registers at ``import mjvec``; a broken entry point is named.

Each case runs in a fresh interpreter with a throw-away distribution (a ``*.dist-info`` folder with
an ``entry_points.txt``) on its path, as an installed third-party package would be."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import gymnasium as gym
import pytest

import mjvec
from mjvec.envs.registry import register_once, registered_tasks
from mjvec.errors import ConfigError
from mjvec.tasks import task_packages
from mjvec.tasks.cube_rotate.env import CubeRotateEnv

REPO = Path(__file__).resolve().parents[1]


def _plugin(root: Path, body: str) -> None:
    """A distribution 'mjvec-plugin-demo' whose entry point calls demo_tasks.register()."""
    (root / "demo_tasks.py").write_text(textwrap.dedent(body))
    info = root / "mjvec_plugin_demo-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: mjvec-plugin-demo\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[mjvec.tasks]\ndemo = demo_tasks:register\n")


def _run(root: Path, code: str) -> subprocess.CompletedProcess:
    env = {"PYTHONPATH": f"{root}:{REPO}", "MUJOCO_GL": "osmesa", "PATH": "/usr/bin:/bin"}
    return subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True, timeout=300)


def test_every_task_package_registers_and_shared_modules_are_not_tasks() -> None:
    assert task_packages() == ["cube_rotate", "go1_joystick", "gym_mujoco", "leap_cube_reorient", "panda_pick_cube",
                               "simtoolreal"]
    for env_id in ("SimToolReal-v0", "CubeRotate-v0", "mjvec/Ant-v5", "mjvec/Humanoid-v5",
                   "playground/Go1JoystickFlatTerrain-v0", "playground/Go1JoystickRoughTerrain-v0",
                   "playground/LeapCubeReorient-v0", "playground/PandaPickCube-v0",
                   "playground/PandaPickCubeOrientation-v0"):
        assert env_id in registered_tasks() and env_id in gym.registry
    before = dict(registered_tasks())
    mjvec.register_envs()  # a second call registers nothing new and raises nothing
    assert dict(registered_tasks()) == before


def test_an_installed_entry_point_registers_its_task_at_import(tmp_path: Path) -> None:
    _plugin(tmp_path, """
        def register():
            from tests import third_task  # registers PoleBalance-v0 (tests/third_task.py: public API only)

            third_task.register()
    """)
    result = _run(tmp_path, "import gymnasium as gym, mjvec\n"
                            "env = gym.make_vec('PoleBalance-v0', num_envs=2)\n"
                            "print(type(env.unwrapped).__name__, env.reset(seed=0)[0].shape)")
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == ["PoleBalanceEnv", "(2,", "2)"]


def test_a_broken_entry_point_is_named_with_its_package(tmp_path: Path) -> None:
    _plugin(tmp_path, """
        def register():
            raise RuntimeError("no scene files")
    """)
    result = _run(tmp_path, "import mjvec")
    assert result.returncode != 0
    assert "entry point 'demo' (demo_tasks:register) of mjvec-plugin-demo failed" in result.stderr
    assert "RuntimeError: no scene files" in result.stderr and "pip uninstall mjvec-plugin-demo" in result.stderr


def test_register_once_returns_the_task_and_refuses_another_class() -> None:
    task = registered_tasks()["CubeRotate-v0"]
    assert register_once("CubeRotate-v0", env_class=CubeRotateEnv) is task
    with pytest.raises(ConfigError, match=r"'CubeRotate-v0' is already registered with env class CubeRotateEnv"):
        register_once("CubeRotate-v0", env_class=mjvec.envs.base.MjVecEnv)
