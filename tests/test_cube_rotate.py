"""CubeRotate-v0 against independent oracles: hand-computed reward terms and terminations, each
cube's scene compiled alone and stepped by plain mujoco (bit-exact), N single envs vs one batch,
and a model-field randomization term replayed on a plain model with the drawn mass."""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import mujoco
import numpy as np
import pytest

import mjvec  # noqa: F401  (registers the tasks)
from mjvec.assets.robot import FINGERTIP_SITE_NAMES, HAND_ACTUATOR_NAMES, HAND_JOINT_NAMES
from mjvec.envs.registry import wrapper_bytes_per_env
from mjvec.errors import ConfigError, UnknownOptionError
from mjvec.randomization import DomainRandomization, EventTerm, ObservationNoise
from mjvec.tasks.cube_rotate import scene as C
from mjvec.tasks.cube_rotate import terms as ct
from mjvec.tasks.cube_rotate.config import CubeRotateConfig
from mjvec.tasks.cube_rotate.registration import ENV_ID, PAPER_TERMS

CFG = CubeRotateConfig()
SL = {}
_start = 0
for _name, _width in ct.POLICY_LAYOUT:
    SL[_name] = slice(_start, _start + _width)
    _start += _width


# ---- the pure functions, by hand -----------------------------------------------------------------
def test_joint_targets_are_absolute_around_the_default_clipped_and_smoothed():
    a, prev, default = np.array([[1.0, -1.0, 0.0]]), np.array([[0.6, 0.6, 0.6]]), np.array([0.2, 0.2, 0.2])
    out = ct.joint_targets(a, prev, default, np.zeros(3), np.ones(3), scale=0.5, ema=1.0)
    np.testing.assert_allclose(out, [[0.45, 0.0, 0.2]])  # 0.2 + 0.5 * 0.5; 0.2 - 0.25 clipped to 0
    out = ct.joint_targets(a, prev, default, np.zeros(3), np.ones(3), scale=0.5, ema=0.25)
    np.testing.assert_allclose(out, [[0.25 * 0.45 + 0.75 * 0.6, 0.75 * 0.6, 0.25 * 0.2 + 0.75 * 0.6]])


def test_mean_angular_velocity_recovers_a_constant_turn():
    rng = np.random.default_rng(3)
    start = rng.normal(size=(6, 4))
    start /= np.linalg.norm(start, axis=1, keepdims=True)
    omega = rng.normal(size=(6, 3))
    end = np.zeros((6, 4))
    for i in range(6):  # turn by omega * dt about the world axes: q1 = exp(omega dt) * q0
        turn = np.zeros(4)
        mujoco.mju_axisAngle2Quat(turn, omega[i] / np.linalg.norm(omega[i]), np.linalg.norm(omega[i]) * 0.05)
        mujoco.mju_mulQuat(end[i], turn, start[i])
    np.testing.assert_allclose(ct.mean_angular_velocity(start, end, 0.05), omega, atol=1e-12)
    np.testing.assert_allclose(ct.mean_angular_velocity(start, -end, 0.05), omega, atol=1e-12)  # q ~ -q
    np.testing.assert_allclose(ct.mean_angular_velocity(start, start, 0.05), 0.0, atol=1e-13)


def test_angular_velocity_to_world_frame_matches_mujoco():
    rng = np.random.default_rng(0)
    quat = rng.normal(size=(5, 4))
    quat /= np.linalg.norm(quat, axis=1, keepdims=True)
    local = rng.normal(size=(5, 3))
    expected = np.zeros((5, 3))
    for i in range(5):
        mujoco.mju_rotVecQuat(expected[i], local[i], quat[i])
    np.testing.assert_allclose(ct.world_angular_velocity(quat, local), expected, atol=1e-14)
    np.testing.assert_array_equal(ct.canonical_quat(np.array([[-0.5, 0.5, -0.5, 0.5], [0.6, -0.8, 0, 0]])),
                                  [[0.5, -0.5, 0.5, -0.5], [0.6, -0.8, 0, 0]])


def test_reward_terms_by_hand():
    np.testing.assert_array_equal(ct.rotation_term(np.array([-5.0, 0.3, 4.0]), 3.0), [-3.0, 0.3, 3.0])
    np.testing.assert_array_equal(ct.action_term(np.array([[1.0, 2.0], [0.0, -1.0]])), [5.0, 1.0])
    np.testing.assert_array_equal(ct.energy_term(np.array([[1.0, -2.0]]), np.array([[3.0, 0.5]])), [4.0])
    cfg = dataclasses.replace(CFG, rotation_weight=2.0, action_weight=0.5, energy_weight=0.25, drop_penalty=7.0)
    terms = ct.reward_terms(np.array([1.5, -1.0]), np.array([4.0, 0.0]), np.array([8.0, 2.0]),
                            np.array([False, True]), control_dt=0.05, cfg=cfg)
    np.testing.assert_allclose(terms["rotation"], [2.0 * 0.05 * 1.5, -2.0 * 0.05])
    np.testing.assert_allclose(terms["action"], [-0.5 * 0.05 * 4.0, 0.0])
    np.testing.assert_allclose(terms["energy"], [-0.25 * 0.05 * 8.0, -0.25 * 0.05 * 2.0])
    np.testing.assert_array_equal(terms["drop"], [0.0, -7.0])
    assert tuple(terms) == ct.REWARD_TERMS


def test_drop_is_depth_below_the_palm_or_horizontal_distance():
    palm = np.zeros((1, 3))
    cubes = np.array([[0.0, 0.0, -0.041], [0.0, 0.0, -0.039], [0.1, 0.1, 0.0], [0.12, 0.1, 0.0], [0.0, 0.0, 0.5]])
    np.testing.assert_array_equal(ct.dropped(cubes, palm, 0.04, 0.15), [True, False, False, True, False])


# ---- the env --------------------------------------------------------------------------------------
def _oracle(env, i: int, mass_scale: float | None = None) -> tuple[mujoco.MjModel, mujoco.MjData]:
    """Env i's cube scene compiled alone (its cube's mass and inertia scaled by `mass_scale`), in
    env i's current state."""
    model = C.cube_variant_spec(int(env.unwrapped.cube_ids[i])).compile()
    if mass_scale is not None:
        body = model.body(C.CUBE_BODY_NAME).id
        model.body_mass[body] *= mass_scale
        model.body_inertia[body] *= mass_scale
        mujoco.mj_setConst(model, mujoco.MjData(model))
    data = mujoco.MjData(model)
    backend = env.unwrapped.backend
    data.qpos[:], data.qvel[:], data.ctrl[:] = backend.qpos[i], backend.qvel[i], backend.ctrl[i]
    mujoco.mj_forward(model, data)
    return model, data


def _terms_by_hand(model: mujoco.MjModel, data: mujoco.MjData, prev_quat: np.ndarray, action: np.ndarray,
                   dt: float) -> dict[str, float]:
    cube = model.joint(C.CUBE_JOINT_NAME)
    quat = data.qpos[cube.qposadr[0] + 3:][:4]
    # The turn since the previous step, as MuJoCo's own quaternion difference (a rotation vector).
    w = np.zeros(3)
    mujoco.mju_subQuat(w, quat, prev_quat)  # body-frame rotation vector of prev^-1 * quat
    mujoco.mju_rotVecQuat(w, w / dt, prev_quat)  # ... in the world frame
    dofs = [model.joint(n).dofadr[0] for n in HAND_JOINT_NAMES]
    tau = data.actuator_force[[model.actuator(n).id for n in HAND_ACTUATOR_NAMES]]
    rel = data.qpos[cube.qposadr[0]:][:3] - data.site(C.PALM_SITE_NAME).xpos
    dropped = rel[2] < -CFG.drop_depth or np.hypot(rel[0], rel[1]) > CFG.max_xy_distance
    return {"rotation": CFG.rotation_weight * dt * float(np.clip(w[2], -CFG.rotation_clip, CFG.rotation_clip)),
            "action": -CFG.action_weight * dt * float(action @ action),
            "energy": -CFG.energy_weight * dt * float(np.abs(tau * data.qvel[dofs]).sum()),
            "drop": -CFG.drop_penalty * dropped}


def test_every_cube_variant_steps_like_its_scene_compiled_alone_with_rewards_by_hand():
    env = gym.make_vec(ENV_ID, num_envs=8, env_id_offset=3, num_threads=2, autoreset_mode="disabled")
    assert env.unwrapped.backend.num_groups == 1  # every cube in one engine group
    np.testing.assert_array_equal(env.unwrapped.cube_ids, (3 + np.arange(8)) % 8)
    env.reset(seed=4)
    oracles = [_oracle(env, i) for i in range(8)]
    rng = np.random.default_rng(1)
    done = np.zeros(8, bool)
    adr = oracles[0][0].joint(C.CUBE_JOINT_NAME).qposadr[0] + 3
    for _ in range(30):
        a = rng.uniform(-0.6, 0.6, (8, 22))
        prev = [data.qpos[adr:adr + 4].copy() for _, data in oracles]
        _, reward, term, _, info = env.step(a)
        done |= term
        for i, (model, data) in enumerate(oracles):
            data.ctrl[:] = env.unwrapped.targets[i]
            mujoco.mj_step(model, data, CFG.frame_skip)
            np.testing.assert_array_equal(env.unwrapped.backend.qpos[i], data.qpos)
            np.testing.assert_array_equal(env.unwrapped.backend.qvel[i], data.qvel)
            expected = _terms_by_hand(model, data, prev[i], a[i], env.unwrapped.control_dt)
            got = {k: float(v[i]) for k, v in info["reward_terms"].items() if not k.startswith("_")}
            assert got == pytest.approx(expected, rel=1e-9, abs=1e-13)
            assert reward[i] == pytest.approx(sum(expected.values()), rel=1e-9, abs=1e-13)
            assert term[i] == (expected["drop"] != 0.0)
        if done.any():  # a dropped env must be reset before stepping on (autoreset disabled)
            break


def test_targets_follow_the_action_and_observation_blocks_match_the_oracle():
    env = gym.make_vec(ENV_ID, num_envs=2, num_threads=1)
    base = env.unwrapped
    obs, info = env.reset(seed=0)
    np.testing.assert_array_equal(info["cube_id"], [0, 1])
    reset_targets = base.targets.copy()
    np.testing.assert_array_equal(reset_targets, base.backend.qpos[:, :22])  # the reset joint pose
    np.testing.assert_allclose(obs[:, SL["targets"]], reset_targets, atol=1e-6)
    a = np.linspace(-1, 1, 44).reshape(2, 22)
    obs, *_ = env.step(a)
    lo, hi = base.joint_lower, base.joint_upper
    ema = CFG.action_ema
    np.testing.assert_allclose(base.targets, ema * np.clip(C.DEFAULT_HAND_POSE + a * (hi - lo) / 2, lo, hi)
                               + (1 - ema) * reset_targets)
    np.testing.assert_array_equal(base.backend.ctrl, base.targets)
    for i in range(2):
        model, data = _oracle(env, i)
        cube = data.joint(C.CUBE_JOINT_NAME)
        np.testing.assert_allclose(obs[i, SL["joint_pos"]], data.qpos[:22], atol=1e-6)
        np.testing.assert_allclose(obs[i, SL["joint_vel"]], np.clip(0.1 * data.qvel[:22], -10, 10), atol=1e-6)
        np.testing.assert_allclose(obs[i, SL["targets"]], base.targets[i], atol=1e-6)
        np.testing.assert_allclose(obs[i, SL["cube_pos"]], cube.qpos[:3] - data.site(C.PALM_SITE_NAME).xpos,
                                   atol=1e-6)
        quat = cube.qpos[3:] * np.sign(cube.qpos[3])
        np.testing.assert_allclose(obs[i, SL["cube_quat"]], quat, atol=1e-6)
        vel = np.zeros(6)
        mujoco.mj_objectVelocity(model, data, mujoco.mjtObj.mjOBJ_BODY, model.body("cube").id, vel, 0)
        np.testing.assert_allclose(obs[i, SL["cube_angvel"]], vel[:3], atol=1e-5)
        np.testing.assert_allclose(obs[i, SL["cube_linvel"]], vel[3:], atol=1e-5)
        assert obs[i, SL["cube_half_size"]][0] == np.float32(C.default_cube_catalog()[i].half_size)
    # The fingertips are read from site positions (one substep stale after a step): at reset they are current.
    obs, _ = env.reset(seed=1)
    model, data = _oracle(env, 0)
    tips = np.stack([data.site(n).xpos for n in FINGERTIP_SITE_NAMES]) - data.joint(C.CUBE_JOINT_NAME).qpos[:3]
    np.testing.assert_allclose(obs[0, SL["fingertip_pos"]], tips.ravel(), atol=1e-6)
    env.close()


def test_reset_observation_and_forces_equal_a_plain_reset_with_the_targets_as_ctrl():
    """The reset's one forward sees the reset targets as ctrl. Oracle: each env's cube scene compiled
    alone, mj_resetData, the drawn state with ctrl = the drawn joint pose, one mj_forward; the
    observation built from it block by block. (The observation is kinematic; the actuator forces
    the backend reports at the reset are what a reset without ctrl left at those of ctrl = 0.)"""
    env = gym.make_vec(ENV_ID, num_envs=3, env_id_offset=5, num_threads=1)
    base = env.unwrapped
    obs, _ = env.reset(seed=7)
    be = base.backend
    force = be.bind("actuator_force")
    for i in range(3):
        model = C.cube_variant_spec(int(base.cube_ids[i])).compile()
        data = mujoco.MjData(model)
        mujoco.mj_resetData(model, data)
        data.qpos[:] = be.qpos[i]  # the drawn state, at rest
        joints = [model.joint(n) for n in HAND_JOINT_NAMES]
        pose = np.array([data.qpos[j.qposadr[0]] for j in joints])
        data.ctrl[[model.actuator(n).id for n in HAND_ACTUATOR_NAMES]] = pose
        stale = mujoco.MjData(model)  # what a forward before the ctrl was written reported
        stale.qpos[:] = data.qpos
        mujoco.mj_forward(model, stale)
        mujoco.mj_forward(model, data)
        np.testing.assert_array_equal(be.ctrl[i], data.ctrl)
        np.testing.assert_array_equal(force[i], data.actuator_force)
        assert np.abs(stale.actuator_force - data.actuator_force).max() > 0.1
        cube = data.joint(C.CUBE_JOINT_NAME)
        vel = np.zeros(6)
        mujoco.mj_objectVelocity(model, data, mujoco.mjtObj.mjOBJ_BODY, model.body(C.CUBE_BODY_NAME).id, vel, 0)
        tips = np.stack([data.site(n).xpos for n in FINGERTIP_SITE_NAMES]) - cube.qpos[:3]
        want = {
            "joint_pos": pose, "joint_vel": CFG.joint_vel_obs_scale * data.qvel[[j.dofadr[0] for j in joints]],
            "targets": pose, "cube_pos": cube.qpos[:3] - data.site(C.PALM_SITE_NAME).xpos,
            "cube_quat": cube.qpos[3:] * np.sign(cube.qpos[3]), "cube_linvel": vel[3:], "cube_angvel": vel[:3],
            "fingertip_pos": tips.ravel(),
            "cube_half_size": [C.default_cube_catalog()[int(base.cube_ids[i])].half_size],
        }
        assert set(want) == set(SL)
        for name, value in want.items():
            np.testing.assert_allclose(obs[i, SL[name]], np.clip(value, -CFG.obs_clip, CFG.obs_clip), rtol=0,
                                       atol=1e-6, err_msg=name)
    env.close()


def test_drop_terminates_with_the_penalty_and_truncation_at_the_episode_limit():
    env = gym.make_vec(ENV_ID, num_envs=3, num_threads=1, max_episode_steps=4, autoreset_mode="disabled")
    base = env.unwrapped
    env.reset(seed=0)
    qpos, qvel = base.backend.qpos.copy(), np.zeros((3, base.backend.model.nv))
    adr = base.backend.model.joint(C.CUBE_JOINT_NAME).qposadr[0]
    qpos[0, adr:adr + 3] = (0.3, 0.0, 0.1)  # far from the palm horizontally
    qpos[1, adr:adr + 3] = (*C.PALM_CENTER[:2], C.PALM_CENTER[2] - 0.06)  # below the palm
    base.backend.reset(np.arange(3), qpos, qvel)
    _, reward, term, trunc, info = env.step(np.zeros((3, 22)))
    np.testing.assert_array_equal(term, [True, True, False])
    np.testing.assert_array_equal(info["dropped"], [True, True, False])
    np.testing.assert_array_equal(info["reward_terms"]["drop"], [-5.0, -5.0, 0.0])
    assert (reward[:2] < -4.9).all() and reward[2] > -0.1
    assert not trunc.any()
    env.reset(seed=0)
    for k in range(1, 5):
        _, _, term, trunc, _ = env.step(np.zeros((3, 22)))
        assert not term.any() and trunc.all() == (k == 4) and trunc.any() == (k == 4)
    env.close()


def test_the_rest_pose_holds_every_cube():
    env = gym.make_vec(ENV_ID, num_envs=16, num_cubes=16, num_threads=2)
    env.reset(seed=0)
    for _ in range(40):  # 2 s
        _, _, term, _, _ = env.step(np.zeros((16, 22)))
        assert not term.any()
    env.close()


def test_batched_env_equals_single_envs():
    batched = gym.make_vec(ENV_ID, num_envs=3, num_threads=1, autoreset_mode="disabled")
    singles = [gym.make(ENV_ID, env_id_offset=i, num_threads=1) for i in range(3)]
    obs_b, _ = batched.reset(seed=11)
    np.testing.assert_array_equal(obs_b, np.stack([s.reset(seed=11)[0] for s in singles]))
    rng = np.random.default_rng(2)
    for _ in range(5):
        a = rng.uniform(-1, 1, (3, 22))
        obs_b, rew_b, term_b, _, _ = batched.step(a)
        out = [s.step(a[i]) for i, s in enumerate(singles)]
        np.testing.assert_array_equal(obs_b, np.stack([o[0] for o in out]))
        np.testing.assert_allclose(rew_b, [o[1] for o in out], rtol=1e-12, atol=1e-15)
        np.testing.assert_array_equal(term_b, [o[2] for o in out])
    batched.close()
    for s in singles:
        s.close()


def test_mass_term_steps_like_a_plain_model_with_the_drawn_mass():
    env = gym.make_vec(ENV_ID, num_envs=2, num_threads=1, autoreset_mode="disabled",
                       randomization=[EventTerm("body_mass", 0.5, 1.5, targets=("cube",))])
    env.reset(seed=5)
    base = env.unwrapped
    body = base.cube_body_id
    scale = env.dr_params["body_mass"][:, 0]
    np.testing.assert_allclose(base.backend.field_values("body_mass")[:, body], base.cube_mass * scale, rtol=1e-12)
    oracles = [_oracle(env, i, mass_scale=scale[i]) for i in range(2)]
    unscaled = _oracle(env, 0)  # the same env without the draw: must end elsewhere
    # The backend's mass and inertia values agree with the plain model's to rounding (the rows are
    # built in another order), so the trajectories agree to rounding: measured 8e-17 over 10 steps.
    for _ in range(10):
        env.step(np.full((2, 22), 0.3))
        for i, (model, data) in enumerate(oracles):
            data.ctrl[:] = base.targets[i]
            mujoco.mj_step(model, data, CFG.frame_skip)
            np.testing.assert_allclose(base.backend.qpos[i], data.qpos, rtol=0, atol=1e-12)
        unscaled[1].ctrl[:] = base.targets[0]
        mujoco.mj_step(*unscaled, CFG.frame_skip)
    assert np.abs(unscaled[1].qpos - base.backend.qpos[0]).max() > 1e-6
    env.close()


def test_paper_preset_is_playgrounds_randomization():
    env = gym.make_vec(ENV_ID, num_envs=2, num_threads=1, randomization="paper")
    assert isinstance(env, DomainRandomization) and isinstance(env.env, ObservationNoise)
    env.reset(seed=0)
    assert set(env.dr_params) == {t.name for t in PAPER_TERMS}
    for _ in range(3):
        obs, *_ = env.step(np.zeros((2, 22)))
    assert np.isfinite(obs).all()
    base = env.unwrapped
    tips = [base.backend.model.geom(f"left_{f}_DP_collision").id for f in ("index", "thumb")]
    friction = base.backend.field_values("geom_friction")[:, tips, 0]
    assert ((friction >= 0.5) & (friction <= 1.0)).all()
    # The preset's wrappers report their state: the noise holds none, the model terms their draws and rows.
    terms = env.terms
    assert wrapper_bytes_per_env(env) == env.per_env_bytes() > 8 * len(terms)
    env.close()


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"num_tools": 6}, UnknownOptionError,
     r"CubeRotate-v0 got an unexpected keyword argument 'num_tools'; allowed options are \{.*num_cubes.*\}"),
    ({"frameskip": 2}, UnknownOptionError, r"config=CubeRotateConfig\(frame_skip=\.\.\.\)"),
    ({"num_cubes": 0}, ConfigError, r"num_cubes must be an int in \[1, 64\]"),
    ({"num_cubes": 65}, ConfigError, r"num_cubes must be an int in \[1, 64\]"),
    ({"config": {"action_scale": 1}}, ConfigError, r"config must be a CubeRotateConfig or None, got dict"),
    ({"randomization": "playground"}, ConfigError,
     r"randomization='playground' is not a preset of CubeRotate-v0; its presets are \{paper\}"),
])
def test_bad_options_raise(kwargs, error, match):
    with pytest.raises(error, match=match):
        gym.make_vec(ENV_ID, num_envs=1, **kwargs)


@pytest.mark.parametrize(("field", "value", "match"), [
    ("frame_skip", 0, r"frame_skip must be an int >= 1, got 0"),
    ("action_scale", 1.5, r"action_scale must be in \(0, 1\]"),
    ("action_ema", 0.0, r"action_ema must be > 0"),
    ("drop_depth", 0.0, r"drop_depth must be > 0"),
    ("energy_weight", -1.0, r"energy_weight must be >= 0"),
    ("rotation_clip", float("nan"), r"rotation_clip must be a finite float"),
])
def test_config_errors(field, value, match):
    with pytest.raises(ConfigError, match=match):
        CubeRotateConfig(**{field: value})


def test_cube_catalog_is_seeded_per_cube_and_within_its_ranges():
    small, large = C.CubeCatalog(4), C.CubeCatalog(64)
    assert [small[k] for k in range(4)] == [large[k] for k in range(4)]
    assert C.CubeCatalog(4, seed=1)[0] != small[0]
    for cube in large:
        assert C.CUBE_HALF_SIZE_RANGE[0] <= cube.half_size <= C.CUBE_HALF_SIZE_RANGE[1]
        assert C.CUBE_MASS_RANGE[0] <= cube.mass <= C.CUBE_MASS_RANGE[1]
        assert C.CUBE_FRICTION_RANGE[0] <= cube.friction <= C.CUBE_FRICTION_RANGE[1]
    model = C.cube_scene_spec(small[2]).compile()
    assert model.geom("cube").size[0] == small[2].half_size and model.body("cube").mass[0] == small[2].mass
    with pytest.raises(ConfigError, match=r"cube_id must be an int in \[0, 3\], got 4"):
        small[4]
