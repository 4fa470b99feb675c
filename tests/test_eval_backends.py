"""``python -m mjvec eval --backend cpu|warp``: a policy exported from a CPU-trained env passes the contract
check on the Warp backend (the backend is a runtime option) and evaluates there. Oracle: the same
eval on the CPU backend; over three control steps of four envs the two agree within the spread
tests/test_cube_rotate_warp.py measured for 20 steps (reward per step at most 3.1e-2 apart over 40
seeds), and every episode runs to its time limit on both."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

pytest.importorskip("torch")
pytest.importorskip("onnxruntime")
pytest.importorskip("onnxscript")
pytest.importorskip("mujoco_warp")

from mjvec.cli import main
from mjvec.integrations import export_policy
from tests import policy_files as pf

CUBE = {"num_cubes": 2, "randomization": None}


def test_a_cpu_trained_policy_evaluates_on_warp_like_on_cpu(tmp_path, capsys, warp_device):
    env = gym.make_vec("CubeRotate-v0", num_envs=1, **CUBE)
    policy = pf.mlp_policy("CubeRotate-v0", **CUBE)
    with __import__("torch").no_grad():  # small actions: the fingertips keep the cube for the three steps
        policy.actor.body[-1].weight.mul_(0.05)
    onnx_path, _ = export_policy(policy, tmp_path / "policy", env=env)
    env.close()
    argv = ["eval", "--checkpoint", str(onnx_path), "--num-envs", "4", "--option", "max_episode_steps=3", "--json"]
    summaries = {}
    for backend, extra in (("cpu", []), ("warp", ["--device", warp_device])):
        capsys.readouterr()
        assert main([*argv, "--backend", backend, *extra]) == 0
        summaries[backend] = json.loads(capsys.readouterr().out)
    cpu, warp = summaries["cpu"], summaries["warp"]
    assert cpu["contract"] == warp["contract"] == "matches"
    assert cpu["options"]["backend"] == "'cpu'" and warp["options"]["backend"] == "'warp'"
    assert cpu["length_mean"] == warp["length_mean"] == 3 and cpu["success_rate"] == warp["success_rate"] == 1.0
    assert abs(cpu["return_mean"] - warp["return_mean"]) < 3 * 3.1e-2, (cpu["return_mean"], warp["return_mean"])
