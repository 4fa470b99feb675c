"""playground/Go1Joystick{Flat,Rough}Terrain-v0 against EnvPool 1.2.5's C++ port of the same
Playground tasks (``MuJoCoPlayground/Go1Joystick{Flat,Rough}Terrain-v1``, MuJoCo 3.6.0 inside),
run in its own environment (scripts/setup_envpool.sh) by tests/envpool_driver.py. Skipped, saying
how to make that environment, when it is missing.

What is compared, as far as EnvPool's interface allows:
- The constants, exactly: EnvPool's spec config (every constant its port reads) against mjvec's
  `Go1JoystickConfig`: ctrl_dt, sim_dt, Kp, Kd, action scale, soft joint-limit factor, noise level
  and the five noise scales, the 16 reward weights, the tracking sigma, the maximum foot height, the
  command amplitudes and keep probabilities, and the episode length (its ``max_episode_steps``).
- The interface: observation widths (state 48 = mjvec's policy layout, privileged state 123 = its
  critic layout), the action box [-1, 1]^12, and the reward-term names (EnvPool's ``reward_*`` infos
  = mjvec's ``info["reward_terms"]`` keys; both weighted: EnvPool's sum x ctrl_dt is its reward).
- Distributions, with a two-sample Kolmogorov-Smirnov test per column at level `ALPHA` = 1e-6
  (tests/envpool_compare.py; 1e-3 over the about 1,000 columns compared, Bonferroni; critical
  distance 0.060; fixed seeds on both sides, so the verdict is deterministic; the asymptotic
  critical value is conservative for the atoms some columns have; measured: at most 0.039 on either
  task): 4,096 reset observations and privileged states per side (EnvPool: 16 envs x 256 resets;
  mjvec: 4,096 envs), the reset commands and command timers,
  and the first step from a reset under two constant actions (zero, and 0.5 on every joint: the
  actuator forces then show the action scale and Kp), its observation, privileged state, reward and
  each weighted reward term. A column constant on both sides (the last action and kick blocks, the
  clean gravity at a yaw-only reset) is compared as a value instead, within float32 round-off. The
  test's power is checked too: it rejects mjvec with the joint-velocity noise scale or the command
  amplitudes 20 % off (a KS distance of 0.083 between the uniforms).
- The episode end: from a reset under zero actions (16 envs, 1,001 steps), every env that does not
  fall is truncated at exactly the episode length on both sides, and every fall ends it earlier.

What is not compared, and why: states step for step. EnvPool cannot be given a state (no set-state
call; its reset draws from its own per-env streams, seeded by the pool), its random numbers are not
mjvec's, and its physics is MuJoCo 3.6.0, not mjvec's 4.0.0, so even from one state the two would
part within steps (the Go1's one-iteration contact solve, docs/go1_joystick.md). Randomization
("paper") and kicks are not compared: EnvPool's port exposes neither (its config has no push or
domain-randomization fields), so both run bare. Playground's own code, which can be given a state,
is the state-for-state oracle (tests/test_go1_playground.py).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import mjvec  # noqa: F401  (registers the tasks)
from mjvec.contract import layout_size
from mjvec.tasks.go1_joystick import ENV_ID, Go1JoystickConfig
from mjvec.tasks.go1_joystick.config import NoiseScales
from mjvec.tasks.go1_joystick.observations import CRITIC_LAYOUT, POLICY_LAYOUT
from mjvec.tasks.go1_joystick.registration import ROUGH_ENV_ID
from mjvec.tasks.go1_joystick.terms import REWARD_TERMS
from mjvec.tasks.locomotion import CommandConfig
from tests import envpool_compare
from tests.envpool_compare import POOL_KEYS, column_names, envpool_config, episode_ends, rejected, requires_envpool

pytestmark = requires_envpool

TASKS = {ENV_ID: "MuJoCoPlayground/Go1JoystickFlatTerrain-v1",
         ROUGH_ENV_ID: "MuJoCoPlayground/Go1JoystickRoughTerrain-v1"}
POOL_ENVS, ROUNDS, HORIZON, END_ENVS = 16, 256, 1001, 16
SAMPLES = POOL_ENVS * ROUNDS
ACTIONS = {"zero": [0.0] * 12, "half": [0.5] * 12}


def _column_names() -> tuple[list[str], list[str]]:
    return column_names(POLICY_LAYOUT), column_names(CRITIC_LAYOUT)


def run_envpool(task: str, folder: Path) -> dict[str, np.ndarray]:
    """EnvPool's side (tests/envpool_driver.py in .venv-envpool): see the driver's docstring."""
    return envpool_compare.run_envpool({"task": task, "num_envs": POOL_ENVS, "rounds": ROUNDS, "seed": 7,
                                        "actions": ACTIONS, "horizon": HORIZON,
                                        "reset_infos": ["command", "steps_until_next_cmd"]}, folder)


def _commands(env, info: dict) -> dict[str, np.ndarray]:
    return {"reset_command": info["command"], "reset_steps_until_next_cmd": np.array(env.unwrapped.commands.steps_left)}


def run_mjvec(env_id: str, config: Go1JoystickConfig | None = None, *, steps: bool = True) -> dict[str, np.ndarray]:
    """mjvec's side, under the driver's names: SAMPLES resets (seed 7), then per constant action a
    reset (seed 8, 9, ...) and one step; the episode ends of END_ENVS envs under zero actions."""
    out = envpool_compare.run_mjvec(env_id, SAMPLES, ACTIONS, steps=steps, reset_extra=_commands,
                                    obs_mode="asymmetric", config=config)
    if steps:
        out["episode_end"], out["episode_truncated"] = episode_ends(env_id, END_ENVS, HORIZON)
    return out


@pytest.fixture(scope="module", params=list(TASKS))
def sides(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
          ) -> tuple[str, dict[str, np.ndarray], dict[str, np.ndarray]]:
    """(mjvec's id, mjvec's side, EnvPool's side) of one task."""
    folder = tmp_path_factory.mktemp("envpool")
    return request.param, run_mjvec(request.param), run_envpool(TASKS[request.param], folder)


@pytest.mark.parametrize("task", list(TASKS.values()))
def test_envpools_constants_equal_mjvecs_config(task: str) -> None:
    theirs = envpool_config(task)
    cfg, noise = Go1JoystickConfig(), NoiseScales()
    ours = {"ctrl_dt": cfg.ctrl_dt, "sim_dt": cfg.sim_dt, "kp": cfg.Kp, "kd": cfg.Kd, "action_scale": cfg.action_scale,
            "soft_joint_pos_limit_factor": cfg.soft_joint_pos_limit_factor, "noise_level": cfg.noise_level,
            "tracking_sigma": cfg.tracking_sigma, "max_foot_height": cfg.max_foot_height,
            "max_episode_steps": cfg.episode_length}
    ours |= {f"noise_{f.name}": getattr(noise, f.name) for f in dataclasses.fields(noise)}
    ours |= {f"{name}_scale": weight for name, weight in cfg.reward_scales.as_dict().items()}
    ours |= {f"command_a{i}": a for i, a in enumerate(cfg.commands.amplitude)}
    ours |= {f"command_b{i}": b for i, b in enumerate(cfg.commands.keep_probability)}
    assert {k: theirs.get(k) for k in ours} == ours
    # Every constant of EnvPool's port is one of those (nothing left unchecked but the pool's own settings).
    assert set(theirs) - POOL_KEYS == set(ours)


def test_interface_layouts_and_reward_terms_equal_envpools(sides) -> None:
    env_id, ours, theirs = sides
    assert list(theirs["obs_shapes"]) == [layout_size(POLICY_LAYOUT), layout_size(CRITIC_LAYOUT)]
    np.testing.assert_array_equal(theirs["action_low"], -np.ones(12))
    np.testing.assert_array_equal(theirs["action_high"], np.ones(12))
    env = gym.make_vec(env_id, num_envs=1)
    assert (env.single_action_space.low == -1).all() and (env.single_action_space.high == 1).all()
    env.close()
    assert int(theirs["max_episode_steps"]) == Go1JoystickConfig().episode_length
    assert sorted(theirs["reward_names"]) == sorted(ours["zero_terms"]) == sorted(REWARD_TERMS)


def test_reset_observations_match_envpools_in_distribution(sides) -> None:
    _, ours, theirs = sides
    policy, critic = _column_names()
    bad = rejected(ours["reset_state"], theirs["reset_state"], policy)
    bad += rejected(ours["reset_privileged"], theirs["reset_privileged"], critic)
    assert not bad, "\n".join(bad)


def test_reset_commands_and_timers_match_envpools_in_distribution(sides) -> None:
    _, ours, theirs = sides
    bad = rejected(ours["reset_command"], theirs["reset_command"], ["lin_x", "lin_y", "yaw_rate"])
    bad += rejected(ours["reset_steps_until_next_cmd"], theirs["reset_steps_until_next_cmd"], ["steps_until_next_cmd"])
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("action", list(ACTIONS))
def test_first_step_matches_envpools_in_distribution(sides, action: str) -> None:
    _, ours, theirs = sides
    policy, critic = _column_names()
    bad = rejected(ours[f"{action}_state"], theirs[f"{action}_state"], policy)
    bad += rejected(ours[f"{action}_privileged"], theirs[f"{action}_privileged"], critic)
    bad += rejected(ours[f"{action}_reward"], theirs[f"{action}_reward"], ["reward"])
    for term in REWARD_TERMS:
        bad += rejected(ours[f"{action}_reward_{term}"], theirs[f"{action}_reward_{term}"], [term])
    assert not bad, "\n".join(bad)


def test_an_env_that_does_not_fall_is_truncated_at_the_episode_length_on_both_sides(sides) -> None:
    _, ours, theirs = sides
    length = Go1JoystickConfig().episode_length
    for side in (ours, theirs):
        standing = side["episode_truncated"]
        assert standing.any(), side["episode_end"]  # some stand (the rough drop topples many)
        assert (side["episode_end"][standing] == length).all(), side["episode_end"]
        assert (side["episode_end"][~standing] < length).all(), side["episode_end"]


def test_the_distribution_test_rejects_a_twenty_percent_scale_error(sides) -> None:
    env_id, _, theirs = sides
    policy, _ = _column_names()
    noisy = run_mjvec(env_id, Go1JoystickConfig(noise_scales=NoiseScales(joint_vel=1.8)), steps=False)
    assert {n.split(":")[0] for n in rejected(noisy["reset_state"], theirs["reset_state"], policy)} >= {
        f"joint_vel[{i}]" for i in range(12)}
    wide = run_mjvec(env_id, Go1JoystickConfig(commands=CommandConfig(amplitude=(1.8, 0.96, 1.44))), steps=False)
    assert len(rejected(wide["reset_command"], theirs["reset_command"], ["lin_x", "lin_y", "yaw_rate"])) == 3
