"""SimToolReal-v0 rules checked against the authors' env.py, where the port had drifted from it.

- The first goal's floor is, by default, the source's ``_clip_goal_z``: spawn z - lift offset +
  lift threshold (liftingBonusThreshold), so it follows `lift_threshold` and `lift_offset`.
- With the table's height randomized (`mjvec.tasks.simtoolreal.presets.table_height`), the tool spawns over the
  table where it is, and the lift reward, `lifted` and the first goal's floor are measured from
  that spawn height, as the source's object_init_state z is set from each reset's table height.
- A NEXT_STEP autoreset step draws no random push for the envs it resets: they are not pushed and
  their push streams stay where they were.

Oracles: the source's formulas on the env's own state (table heights read from the backend, the
tool's height after the step), and the env's random streams replayed with `mjvec.rng.EnvRandom`.
"""

from __future__ import annotations

import copy

import gymnasium as gym
import numpy as np
import pytest

import mjvec
from mjvec.randomization import RandomPushes
from mjvec.rng import EnvRandom
from mjvec.tasks.simtoolreal import scene as S
from mjvec.tasks.simtoolreal.config import SimToolRealConfig
from mjvec.tasks.simtoolreal.presets import table_height
from mjvec.xp import Rows

SMALL = {"num_tools": 3, "backend": "cpu", "num_threads": 1}


def test_the_first_goal_floor_follows_the_lift_rule_by_default():
    cfg = SimToolRealConfig(lift_threshold=0.25)
    env = gym.make_vec(mjvec.ENV_ID, num_envs=64, randomization=None, config=cfg, **SMALL)
    env.reset(seed=2)
    z = np.asarray(env.unwrapped.goal_pos)[:, 2]
    floor = 0.63 - 0.05 + 0.25  # the source: object_init_state z - 0.05 + liftingBonusThreshold
    assert (z >= floor - 1e-12).all() and np.isclose(z, floor).sum() >= 10  # (0.83 - 0.6) / 0.35 of them
    env.close()
    assert cfg.goal_min_height_above_spawn is None and cfg.goal_floor_above_spawn == pytest.approx(0.20)
    explicit = SimToolRealConfig(lift_threshold=0.25, goal_min_height_above_spawn=0.1)
    assert explicit.goal_floor_above_spawn == 0.1


@pytest.mark.parametrize("backend", ["cpu", pytest.param("warp", marks=pytest.mark.slow)])
def test_a_randomized_table_height_moves_the_spawn_the_lift_reference_and_the_goal_floor(backend):
    """On Warp the task runs in torch on the device: the same rule through its device path."""
    n = 48
    kwargs = {**SMALL, "backend": backend, **({"device": "cpu", "array_backend": "numpy"} if backend == "warp" else {})}
    if backend == "warp":
        pytest.importorskip("mujoco_warp")
        del kwargs["num_threads"]
    env = gym.make_vec(mjvec.ENV_ID, num_envs=n, randomization=[table_height(0.03, 0.06)], **kwargs)
    task = env.unwrapped
    env.reset(seed=5)
    table_z = task.backend.field_values("geom_pos")[:, task.backend.model.geom(S.TABLE_GEOM_NAME).id, 2]
    assert (table_z >= S.TABLE_POS[2] + 0.03 - 1e-12).all() and np.ptp(table_z) > 0.01  # each env its own table
    spawn_z = table_z + 0.25  # the source: tableResetZ (this reset's draw) + tableObjectZOffset
    rng = EnvRandom(task.global_env_ids, 5)
    noise = np.array(task.cfg.spawn_pos_noise)
    draw = rng.uniform(np.arange(n), "reset/object_pos", -noise, noise, (3,))
    atol = 1e-12 if backend == "cpu" else 1e-6  # Warp's state is float32
    want_pos = draw + np.stack([0 * spawn_z, 0 * spawn_z, spawn_z], 1)
    np.testing.assert_allclose(_host(task.true_object_pose()[0]), want_pos, atol=atol)
    goal_z = _host(task.goal_pos)[:, 2]
    floor = spawn_z - 0.05 + 0.15
    assert (goal_z >= floor - atol).all() and np.isclose(goal_z, floor, atol=atol).sum() >= 8
    # The lift reward of a step, from the tool's height after it and the env's own spawn height.
    _, _, _, _, info = env.step(np.zeros((n, 29), np.float32))
    z = _host(task.true_object_pose()[0])[:, 2]
    want = 20.0 * np.clip(z - spawn_z + 0.05, 0.0, 0.5)
    np.testing.assert_allclose(_host(info["reward_terms"]["lift"]), want, atol=1e-9 if backend == "cpu" else 1e-4)
    assert np.abs(want - 20.0 * np.clip(z - 0.63 + 0.05, 0.0, 0.5)).min() > 0.5  # from 0.63 it would differ
    env.close()


def _host(value) -> np.ndarray:
    return value.cpu().numpy() if hasattr(value, "cpu") else np.asarray(value)


def test_an_autoreset_step_draws_no_push_for_the_envs_it_resets():
    """Env 1 truncates in step 1, so step 2 autoresets it (NEXT_STEP) instead of stepping it: it is
    not pushed in step 2, and its push-draw streams advanced once (step 1), the others' twice."""
    n, seed = 4, 7
    env = RandomPushes(gym.make_vec(mjvec.ENV_ID, num_envs=n, randomization=None, **SMALL), prob_range=(0.9, 0.9))
    task = env.unwrapped
    env.reset(seed=seed)
    action = np.zeros((n, 29), np.float32)
    task.lifted[:] = True  # pushes are allowed where the tool is lifted
    task.episode_steps[1] = task.max_episode_steps - 1  # env 1's episode ends with step 1
    _, _, _, truncated, _ = env.step(action)
    assert truncated.tolist() == [False, True, False, False]
    env.step(action)
    assert not env.force_pushed[1] and not env.torque_pushed[1] and not env.pushed[1]
    oracle = EnvRandom(task.global_env_ids, seed)
    for kind in ("force", "torque"):
        stream = f"dr/push_{kind}_draw"
        drawn = {1: 1, 0: 2, 2: 2, 3: 2}  # draws each env's stream gave so far
        for env_id, count in drawn.items():
            for _ in range(count + 1):  # the oracle's draw after `count` of them
                want = oracle.uniform(Rows.of_ids([env_id], n), stream, 0.0, 1.0)
            got = task.rng.uniform(Rows.of_ids([env_id], n), stream, 0.0, 1.0)
            assert got.tolist() == want.tolist(), (kind, env_id)
    np.testing.assert_array_equal(task.autoresetting(), [False, True, False, False])
    env.close()


def _corners(pos: np.ndarray, quat: np.ndarray, dims: np.ndarray) -> np.ndarray:
    """(N, 4, 3) the grasp-box keypoints (the source's 4 corners, half-extents 1.5 x dims / 2)."""
    import mujoco

    signs = np.array([[1, 1, 1], [1, 1, -1], [-1, -1, 1], [-1, -1, -1]], float)
    out = np.empty((pos.shape[0], 4, 3))
    for i in range(pos.shape[0]):
        rot = np.empty(9)
        mujoco.mju_quat2Mat(rot, quat[i])
        out[i] = pos[i] + (signs * 0.75 * dims[i]) @ rot.reshape(3, 3).T
    return out


def test_the_observation_of_a_success_step_already_shows_the_new_goal():
    """The documented deviation (docs/simtoolreal.md): the goal a success draws is in the
    observation of that same step (the source's appears one observation later)."""
    from mjvec.tasks.simtoolreal.terms import POLICY_LAYOUT, layout_slices

    cfg = SimToolRealConfig(tolerance_start=5.0, success_steps=1)  # every env succeeds at its first step
    env = gym.make_vec(mjvec.ENV_ID, num_envs=4, randomization=None, config=cfg, **SMALL)
    task = env.unwrapped
    env.reset(seed=3)
    old_goal = (np.array(task.goal_pos), np.array(task.goal_quat))
    obs, _, _, _, info = env.step(np.zeros((4, 29), np.float32))
    assert info["success"].all()
    new_goal = (np.asarray(task.goal_pos), np.asarray(task.goal_quat))
    assert not np.allclose(new_goal[0], old_goal[0])
    pos, quat = task.true_object_pose()
    dims = np.asarray(task.handle_dims)
    got = obs[:, layout_slices(POLICY_LAYOUT)["keypoints_rel_goal"]].reshape(4, 4, 3)
    want = _corners(pos, quat, dims) - _corners(*new_goal, dims)
    np.testing.assert_allclose(got, want, atol=1e-5)  # float32 observation
    assert np.abs(got - (_corners(pos, quat, dims) - _corners(*old_goal, dims))).max() > 0.01
    env.close()


# The source's LEFT_SHARPA_KUKA_LINK_TO_ADJACENT_LINKS (isaacgymenvs/tasks/simtoolreal/adjacent_links.py),
# the robot link pairs it filters out of an otherwise all-pairs self-collision.
SOURCE_ADJACENT = {
    **{f"iiwa14_link_{i}": [f"iiwa14_link_{i + 1}"] for i in range(6)},
    "iiwa14_link_7": ["iiwa14_link_6", "left_thumb_CMC_VL", "left_thumb_MC", "left_index_MCP_VL", "left_index_PP",
                      "left_middle_MCP_VL", "left_middle_PP", "left_ring_MCP_VL", "left_ring_PP", "left_pinky_MC"],
    **{f"left_{f}_MCP_VL": [f"left_{f}_PP"] for f in ("index", "middle", "ring")},
    **{f"left_{f}_PP": [f"left_{f}_MP"] for f in ("index", "middle", "ring", "pinky")},
    **{f"left_{f}_MP": [f"left_{f}_DP"] for f in ("index", "middle", "ring", "pinky")},
    "left_pinky_MC": ["left_pinky_MCP_VL", "left_pinky_PP"],
    "left_pinky_MCP_VL": ["left_pinky_PP"],
    "left_thumb_CMC_VL": ["left_thumb_MC"],
    "left_thumb_MC": ["left_thumb_MCP_VL", "left_thumb_PP"],
    "left_thumb_MCP_VL": ["left_thumb_PP"],
    "left_thumb_PP": ["left_thumb_DP"],
}
# This model's body for each source link: a virtual link (VL) is part of the next link's body (one
# body with both knuckle hinges), and the palm is part of link 7 (welded to it, as merged in the source).
MERGED = {"left_thumb_CMC_VL": "left_thumb_MC", "left_thumb_MCP_VL": "left_thumb_PP",
          "left_index_MCP_VL": "left_index_PP", "left_middle_MCP_VL": "left_middle_PP",
          "left_ring_MCP_VL": "left_ring_PP", "left_pinky_MCP_VL": "left_pinky_PP", "left_hand_C_MC": "iiwa14_link_7"}


def _robot_pairs_in_contact(model, data) -> set[frozenset[str]]:
    pairs = set()
    for c in data.contact[: data.ncon]:
        names = [model.body(model.geom_bodyid[g]).name for g in (c.geom1, c.geom2)]
        if all(n.startswith(("iiwa14", "left_")) for n in names):
            pairs.add(frozenset(MERGED.get(n, n) for n in names))
    return pairs


def test_robot_self_collision_is_every_pair_but_the_sources_adjacency_table():
    """In poses across the joint ranges, the robot link pairs MuJoCo makes contacts for are exactly
    the pairs whose geoms overlap, minus the source's adjacent pairs and the one documented
    exclude (link 5 vs link 7, whose capsules always overlap). Before, no arm pair collided."""
    import mujoco

    from mjvec.assets import robot as R

    model = S.compile_scene(0)
    data = mujoco.MjData(model)
    filtered = {frozenset(MERGED.get(n, n) for n in (a, b)) for a, bs in SOURCE_ADJACENT.items() for b in bs}
    filtered.add(frozenset(("iiwa14_link_5", "iiwa14_link_7")))  # the documented extra exclude
    robot = [g for g in range(model.ngeom) if model.body(model.geom_bodyid[g]).name.startswith(("iiwa14", "left_"))]
    body_of = {g: MERGED.get(model.body(model.geom_bodyid[g]).name, model.body(model.geom_bodyid[g]).name)
               for g in robot}
    rng = np.random.default_rng(0)
    seen_arm_hand = 0
    for _ in range(300):
        data.qpos[:29] = rng.uniform(R.JOINT_LOWER, R.JOINT_UPPER)
        data.qpos[29:32] = (5.0, 5.0, 5.0)  # the tool far away
        mujoco.mj_forward(model, data)
        overlapping = set()
        for i, a in enumerate(robot):
            for b in robot[i + 1:]:
                pair = frozenset(body_of[g] for g in (a, b))
                if len(pair) == 2 and pair not in filtered and mujoco.mj_geomDistance(model, data, a, b, 0.0, None) < 0:
                    overlapping.add(pair)
        assert _robot_pairs_in_contact(model, data) == overlapping
        seen_arm_hand += sum(any(n.startswith("iiwa14") for n in p) and any(n.startswith("left") for n in p)
                             for p in overlapping)
    assert seen_arm_hand > 0  # arm-vs-hand pairs were among them


def test_the_source_pool_of_1200_tools_is_available_and_is_the_authors():
    """tool_pool="source": 1,200 tools, ToolCatalog(42, 100), the authors' own generator. Oracle
    for the pool: its first hammer as a third party recorded it from the authors' generator (seed
    42, 100 per type, before the shuffle: handle and head sizes and densities), and its tool 0, the
    paper run's env-0 tool. Oracle for the envs: each env's compiled tool mass vs that tool alone."""
    from mjvec.errors import ConfigError
    from mjvec.tasks.simtoolreal.catalog.tools import ToolCatalog, source_env0_tool

    catalog = ToolCatalog(42, 100)
    assert len(catalog) == 1200 and catalog.counts_by_topology() == {"box_only": 100, "box_box": 500,
                                                                     "capsule_box": 600}
    hammer = next(t for t in catalog if t.handle_density == pytest.approx(412.36203565420874, abs=1e-9))
    np.testing.assert_allclose(hammer.handle_dims, (0.24630474692314314, 0.021682799299900978, 0.017424430711419206))
    np.testing.assert_allclose(hammer.head_dims, (0.0479264685607898, 0.08752674564408842, 0.03238110465145311))
    assert hammer.head_density == pytest.approx(837.7150228240811)
    env = gym.make_vec(mjvec.ENV_ID, num_envs=3, tool_pool="source", num_tools=1200, env_id_offset=1197,
                       randomization=None, backend="cpu", num_threads=1)
    task = env.unwrapped
    assert task.tool_ids.tolist() == [1197, 1198, 1199]
    body = task.backend.model.body(S.OBJECT_BODY_NAME).id
    for i, tool in enumerate(task.tool_ids):
        alone = S.compile_scene(int(tool), catalog=catalog)
        model = copy.deepcopy(task.backend.env_template(i))
        task.backend.write_env_model(i, model)  # env i's own values (as its frames are drawn)
        assert model.body_mass[body] == pytest.approx(alone.body_mass[body])
        np.testing.assert_allclose(model.geom_size, alone.geom_size)
        assert alone.body_mass[body] == pytest.approx(catalog[int(tool)].mass)
    env.close()
    env = gym.make_vec(mjvec.ENV_ID, num_envs=2, tool_pool="source", randomization=None, backend="cpu")
    assert env.unwrapped.catalog[0] == source_env0_tool() and env.unwrapped.object_mass[0] == source_env0_tool().mass
    env.close()
    with pytest.raises(ConfigError, match=r"num_tools must be an int in \[1, 600\].*tool_pool='source' has the "
                                          r"authors' 1,200, got 1200"):
        gym.make_vec(mjvec.ENV_ID, num_envs=2, num_tools=1200)
    with pytest.raises(ConfigError, match=r"tool_pool='all' is not supported; allowed values are"):
        gym.make_vec(mjvec.ENV_ID, num_envs=2, tool_pool="all")


def test_the_sources_link_damping_is_negligible_next_to_the_drives():
    """Why the source's 0.01 link damping is left out (docs/simtoolreal.md): PhysX's link velocity
    damping is the generalized force -0.01 M(q) qdot; its diagonal (MuJoCo's mass matrix of this
    robot) is at most 0.16 % of an arm joint's kd and 0.015 % of a hand joint's at the default
    posture, and under 0.5 % anywhere in the joint ranges."""
    import mujoco

    from mjvec.assets import robot as R

    model = S.compile_scene(0)
    data = mujoco.MjData(model)
    full = np.zeros((model.nv, model.nv))

    def ratios(q: np.ndarray) -> np.ndarray:
        data.qpos[:29] = q
        mujoco.mj_forward(model, data)
        mujoco.mj_fullM(model, data, full)
        return 0.01 * np.diag(full)[:29] / R.JOINT_KD

    at_rest = ratios(R.DEFAULT_JOINT_POS)
    assert at_rest[:7].max() == pytest.approx(1.6e-3, rel=0.05)
    assert at_rest[7:].max() == pytest.approx(1.45e-4, rel=0.05)
    rng = np.random.default_rng(0)
    assert max(ratios(rng.uniform(R.JOINT_LOWER, R.JOINT_UPPER)).max() for _ in range(200)) < 5e-3
