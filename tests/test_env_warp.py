"""SimToolReal-v0 on the Warp backend (warp's cpu device) vs the CPU backend.

Warp is float32 and its contact solver differs in rounding, so the comparison has a stated
tolerance (measured on mujoco-warp 4.0): first observations within 1e-6 (measured 2.0e-7); robot
joint positions within 1e-4 rad over 30 control steps (measured 1.3e-5); the dropped tool within
2e-5 m over its first 10 steps (measured 2.5e-6). A 300-step run over tools of all three classes
closes the file.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

import mjvec
from mjvec.backends.warp import WarpBackend
from mjvec.randomization import DomainRandomization, EventTerm
from mjvec.tasks.simtoolreal.scene import OBJECT_JOINT_NAME, TABLE_TOP_Z, default_catalog

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


# ---- SimToolReal, CPU backend (= MuJoCo C) vs Warp over 300 control steps ---------------------
# Measured maxima (seeds 3-7, 15 envs, 300 steps, random actions in [-1, 1], both presets):
# - robot joints, before the env's first contact involving a robot geom (fingers touching each
#   other, the table or the tool; then float32 and float64 part ways and nothing bounds it): 6.9e-6 rad;
# - tool position, no robot-tool contact, tool on the table: 1.2e-2 m while it tumbles after the
#   spawn drop (the two land at slightly different times), 1.7e-4 m at the end, at rest.
ROBOT_TOL = 3e-5
TOOL_TUMBLE_TOL = 5e-2
TOOL_REST_TOL = 5e-4
_DROP = 0.05  # a tool this far below the table top has left the table


def _window_of_all_classes(n: int, per_class: int) -> int:
    """The first env_id_offset whose n consecutive tools include per_class of each topology."""
    names = ("box_only", "box_box", "capsule_box")
    topo = np.zeros(600, np.int64)
    for k, name in enumerate(names):
        topo[default_catalog().ids_of_topology(name)] = k
    return next(o for o in range(600) if (np.bincount(topo[(o + np.arange(n)) % 600], minlength=3) >= per_class).all())


def _robot_contacts(be: WarpBackend) -> tuple[np.ndarray, np.ndarray]:
    """(any contact with a robot geom, robot-tool contact) per env, from mujoco_warp's contacts."""
    robot_any, robot_tool = np.zeros(be.num_envs, bool), np.zeros(be.num_envs, bool)
    for group, (_, d, env_ids) in zip(be._groups, be.group_handles, strict=True):
        m = group.template
        n = int(d.nacon.numpy()[0])
        g, world = d.contact.geom.numpy()[:n], d.contact.worldid.numpy()[:n]
        tool = m.geom_bodyid == m.body("object").id
        robot = (m.geom_bodyid != 0) & ~tool & (m.body_mocapid[m.geom_bodyid] < 0)
        any_robot = robot[g[:, 0]] | robot[g[:, 1]]
        with_tool = (robot[g[:, 0]] & tool[g[:, 1]]) | (robot[g[:, 1]] & tool[g[:, 0]])
        robot_any[env_ids[world[any_robot]]] = True
        robot_tool[env_ids[world[with_tool]]] = True
    return robot_any, robot_tool


@pytest.mark.slow
@pytest.mark.parametrize(("preset", "seed"), [("none", 7), ("paper", 4)])
def test_simtoolreal_cpu_and_warp_agree_over_300_steps(preset: str, seed: int) -> None:
    n, steps = 15, 300
    kw = {"num_envs": n, "num_tools": 600, "env_id_offset": _window_of_all_classes(n, 3), "array_backend": "numpy"}
    if preset == "none":
        kw["randomization"] = None
    cpu = gym.make_vec(mjvec.ENV_ID, backend="cpu", num_threads=1, **kw)
    warp = gym.make_vec(mjvec.ENV_ID, backend="warp", device="cpu", **kw)
    cpu.reset(seed=seed)
    warp.reset(seed=seed)
    bc, bw = cpu.unwrapped.backend, warp.unwrapped.backend
    obj = int(bc.model.joint(OBJECT_JOINT_NAME).qposadr[0])
    robot_touched, tool_touched = np.zeros(n, bool), np.zeros(n, bool)
    done = np.zeros(n, bool)
    dropped_c, dropped_w = np.zeros(n, bool), np.zeros(n, bool)
    worst = {"robot": 0.0, "tumble": 0.0}
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        action = rng.uniform(-1, 1, (n, 29))
        _, _, term_c, trunc_c, _ = cpu.step(action)
        _, _, term_w, trunc_w, _ = warp.step(action)
        robot_any, robot_tool = _robot_contacts(bw)
        robot_touched |= robot_any
        tool_touched |= robot_tool
        live = ~done
        qc, qw = bc.qpos, bw.qpos.cpu().numpy()
        calm = live & ~robot_touched
        worst["robot"] = max(worst["robot"], float(np.abs(qc[calm, :29] - qw[calm, :29]).max(initial=0)))
        zc, zw = qc[:, obj + 2], qw[:, obj + 2]
        dropped_c |= live & (zc < TABLE_TOP_Z - _DROP)
        dropped_w |= live & (zw < TABLE_TOP_Z - _DROP)
        on_table = live & ~tool_touched & ~dropped_c & ~dropped_w
        err = np.abs(qc[:, obj : obj + 3] - qw[:, obj : obj + 3]).max(axis=1)
        worst["tumble"] = max(worst["tumble"], float(err[on_table].max(initial=0)))
        np.testing.assert_array_equal(term_c[on_table], term_w[on_table])
        done |= term_c | term_w | trunc_c | trunc_w
    rest = ~done & ~tool_touched & ~dropped_c & ~dropped_w
    final = np.abs(bc.qpos[rest, obj : obj + 3] - bw.qpos.cpu().numpy()[rest, obj : obj + 3]).max(initial=0)
    measured = (f"robot before contact {worst['robot']:.1e}, tool tumbling {worst['tumble']:.1e}, at rest {final:.1e} "
                f"({rest.sum()} envs)")
    assert worst["robot"] < ROBOT_TOL and worst["tumble"] < TOOL_TUMBLE_TOL and final < TOOL_REST_TOL, measured
    assert rest.sum() >= n // 2  # most tools were compared at rest
    # No tool leaves the Warp table unless the robot touched it there, or the CPU tool left too.
    assert not (dropped_w & ~tool_touched & ~dropped_c).any()
    cpu.close()
    warp.close()
