"""playground/LeapCubeReorient-v0 against MuJoCo Playground's own code (``playground`` 0.2.0,
``leap_hand/reorient.py``), run in its own environment (scripts/setup_playground.sh) by
tests/playground_driver.py. Skipped, saying how to make that environment, when it is missing.

- The model: Playground's compiled and edited MjModel equals mjvec's scene in every numeric field
  (the paper scene differs in the cube's "simple" flag and the sparse-mass maps it drives alone).
- Task logic on identical states (CPU backend): mjvec steps, and Playground's ``CubeReorient.step``
  is given mjvec's task state before the step and mjvec's physics result (its physics replaced). Its
  observation and privileged state (noise off, perturbations on), every weighted reward term, the
  reward, the termination, the motor targets, success, ``steps_since_last_success``, ``success_count`` and the
  goal's new orientation must equal mjvec's. Playground computes in float32 from the
  float32-rounded state, mjvec in float64: `TOL` is tests/playground_oracle.py's (4e-6 relative
  plus 1e-6 absolute: half an ulp of rounding plus some tens of float32 operations). One value is
  compared otherwise: the orientation term, whose 2 asin(|v|) has slope 2 / sqrt(1 - |v|^2): an
  error of about 1e-7 in |v| grows by that slope near pi, so it is compared as sin(err / 2) = |v|,
  the float32 value before the asin (`SIN_ATOL`: a few float32 ulps of a norm near 1).
  Success is compared on the rows whose error is not within `THRESHOLD_GAP` of the threshold (none
  is). The reward gets 1e-4 absolute: it carries the orientation term's error near pi. Where a
  push starts each side draws its own direction: there the privileged state is compared up to the
  direction and the wrench's size. Measured (60 steps x 16 envs, 950 compared rows, 29 successes,
  10 falls, 104 push starts, 341 rows pushed): observation and privileged state 4.2e-7, targets
  3.3e-7, hand_pose 8.5e-7, position 7.7e-8, action_rate 1.3e-8, energy 3.8e-9, termination exact,
  the orientation term 3.7e-4 (sin(err / 2): 2.1e-7), reward 1.9e-5, goal spin 3.3e-7, goal
  quaternion 1.3e-7.
  The goal after a success spins by each side's own draw: there, Playground's new goal must equal
  mjvec's `spin_goal` of Playground's spin.
- Sampling (distribution): reset hand poses, cube positions and orientations, goal orientations and
  the success spin: a two-sample Kolmogorov-Smirnov test per component at level 1e-3 between 4,096
  Playground draws and 4,096 mjvec draws (fixed seeds, so the verdict is deterministic), plus the
  check that the same test rejects a spin whose base is off by 0.3 rad/s.
- The trainer configs (agents/): Playground's brax_ppo_config and rsl_rl_config for the task.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import gymnasium as gym
import mujoco
import numpy as np
import pytest
import yaml

import mjvec  # noqa: F401  (registers the task)
from mjvec.tasks.leap_cube_reorient import ENV_ID, LeapCubeReorientConfig
from mjvec.tasks.leap_cube_reorient.scene import scene_spec
from mjvec.tasks.leap_cube_reorient.terms import REWARD_TERMS, spin_goal
from mjvec.xp import Rows, to_host
from tests.playground_oracle import TOL, ks_critical, ks_statistic, numeric_fields, run_driver

NUM_ENVS, STEPS, SAMPLES, ALPHA = 16, 60, 4096, 1e-3
# Noise off; a wide success threshold, so that successes (and goal spins) happen within the rollout;
# two steps of history and an EMA of the targets, so that the rolling and the blend are exercised.
# Perturbations on, with short waits and durations, so that pushes start and run within it.
LOCKSTEP = LeapCubeReorientConfig(noise_level=0.0, success_threshold=1.5, history_len=2, ema_alpha=0.8,
                                  pert_enable=True, pert_wait_steps=(5, 15), pert_duration_steps=(1, 10))
PG_LOCKSTEP = {"impl": "jax", "obs_noise.level": 0.0, "success_threshold": 1.5, "history_len": 2, "ema_alpha": 0.8,
               "pert_config.enable": True, "pert_config.pert_wait_steps": [5, 15],
               "pert_config.pert_duration_steps": [1, 10]}
PERT_DIR, WRENCH = slice(141, 147), slice(147, 153)  # privileged columns with history_len 2
THRESHOLD_GAP = 1e-5
SIN_ATOL = 1e-6
PG = {"env": "LeapCubeReorient"}


def _pre(base) -> dict[str, np.ndarray]:
    """The env's task state before a step, under Playground's ``state.info`` names (and the Data's)."""
    shown = base.shown
    values = {
        "last_act": base.last_act, "last_last_act": base.last_last_act, "goal_quat_dquat": base.goal_spin,
        "steps_since_last_success": base.steps_since_last_success, "success_count": base.success_count,
        "qpos_error_history": shown.joint_history, "cube_pos_error_history": shown.pos_history,
        "cube_ori_error_history": shown.ori_history, "motor_targets": base.backend.ctrl,
        "ctrl": base.backend.ctrl, "mocap_quat": base._views["mocap_quat"],
    }
    pert = base.perturbations
    values.update({"step": pert.step, "pert_wait_steps": pert.wait[:, None], "pert_duration_steps":
                   pert.duration[:, None], "pert_vel": pert.velocity, "pert_dir": pert.direction,
                   "last_pert_step": pert.last_start[:, None]})
    return {k: np.array(to_host(v)) for k, v in values.items()}


def _rollout(seed: int, config: LeapCubeReorientConfig = LOCKSTEP) -> dict[str, np.ndarray]:
    """A recorded CPU rollout: per step the state before it (``pre_*``), the physics after it
    (``after_*``) and mjvec's outputs (``mjvec_*``); half the envs with full-range actions."""
    env = gym.make_vec(ENV_ID, num_envs=NUM_ENVS, obs_mode="asymmetric", config=config, array_backend="numpy")
    base, rows = env.unwrapped, []
    inner = base._evaluate

    def evaluate(active):
        out = inner(active)
        be = base.backend
        row = {"after_qpos": be.qpos.copy(), "after_qvel": be.qvel.copy(),
               "after_sensordata": base._views["sensordata"].copy(),
               "after_actuator_force": base._views["actuator_force"].copy(), "active": active.copy(),
               "mjvec_reward": out[0].copy(), "mjvec_done": out[1].copy(), "mjvec_targets": be.ctrl.copy(),
               "mjvec_mocap_quat": base._views["mocap_quat"].copy(), "mjvec_success": out[3]["success"].copy(),
               "mjvec_error": out[3]["orientation_error"].copy(), "mjvec_spin": base.goal_spin.copy(),
               "mjvec_success_count": base.success_count.copy(),
               "mjvec_steps_since_last_success": base.steps_since_last_success.copy()}
        row.update({f"mjvec_reward/{k}": v.copy() for k, v in out[3]["reward_terms"].items()})
        rows.append(row)
        return out

    base._evaluate = evaluate
    env.reset(seed=seed)
    rng = np.random.default_rng(0)
    scale = np.where(np.arange(NUM_ENVS) % 2 == 0, 1.0, 0.3)[:, None]
    for _ in range(STEPS):
        pre = _pre(base)
        action = rng.uniform(-1, 1, (NUM_ENVS, 16)) * scale
        obs, *_ = env.step(action)
        rows[-1].update({f"pre_{k}": v for k, v in pre.items()}, action=action,
                        mjvec_obs=obs["policy"].copy(), mjvec_privileged=obs["critic"].copy())
    env.close()
    return {k: np.stack([r[k] for r in rows]) for k in rows[0]}


def _samples() -> dict[str, np.ndarray]:
    """mjvec's reset draws (SAMPLES envs over 8 seeds) and its success spins (one success each)."""
    env = gym.make_vec(ENV_ID, num_envs=SAMPLES // 8, array_backend="numpy")
    out: dict[str, list[np.ndarray]] = {}
    for seed in range(8):
        env.reset(seed=100 + seed)
        base = env.unwrapped
        mocap = base._views["mocap_quat"][:, base.indices.goal_mocap]
        draws = {"qpos": base.backend.qpos.copy(), "ctrl": base.backend.ctrl.copy(), "mocap_quat": mocap.copy()}
        rows = Rows.all(base.num_envs)
        draws["spin"] = base.cfg.goal_spin_base + base.rng.uniform(rows, "goal/spin", -base.cfg.goal_spin_jitter,
                                                                   base.cfg.goal_spin_jitter, (3,))
        for k, v in draws.items():
            out.setdefault(k, []).append(v)
    env.close()
    return {k: np.concatenate(v) for k, v in out.items()}


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, np.ndarray]]:
    """One Playground process for the module: its model, its step on mjvec's rollout, its samples."""
    folder = tmp_path_factory.mktemp("playground_leap")
    rollout = _rollout(seed=3)
    np.savez(folder / "task_in.npz", seed=5,
             **{k: v for k, v in rollout.items() if k.startswith(("pre_", "after_")) or k == "action"})
    np.savez(folder / "samples_in.npz", seed=11, count=SAMPLES)
    run_driver([
        {"job": "model", "outputs": str(folder / "model.mjb"), "overrides": {"impl": "jax"}, **PG},
        {"job": "leap_task", "inputs": str(folder / "task_in.npz"), "outputs": str(folder / "task_out.npz"),
         "overrides": PG_LOCKSTEP, **PG},
        {"job": "leap_samples", "inputs": str(folder / "samples_in.npz"),
         "outputs": str(folder / "samples_out.npz"), "overrides": {"impl": "jax"}, **PG},
        {"job": "configs", "outputs": str(folder / "configs.json"), **PG},
    ], folder)
    return {"mjvec": rollout, "task": dict(np.load(folder / "task_out.npz")),
            "samples": dict(np.load(folder / "samples_out.npz")),
            "model": {"path": np.array(str(folder / "model.mjb"))},
            "configs": json.loads((folder / "configs.json").read_text())}


def _close(oracle, ours: str, theirs: str, atol: float | None = None, where: np.ndarray | None = None) -> float:
    """mjvec's `ours` equals Playground's `theirs` within TOL on the evaluated rows; returns the max error."""
    mask = oracle["mjvec"]["active"] if where is None else oracle["mjvec"]["active"] & where
    a, b = oracle["mjvec"][ours][mask], oracle["task"][theirs][mask].astype(np.float64)
    bound = TOL["atol"] if atol is None else atol
    err = np.abs(a - b)
    assert np.all(err <= bound + TOL["rtol"] * np.abs(b)), f"{theirs}: max |mjvec - Playground| = {err.max():.3g}"
    return float(err.max()) if err.size else 0.0


def test_playgrounds_model_equals_the_scene_mjvec_builds(oracle) -> None:
    theirs = mujoco.MjModel.from_binary_path(str(oracle["model"]["path"]))
    ours = scene_spec(LeapCubeReorientConfig()).compile()
    fields = numeric_fields(theirs)
    assert {"body_mass", "dof_damping", "actuator_gainprm", "geom_size", "sensor_adr", "mesh_vert",
            "key_mquat", "tex_data"} <= set(fields)
    assert [n for n in fields if not np.array_equal(getattr(ours, n), getattr(theirs, n))] == []
    assert len(fields) > 200
    for name in ("timestep", "ccd_iterations", "iterations", "ls_iterations", "integrator", "cone"):
        assert getattr(ours.opt, name) == getattr(theirs.opt, name), name
    assert (ours.vis.global_.offwidth, ours.vis.global_.offheight) == (3840, 2160)
    paper = scene_spec(LeapCubeReorientConfig(), cube_com_writable=True).compile()
    differ = {n for n in fields if not np.array_equal(getattr(paper, n), getattr(theirs, n))}
    assert differ == {"body_simple", "dof_simplenum", "M_colind", "M_rowadr", "M_rownnz", "mapD2M", "mapM2D",
                      "mapM2M"}


def test_the_rollout_exercises_falls_successes_and_goal_spins(oracle) -> None:
    ours, mask = oracle["mjvec"], oracle["mjvec"]["active"]
    # Floors below the measured 10 falls and 29 successes: the physics may round otherwise on another CPU.
    assert ours["mjvec_done"][mask].sum() >= 1
    assert ours["mjvec_success"][mask].sum() >= 10
    assert (~ours["mjvec_success"][mask] & (np.abs(ours["pre_goal_quat_dquat"][mask]).max(-1) > 0)).sum() >= 20
    assert (~mask).sum() >= 1
    assert (_push_starts(oracle) & mask).sum() >= 10  # pushes start ...
    assert (np.abs(ours["mjvec_privileged"][mask][:, WRENCH]).max(axis=1) > 0).sum() >= 50  # ... and run
    assert [t for t in REWARD_TERMS if t != "joint_vel" and not np.any(oracle["task"][f"reward/{t}"][mask])] == []


def _push_starts(oracle) -> np.ndarray:
    """(T, N) the steps where a push starts (each side draws its own direction there)."""
    ours = oracle["mjvec"]
    return (ours["pre_step"] % ours["pre_pert_wait_steps"][..., 0] == 0) & (ours["pre_step"] != 0)


def test_observation_and_privileged_state_equal_playgrounds(oracle) -> None:
    _close(oracle, "mjvec_obs", "obs")
    _close(oracle, "mjvec_targets", "targets")
    starts = _push_starts(oracle)
    _close(oracle, "mjvec_privileged", "privileged", where=~starts)
    ours, theirs, mask = oracle["mjvec"], oracle["task"], oracle["mjvec"]["active"] & starts
    np.testing.assert_allclose(ours["mjvec_privileged"][mask][:, :PERT_DIR.start],
                               theirs["privileged"][mask][:, :PERT_DIR.start], rtol=TOL["rtol"], atol=TOL["atol"])
    # A push's start: the same wrench up to its direction, a unit 6-vector on both sides.
    vel = ours["pre_pert_vel"][mask]
    for side, key in ((ours, "mjvec_privileged"), (theirs, "privileged")):
        np.testing.assert_allclose(np.linalg.norm(side[key][mask][:, PERT_DIR], axis=1), 1.0, rtol=1e-6)
    mine = np.linalg.norm(ours["mjvec_privileged"][mask][:, WRENCH] / vel, axis=1)
    np.testing.assert_allclose(mine, np.linalg.norm(theirs["privileged"][mask][:, WRENCH] / vel, axis=1),
                               rtol=1e-5, atol=1e-6)


def test_every_reward_term_the_reward_and_the_termination_equal_playgrounds(oracle) -> None:
    ours, theirs, mask = oracle["mjvec"], oracle["task"], oracle["mjvec"]["active"]
    for term in REWARD_TERMS:
        if term != "orientation":
            _close(oracle, f"mjvec_reward/{term}", f"reward/{term}")
    # The orientation term is linear in the error: compare sin(err / 2) = |v|, what float32 computes
    # before the asin (see above).
    weight = LOCKSTEP.reward_scales.orientation
    err_ours = np.pi * (1 - ours["mjvec_reward/orientation"][mask] / weight) / 0.9 + 0.2
    err_theirs = np.pi * (1 - theirs["reward/orientation"][mask] / weight) / 0.9 + 0.2
    live = (ours["mjvec_reward/orientation"][mask] > 0) & (ours["mjvec_reward/orientation"][mask] < weight)
    np.testing.assert_allclose(np.sin(err_ours[live] / 2), np.sin(err_theirs[live] / 2), rtol=0, atol=SIN_ATOL)
    np.testing.assert_array_equal(ours["mjvec_done"][mask], theirs["done"][mask] > 0)
    clear = np.abs(ours["mjvec_error"] - LOCKSTEP.success_threshold) > THRESHOLD_GAP
    _close(oracle, "mjvec_reward", "reward", atol=1e-4, where=clear)


def test_success_counters_and_the_goal_follow_playgrounds(oracle) -> None:
    ours, theirs, mask = oracle["mjvec"], oracle["task"], oracle["mjvec"]["active"]
    clear = mask & (np.abs(ours["mjvec_error"] - LOCKSTEP.success_threshold) > THRESHOLD_GAP)
    assert clear.sum() == mask.sum()  # no compared row sits on the threshold
    np.testing.assert_array_equal(ours["mjvec_success"][clear], theirs["reward/success"][clear] > 0)
    for name in ("success_count", "steps_since_last_success"):
        np.testing.assert_array_equal(ours[f"mjvec_{name}"][clear], theirs[f"info_{name}"][clear])
    success = ours["mjvec_success"]
    _close(oracle, "mjvec_spin", "info_goal_quat_dquat", where=~success)
    _close(oracle, "mjvec_mocap_quat", "mocap_quat", where=~success)
    # After a success each side spins by its own draw: Playground's goal is mjvec's spin_goal of its spin.
    pre = ours["pre_mocap_quat"][clear & success][:, 0]
    spun = spin_goal(pre, theirs["info_goal_quat_dquat"][clear & success].astype(np.float64),
                     LOCKSTEP.goal_spin_dt_factor * LOCKSTEP.ctrl_dt)
    np.testing.assert_allclose(spun, theirs["mocap_quat"][clear & success][:, 0], rtol=0, atol=2e-6)


def test_resets_and_goal_spins_match_playgrounds_in_distribution(oracle) -> None:
    theirs, ours = oracle["samples"], _samples()
    critical = ks_critical(SAMPLES, SAMPLES, ALPHA)
    pairs = {"hand_q": (ours["qpos"][:, :16], theirs["qpos"][:, :16]), "cube_pos": (ours["qpos"][:, 16:19],
             theirs["qpos"][:, 16:19]), "cube_quat": (ours["qpos"][:, 19:], theirs["qpos"][:, 19:]),
             "goal_quat": (ours["mocap_quat"], theirs["mocap_quat"]), "spin": (ours["spin"], theirs["spin"])}
    worst = {name: max(ks_statistic(a[:, k], b[:, k]) for k in range(a.shape[1])) for name, (a, b) in pairs.items()}
    assert all(v < critical for v in worst.values()), (worst, critical)
    np.testing.assert_array_equal(ours["ctrl"], ours["qpos"][:, :16])  # the targets start at the pose
    np.testing.assert_allclose(theirs["mocap_pos"], np.broadcast_to([0.25, 0.16, 0.0], (SAMPLES, 3)))
    # The test has power: a spin base 0.3 rad/s off is rejected.
    assert ks_statistic(ours["spin"][:, 0] + 0.3, theirs["spin"][:, 0]) > critical


def test_the_lockstep_configs_agree() -> None:
    """The Playground overrides above are the mjvec config's values (a guard against editing one alone)."""
    assert dataclasses.asdict(LOCKSTEP)["success_threshold"] == PG_LOCKSTEP["success_threshold"]
    assert (LOCKSTEP.noise_level, LOCKSTEP.history_len, LOCKSTEP.ema_alpha) == (
        PG_LOCKSTEP["obs_noise.level"], PG_LOCKSTEP["history_len"], PG_LOCKSTEP["ema_alpha"])


AGENTS = Path(__file__).resolve().parents[1] / "mjvec" / "tasks" / "leap_cube_reorient" / "agents"


def test_the_trainer_configs_are_playgrounds(oracle) -> None:
    """agents/ppo.yaml and agents/rsl_rl_ppo.yaml against Playground's brax_ppo_config and
    rsl_rl_config for LeapCubeReorient, read in Playground's own environment."""
    brax, rsl = oracle["configs"]
    ppo = yaml.safe_load((AGENTS / "ppo.yaml").read_text())
    pairs = {"num_envs": "num_envs", "total_timesteps": "num_timesteps", "num_steps": "unroll_length",
             "num_minibatches": "num_minibatches", "update_epochs": "num_updates_per_batch", "gamma": "discounting",
             "learning_rate": "learning_rate", "ent_coef": "entropy_cost", "reward_scale": "reward_scaling",
             "norm_obs": "normalize_observations"}
    assert {k: ppo[k] for k in pairs} == {k: brax[v] for k, v in pairs.items()}
    net = brax["network_factory"]
    assert ppo["hidden"] == net["policy_hidden_layer_sizes"] == net["value_hidden_layer_sizes"]
    assert ppo["asymmetric"] and net["value_obs_key"] == "privileged_state" and ppo["randomization"] == "paper"
    train = yaml.safe_load((AGENTS / "rsl_rl_ppo.yaml").read_text())["train"]
    assert train["algorithm"] == rsl["algorithm"]
    assert train["num_steps_per_env"] == rsl["num_steps_per_env"] and train["save_interval"] == rsl["save_interval"]
    for part, dims in (("actor", "actor_hidden_dims"), ("critic", "critic_hidden_dims")):
        assert train[part]["hidden_dims"] == rsl["policy"][dims] and train[part]["activation"] == "elu"
        assert train[part]["obs_normalization"] == rsl["empirical_normalization"]
    assert train["actor"]["distribution_cfg"]["init_std"] == rsl["policy"]["init_noise_std"]


NOISY = dataclasses.replace(LOCKSTEP, noise_level=1.0)
PG_NOISY = {**PG_LOCKSTEP, "obs_noise.level": 1.0}
# Column blocks with history_len 2 (observations.policy_layout / critic_layout): the noisy policy
# entries and the clean privileged entries they are the noisy copies of.
NOISY_BLOCKS = {"joint_pos": (slice(0, 16), slice(82, 98)), "cube_pos": (slice(48, 51), slice(126, 129)),
                "cube_ori": (slice(54, 60), slice(129, 135))}


@pytest.mark.slow
def test_observation_noise_matches_playgrounds_in_distribution(tmp_path) -> None:
    """With noise on, Playground's step on mjvec's states (its own draws) and mjvec's step give noisy
    observations whose deviations from the clean values (joint angles: U(-0.05, 0.05); palm - cube:
    U(-0.02, 0.02); orientation entries: the renormalised N(0, 0.1) quaternion noise, state by state
    the same law on both sides, since the states are the same) pass a two-sample KS test per block
    at 1e-3, and the test rejects a joint noise 20 % too wide."""
    rollout = _rollout(seed=8, config=NOISY)
    np.savez(tmp_path / "in.npz", seed=13,
             **{k: v for k, v in rollout.items() if k.startswith(("pre_", "after_")) or k == "action"})
    run_driver([{"job": "leap_task", "inputs": str(tmp_path / "in.npz"), "outputs": str(tmp_path / "out.npz"),
                 "overrides": PG_NOISY, **PG}], tmp_path)
    theirs, mask = dict(np.load(tmp_path / "out.npz")), rollout["active"]
    for name, (noisy, clean) in NOISY_BLOCKS.items():
        ours = rollout["mjvec_obs"][mask][:, noisy] - rollout["mjvec_privileged"][mask][:, clean]
        pg = theirs["obs"][mask][:, noisy] - theirs["privileged"][mask][:, clean]
        n = ours.size
        assert ks_statistic(ours, pg) < ks_critical(n, n, ALPHA), name
        if name == "joint_pos":
            assert np.abs(ours).max() <= 0.05 and np.abs(ours).max() > 0.049
            assert ks_statistic(ours * 1.2, pg) > ks_critical(n, n, ALPHA)


@pytest.mark.slow
def test_playgrounds_warp_and_mjvecs_warp_agree_from_the_same_start(tmp_path, warp_device: str) -> None:
    """Playground's own env (impl="warp", its MJX-vendored mujoco-warp, through JAX) and mjvec's
    Warp backend from Playground's reset states with the same actions. Measured (8 envs, noise off):
    qpos within 2.5e-5 after 2 control steps and 6.3e-4 after 5 (median over envs 1.9e-5), then the
    envs part one at a time at contact changes (a 5-iteration solve, float32): by step 18 one env is
    0.7 apart. Bounds: 2e-4 for the first two steps, a median of 1e-4 over the first five."""
    import torch

    from tests.devices import np_of

    actions = np.random.default_rng(1).uniform(-1, 1, (5, 8, 16)) * 0.5
    np.savez(tmp_path / "in.npz", seed=4, action=actions)
    run_driver([{"job": "leap_trajectory", "inputs": str(tmp_path / "in.npz"), "outputs": str(tmp_path / "out.npz"),
                 "overrides": {"impl": "warp", "obs_noise.level": 0.0}, **PG}], tmp_path)
    theirs = dict(np.load(tmp_path / "out.npz"))
    env = gym.make_vec(ENV_ID, num_envs=8, config=LeapCubeReorientConfig(noise_level=0.0), backend="warp",
                       device=warp_device)
    env.reset(seed=0)
    be = env.unwrapped.backend
    state = {k: torch.as_tensor(theirs[f"start_{k}"], dtype=torch.float32, device=warp_device)
             for k in ("qpos", "qvel", "ctrl", "mocap_pos", "mocap_quat")}
    be.reset(torch.ones(8, dtype=torch.bool, device=warp_device), state["qpos"], state["qvel"], ctrl=state["ctrl"],
             mocap_pos=state["mocap_pos"], mocap_quat=state["mocap_quat"])
    gaps = []
    for t, action in enumerate(actions):
        _, _, term, _, _ = env.step(torch.as_tensor(action, dtype=torch.float32, device=warp_device))
        gaps.append(np.abs(np_of(be.qpos) - theirs["qpos"][t]).max(axis=1))
        np.testing.assert_array_equal(np_of(term), theirs["done"][t] > 0)
    env.close()
    gaps = np.stack(gaps)
    assert gaps[:2].max() < 2e-4 and np.median(gaps, axis=1).max() < 1e-4, gaps.max(axis=1)


def test_playgrounds_first_observation_reads_sensors_no_forward_has_filled(oracle) -> None:
    """The stated difference at reset: Playground's reset builds its observation from a Data no
    mj_forward has run on, so its sensors are zero and the palm - cube entries are the position
    noise alone (|.| <= 0.02 m); mjvec's reset runs a forward, and its entries are the real offset."""
    theirs = oracle["samples"]
    assert not np.any(theirs["sensordata"])
    offset = theirs["obs"][:, 32:35]  # history_len 1: joint angles, joint errors, then palm - cube
    assert np.abs(offset).max() <= 0.02
    env = gym.make_vec(ENV_ID, num_envs=8, config=LeapCubeReorientConfig(noise_level=0.0), array_backend="numpy")
    obs, _ = env.reset(seed=0)
    base = env.unwrapped
    palm, cube = (base.indices.read(base._views["sensordata"], n) for n in ("palm_position", "cube_position"))
    np.testing.assert_allclose(obs[:, 32:35], palm - cube, rtol=0, atol=1e-7)
    assert np.abs(obs[:, 32:35]).max() > 0.02
    env.close()
