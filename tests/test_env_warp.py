"""SimToolReal-v0 on the Warp backend (warp's cpu device) vs the CPU backend.

Warp is float32 and its contact solver differs in rounding, so the comparison has a stated
tolerance (measured on mujoco-warp 4.0): first observations within 1e-6 (measured 2.0e-7); robot
joint positions within 1e-4 rad over 30 control steps (measured 1.3e-5); the dropped tool within
2e-5 m over its first 10 steps (measured 2.5e-6). tests/test_warp_engine.py runs 300 steps.
"""

from __future__ import annotations

import os

os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import gymnasium as gym
import numpy as np
import torch

import mjvec
from mjvec.randomization import DomainRandomization, EventTerm

BASE = {"num_envs": 6, "num_tools": 6, "autoreset_mode": "disabled"}
KW = {**BASE, "array_backend": "numpy"}


def _pair(**kw):
    cpu = gym.make_vec(mjvec.ENV_ID, backend="cpu", num_threads=1, **{**KW, **kw})
    warp = gym.make_vec(mjvec.ENV_ID, backend="warp", device="cpu", **{**KW, **kw})
    return cpu, warp


def test_cpu_and_warp_agree_within_tolerance_and_share_the_layout() -> None:
    cpu, warp = _pair(randomization=None, obs_mode="asymmetric")
    assert cpu.single_observation_space == warp.single_observation_space
    oc, _ = cpu.reset(seed=3)
    ow, _ = warp.reset(seed=3)
    for key in ("policy", "critic"):
        assert oc[key].dtype == ow[key].dtype and oc[key].shape == ow[key].shape
        np.testing.assert_allclose(oc[key], ow[key], atol=1e-6)
    rng = np.random.default_rng(0)
    for k in range(30):
        a = rng.uniform(-1, 1, (6, 29))
        cpu.step(a)
        warp.step(a)
        qc, qw = cpu.unwrapped.backend.qpos, warp.unwrapped.backend.qpos
        np.testing.assert_allclose(qc[:, :29], qw[:, :29], atol=1e-4)
        if k < 10:
            np.testing.assert_allclose(qc[:, 29:32], qw[:, 29:32], atol=2e-5)


def test_warp_env_outputs_torch_and_runs_the_paper_preset() -> None:
    env = gym.make_vec(mjvec.ENV_ID, backend="warp", device="cpu", array_backend="torch", **BASE)
    obs, _ = env.reset(seed=0)
    assert isinstance(obs, torch.Tensor) and obs.device.type == "cpu" and obs.shape == (6, 140)
    for _ in range(10):
        obs, reward, _, _, info = env.step(torch.zeros(6, 29))
    assert torch.isfinite(obs).all() and isinstance(reward, torch.Tensor)
    assert not info["sim_error"].any()


def test_model_field_randomization_on_warp_matches_the_draws() -> None:
    env = gym.make_vec(mjvec.ENV_ID, backend="warp", device="cpu", randomization=None, **KW)
    env = DomainRandomization(env, (EventTerm("body_mass", 0.5, 1.5, targets=("object",)),))
    env.reset(seed=1)
    be = env.unwrapped.backend
    body = env.unwrapped.object_body_id
    expected = be.defaults("body_mass")[:, body] * env.dr_params["body_mass"][:, 0]
    np.testing.assert_allclose(be.field_values("body_mass")[:, body], expected, rtol=1e-6)
    for _ in range(5):
        obs, *_ = env.step(np.zeros((6, 29)))
    assert np.isfinite(obs).all()


def test_diverging_env_on_warp_is_flagged_and_others_unaffected() -> None:
    def run(fault: bool):
        env = gym.make_vec(mjvec.ENV_ID, backend="warp", device="cpu", randomization=None, **KW)
        env.reset(seed=2)
        out = []
        for t in range(8):
            if fault and t == 4:
                env.unwrapped.backend.xfrc_applied[2, env.unwrapped.object_body_id, :3] = 1e30
            obs, _, _, trunc, info = env.step(np.zeros((6, 29)))
            out.append((obs, info["sim_error"].copy(), trunc.copy()))
        return out

    clean, faulty = run(False), run(True)
    assert faulty[4][1][2] and faulty[4][1].sum() == 1 and faulty[4][2][2]
    others = np.arange(6) != 2
    for (oc, _, _), (of, _, _) in zip(clean, faulty, strict=True):
        np.testing.assert_array_equal(oc[others], of[others])


def test_warp_defaults_to_torch_output_and_is_deterministic() -> None:
    def run() -> torch.Tensor:
        env = gym.make_vec(mjvec.ENV_ID, backend="warp", device="cpu", **BASE)  # native output: torch
        obs, _ = env.reset(seed=9)
        assert isinstance(obs, torch.Tensor)
        rng = np.random.default_rng(1)
        for _ in range(10):
            obs, *_ = env.step(torch.as_tensor(rng.uniform(-1, 1, (6, 29)), dtype=torch.float32))
        env.close()
        return obs

    torch.testing.assert_close(run(), run(), rtol=0, atol=0)
