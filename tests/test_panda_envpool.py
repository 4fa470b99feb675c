"""playground/PandaPickCube-v0 and playground/PandaPickCubeOrientation-v0 against EnvPool 1.2.5's
C++ port of the same Playground tasks (``MuJoCoPlayground/PandaPickCube{,Orientation}-v1``,
MuJoCo 3.6.0 inside), run in its own environment (scripts/setup_envpool.sh) by
tests/envpool_driver.py. Skipped, saying how to make that environment, when it is missing. The
shared machinery (and the KS test's level) is tests/envpool_compare.py.

What is compared, as far as EnvPool's interface allows:
- The constants, exactly: EnvPool's spec config against `PandaPickCubeConfig`: ctrl_dt, sim_dt,
  action scale, the four reward weights, the episode length. EnvPool's config has nine more
  entries with no counterpart, and why is `NO_COUNTERPART`: its spec is shared by its four Panda
  tasks (PandaPickCube, PandaPickCubeOrientation, PandaPickCubeCartesian, PandaOpenCabinet), and
  its source reads those nine only in the Cartesian task's step and reset and the cabinet task's
  reward, or (no_box_collision_scale) nowhere; their ``reward_*`` infos are zero here (tested). The
  reset ranges, the reach distance, the workspace bound and the orientation task's largest target
  angle are not in EnvPool's config (its port writes them inline): they are compared through the
  distributions below.
- The interface: observation width (state 66 = mjvec's layout; neither side has a privileged
  state), the action box [-1, 1]^8, the episode length, and the reward: EnvPool's four ``reward_*``
  infos of this task = mjvec's ``info["reward_terms"]``; EnvPool's are unweighted and mjvec's
  weighted, so EnvPool's times its weight is compared; on both sides the reward is the weighted
  sum (clipped to +-1e4), within float32.
- Distributions, with a two-sample Kolmogorov-Smirnov test per column at 1e-6 (critical distance
  0.060): 4,096 reset observations per side (EnvPool: 16 envs x 256 resets; mjvec: 4,096 envs) and
  the first step from a reset under two constant actions (zero, and 0.5 on every actuator): its
  observation, reward and each weighted reward term. Measured: largest distance 0.026 / 0.024
  (resets, PandaPickCube / Orientation) and 0.022 / 0.029 (first steps); none rejected; mean
  zero-action reward 0.71675 (mjvec) vs 0.71666 (EnvPool). EnvPool's observations are rounded to
  float32 first, as mjvec's are (`envpool_compare.as_observed`; it changes nothing here, it does
  for LeapCubeReorient). The test's power: it rejects mjvec with the box's x-y reset range 20 %
  wider (distance 0.088-0.090 in the box's x and y and the gripper-to-box offset), the target's
  height range 20 % wider (0.164) and, for the orientation task, the largest target angle 20 %
  larger (0.112-0.124 in two box_rot_err entries).
- Value for value, where the draws do not reach: the box is out of the arm's reach at every reset,
  so the arm's first step is the same in every env on both sides (35 columns: its joint angles and
  velocities, the gripper's position and frame, the control errors) and is compared as values:
  MuJoCo 4.0 (mjvec) and 3.6 (EnvPool) agree within float32 rounding (`ARM_RTOL`, `ARM_ATOL`;
  measured 4.7e-10 absolute, 2.8e-7 relative: one or a few float32 ulps) and the robot_target_qpos
  term (float64 on both sides) within 1e-9 (measured 7e-13).
- The episode end: from a reset under zero actions (16 envs, 151 steps) the box stays, and every
  env is truncated at exactly the episode length (150) on both sides.

What is not compared, and why: states step for step (EnvPool cannot be given a state, its random
numbers are its own, its MuJoCo is 3.6.0). Neither side has randomization for these tasks
(Playground registers none). Playground's own code is the state-for-state oracle
(tests/test_panda_playground.py).
"""

from __future__ import annotations

import dataclasses
import json

import gymnasium as gym
import numpy as np
import pytest

import mjvec  # noqa: F401  (registers the tasks)
from mjvec.contract import layout_size
from mjvec.tasks.panda_pick_cube import ENV_ID, ORIENTATION_ENV_ID, PandaPickCubeConfig
from mjvec.tasks.panda_pick_cube.indices import NUM_ACTUATORS
from mjvec.tasks.panda_pick_cube.terms import MAX_REWARD, POLICY_LAYOUT, REWARD_TERMS
from tests import envpool_compare as ec

pytestmark = ec.requires_envpool

TASKS = {ENV_ID: "MuJoCoPlayground/PandaPickCube-v1",
         ORIENTATION_ENV_ID: "MuJoCoPlayground/PandaPickCubeOrientation-v1"}
CONFIGS = {ENV_ID: PandaPickCubeConfig(), ORIENTATION_ENV_ID: PandaPickCubeConfig(sample_orientation=True)}
POOL_ENVS, ROUNDS, END_ENVS = 16, 256, 16
SAMPLES = POOL_ENVS * ROUNDS
HORIZON = PandaPickCubeConfig().episode_length + 1
ACTIONS = {"zero": [0.0] * NUM_ACTUATORS, "half": [0.5] * NUM_ACTUATORS}
OTHER_TERMS = ("no_box_collision", "no_barrier_collision", "lifted", "success")  # the other Panda tasks' infos
NO_COUNTERPART = {
    "no_box_collision_scale": "read by none of the four tasks",
    "no_barrier_collision_scale": "PandaOpenCabinet's reward weight",
    **{name: "PandaPickCubeCartesian's" for name in ("action_rate", "no_soln_reward", "lifted_reward", "success_reward",
                                                    "success_threshold", "box_init_range", "guide_sample_prob")},
}
NAMES = ec.column_names(POLICY_LAYOUT)
BOX_QPOS = 9  # the box's free joint after the arm's 7 joints and the 2 fingers
REWARD_RTOL = 1e-6  # EnvPool's reward is float32
ARM_RTOL, ARM_ATOL = 1e-6, 1e-9  # float32 resolution: an ulp is 6e-8 to 1.2e-7 of the value
ARM_BLOCKS = ("gripper_pos", "gripper_mat", "ctrl_err")  # with the arm's and fingers' qpos and qvel


@pytest.fixture(scope="module", params=list(TASKS))
def sides(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
          ) -> tuple[str, dict[str, np.ndarray], dict[str, np.ndarray]]:
    """(mjvec's id, mjvec's side, EnvPool's side with its observations rounded to float32)."""
    env_id = request.param
    ours = ec.run_mjvec(env_id, SAMPLES, ACTIONS)
    ours["episode_end"], ours["episode_truncated"] = ec.episode_ends(env_id, END_ENVS, HORIZON)
    job = {"task": TASKS[env_id], "num_envs": POOL_ENVS, "rounds": ROUNDS, "seed": 7, "actions": ACTIONS,
           "horizon": HORIZON}
    return env_id, ours, ec.as_observed(ec.run_envpool(job, tmp_path_factory.mktemp("envpool")))


@pytest.mark.parametrize("task", list(TASKS.values()))
def test_envpools_constants_equal_mjvecs_config(task: str) -> None:
    theirs, cfg = ec.envpool_config(task), PandaPickCubeConfig()
    ours = {"max_episode_steps": cfg.episode_length, "ctrl_dt": cfg.ctrl_dt, "sim_dt": cfg.sim_dt,
            "action_scale": cfg.action_scale}
    ours |= {f"{name}_scale": weight for name, weight in cfg.reward_scales.as_dict().items()}
    assert {k: theirs.get(k) for k in ours} == ours
    assert set(theirs) - ec.POOL_KEYS - set(ours) == set(NO_COUNTERPART)


def _weights(theirs: dict[str, np.ndarray]) -> dict[str, float]:
    config = json.loads(str(theirs["config"]))
    return {term: config[f"{term}_scale"] for term in REWARD_TERMS}


def test_interface_layouts_and_reward_terms_equal_envpools(sides) -> None:
    env_id, ours, theirs = sides
    assert list(theirs["obs_shapes"]) == [layout_size(POLICY_LAYOUT)]
    assert not any(k.endswith("_privileged") for k in theirs)
    np.testing.assert_array_equal(theirs["action_low"], -np.ones(NUM_ACTUATORS))
    np.testing.assert_array_equal(theirs["action_high"], np.ones(NUM_ACTUATORS))
    env = gym.make_vec(env_id, num_envs=1)
    assert env.single_action_space.shape == (NUM_ACTUATORS,)
    assert (env.single_action_space.low == -1).all() and (env.single_action_space.high == 1).all()
    assert env.single_observation_space.shape == (layout_size(POLICY_LAYOUT),)
    env.close()
    assert int(theirs["max_episode_steps"]) == CONFIGS[env_id].episode_length
    assert sorted(ours["zero_terms"]) == sorted(REWARD_TERMS)
    assert sorted(theirs["reward_names"]) == sorted({*REWARD_TERMS, *OTHER_TERMS})


@pytest.mark.parametrize("action", list(ACTIONS))
def test_the_reward_is_the_same_sum_of_the_same_terms_on_both_sides(sides, action: str) -> None:
    _, ours, theirs = sides
    for term in OTHER_TERMS:
        assert not theirs[f"{action}_reward_{term}"].any(), term
    weights = _weights(theirs)
    theirs_total = sum(weights[t] * theirs[f"{action}_reward_{t}"] for t in REWARD_TERMS)
    ours_total = sum(ours[f"{action}_reward_{t}"] for t in REWARD_TERMS)
    for reward, total in ((ours[f"{action}_reward"], ours_total), (theirs[f"{action}_reward"], theirs_total)):
        np.testing.assert_allclose(reward, np.clip(total, -MAX_REWARD, MAX_REWARD), rtol=REWARD_RTOL, atol=1e-6)


def test_reset_observations_match_envpools_in_distribution(sides) -> None:
    _, ours, theirs = sides
    bad = ec.rejected(ours["reset_state"], theirs["reset_state"], NAMES)
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("action", list(ACTIONS))
def test_first_step_matches_envpools_in_distribution(sides, action: str) -> None:
    _, ours, theirs = sides
    weights = _weights(theirs)
    bad = ec.rejected(ours[f"{action}_state"], theirs[f"{action}_state"], NAMES)
    bad += ec.rejected(ours[f"{action}_reward"], theirs[f"{action}_reward"], ["reward"])
    for term in REWARD_TERMS:
        bad += ec.rejected(ours[f"{action}_reward_{term}"], weights[term] * theirs[f"{action}_reward_{term}"], [term])
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("action", list(ACTIONS))
def test_the_arms_first_step_equals_envpools_value_for_value(sides, action: str) -> None:
    _, ours, theirs = sides
    arm = [j for j, name in enumerate(NAMES) if name.split("[")[0] in ARM_BLOCKS
           or (name.split("[")[0] in ("qpos", "qvel") and int(name.split("[")[1][:-1]) < BOX_QPOS)]
    a, b = ours[f"{action}_state"][:, arm], theirs[f"{action}_state"][:, arm]
    assert len(arm) == 35 and np.ptp(a, axis=0).max() == 0 and np.ptp(b, axis=0).max() == 0
    np.testing.assert_allclose(a[0], b[0], rtol=ARM_RTOL, atol=ARM_ATOL)
    term = f"{action}_reward_robot_target_qpos"
    np.testing.assert_allclose(ours[term], _weights(theirs)["robot_target_qpos"] * theirs[term], rtol=0, atol=1e-9)


def test_every_env_is_truncated_at_the_episode_length_on_both_sides(sides) -> None:
    env_id, *both = sides
    for side in both:
        assert side["episode_truncated"].all(), side["episode_end"]
        assert (side["episode_end"] == CONFIGS[env_id].episode_length).all(), side["episode_end"]


def _columns(env_id: str, theirs: dict[str, np.ndarray], **changes) -> set[str]:
    """The reset columns rejected against EnvPool's for mjvec with `changes` to the task's config."""
    wrong = ec.run_mjvec(env_id, SAMPLES, ACTIONS, steps=False, config=dataclasses.replace(CONFIGS[env_id], **changes))
    return {n.split(":")[0] for n in ec.rejected(wrong["reset_state"], theirs["reset_state"], NAMES)}


def test_the_distribution_test_rejects_a_twenty_percent_range_error(sides) -> None:
    env_id, _, theirs = sides
    cfg = CONFIGS[env_id]
    assert _columns(env_id, theirs, box_xy_range=1.2 * cfg.box_xy_range) >= {
        f"qpos[{BOX_QPOS}]", f"qpos[{BOX_QPOS + 1}]"}
    low, high = cfg.target_z_range
    assert "box_to_target[2]" in _columns(env_id, theirs, target_z_range=(low, low + 1.2 * (high - low)))
    if cfg.sample_orientation:
        assert any(n.startswith("box_rot_err") for n in _columns(env_id, theirs,
                                                                 max_target_angle=1.2 * cfg.max_target_angle))
