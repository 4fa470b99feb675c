"""playground/Go1JoystickFlatTerrain-v0 against MuJoCo Playground's own code (``playground`` 0.2.0,
its Go1 joystick), run in its own environment (scripts/setup_playground.sh) by
tests/playground_driver.py. Skipped, saying how to make that environment, when it is missing.

- The model: Playground's compiled and edited MjModel equals mjvec's scene in every numeric field.
- Task logic on identical states (CPU backend): mjvec steps, and Playground's ``Joystick.step`` is
  given mjvec's task state before the step and mjvec's physics result (its physics replaced). Its
  observation and privileged state (noise off), every weighted reward term, the reward, the
  termination, the motor targets, the kick force, the feet state, the last action and the command
  countdown must equal mjvec's within float32 round-off: Playground computes in float32 from the
  float32-rounded state, mjvec in float64, so each value may differ by a few float32 ulps of the
  operands it is computed from. `TOL`: 4e-6 relative (Playground rounds the state to float32, half
  an ulp or 6e-8 relative, then each value takes some tens of float32 operations, each within half
  an ulp) plus 1e-6 absolute (values formed as differences of numbers up to about 3, such as
  q - q_default: a few ulps of 3 is 4e-7). The kick force gets `KICK_ATOL`: its half sine is
  evaluated near its zero at a kick's end, where float32's error in the argument (about eps x pi)
  is multiplied by the force amplitude, up to 0.5 x 12.7 kg x 3 m/s / 0.05 s = 382 N: 4 x 1.2e-7 x
  pi x 382 = 6e-4. Measured: 1.8e-7 (observations), 9e-5 (kick force), 4.5e-9 (reward).
- Sampling (distribution): reset commands, timers, kick schedules, base offsets, yaw and velocity,
  the observation noise, and resampled commands: a two-sample Kolmogorov-Smirnov test per component
  at level 1e-3 between 4,096 Playground draws and 4,096 mjvec draws (fixed seeds, so the verdict is
  deterministic), plus the check that the same test rejects a 10 % error in a range or swapped
  keep probabilities.
"""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import mujoco
import numpy as np
import pytest

import mjvec  # noqa: F401  (registers the task)
from mjvec.rng import EnvRandom
from mjvec.tasks.go1_joystick import ENV_ID, Go1JoystickConfig
from mjvec.tasks.go1_joystick.scene import scene_spec
from mjvec.tasks.go1_joystick.terms import REWARD_TERMS
from mjvec.tasks.locomotion import CommandConfig, CommandState, PushConfig
from mjvec.xp import Rows
from tests.playground_oracle import (
    TOL,
    assert_close,
    driver_inputs,
    ks_critical,
    ks_statistic,
    lockstep_rollout,
    numeric_fields,
    run_driver,
)

NUM_ENVS, STEPS, SAMPLES, ALPHA = 16, 60, 4096, 1e-3
# Short command timers and kick waits, so that resampling and kicks happen within the rollout.
# Soft joint limits at 0.7 of the range (Playground's: 0.95), so that the limit term is exercised.
LOCKSTEP = Go1JoystickConfig(noise_level=0.0, commands=CommandConfig(mean_resample_s=0.2),
                             pushes=PushConfig(enable=True, kick_wait_times=(0.1, 0.4)),
                             soft_joint_pos_limit_factor=0.7)
PG_LOCKSTEP = {"impl": "jax", "noise_config.level": 0.0, "pert_config.enable": True,
               "soft_joint_pos_limit_factor": 0.7}
KICK_ATOL = 6e-4
PUSH_FORCE = slice(118, 121)  # the kick force's columns in the privileged state (CRITIC_LAYOUT)


def _actions(rng: np.random.Generator) -> np.ndarray:
    """Half the envs with full-range random actions (they fall), half with small ones (they walk a bit)."""
    scale = np.where(np.arange(NUM_ENVS) % 2 == 0, 1.0, 0.3)[:, None]
    return rng.uniform(-1, 1, (NUM_ENVS, 12)) * scale


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, np.ndarray]]:
    """One Playground process for the module: its model, its step on mjvec's rollout, its samples."""
    folder = tmp_path_factory.mktemp("playground")
    rollout = lockstep_rollout(ENV_ID, LOCKSTEP, NUM_ENVS, STEPS, _actions, seed=3)
    np.savez(folder / "task_in.npz", seed=5, **driver_inputs(rollout))
    np.savez(folder / "samples_in.npz", seed=11, count=SAMPLES, command=np.array([1.0, -0.5, 0.7]))
    run_driver([
        {"job": "model", "outputs": str(folder / "model.mjb"), "overrides": {"impl": "jax"}},
        {"job": "task", "inputs": str(folder / "task_in.npz"), "outputs": str(folder / "task_out.npz"),
         "overrides": PG_LOCKSTEP},
        {"job": "samples", "inputs": str(folder / "samples_in.npz"), "outputs": str(folder / "samples_out.npz"),
         "overrides": {"impl": "jax"}},
    ], folder)
    return {"mjvec": rollout, "task": dict(np.load(folder / "task_out.npz")),
            "samples": dict(np.load(folder / "samples_out.npz")),
            "model": {"path": np.array(str(folder / "model.mjb"))}}


def test_playgrounds_model_equals_the_scene_mjvec_builds(oracle) -> None:
    theirs = mujoco.MjModel.from_binary_path(str(oracle["model"]["path"]))
    ours = scene_spec(Go1JoystickConfig()).compile()
    fields = numeric_fields(theirs)  # every array but names and file paths (not physics)
    assert {"body_mass", "dof_damping", "actuator_gainprm", "geom_size", "sensor_adr", "mesh_vert"} <= set(fields)
    differ = [n for n in fields if not np.array_equal(getattr(ours, n), getattr(theirs, n))]
    assert differ == [] and len(fields) > 200
    assert [ours.joint(j).name for j in range(1, ours.njnt)] == [theirs.joint(j).name for j in range(1, theirs.njnt)]
    for name in ("timestep", "ccd_iterations", "iterations", "ls_iterations", "integrator", "cone"):
        assert getattr(ours.opt, name) == getattr(theirs.opt, name), name


def _active(oracle) -> np.ndarray:
    return oracle["mjvec"]["active"]


def _close(oracle, ours: str, theirs: str, atol: float | np.ndarray | None = None, where: np.ndarray | None = None
           ) -> None:
    """mjvec's `ours` equals Playground's `theirs` within TOL on the evaluated rows (and `where`)."""
    assert_close(oracle["mjvec"], oracle["task"], ours, theirs, atol, where)


def test_the_rollout_exercises_falls_resamples_kicks_and_landings(oracle) -> None:
    ours, mask = oracle["mjvec"], _active(oracle)
    assert ours["mjvec_done"][mask].sum() >= 4  # falls (the termination and its reward term)
    assert (ours["pre_steps_until_next_cmd"][mask] <= 1).sum() >= 20  # command resamples
    assert (np.abs(ours["mjvec_xfrc"][mask]).max(axis=-1) > 0).sum() >= 20  # kick forces
    assert (oracle["task"]["reward/feet_air_time"][mask] != 0).sum() >= 20  # landings after air time
    assert (~mask).sum() >= 4  # autoreset steps (not compared: their physics is discarded)
    # Every reward term is non-zero somewhere, so each comparison below can fail.
    assert [t for t in REWARD_TERMS if not np.any(oracle["task"][f"reward/{t}"][mask])] == []


def test_observation_and_privileged_state_equal_playgrounds_on_the_same_states(oracle) -> None:
    _close(oracle, "mjvec_obs", "obs")
    atol = np.full(123, TOL["atol"])
    atol[PUSH_FORCE] = KICK_ATOL
    _close(oracle, "mjvec_privileged", "privileged", atol)


@pytest.mark.parametrize("term", REWARD_TERMS)
def test_each_reward_term_equals_playgrounds(oracle, term: str) -> None:
    _close(oracle, f"mjvec_reward/{term}", f"reward/{term}")


def test_reward_termination_targets_and_kicks_equal_playgrounds(oracle) -> None:
    mask = _active(oracle)
    _close(oracle, "mjvec_reward", "reward")
    np.testing.assert_array_equal(oracle["mjvec"]["mjvec_done"][mask], oracle["task"]["done"][mask] > 0)
    _close(oracle, "mjvec_ctrl", "targets")
    _close(oracle, "mjvec_xfrc", "xfrc", KICK_ATOL)


def test_feet_last_action_and_kick_schedule_after_the_step_equal_playgrounds(oracle) -> None:
    mask, ours, theirs = _active(oracle), oracle["mjvec"], oracle["task"]
    for name in ("feet_air_time", "swing_peak", "last_act"):
        _close(oracle, f"mjvec_post_{name}", f"info_{name}")
    for name in ("last_contact", "steps_since_last_pert", "pert_steps"):
        np.testing.assert_array_equal(ours[f"mjvec_post_{name}"][mask], theirs[f"info_{name}"][mask], err_msg=name)
    # A kick's direction is drawn when its wait ends (each side its own draw): elsewhere it is kept.
    since, until = ours["pre_steps_since_last_pert"], ours["pre_steps_until_next_pert"]
    starting = (since < until) & (since + 1 >= until)
    assert (mask & starting).sum() >= 10
    _close(oracle, "mjvec_post_pert_dir", "info_pert_dir", where=~starting)
    for direction in (ours["mjvec_post_pert_dir"][mask & starting], theirs["info_pert_dir"][mask & starting]):
        np.testing.assert_allclose(np.linalg.norm(direction, axis=-1), 1.0, rtol=1e-6)
        assert np.all(direction[:, 2] == 0)


def test_command_countdown_and_resample_decisions_equal_playgrounds(oracle) -> None:
    """Where neither side resamples (the timer has not run out, the env did not fall) both keep the
    command and count down alike; where the timer ran out both resample (the values are each side's
    own draws: their distribution is tested below)."""
    mask, ours, theirs = _active(oracle), oracle["mjvec"], oracle["task"]
    due = ours["pre_steps_until_next_cmd"] - 1 <= 0
    keep = mask & ~due & ~ours["mjvec_done"]
    assert keep.sum() > 100 and (mask & due).sum() >= 20
    timers = ours["mjvec_post_steps_until_next_cmd"], theirs["info_steps_until_next_cmd"]
    np.testing.assert_array_equal(timers[0][keep], timers[1][keep])
    np.testing.assert_allclose(ours["mjvec_post_command"][keep], theirs["info_command"][keep], rtol=1e-6, atol=0)
    kept = mask & ~due
    np.testing.assert_array_equal(ours["mjvec_post_command"][kept], ours["pre_command"][kept])
    # A resample keeps a component, zeroes it or draws a new one: on both sides about half change.
    changed = lambda post: (np.abs(post - ours["pre_command"]) > 0)[mask & due].mean()  # noqa: E731
    assert 0.2 < changed(ours["mjvec_post_command"]) < 0.8 and 0.2 < changed(theirs["info_command"]) < 0.8


# ---- sampling, in distribution --------------------------------------------------------------
def _mjvec_resets() -> dict[str, np.ndarray]:
    """SAMPLES reset draws of mjvec's env (Playground's config, noise on): 1,024 envs x 4 seeds."""
    env = gym.make_vec(ENV_ID, num_envs=SAMPLES // 4, array_backend="numpy")
    base, rows = env.unwrapped, []
    home = base.indices.home_qpos
    for seed in range(4):
        env.reset(seed=seed)
        qpos, push = base.backend.qpos, base.pushes
        rows.append({
            "command": base.commands.command.copy(), "steps_until_next_cmd": base.commands.steps_left.copy(),
            "steps_until_next_pert": push.steps_until_next.copy(), "pert_duration": push.duration_steps.copy(),
            "pert_duration_seconds": push.duration_s.copy(), "pert_mag": push.magnitude.copy(),
            "xy": qpos[:, :2] - home[:2], "yaw": 2 * np.arctan2(qpos[:, 6], qpos[:, 3]),
            "base_vel": base.backend.qvel[:, :6].copy(), "noise": base.shown.noise.copy(),
        })
    env.close()
    return {k: np.concatenate([r[k] for r in rows]) for k in rows[0]}


def _playground_resets(samples: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    q = samples["qpos"]
    return {**{k: samples[k] for k in ("command", "steps_until_next_cmd", "steps_until_next_pert", "pert_duration",
                                       "pert_duration_seconds", "pert_mag", "noise")},
            "xy": q[:, :2],  # the home keyframe's x, y are 0
            "yaw": 2 * np.arctan2(q[:, 6], q[:, 3]), "base_vel": samples["qvel"][:, :6]}


def _components(values: np.ndarray) -> list[np.ndarray]:
    values = values.reshape(values.shape[0], -1)
    return [values[:, j] for j in range(values.shape[1])]


def _rejected(ours: np.ndarray, theirs: np.ndarray) -> list[int]:
    """The components whose two-sample KS test rejects equality at level ALPHA. Both sides are
    compared on float32's grid (Playground draws in float32): a kept command component is then the
    same atom on both sides."""
    ours, theirs = ours.astype(np.float32), theirs.astype(np.float32)
    crit = ks_critical(ours.shape[0], theirs.shape[0], ALPHA)
    return [j for j, (a, b) in enumerate(zip(_components(ours), _components(theirs), strict=True))
            if ks_statistic(a, b) > crit]


@pytest.fixture(scope="module")
def resets(oracle) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    return _mjvec_resets(), _playground_resets(oracle["samples"])


@pytest.mark.parametrize("name", ["command", "steps_until_next_cmd", "steps_until_next_pert", "pert_duration",
                                  "pert_duration_seconds", "pert_mag", "xy", "yaw", "base_vel", "noise"])
def test_reset_draws_match_playgrounds_in_distribution(resets, name: str) -> None:
    ours, theirs = resets
    assert ours[name].shape[1:] == theirs[name].shape[1:]
    assert _rejected(ours[name], theirs[name]) == []


def test_the_distribution_test_rejects_a_ten_percent_range_error(resets) -> None:
    ours, theirs = resets
    assert _rejected(ours["command"] * 1.1, theirs["command"]) == [0, 1, 2]
    assert _rejected(ours["noise"][:, 3:6] * 1.1, theirs["noise"][:, 3:6]) == [0, 1, 2]


def _mjvec_resamples(cfg: CommandConfig, x: np.ndarray) -> np.ndarray:
    """SAMPLES resamples of command x by `CommandState.advance` (every timer at 1: all run out)."""
    zeros = lambda tail, dtype: np.zeros((SAMPLES, *tail), dtype)  # noqa: E731
    state = CommandState.create(cfg, 0.02, zeros, np.float64, np.int64)
    state.command[:] = x
    state.steps_left[:] = 1
    rng = EnvRandom(np.arange(SAMPLES), 7)
    resampled = state.advance(rng, np.ones(SAMPLES, bool), np.zeros(SAMPLES, bool))
    assert resampled.all() and Rows.all(SAMPLES).size == SAMPLES
    return state.command


def test_resampled_commands_match_playgrounds_in_distribution(oracle) -> None:
    x = np.array([1.0, -0.5, 0.7])
    theirs = oracle["samples"]["resampled"]
    ours = _mjvec_resamples(CommandConfig(), x)
    assert _rejected(ours, theirs) == []
    for j in range(3):  # the atoms: kept (x) and zeroed components, each side's share within 3 %
        for value in (x[j], 0.0):
            assert abs(np.mean(ours[:, j] == value) - np.mean(np.isclose(theirs[:, j], value, atol=0))) < 0.03
    swapped = dataclasses.replace(CommandConfig(), keep_probability=(0.25, 0.9, 0.5))
    assert _rejected(_mjvec_resamples(swapped, x), theirs)[:2] == [0, 1]


# ---- trajectories: the same mujoco-warp physics on both sides ---------------------------------
TRAJ_ENVS, TRAJ_STEPS, TRAJ_AGREE = 8, 60, 20


def _adopt_start(env, start: dict[str, np.ndarray]) -> None:
    """Put every env of `env` in Playground's start state (its reset), command included; no resample."""
    base = env.unwrapped
    put = base.asarray
    mask = base.all_rows.selector()
    qpos, qvel = (put(start[k], base.backend.qpos.dtype) for k in ("start_qpos", "start_qvel"))
    base.backend.reset(mask, qpos, qvel, ctrl=qpos[:, 7:])
    base.commands.command[...] = put(start["start_command"], base.commands.command.dtype)
    base.shown.command[...] = base.commands.command
    base.commands.steps_left[...] = 10**6


@pytest.mark.slow
@pytest.mark.device
def test_warp_trajectories_from_the_same_start_agree_with_playgrounds_warp(tmp_path, warp_device: str) -> None:
    """Playground (impl="warp": MJX's own copy of mujoco-warp, through JAX) and mjvec's Warp backend
    run the same scene from Playground's reset states with the same actions (noise off). Measured (8
    envs, 20 steps): qpos within 5.6e-6 rad, the policy observation within 3.5e-4, the privileged
    state within 9.6e-4 (its accelerometer), the reward within 2.3e-7; by step 40 the envs have
    parted (one unconverged solver iteration per step amplifies float32 differences at contact
    changes; MJX vendors a mujoco-warp copy that is not mujoco-warp 4.0.0 line for line). Asserted:
    the first TRAJ_AGREE steps, with the same terminations there."""
    actions = np.random.default_rng(1).uniform(-1, 1, (TRAJ_STEPS, TRAJ_ENVS, 12)) * 0.5
    np.savez(tmp_path / "in.npz", seed=2, action=actions)
    run_driver([{"job": "trajectory", "inputs": str(tmp_path / "in.npz"), "outputs": str(tmp_path / "out.npz"),
                 "overrides": {"noise_config.level": 0.0}}], tmp_path, timeout=1800)
    theirs = dict(np.load(tmp_path / "out.npz"))
    env = gym.make_vec(ENV_ID, num_envs=TRAJ_ENVS, backend="warp", device=warp_device, obs_mode="asymmetric",
                       config=Go1JoystickConfig(noise_level=0.0), array_backend="numpy")
    env.reset(seed=0)
    _adopt_start(env, theirs)
    worst = {"qpos": 0.0, "obs": 0.0, "privileged": 0.0, "reward": 0.0}
    for t in range(TRAJ_AGREE):
        obs, reward, term, _, _ = env.step(actions[t])
        qpos = np.asarray(env.unwrapped.backend.qpos.cpu())
        np.testing.assert_array_equal(term, theirs["done"][t] > 0)
        for key, ours, other in (("qpos", qpos, theirs["qpos"][t]), ("obs", obs["policy"], theirs["obs"][t]),
                                 ("privileged", obs["critic"], theirs["privileged"][t]),
                                 ("reward", reward, theirs["reward"][t])):
            worst[key] = max(worst[key], float(np.abs(ours - other).max()))
    env.close()
    assert worst["qpos"] < 5e-5 and worst["obs"] < 3e-3 and worst["privileged"] < 1e-2 and worst["reward"] < 1e-5, worst
