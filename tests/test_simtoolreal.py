"""SimToolReal-v0 on the real CPU backend and assets, against independent oracles.

Oracles: a plain `mujoco` MjData of the env's own scene (`scene_spec(tool_id).compile()`), N
single envs from ``gym.make`` vs one batched env, and runs that differ only in num_envs/num_threads.
"""

from __future__ import annotations

import gymnasium as gym
import mujoco
import numpy as np
import pytest

import mjvec  # noqa: F401  (registers the env ids once it is wired)
from mjvec.assets import robot as R
from mjvec.errors import ConfigError
from mjvec.tasks.simtoolreal import scene as S
from mjvec.tasks.simtoolreal import terms as tm
from mjvec.tasks.simtoolreal.env import REWARD_TERMS
from mjvec.tasks.simtoolreal.registration import ENV_ID, default_catalog, register_envs
from mjvec.tasks.simtoolreal.scene import scene_spec

register_envs()

SMALL = {"num_tools": 6, "backend": "cpu", "randomization": None}
PSL = tm.layout_slices(tm.POLICY_LAYOUT)
CSL = tm.layout_slices(tm.CRITIC_LAYOUT)


def _actions(num_envs: int, steps: int, seed: int = 0, scale: float = 1.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return scale * rng.uniform(-1.0, 1.0, (steps, num_envs, 29))


@pytest.fixture(scope="module")
def env4():
    env = gym.make_vec(ENV_ID, num_envs=4, num_threads=1, obs_mode="asymmetric", **SMALL)
    yield env
    env.close()


@pytest.fixture(scope="module")
def oracle_models():
    cache = {}

    def get(tool_id: int) -> mujoco.MjModel:
        if tool_id not in cache:
            cache[tool_id] = scene_spec(tool_id, "primitive", default_catalog()).compile()
        return cache[tool_id]

    return get


def test_spaces(env4):
    assert isinstance(env4.single_observation_space, gym.spaces.Dict)
    assert env4.single_observation_space["policy"].shape == (140,)
    assert env4.single_observation_space["critic"].shape == (162,)
    assert env4.single_action_space.shape == (29,)
    assert env4.action_space.shape == (4, 29)
    assert tm.layout_size(tm.POLICY_LAYOUT) == 140 and tm.layout_size(tm.CRITIC_LAYOUT) == 162
    assert env4.metadata["render_fps"] == pytest.approx(60.0)
    policy_only = gym.make_vec(ENV_ID, num_envs=2, **SMALL)
    try:
        assert policy_only.single_observation_space == gym.spaces.Box(-10.0, 10.0, (140,), np.float32)
        obs, _ = policy_only.reset(seed=0)
        assert obs.shape == (2, 140) and obs.dtype == np.float32
    finally:
        policy_only.close()


def _oracle_data(model: mujoco.MjModel, env, i: int) -> mujoco.MjData:
    data = mujoco.MjData(model)
    data.qpos[:] = env.backend.qpos[i]
    data.qvel[:] = env.backend.qvel[i]
    data.mocap_pos[:] = env.backend.bind("mocap_pos")[i]
    data.mocap_quat[:] = env.backend.bind("mocap_quat")[i]
    mujoco.mj_forward(model, data)
    return data


def _keypoints(data: mujoco.MjData, body: str, dims: np.ndarray) -> np.ndarray:
    """(4, 3) world keypoints of a body from its xpos/xmat (independent of task_math's quats)."""
    b = data.body(body)
    local = tm.KEYPOINT_SIGNS * (0.75 * dims)
    return b.xpos + local @ b.xmat.reshape(3, 3).T


def _xyzw(q: np.ndarray) -> np.ndarray:
    return np.array([q[1], q[2], q[3], q[0]])


def test_obs_blocks_match_plain_mujoco_oracle(env4, oracle_models):
    obs, _ = env4.reset(seed=3)
    pol, crit = obs["policy"], obs["critic"]
    for name, _ in tm.POLICY_LAYOUT:  # without a pose source the critic's policy terms are the policy's
        if name == "object_rot":  # ... but for the sign of q: the policy's has w >= 0, the critic's is as simulated
            np.testing.assert_array_equal(np.abs(pol[:, PSL[name]]), np.abs(crit[:, CSL[name]]))
        else:
            np.testing.assert_array_equal(pol[:, PSL[name]], crit[:, CSL[name]])
    catalog = default_catalog()
    for i in range(4):
        tool = int(env4.unwrapped.tool_ids[i])
        model = oracle_models(tool)
        data = _oracle_data(model, env4, i)
        jids = [model.joint(n).id for n in R.JOINT_NAMES]
        lo, hi = model.jnt_range[jids, 0], model.jnt_range[jids, 1]
        qj = np.array([data.joint(n).qpos[0] for n in R.JOINT_NAMES])
        np.testing.assert_allclose(pol[i, PSL["joint_pos"]], np.clip((2 * qj - lo - hi) / (hi - lo), -1, 1), atol=1e-6)
        # PD targets at reset = the reset joint pose, and they were written to ctrl.
        np.testing.assert_allclose(pol[i, PSL["prev_action_targets"]], qj, atol=1e-6)
        ctrl = env4.backend.ctrl[i, [model.actuator(n).id for n in R.ACTUATOR_NAMES]]
        np.testing.assert_allclose(ctrl, qj, atol=1e-12)
        palm = data.site(R.PALM_SITE_NAME).xpos
        np.testing.assert_allclose(pol[i, PSL["palm_pos"]], palm, atol=1e-6)
        np.testing.assert_allclose(pol[i, PSL["palm_rot"]], _xyzw(data.body(R.PALM_BODY_NAME).xquat), atol=1e-6)
        # The source's policy sees the orientation through a rotation matrix: w >= 0 (q and -q are one rotation).
        obj_quat = data.joint(S.OBJECT_JOINT_NAME).qpos[3:]
        obj_quat = obj_quat if obj_quat[0] >= 0 else -obj_quat
        np.testing.assert_allclose(pol[i, PSL["object_rot"]], _xyzw(obj_quat), atol=1e-6)
        tips = np.stack([data.site(n).xpos for n in R.FINGERTIP_SITE_NAMES])
        np.testing.assert_allclose(pol[i, PSL["fingertip_pos_rel_palm"]], (tips - palm).ravel(), atol=1e-6)
        dims = np.asarray(catalog[tool].object_scales) * 0.04
        kp_obj = _keypoints(data, S.OBJECT_BODY_NAME, dims)
        kp_goal = _keypoints(data, S.GOAL_BODY_NAME, dims)
        np.testing.assert_allclose(pol[i, PSL["keypoints_rel_palm"]], (kp_obj - palm).ravel(), atol=1e-6)
        np.testing.assert_allclose(pol[i, PSL["keypoints_rel_goal"]], (kp_obj - kp_goal).ravel(), atol=1e-6)
        np.testing.assert_allclose(pol[i, PSL["object_scales"]], catalog[tool].object_scales, atol=1e-6)
        np.testing.assert_allclose(dims, catalog[tool].handle_dims, atol=1e-12)
        # Critic extras at reset: zero reward/progress/successes, unlifted, current distances.
        np.testing.assert_allclose(crit[i, CSL["closest_fingertip_dist"]],
                                   np.linalg.norm(tips - data.body(S.OBJECT_BODY_NAME).xpos, axis=1), atol=1e-6)
        for name in ("lifted_object", "progress", "successes", "reward"):
            assert crit[i, CSL[name]] == 0.0
        site_vel = np.zeros(6)
        mujoco.mj_objectVelocity(model, data, mujoco.mjtObj.mjOBJ_SITE, model.site(R.PALM_SITE_NAME).id, site_vel, 0)
        np.testing.assert_allclose(crit[i, CSL["palm_vel"]], np.concatenate([site_vel[3:], site_vel[:3]]), atol=1e-5)


def test_obs_after_steps_qpos_blocks_and_velocities(env4, oracle_models):
    env4.reset(seed=4)
    for a in _actions(4, 3, seed=1):
        obs, *_ = env4.step(a)
    pol, crit = obs["policy"], obs["critic"]
    for i in range(4):
        model = oracle_models(int(env4.unwrapped.tool_ids[i]))
        data = _oracle_data(model, env4, i)
        np.testing.assert_allclose(pol[i, PSL["joint_vel"]], [data.joint(n).qvel[0] for n in R.JOINT_NAMES],
                                   rtol=1e-6, atol=1e-5)
        # mj_objectVelocity gives (angular, linear at the COM), world frame; the critic has the
        # COM's linear velocity (as the source's rigid-body state), not the frame origin's.
        vel = np.zeros(6)
        body = data.body(S.OBJECT_BODY_NAME)
        mujoco.mj_objectVelocity(model, data, mujoco.mjtObj.mjOBJ_BODY, body.id, vel, 0)
        np.testing.assert_allclose(crit[i, CSL["object_vel"]], np.concatenate([vel[3:], vel[:3]]), atol=1e-5)
        assert crit[i, CSL["progress"]][0] == pytest.approx(np.log(0.3 + 1.0))


def test_critic_object_velocity_is_at_the_centre_of_mass(oracle_models):
    """A tool spinning in the air: critic object_vel = (v_origin + w x (R com), w), by hand and by
    mj_objectVelocity; the frame origin's velocity differs from it here."""
    env = gym.make_vec(ENV_ID, num_envs=2, obs_mode="asymmetric", **SMALL)
    try:
        task = env.unwrapped
        env.reset(seed=5)
        qpos, qvel = task.backend.qpos.copy(), np.zeros((2, task.backend.model.nv))
        a, d = task.indices.obj_qpos, task.indices.obj_dof
        qpos[:, a:a + 3] = [[0.1, 0.0, 1.3], [-0.1, 0.05, 1.4]]  # above the hand: free flight for a step
        qvel[:, d:d + 3] = [[0.2, -0.1, 0.3], [0.0, 0.4, -0.2]]
        qvel[:, d + 3:d + 6] = [[5.0, -4.0, 3.0], [-2.0, 5.0, 4.0]]  # body frame, within the obs clip
        task.backend.reset(np.arange(2), qpos, qvel)
        obs, *_ = env.step(np.zeros((2, 29)))
        crit = obs["critic"]
        for i in range(2):
            tool = default_catalog()[int(task.tool_ids[i])]
            model = oracle_models(tool.tool_id)
            data = _oracle_data(model, task, i)
            rot = data.body(S.OBJECT_BODY_NAME).xmat.reshape(3, 3)
            w_world = rot @ data.qvel[d + 3:d + 6]
            hand = data.qvel[d:d + 3] + np.cross(w_world, rot @ np.array([tool.com_x, 0.0, 0.0]))
            vel = np.zeros(6)
            mujoco.mj_objectVelocity(model, data, mujoco.mjtObj.mjOBJ_BODY, model.body(S.OBJECT_BODY_NAME).id, vel, 0)
            np.testing.assert_allclose(hand, vel[3:], atol=1e-10)
            np.testing.assert_allclose(crit[i, CSL["object_vel"]], np.concatenate([hand, w_world]), rtol=1e-6,
                                       atol=1e-5)
            assert np.linalg.norm(hand - data.qvel[d:d + 3]) > 0.1
    finally:
        env.close()


def test_critic_layout_is_the_source_state_list():
    """The critic's blocks in the source's stateList order, and the documented index map."""
    assert [name for name, _ in tm.CRITIC_LAYOUT] == [
        "joint_pos", "joint_vel", "prev_action_targets", "palm_pos", "palm_rot", "palm_vel", "object_rot",
        "object_vel", "fingertip_pos_rel_palm", "keypoints_rel_palm", "keypoints_rel_goal", "object_scales",
        "closest_keypoint_max_dist", "closest_fingertip_dist", "lifted_object", "progress", "successes", "reward",
    ]
    starts = {name: (sl.start, sl.stop) for name, sl in CSL.items()}
    assert starts["palm_vel"] == (94, 100) and starts["object_rot"] == (100, 104)
    assert starts["object_vel"] == (104, 110) and starts["fingertip_pos_rel_palm"] == (110, 125)
    assert starts["object_scales"] == (149, 152) and starts["reward"] == (161, 162)
    # The map written in the code comment and in docs/simtoolreal.md is this one.
    import inspect
    import pathlib
    import re

    comment = inspect.getsource(tm).split("# privileged terms. Offsets")[1].split("CRITIC_LAYOUT")[0]
    docs = (pathlib.Path(__file__).parents[1] / "docs" / "simtoolreal.md").read_text()
    for name, (lo, hi) in starts.items():
        shown = f"{name} {lo}" if hi == lo + 1 else f"{name} {lo}:{hi}"
        assert shown in re.sub(r"\s+", " ", comment), shown
        cell = f"`{lo}`" if hi == lo + 1 else f"`{lo}:{hi}`"
        assert re.search(rf"\| `{name}` \| {re.escape(cell)} \|", docs), (name, cell)


def test_batched_env_equals_single_envs():
    n, steps = 3, 4
    actions = _actions(n, steps, seed=2, scale=0.5)
    batched = gym.make_vec(ENV_ID, num_envs=n, autoreset_mode="disabled", **SMALL)
    singles = [gym.make(ENV_ID, env_id_offset=i, **SMALL) for i in range(n)]
    try:
        obs_b, _ = batched.reset(seed=11)
        obs_s = [s.reset(seed=11)[0] for s in singles]
        np.testing.assert_array_equal(obs_b, np.stack(obs_s))
        for a in actions:
            obs_b, rew_b, term_b, _, info_b = batched.step(a)
            out = [s.step(a[i]) for i, s in enumerate(singles)]
            np.testing.assert_array_equal(obs_b, np.stack([o[0] for o in out]))
            # The physics is bit-exact; float64 task math may differ in the last bit because numpy's
            # reduction order depends on the batch layout.
            qpos_s = np.stack([s.unwrapped.vec_env.backend.qpos[0] for s in singles])
            np.testing.assert_array_equal(batched.unwrapped.backend.qpos, qpos_s)
            np.testing.assert_allclose(rew_b, [o[1] for o in out], rtol=1e-12, atol=1e-12)
            np.testing.assert_array_equal(term_b, [o[2] for o in out])
            np.testing.assert_array_equal(info_b["tool_id"], [o[4]["tool_id"] for o in out])
    finally:
        batched.close()
        for s in singles:
            s.close()


def test_trajectories_independent_of_num_envs_and_threads():
    steps = 4
    small = gym.make_vec(ENV_ID, num_envs=4, num_threads=1, **SMALL)
    large = gym.make_vec(ENV_ID, num_envs=8, num_threads=2, **SMALL)
    try:
        acts = _actions(8, steps, seed=3)
        o4, _ = small.reset(seed=5)
        o8, _ = large.reset(seed=5)
        np.testing.assert_array_equal(o4, o8[:4])
        for a in acts:
            o4, r4, *_ = small.step(a[:4])
            o8, r8, *_ = large.step(a)
            np.testing.assert_array_equal(o4, o8[:4])
            np.testing.assert_array_equal(r4, r8[:4])
    finally:
        small.close()
        large.close()


def test_default_600_tools_assignment_in_info():
    env = gym.make_vec(ENV_ID, num_envs=8, env_id_offset=596, randomization=None)
    try:
        env.reset(seed=0)
        _, _, _, _, info = env.step(np.zeros((8, 29)))
        np.testing.assert_array_equal(info["tool_id"], (596 + np.arange(8)) % 600)
        np.testing.assert_array_equal(env.unwrapped.backend.variant_of_env, info["tool_id"])
    finally:
        env.close()


def test_info_keys_and_reward_is_sum_of_terms(env4):
    env4.reset(seed=6)
    _, reward, _, _, info = env4.step(_actions(4, 1, seed=4)[0])
    for key in ("reward_terms", "success", "successes", "tolerance", "tool_id", "keypoint_dist", "lifted"):
        assert key in info and f"_{key}" in info
    assert {k for k in info["reward_terms"] if not k.startswith("_")} == set(REWARD_TERMS)
    np.testing.assert_allclose(sum(info["reward_terms"][k] for k in REWARD_TERMS), reward, rtol=1e-12)
    np.testing.assert_allclose(info["tolerance"], 0.075)
    assert info["success"].dtype == bool and not info["success"].any()
    # Joint-speed penalties are the only negative terms and follow the joint velocities.
    qvel = env4.unwrapped.backend.qvel[:, :29]
    np.testing.assert_allclose(info["reward_terms"]["arm_speed"], -0.03 * np.abs(qvel[:, :7]).sum(1))


def test_success_after_ten_steps_at_goal_then_delta_goal(monkeypatch):
    env = gym.make_vec(ENV_ID, num_envs=2, **SMALL)
    try:
        task = env.unwrapped
        original = task._evaluate

        def goal_at_object(active):
            pos, quat = task.true_object_pose()
            task._set_goal_pose(np.arange(2), pos, quat)
            return original(active)

        monkeypatch.setattr(task, "_evaluate", goal_at_object)
        env.reset(seed=1)
        for step in range(10):
            _, _, term, trunc, info = env.step(np.zeros((2, 29)))
            assert info["success"].all() == (step == 9)
        np.testing.assert_array_equal(info["successes"], 1)
        np.testing.assert_allclose(info["reward_terms"]["success_bonus"], 1000.0)
        assert not term.any() and not trunc.any()
        assert (task.progress == 0).all() and (task.near_goal_steps == 0).all()
        obj_pos, _ = task.true_object_pose()
        low, high = np.array(task.cfg.goal_low), np.array(task.cfg.goal_high)
        # Delta goal: within 0.1 m per axis of the previous goal (the object pose), clamped to the box.
        assert (np.abs(task.goal_pos - np.clip(obj_pos, low, high)) <= 0.1 + 1e-9).all()
        assert ((task.goal_pos >= low) & (task.goal_pos <= high)).all()
        mocap = task.backend.bind("mocap_pos")[:, task.indices.goal_mocap]
        np.testing.assert_array_equal(mocap, task.goal_pos)
    finally:
        env.close()


def test_truncation_after_max_episode_steps_and_fall_termination():
    env = gym.make_vec(ENV_ID, num_envs=2, max_episode_steps=3, autoreset_mode="disabled",
                       record_episode_statistics=True, **SMALL)
    try:
        task = env.unwrapped
        env.reset(seed=2)
        for step in range(3):
            _, _, term, trunc, info = env.step(np.zeros((2, 29)))
            assert not term.any()
            assert trunc.all() == (step == 2)
        np.testing.assert_array_equal(info["episode"]["l"], 3)
        np.testing.assert_array_equal(info["episode"]["success"], False)
        env.reset(seed=2)
        qpos = task.backend.qpos.copy()
        qpos[0, task.indices.obj_qpos + 2] = 0.05  # env 0's object below the fall height
        task.backend.reset(np.array([0]), qpos[:1], np.zeros((1, task.backend.model.nv)))
        _, _, term, trunc, _ = env.step(np.zeros((2, 29)))
        np.testing.assert_array_equal(term, [True, False])
    finally:
        env.close()


def _hold_still(task) -> np.ndarray:
    """Actions that keep every PD target where it is: arm deltas 0, hand targets mapped back to [-1, 1]."""
    a = np.zeros((task.num_envs, 29))
    a[:, 7:] = tm.unscale_from_limits(task.targets[:, 7:], task.joint_lower[7:], task.joint_upper[7:])
    return a


def test_episode_without_success_lasts_the_sources_599_steps():
    """The source truncates when its counter (1 at an episode's first step) reaches episodeLength - 1 =
    599, so an episode without a success has 599 control steps; the default config matches it."""
    env = gym.make_vec(ENV_ID, num_envs=2, autoreset_mode="disabled", **SMALL)
    try:
        task = env.unwrapped
        env.reset(seed=1)
        for step in range(1, 600):
            _, _, term, trunc, info = env.step(_hold_still(task))
            assert not term.any() and not info["success"].any()
            assert trunc.all() == (step == 599), step
        np.testing.assert_array_equal(task.progress, 599)
    finally:
        env.close()


def test_spawn_height_lift_thresholds_and_first_goal_floor():
    """Spawn at table CENTRE + 0.25 = 0.63 (the source's): shaping starts at z > 0.58, `lifted` at
    z > 0.73, first goals are raised to 0.73; reset positions are the env's own draws around it."""
    assert S.OBJECT_SPAWN_POS == pytest.approx((0.0, 0.0, S.TABLE_POS[2] + 0.25)) == (0.0, 0.0, 0.63)
    n = 512
    env = gym.make_vec(ENV_ID, num_envs=n, **SMALL)
    try:
        task = env.unwrapped
        np.testing.assert_allclose(task.spawn_pos, [0.0, 0.0, 0.63])
        env.reset(seed=4)
        pos = task.true_object_pose()[0]
        from mjvec.rng import EnvRandom

        rng = EnvRandom(task.global_env_ids, 4)
        want = np.array([0.0, 0.0, 0.63]) + rng.uniform(np.arange(n), "reset/object_pos", -np.array([0.1, 0.1, 0.02]),
                                                          np.array([0.1, 0.1, 0.02]), (3,))
        np.testing.assert_allclose(pos, want, atol=1e-12)
        assert 0.61 <= pos[:, 2].min() and pos[:, 2].max() <= 0.65
        cfg = task.cfg
        z = np.array([0.5799, 0.5801, 0.7299, 0.7301])
        lift, _, lifted = tm.lift_terms(z, task.spawn_pos[2], np.zeros(4, bool), offset=cfg.lift_offset,
                                           clip=cfg.lift_clip, threshold=cfg.lift_threshold)
        np.testing.assert_allclose(lift, [0.0, 0.0001, 0.1499, 0.0], atol=1e-9)
        np.testing.assert_array_equal(lifted, [False, False, False, True])
        goal_z = task.goal_pos[:, 2]
        assert goal_z.min() == pytest.approx(0.73)
        # Uniform z in [0.6, 0.95) raised to 0.73: a fraction (0.73 - 0.6) / 0.35 = 0.371 sits on the floor
        # (with the table-top spawn it was 0.8).
        assert np.isclose(goal_z, 0.73).mean() == pytest.approx(0.13 / 0.35, abs=0.06)
    finally:
        env.close()


def test_few_tools_fall_to_the_floor_after_reset_with_the_hand_held_still():
    """All 600 tools, 2 s after reset with the hand holding its reset pose: the fraction whose object
    drops below 0.3 m (off the table: the top is at 0.53) is 21/600 = 0.035 at the source's spawn
    height; with the old table-top + 0.25 spawn the same run gave 49/600 = 0.082."""
    env = gym.make_vec(ENV_ID, num_envs=600, num_tools=600, randomization=None, num_threads=2)
    try:
        task = env.unwrapped
        env.reset(seed=0)
        fell, done = np.zeros(600, bool), np.zeros(600, bool)
        for _ in range(round(2.0 / task.control_dt)):
            _, _, term, trunc, _ = env.step(_hold_still(task))
            fell |= ~done & (task.true_object_pose()[0][:, 2] < 0.3)  # first episode only
            done |= term | trunc
        assert fell.mean() < 0.05, fell.mean()
        assert fell[done].all()  # the only episodes that ended were falls (z < 0.1)
    finally:
        env.close()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"colour": "red"}, r"unexpected keyword argument 'colour'.*allowed options are"),
        ({"backend": "gpu"}, r"backend='gpu' is not supported; allowed values are \{cpu, warp\}"),
        ({"num_tools": 0}, r"num_tools must be an int in \[1, 600\]"),
        ({"num_tools": 601}, r"num_tools must be an int in \[1, 600\]"),
        ({"obs_mode": "state"}, r"obs_mode='state' is not supported; allowed values are \{asymmetric, policy\}"),
        ({"tool_geometry": "voxel"}, r"tool_geometry='voxel' is not supported"),
        ({"max_episode_steps": 0}, r"max_episode_steps must be an int >= 1 or None"),
        ({"env_id_offset": -1}, r"env_id_offset must be an int >= 0"),
        ({"num_threads": 0}, r"num_threads must be an int >= 1 or None"),
        ({"config": {"lift_weight": 1}}, r"config must be a SimToolRealConfig"),
    ],
)
def test_bad_options_raise(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        gym.make_vec(ENV_ID, num_envs=2, **kwargs)


def test_bad_num_envs_and_single_env_options_raise():
    with pytest.raises(ConfigError, match="num_envs must be an int >= 1"):
        gym.make_vec(ENV_ID, num_envs=0)
    with pytest.raises(ConfigError, match=r"builds one env with autoreset_mode='disabled'"):
        gym.make(ENV_ID, autoreset_mode="next_step")


def test_backend_checks_raise():
    with pytest.raises(ConfigError, match=r"num_threads applies to threaded backends \('cpu'\); drop it for "
                                          r"backend='warp'"):
        gym.make_vec(ENV_ID, num_envs=2, backend="warp", num_threads=2)
    with pytest.raises(ConfigError, match=r"backend='tpu' is not supported; allowed values are \{cpu, warp\}"):
        gym.make_vec(ENV_ID, num_envs=2, backend="tpu")


def test_register_envs_is_idempotent():
    spec = gym.spec(ENV_ID)
    register_envs()
    assert gym.spec(ENV_ID) is spec
    assert spec.vector_entry_point is not None and spec.max_episode_steps is None


def test_object_pose_source_moves_policy_keypoints_only(env4):
    task = env4.unwrapped
    shift = np.array([0.01, -0.02, 0.03])
    true_pose = task.true_object_pose

    def shifted():
        pos, quat = true_pose()
        return pos + shift, quat

    release = task.set_object_pose_source(shifted)
    obs, _ = env4.reset(seed=8)
    pol, crit = obs["policy"], obs["critic"]
    for block in ("keypoints_rel_palm", "keypoints_rel_goal"):
        diff = (pol[:, PSL[block]] - crit[:, CSL[block]]).reshape(4, 4, 3)
        np.testing.assert_allclose(diff, np.broadcast_to(shift, diff.shape), atol=1e-6)
    np.testing.assert_array_equal(pol[:, PSL["joint_pos"]], crit[:, CSL["joint_pos"]])
    release()
    obs, _ = env4.reset(seed=8)
    block = "keypoints_rel_palm"
    np.testing.assert_array_equal(obs["policy"][:, PSL[block]], obs["critic"][:, CSL[block]])


def test_lift_latch_and_bonus_through_the_env():
    env = gym.make_vec(ENV_ID, num_envs=2, **SMALL)
    try:
        task = env.unwrapped
        env.reset(seed=3)
        spawn_z = S.OBJECT_SPAWN_POS[2]
        qpos = task.backend.qpos.copy()
        qpos[0, task.indices.obj_qpos + 2] = spawn_z + 0.3  # z_lift = 0.35 > 0.15: lifted at once
        task.backend.reset(np.array([0]), qpos[:1], np.zeros((1, task.backend.model.nv)))
        _, _, _, _, info = env.step(np.zeros((2, 29)))
        terms = info["reward_terms"]
        np.testing.assert_array_equal(info["lifted"], [True, False])
        np.testing.assert_allclose(terms["lift_bonus"], [300.0, 0.0])
        z = task.backend.qpos[1, task.indices.obj_qpos + 2]
        np.testing.assert_allclose(terms["lift"], [0.0, 20.0 * np.clip(z - spawn_z + 0.05, 0.0, 0.5)])
        assert terms["approach"][0] == 0.0  # approach shaping stops once lifted
        _, _, _, _, info = env.step(np.zeros((2, 29)))
        np.testing.assert_allclose(info["reward_terms"]["lift_bonus"], [0.0, 0.0])  # one-time bonus
        assert info["lifted"][0]  # latched even as the object falls
    finally:
        env.close()


def test_tolerance_curriculum_checks_before_use_and_reports_it():
    """Every step is a success (huge tolerance, 1 near-goal step) and an episode ends at 2 successes,
    so with interval 3 and threshold 2 the hand-computed tolerances are: steps 1-2 start value;
    step 3 (the NEXT_STEP reset step, which still counts) sees last = [2, 2] and tightens before use;
    the next check is 3 steps later."""
    from mjvec.tasks.simtoolreal.config import SimToolRealConfig

    cfg = SimToolRealConfig(tolerance_start=1.0, success_steps=1, max_consecutive_successes=2, curriculum_interval=3,
                            curriculum_min_successes=2.0)
    env = gym.make_vec(ENV_ID, num_envs=2, config=cfg, **SMALL)
    try:
        env.reset(seed=0)
        tolerances, dones = [], []
        for _ in range(7):
            _, _, term, trunc, info = env.step(np.zeros((2, 29)))
            tolerances.append(info["tolerance"].copy())
            dones.append((term | trunc).copy())
        np.testing.assert_array_equal(np.array(dones)[:, 0], [False, True, False, False, True, False, False])
        np.testing.assert_allclose(np.array(tolerances)[:, 0], [1.0, 1.0, 0.9, 0.9, 0.9, 0.81, 0.81])
        assert all((t == t[0]).all() for t in tolerances)  # one tolerance for all envs
        np.testing.assert_array_equal(env.unwrapped.curriculum.last_successes, [2, 2])
        with pytest.raises(ConfigError, match="reducer must be set before the first step"):
            env.unwrapped.set_curriculum_reducer(lambda total, count: (total, count))
    finally:
        env.close()


def test_curriculum_reducer_makes_shards_agree_with_one_env():
    """Two shard envs (global ids 0-1 and 2-3) sharing a fake all-reduce take the tolerance
    decisions of one 4-env env; the same shards without it do not (their local means differ)."""
    from mjvec.tasks.simtoolreal.config import SimToolRealConfig

    cfg = SimToolRealConfig(tolerance_start=0.25, success_steps=1, max_consecutive_successes=3, max_episode_steps=3,
                            curriculum_interval=4, curriculum_min_successes=1.0)
    kw = {**SMALL, "config": cfg, "num_threads": 1}
    whole = gym.make_vec(ENV_ID, num_envs=4, **kw)
    shards = {k: gym.make_vec(ENV_ID, num_envs=2, env_id_offset=o, **kw) for k, o in (("a", 0), ("b", 2))}
    alone = gym.make_vec(ENV_ID, num_envs=2, env_id_offset=0, **kw)
    snapshot: dict[str, tuple[float, int]] = {}
    calls = []

    def reducer_of(me: str, other: str):
        def reduce(total: float, count: int) -> tuple[float, int]:
            calls.append((me, total, count))
            return total + snapshot[other][0], count + snapshot[other][1]
        return reduce

    try:
        shards["a"].unwrapped.set_curriculum_reducer(reducer_of("a", "b"))
        shards["b"].unwrapped.set_curriculum_reducer(reducer_of("b", "a"))
        for env in (whole, alone, *shards.values()):
            env.reset(seed=0)
        seen = {k: [] for k in ("whole", "a", "b", "alone")}
        for _ in range(16):
            # What each process would contribute to this step's all-reduce: its envs' statistic before
            # the step (its check comes before it records the step's episodes).
            snapshot.update({k: e.unwrapped.curriculum.local_stat() for k, e in shards.items()})
            for name, env in (("whole", whole), ("alone", alone), *shards.items()):
                n = env.unwrapped.num_envs
                seen[name].append(env.step(np.zeros((n, 29)))[-1]["tolerance"][0])
        assert seen["a"] == seen["whole"] and seen["b"] == seen["whole"]
        assert seen["alone"] != seen["whole"]
        assert min(seen["whole"]) < 0.25  # the curriculum did tighten
        assert calls and all(count == 2 for _, _, count in calls)  # each shard passed its own (sum, 2 envs)
    finally:
        for env in (whole, alone, *shards.values()):
            env.close()


def test_policy_sees_the_object_orientation_with_w_nonnegative_and_the_critic_as_simulated():
    env = gym.make_vec(ENV_ID, num_envs=16, num_tools=6, randomization=None, obs_mode="asymmetric")
    obs, _ = env.reset(seed=3)
    base = env.unwrapped
    w = obs["policy"][:, PSL["object_rot"]][:, 3]
    assert (w >= 0).all()
    raw = np.asarray(base.backend.qpos)[:, base.indices.obj_qpos + 3:base.indices.obj_qpos + 7]
    assert (raw[:, 0] < 0).any(), "the seed must give some w < 0 for this test to mean anything"
    critic_rot = obs["critic"][:, CSL["object_rot"]]
    np.testing.assert_allclose(critic_rot, raw[:, [1, 2, 3, 0]].astype(np.float32), atol=1e-6)
    env.close()


def test_an_episode_cut_short_by_reset_counts_in_the_curriculum_as_the_source_records_it():
    env = gym.make_vec(ENV_ID, num_envs=3, num_tools=3, randomization=None)
    env.reset(seed=0)
    base = env.unwrapped
    base.successes[:] = [2, 0, 5]  # as if those envs had reached goals in their running episodes
    env.reset(options={"reset_mask": np.array([True, False, True])})
    np.testing.assert_array_equal(base.curriculum.last_successes, [2.0, 0.0, 5.0])
    np.testing.assert_array_equal(base.successes, [0, 0, 0])
    env.close()


def test_the_first_goal_floor_is_the_configured_height_above_the_spawn():
    from mjvec.tasks.simtoolreal.config import SimToolRealConfig

    cfg = SimToolRealConfig(goal_min_height_above_spawn=0.25)
    env = gym.make_vec(ENV_ID, num_envs=32, num_tools=3, randomization=None, config=cfg)
    env.reset(seed=1)
    z = np.asarray(env.unwrapped.goal_pos)[:, 2]
    spawn = 0.63
    assert (z >= spawn + 0.25 - 1e-12).all() and np.isclose(z, spawn + 0.25).any()
    env.close()


def test_num_tools_takes_numpy_integers_like_the_other_counts():
    env = gym.make_vec(ENV_ID, num_envs=2, num_tools=np.int64(3), randomization=None)
    assert env.unwrapped.tool_ids.tolist() == [0, 1]
    env.close()
    with pytest.raises(ConfigError, match=r"num_tools must be an int in \[1, 600\].*got 3\.0"):
        gym.make_vec(ENV_ID, num_envs=2, num_tools=3.0)
