"""playground/LeapCubeReorient-v0 against EnvPool 1.2.5's C++ port of the same Playground task
(``MuJoCoPlayground/LeapCubeReorient-v1``, MuJoCo 3.6.0 inside), run in its own environment
(scripts/setup_envpool.sh) by tests/envpool_driver.py. Skipped, saying how to make that
environment, when it is missing. The shared machinery (and the KS test's level) is
tests/envpool_compare.py.

What is compared, as far as EnvPool's interface allows:
- The constants, exactly: EnvPool's spec config against `LeapCubeReorientConfig`: ctrl_dt, sim_dt,
  action scale, EMA alpha, history length, noise level and the three noise scales, the random-pose
  injection probability, the success threshold and reward, pert_enable (off on both), the seven
  reward weights, the episode length. EnvPool's config has ten more entries with no counterpart,
  and why is `NO_COUNTERPART`: its spec is shared by its three hand tasks (LeapCubeReorient,
  LeapCubeRotateZAxis, AeroCubeRotateZAxis), and those ten belong to the other two (their source
  reads them only in the rotate step and the Aero hand's observation and control). Four of them
  are LeapCubeRotateZAxis's reward weights, zero in this task's config, and their ``reward_*``
  infos are zero here (tested).
  The reset ranges and the goal's spin are not in EnvPool's config (its port writes them inline):
  they are compared through the distributions below (the hand-pose spread and the cube's start
  jitter show in the reset draws).
- The interface: observation widths (state 57 = mjvec's policy layout, privileged state 128 = its
  critic layout, block for block), the action box [-1, 1]^16, the episode length, and the reward:
  EnvPool's seven ``reward_*`` infos of this task = mjvec's ``info["reward_terms"]``, both weighted;
  on both sides the reward is their sum x ctrl_dt + success_reward x success (EnvPool's
  ``reward_success`` is the success flag, mjvec's ``info["success"]``), within float32.
- Distributions, with a two-sample Kolmogorov-Smirnov test per column at 1e-6 (critical distance
  0.060): 4,096 reset observations and privileged states per side (EnvPool: 16 envs x 256 resets;
  mjvec: 4,096 envs), and the first step from a reset under two constant actions (zero, and 0.5 on
  every joint): its observation, privileged state (joint velocities, fingertips, the cube's
  velocities), reward, each weighted reward term (KS) and the success flag (rare: an exact test of
  the two counts, `envpool_compare.count_rejected`). Measured: largest distance 0.040 (resets) and
  0.042 (first steps); none rejected; successes at the first step 1 (mjvec, zero action) and 0 of
  4,096, which is the whole difference of the mean zero-action rewards, 0.150 vs 0.126 (a success
  pays 100; medians 0.1184 vs 0.1190). EnvPool's observations are rounded to float32 first, as
  mjvec's are (`envpool_compare.as_observed`): after the zero-action step 8-10 % of the cubes are
  still in free fall, all at the same velocity -9.81 x 0.04 m/s, and that atom lands on two
  neighbouring numbers in float32 and float64; unrounded, the cube's z velocity is rejected at
  distance 0.077 (the atom's mass). That is not MuJoCo 3.6 against 4.0: stepping the same 4,096
  reset states with plain mj_step under both versions gives distributions 0.008 apart in that
  column. The test's power: it rejects mjvec with the joint-angle noise scale 20 % larger
  (distance 0.082-0.093 in all 16 joint errors, which at a reset are the noise alone) or the
  cube's start jitter 20 % larger (0.084-0.090 in the palm-to-cube offset).
- The episode end: from a reset under zero actions (16 envs, 1,001 steps), every env whose cube
  stays in the hand is truncated at exactly the episode length on both sides, and every fall ends
  it earlier.

What is not compared, and why: states step for step (EnvPool cannot be given a state, its random
numbers are its own, its MuJoCo is 3.6.0), randomization ("paper") and perturbations (EnvPool's
port has neither: its config has no randomization field, and its ``pert_enable`` only decides
whether the cube's applied wrench is cleared; nothing pushes it), and the goal's spin after a
success (its constants are not in EnvPool's config, and a success is too rare in a first step to
show them). Playground's own code is the state-for-state oracle (tests/test_leap_playground.py).
"""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import numpy as np
import pytest

import mjvec  # noqa: F401  (registers the task)
from mjvec.contract import layout_size
from mjvec.tasks.leap_cube_reorient import ENV_ID, LeapCubeReorientConfig, LeapNoiseScales
from mjvec.tasks.leap_cube_reorient.observations import critic_layout, policy_layout
from mjvec.tasks.leap_cube_reorient.terms import NUM_JOINTS, REWARD_TERMS
from tests.envpool_compare import (
    POOL_KEYS,
    as_observed,
    column_names,
    count_rejected,
    envpool_config,
    episode_ends,
    rejected,
    requires_envpool,
    run_envpool,
    run_mjvec,
)

pytestmark = requires_envpool

TASK = "MuJoCoPlayground/LeapCubeReorient-v1"
POOL_ENVS, ROUNDS, HORIZON, END_ENVS = 16, 256, 1001, 16
SAMPLES = POOL_ENVS * ROUNDS
ACTIONS = {"zero": [0.0] * NUM_JOINTS, "half": [0.5] * NUM_JOINTS}
ROTATE_TERMS = ("angvel", "linvel", "pose", "torques")  # LeapCubeRotateZAxis's reward terms
NO_COUNTERPART = {
    **{f"{term}_scale": "LeapCubeRotateZAxis's reward weight (0 here)" for term in ROTATE_TERMS},
    "noise_tendon_length": "AeroCubeRotateZAxis's tendon-length noise",
    **{f"aero_action_scale{i}": "AeroCubeRotateZAxis's per-actuator action scale" for i in range(7)},
}
REWARD_RTOL = 1e-6  # EnvPool's reward is float32


def _names() -> tuple[list[str], list[str]]:
    return column_names(policy_layout(1)), column_names(critic_layout(1))


@pytest.fixture(scope="module")
def sides(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """(mjvec's side, EnvPool's side, its observations rounded to float32)."""
    ours = run_mjvec(ENV_ID, SAMPLES, ACTIONS, step_infos=("success",), obs_mode="asymmetric")
    ours["episode_end"], ours["episode_truncated"] = episode_ends(ENV_ID, END_ENVS, HORIZON)
    job = {"task": TASK, "num_envs": POOL_ENVS, "rounds": ROUNDS, "seed": 7, "actions": ACTIONS, "horizon": HORIZON,
           "step_infos": ["success"]}
    return ours, as_observed(run_envpool(job, tmp_path_factory.mktemp("envpool")))


def test_envpools_constants_equal_mjvecs_config() -> None:
    theirs, cfg = envpool_config(TASK), LeapCubeReorientConfig()
    ours = {"max_episode_steps": cfg.episode_length, "pert_enable": float(cfg.pert_enable)}
    ours |= {name: getattr(cfg, name) for name in ("ctrl_dt", "sim_dt", "action_scale", "ema_alpha", "history_len",
                                                   "noise_level", "random_ori_injection_prob", "success_threshold",
                                                   "success_reward")}
    ours |= {f"noise_{f.name}": getattr(cfg.noise_scales, f.name) for f in dataclasses.fields(LeapNoiseScales)}
    ours |= {f"{name}_scale": weight for name, weight in cfg.reward_scales.as_dict().items()}
    assert {k: theirs.get(k) for k in ours} == ours
    # Every other constant of EnvPool's config is another hand task's; the rotate task's weights are zero here.
    assert set(theirs) - POOL_KEYS - set(ours) == set(NO_COUNTERPART)
    assert {theirs[f"{term}_scale"] for term in ROTATE_TERMS} == {0.0}


def test_interface_layouts_and_reward_terms_equal_envpools(sides) -> None:
    ours, theirs = sides
    assert list(theirs["obs_shapes"]) == [layout_size(policy_layout(1)), layout_size(critic_layout(1))]
    np.testing.assert_array_equal(theirs["action_low"], -np.ones(NUM_JOINTS))
    np.testing.assert_array_equal(theirs["action_high"], np.ones(NUM_JOINTS))
    env = gym.make_vec(ENV_ID, num_envs=1)
    assert env.single_action_space.shape == (NUM_JOINTS,)
    assert (env.single_action_space.low == -1).all() and (env.single_action_space.high == 1).all()
    env.close()
    assert int(theirs["max_episode_steps"]) == LeapCubeReorientConfig().episode_length
    assert sorted(ours["zero_terms"]) == sorted(REWARD_TERMS)
    assert sorted(theirs["reward_names"]) == sorted({*REWARD_TERMS, *ROTATE_TERMS, "success"})


@pytest.mark.parametrize("action", list(ACTIONS))
def test_the_reward_is_the_same_sum_of_the_same_terms_on_both_sides(sides, action: str) -> None:
    ours, theirs = sides
    cfg = LeapCubeReorientConfig()
    for term in ROTATE_TERMS:
        assert not theirs[f"{action}_reward_{term}"].any(), term
    for side, success in ((ours, ours[f"{action}_success"]), (theirs, theirs[f"{action}_reward_success"])):
        total = sum(side[f"{action}_reward_{term}"] for term in REWARD_TERMS) * cfg.ctrl_dt
        np.testing.assert_allclose(side[f"{action}_reward"], total + cfg.success_reward * success,
                                   rtol=REWARD_RTOL, atol=1e-6)


def test_reset_observations_match_envpools_in_distribution(sides) -> None:
    ours, theirs = sides
    policy, critic = _names()
    bad = rejected(ours["reset_state"], theirs["reset_state"], policy)
    bad += rejected(ours["reset_privileged"], theirs["reset_privileged"], critic)
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("action", list(ACTIONS))
def test_first_step_matches_envpools_in_distribution(sides, action: str) -> None:
    ours, theirs = sides
    policy, critic = _names()
    bad = rejected(ours[f"{action}_state"], theirs[f"{action}_state"], policy)
    bad += rejected(ours[f"{action}_privileged"], theirs[f"{action}_privileged"], critic)
    bad += rejected(ours[f"{action}_reward"], theirs[f"{action}_reward"], ["reward"])
    bad += count_rejected(ours[f"{action}_success"], theirs[f"{action}_reward_success"], "success")
    for term in REWARD_TERMS:
        bad += rejected(ours[f"{action}_reward_{term}"], theirs[f"{action}_reward_{term}"], [term])
    assert not bad, "\n".join(bad)


def test_an_env_whose_cube_stays_is_truncated_at_the_episode_length_on_both_sides(sides) -> None:
    length = LeapCubeReorientConfig().episode_length
    for side in sides:
        kept = side["episode_truncated"]
        assert kept.any(), side["episode_end"]
        assert (side["episode_end"][kept] == length).all(), side["episode_end"]
        assert ((side["episode_end"][~kept] > 0) & (side["episode_end"][~kept] < length)).all(), side["episode_end"]


def _reset_only(config: LeapCubeReorientConfig) -> dict[str, np.ndarray]:
    return run_mjvec(ENV_ID, SAMPLES, ACTIONS, steps=False, obs_mode="asymmetric", config=config)


def test_the_distribution_test_rejects_a_twenty_percent_scale_error(sides) -> None:
    _, theirs = sides
    policy, critic = _names()
    noisy = _reset_only(LeapCubeReorientConfig(noise_scales=LeapNoiseScales(joint_pos=0.06)))
    # At a reset the joint error is the noise alone (the targets are the drawn joint angles).
    assert {n.split(":")[0] for n in rejected(noisy["reset_state"], theirs["reset_state"], policy)} >= {
        f"joint_error_history[{i}]" for i in range(NUM_JOINTS)}
    jitter = _reset_only(LeapCubeReorientConfig(cube_start_jitter=0.012))
    assert {n.split(":")[0] for n in rejected(jitter["reset_privileged"], theirs["reset_privileged"], critic)} >= {
        f"clean_cube_pos_error[{i}]" for i in range(3)}

