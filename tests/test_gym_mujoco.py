"""Gymnasium's MuJoCo suite in mjvec (mjvec/Ant-v5, ...) against Gymnasium's own envs, bit for bit.

The oracle is `gym.make("<id>")` of the installed gymnasium on the same mujoco build, driven in
lockstep (`tests/gym_oracle.py`): same initial states, same float32 actions, autoresets, and every
observation, reward, terminated, truncated and info term compared as bytes.
"""

from __future__ import annotations

import warnings

import gymnasium as gym
import mujoco
import numpy as np
import pytest

import mjvec
from mjvec.assets.mjcf import load_spec
from mjvec.backends.base import Scene
from mjvec.backends.cpu import CpuBackend
from mjvec.errors import ConfigError, UnknownOptionError
from mjvec.randomization import EventTerm
from mjvec.tasks.gym_mujoco import ENV_IDS, TASKS
from mjvec.tasks.gym_mujoco.specs import xml_path
from tests.gym_oracle import bits, lockstep

pytestmark = pytest.mark.filterwarnings("ignore:.*settotalmass.*:UserWarning")
NAMES = tuple(TASKS)


def _assert_equal(run):
    assert not run.mismatches, "\n".join(run.mismatches)


@pytest.mark.parametrize("name", NAMES)
def test_each_task_steps_like_gymnasiums_own_env_bit_for_bit(name):
    # 50-step episodes: truncations as well as terminations, and autoresets after both.
    run = lockstep(name, num_envs=4, steps=120, seed=3, max_episode_steps=50, num_threads=2)
    _assert_equal(run)
    assert run.steps > 400 and run.resets >= 4 and run.truncations + run.terminations >= 4
    if TASKS[name].healthy is None:
        assert run.terminations == 0 and run.truncations == 8
    else:
        assert run.terminations > 0


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_16_envs_1000_steps_with_gymnasiums_time_limit_bit_for_bit(name):
    run = lockstep(name, num_envs=16, steps=1000, seed=0, num_threads=2)
    _assert_equal(run)
    assert run.steps > 15_000 and run.truncations + run.terminations > 0


@pytest.mark.parametrize(("name", "options"), [
    ("Ant-v5", {"exclude_current_positions_from_observation": False, "include_cfrc_ext_in_observation": False,
                "contact_cost_weight": 0.0, "main_body": "torso", "healthy_z_range": (0.3, 0.9), "frame_skip": 3}),
    ("Ant-v5", {"include_cfrc_ext_in_observation": False, "contact_force_range": (-0.5, 2.0),
                "terminate_when_unhealthy": False, "ctrl_cost_weight": 0.1, "healthy_reward": 2.0}),
    ("Ant-v5", {"contact_force_range": (0.2, 1.0), "reset_noise_scale": 0.0}),  # clip(0) != 0 at reset
    ("HalfCheetah-v5", {"forward_reward_weight": 2.0, "ctrl_cost_weight": 0.5, "frame_skip": 2,
                        "exclude_current_positions_from_observation": False}),
    ("Hopper-v5", {"healthy_state_range": (-50.0, 50.0), "healthy_z_range": (0.8, 3.0),
                   "healthy_angle_range": (-0.3, 0.3), "healthy_reward": -1.0, "reset_noise_scale": 0.02}),
    ("Walker2d-v5", {"xml_file": "walker2d.xml", "healthy_z_range": (0.9, 2.0), "terminate_when_unhealthy": False}),
    ("Humanoid-v5", {"include_cinert_in_observation": False, "include_cvel_in_observation": False,
                     "include_qfrc_actuator_in_observation": False, "contact_cost_range": (0.0, 1e-4),
                     "contact_cost_weight": 1e-6, "healthy_z_range": (0.9, 2.1)}),
    ("Humanoid-v5", {"include_cfrc_ext_in_observation": False, "contact_cost_weight": 0.0,
                     "exclude_current_positions_from_observation": False}),
])
def test_gymnasium_constructor_options_give_gymnasiums_env(name, options):
    run = lockstep(name, num_envs=3, steps=60, seed=1, max_episode_steps=40, **options)
    _assert_equal(run)
    assert run.steps > 100


@pytest.mark.parametrize("name", NAMES)
def test_locomotion_preset_equals_direct_model_edits_and_set_const(name):
    # Every episode the twin's MjModel gets its mjvec env's randomized values by a plain field edit
    # and mj_setConst: stepping equal bit for bit is the oracle of the batched writes and recompute.
    run = lockstep(name, num_envs=4, steps=80, seed=5, max_episode_steps=30, randomization="locomotion")
    _assert_equal(run)
    env = gym.make_vec(f"mjvec/{name}", num_envs=4, randomization="locomotion")
    env.reset(seed=0)
    backend = env.unwrapped.backend
    for field in ("body_mass", "geom_friction", "dof_armature", "actuator_gainprm", "gravity"):
        values, defaults = backend.field_values(field), backend.defaults(field)
        assert not np.array_equal(values, defaults), field  # the preset did randomize it
        assert not np.array_equal(values[0], values[1]), field  # per env
    env.close()


def test_a_single_mass_term_matches_a_direct_mjmodel_edit():
    torso = EventTerm("body_mass", 0.5, 2.0, targets=("torso",), mode="reset")
    run = lockstep("Humanoid-v5", num_envs=3, steps=60, seed=2, max_episode_steps=25, randomization=[torso])
    _assert_equal(run)


def test_reset_options_set_the_state_exactly_and_keep_the_streams():
    name = "Hopper-v5"
    env = gym.make_vec(f"mjvec/{name}", num_envs=3, autoreset_mode="disabled")
    twin = gym.make_vec(f"mjvec/{name}", num_envs=3, autoreset_mode="disabled")
    ref = gym.make(name)
    model = env.unwrapped.backend.model
    rng = np.random.default_rng(0)
    qpos = model.qpos0 + rng.uniform(-0.05, 0.05, (3, model.nq))
    qvel = rng.uniform(-0.3, 0.3, (3, model.nv))
    obs, info = env.reset(seed=4, options={"qpos": qpos, "qvel": qvel})
    twin.reset(seed=4)
    for i in range(3):
        ref.reset()
        ref.unwrapped.set_state(qpos[i], qvel[i])
        assert bits(obs[i]) == bits(ref.unwrapped._get_obs())
        z_distance = ref.unwrapped._get_reset_info()["z_distance_from_origin"]
        assert bits(info["z_distance_from_origin"][i]) == bits(z_distance)
    # A partial reset with one shared (nq,) state: only env 1 moves there.
    mask = np.array([False, True, False])
    before = env.unwrapped.backend.qpos.copy()
    env.reset(options={"reset_mask": mask, "qpos": model.qpos0, "qvel": np.zeros(model.nv)})
    twin.reset(options={"reset_mask": mask})
    assert np.array_equal(env.unwrapped.backend.qpos[1], model.qpos0)
    assert np.array_equal(env.unwrapped.backend.qpos[[0, 2]], before[[0, 2]])
    # The draws were made anyway: the next drawn reset is the same as in an env never given a state.
    env.reset(options={"reset_mask": np.ones(3, bool)})
    twin.reset(options={"reset_mask": np.ones(3, bool)})
    assert np.array_equal(env.unwrapped.backend.qpos, twin.unwrapped.backend.qpos)
    for e in (env, twin, ref):
        e.close()


def test_reset_state_errors_change_nothing():
    env = gym.make_vec("mjvec/HalfCheetah-v5", num_envs=2)
    env.reset(seed=0)
    qpos = env.unwrapped.backend.qpos.copy()
    with pytest.raises(ConfigError, match=r"reset option 'qpos' must have shape \(2, 9\) or \(9,\), got \(3, 9\)"):
        env.reset(options={"qpos": np.zeros((3, 9))})
    with pytest.raises(ConfigError, match="reset option 'qvel' must be finite"):
        env.reset(options={"qvel": np.full(9, np.nan)})
    with pytest.raises(ConfigError, match="reset option 'qpos' must be a float array"):
        env.reset(options={"qpos": {"a": 1}})
    with pytest.raises(ConfigError, match="unknown reset option"):
        env.reset(options={"qpos": np.zeros(9), "qacc": 1})
    assert np.array_equal(env.unwrapped.backend.qpos, qpos)
    env.close()


def test_ids_live_in_mjvecs_namespace_beside_gymnasiums_own():
    assert ENV_IDS == tuple(f"mjvec/{n}" for n in NAMES)
    for env_id in ENV_IDS:
        spec = gym.spec(env_id)
        assert spec.namespace == "mjvec" and spec.name == env_id.split("/")[1][:-3]
        assert gym.spec(env_id.split("/")[1]).entry_point.startswith("gymnasium.envs.mujoco")
    env = gym.make_vec("mjvec/Ant-v5", num_envs=2)
    assert isinstance(env.unwrapped, mjvec.tasks.gym_mujoco.GymMujocoEnv) and env.num_envs == 2
    assert env.single_observation_space == gym.make("Ant-v5").observation_space
    assert env.single_action_space == gym.make("Ant-v5").action_space
    env.close()


@pytest.mark.parametrize("name", NAMES)
def test_gymnasium_and_sb3_env_checkers_pass(name):
    from gymnasium.utils.env_checker import check_env
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    env = gym.make(f"mjvec/{name}")
    check_env(env.unwrapped, skip_render_check=True)
    sb3_check_env(env.unwrapped, warn=True)
    env.close()


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name", ["Ant-v5", "Humanoid-v5"])
def test_sb3_ppo_trains_a_few_updates_through_the_adapter(name):
    from stable_baselines3 import PPO

    from mjvec.integrations.sb3 import SB3VecEnv

    venv = SB3VecEnv(gym.make_vec(f"mjvec/{name}", num_envs=8, autoreset_mode="same_step", max_episode_steps=20))
    model = PPO("MlpPolicy", venv, n_steps=16, batch_size=64, n_epochs=2, seed=0, policy_kwargs={"net_arch": [32]})
    before = [p.detach().clone() for p in model.policy.parameters()]
    model.learn(3 * 16 * 8)
    assert model.num_timesteps == 3 * 16 * 8
    assert len(model.ep_info_buffer) > 0 and all(e["l"] <= 20 for e in model.ep_info_buffer)
    after = list(model.policy.parameters())
    assert any(not np.array_equal(a.detach().numpy(), b.numpy()) for a, b in zip(after, before, strict=True))
    assert all(np.isfinite(p.detach().numpy()).all() for p in after)
    venv.close()


def test_named_spec_compiles_to_gymnasiums_model():
    # The loader names unnamed bodies and actuators (for randomization targets) and bakes
    # half_cheetah.xml's settotalmass into explicit inertials; nothing else changes, and it compiles
    # without MuJoCo's deprecation warning.
    for task in TASKS.values():
        path = xml_path(task.xml)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            ours = load_spec(path).compile()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            theirs = mujoco.MjModel.from_xml_path(str(path))
        fields = [name for name in dir(theirs) if isinstance(getattr(theirs, name), np.ndarray)
                  and not name.startswith(("name", "_"))]
        assert "body_mass" in fields and "actuator_acc0" in fields
        for field in fields:
            assert bits(getattr(ours, field)) == bits(getattr(theirs, field)), (task.name, field)
    ant = load_spec(xml_path("ant.xml")).compile()
    assert ant.body(4).name == "body_4" and ant.actuator(0).name == "actuator_0" and ant.body(1).name == "torso"


def test_cpu_backend_cfrc_ext_is_rne_post_constraint_after_an_rk4_step():
    path = xml_path("ant.xml")
    backend = CpuBackend(Scene(1, lambda v: load_spec(path), 3, rne_post_constraint=True), num_threads=2,
                         progress=False)
    plain = CpuBackend(Scene(1, lambda v: load_spec(path), 3), num_threads=1, progress=False)
    model = mujoco.MjModel.from_xml_path(str(path))
    datas = [mujoco.MjData(model) for _ in range(3)]
    rng = np.random.default_rng(0)
    qpos, qvel = model.qpos0 + rng.uniform(-0.1, 0.1, (3, model.nq)), rng.normal(0, 0.1, (3, model.nv))
    for be in (backend, plain):
        be.reset(np.arange(3), qpos, qvel)
    cfrc, stale = backend.bind("cfrc_ext"), plain.bind("cfrc_ext")
    assert not cfrc.flags.writeable
    differed, largest = False, 0.0
    for _ in range(40):
        ctrl = rng.uniform(-1, 1, (3, model.nu))
        for be in (backend, plain):
            be.ctrl[:] = ctrl
            be.step(5)
        for i, d in enumerate(datas):
            if _ == 0:
                d.qpos[:], d.qvel[:] = qpos[i], qvel[i]
                mujoco.mj_forward(model, d)
            d.ctrl[:] = ctrl[i]
            mujoco.mj_step(model, d, nstep=5)
            mujoco.mj_rnePostConstraint(model, d)
            assert bits(cfrc[i]) == bits(d.cfrc_ext) and bits(backend.qpos[i]) == bits(d.qpos)
        differed |= not np.array_equal(stale, cfrc)
        largest = max(largest, float(np.abs(cfrc).max()))
    assert differed and largest > 0  # contacts happened, and without the option cfrc_ext is not that
    with pytest.raises(ConfigError, match=r"Scene\.rne_post_constraint must be True or False"):
        Scene(1, lambda v: load_spec(path), 1, rne_post_constraint="yes")
    backend.close()
    plain.close()


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"frame_skip": 0}, ConfigError, "frame_skip must be an int >= 1, got 0"),
    ({"healthy_z_range": (1.0, 0.2)}, ConfigError, r"healthy_z_range must have low <= high, got \(1.0, 0.2\)"),
    ({"healthy_z_range": 0.5}, ConfigError, "healthy_z_range must be a pair"),
    ({"ctrl_cost_weight": "big"}, ConfigError, "ctrl_cost_weight must be a real number"),
    ({"reset_noise_scale": -1.0}, ConfigError, "reset_noise_scale must be >= 0"),
    ({"include_cfrc_ext_in_observation": 1}, ConfigError, "include_cfrc_ext_in_observation must be True or False"),
    ({"main_body": "tail"}, ConfigError, r"main_body='tail' is not a body of the model; its bodies are .*torso"),
    ({"main_body": 99}, ConfigError, "main_body=99 is not a body id of the model"),
    ({"main_body": 1.5}, ConfigError, "main_body must be a body id"),
    ({"xml_file": "nope.xml"}, ConfigError, r"xml_file='nope.xml' does not exist .*ant.xml"),
    ({"width": 64}, UnknownOptionError, "Gymnasium's camera and window arguments are not options"),
    ({"frameskip": 2}, UnknownOptionError, "the option is frame_skip"),
    ({"randomization": "paper"}, ConfigError, "is not a preset of mjvec/Ant-v5; its presets are .*locomotion"),
])
def test_option_errors_name_the_option_and_the_fix(kwargs, error, match):
    with pytest.raises(error, match=match):
        gym.make_vec("mjvec/Ant-v5", num_envs=1, **kwargs)


def test_memory_estimate_counts_the_persistent_mjdata_of_contact_force_tasks():
    from mjvec.envs.registry import get_task

    task = get_task("mjvec/Ant-v5")
    model = load_spec(xml_path("ant.xml")).compile()
    with_forces = task.estimate_memory(1024, task.parse_options({}))
    without = task.estimate_memory(1024, task.parse_options({"include_cfrc_ext_in_observation": False,
                                                             "contact_cost_weight": 0.0}))
    assert with_forces.per_env["task"] - without.per_env["task"] == model.nbuffer
    assert not TASKS["Ant-v5"].needs_contact_forces(
        task.parse_options({"include_cfrc_ext_in_observation": False, "contact_cost_weight": 0.0}))


def test_a_written_episode_counter_staggers_the_time_limit() -> None:
    """The suite counts with the base's episode_steps, so rsl_rl's init_at_random_ep_len works on it."""
    env = gym.make_vec("mjvec/HalfCheetah-v5", num_envs=3, max_episode_steps=10, autoreset_mode="same_step")
    env.reset(seed=0)
    env.unwrapped.episode_steps = np.array([0, 5, 8])
    first = []
    for k in range(1, 11):
        _, _, terminated, truncated, _ = env.step(np.zeros((3, 6), np.float32))
        assert not terminated.any()
        first.extend((i, k) for i in np.flatnonzero(truncated) if i not in {j for j, _ in first})
    assert dict(first) == {2: 2, 1: 5, 0: 10}
    env.close()
