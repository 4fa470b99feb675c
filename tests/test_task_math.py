"""SimToolReal task math against hand-computed values and MuJoCo's own quaternion routines."""

from __future__ import annotations

import dataclasses
import math

import mujoco
import numpy as np
import pytest

from mjvec.errors import ConfigError
from mjvec.rng import EnvRandom
from mjvec.tasks.simtoolreal import terms as tm
from mjvec.tasks.simtoolreal.config import SimToolRealConfig
from mjvec.tasks.simtoolreal.curriculum import ToleranceCurriculum

CFG = SimToolRealConfig()


def _random_quats(n: int, seed: int = 0) -> np.ndarray:
    return EnvRandom(np.arange(n), seed).quaternion(np.arange(n), "q")


# ---- quaternions vs mujoco ----------------------------------------------------------------
def test_quat_mul_matches_mju_mulQuat():
    a, b = _random_quats(16, 1), _random_quats(16, 2)
    ours = tm.quat_mul(a, b)
    for i in range(16):
        ref = np.zeros(4)
        mujoco.mju_mulQuat(ref, a[i], b[i])
        np.testing.assert_allclose(ours[i], ref, atol=1e-14)


def test_quat_rotate_matches_mju_rotVecQuat():
    q = _random_quats(16, 3)
    v = EnvRandom(np.arange(16), 4).uniform(np.arange(16), "v", -1.0, 1.0, (3,))
    ours = tm.quat_rotate(q, v)
    for i in range(16):
        ref = np.zeros(3)
        mujoco.mju_rotVecQuat(ref, v[i], q[i])
        np.testing.assert_allclose(ours[i], ref, atol=1e-14)


def test_quat_from_axis_angle_matches_mju_axisAngle2Quat():
    rng = EnvRandom(np.arange(16), 5)
    axis = rng.uniform(np.arange(16), "a", -1.0, 1.0, (3,))
    axis /= np.linalg.norm(axis, axis=-1, keepdims=True)
    angle = rng.uniform(np.arange(16), "t", -math.pi, math.pi)
    ours = tm.quat_from_axis_angle(axis, angle)
    for i in range(16):
        ref = np.zeros(4)
        mujoco.mju_axisAngle2Quat(ref, axis[i], angle[i])
        np.testing.assert_allclose(ours[i], ref, atol=1e-14)


def test_xyzw_round_trip_and_conj():
    q = _random_quats(4)
    np.testing.assert_array_equal(tm.xyzw_to_wxyz(tm.wxyz_to_xyzw(q)), q)
    np.testing.assert_array_equal(tm.wxyz_to_xyzw(np.array([1.0, 2, 3, 4])), [2.0, 3, 4, 1])
    np.testing.assert_allclose(tm.quat_mul(q, tm.quat_conj(q)), np.tile([1.0, 0, 0, 0], (4, 1)), atol=1e-14)


# ---- keypoints ----------------------------------------------------------------------------
def test_keypoint_offsets_are_scaled_corners():
    off = tm.keypoint_offsets(np.array([[0.2, 0.04, 0.02]]), 1.5)
    expected = np.array([[0.15, 0.03, 0.015], [0.15, 0.03, -0.015], [-0.15, -0.03, 0.015], [-0.15, -0.03, -0.015]])
    np.testing.assert_allclose(off[0], expected, atol=1e-15)


def test_max_keypoint_distance_pure_translation_and_rotation():
    off = tm.keypoint_offsets(np.array(CFG.fixed_keypoint_size), CFG.keypoint_scale)[None]
    ident = np.array([[1.0, 0, 0, 0]])
    obj = tm.keypoint_positions(np.array([[0.0, 0.0, 0.8]]), ident, off)
    # Pure translation by (0.03, 0.04, 0): every keypoint moves 0.05.
    goal = tm.keypoint_positions(np.array([[0.03, 0.04, 0.8]]), ident, off)
    np.testing.assert_allclose(tm.max_keypoint_distance(obj, goal), [0.05], atol=1e-15)
    # 180 deg about z: corner (hx, hy, hz) goes to (-hx, -hy, hz): distance 2*sqrt(hx^2+hy^2).
    rot_z = np.array([[0.0, 0, 0, 1]])
    goal = tm.keypoint_positions(np.array([[0.0, 0.0, 0.8]]), rot_z, off)
    hx, hy = 0.75 * 0.141, 0.75 * 0.03025
    np.testing.assert_allclose(tm.max_keypoint_distance(obj, goal), [2 * math.hypot(hx, hy)], atol=1e-14)
    # Roll about the long (x) axis by 180 deg moves corners by 2*sqrt(hy^2+hz^2): weighted less.
    rot_x = np.array([[0.0, 1, 0, 0]])
    goal = tm.keypoint_positions(np.array([[0.0, 0.0, 0.8]]), rot_x, off)
    hz = 0.75 * 0.0271
    np.testing.assert_allclose(tm.max_keypoint_distance(obj, goal), [2 * math.hypot(hy, hz)], atol=1e-14)


# ---- action pipeline ----------------------------------------------------------------------
def _limits():
    lower = np.concatenate([np.full(7, -2.0), np.full(22, -0.5)])
    upper = np.concatenate([np.full(7, 2.0), np.full(22, 1.5)])
    return lower, upper


def test_action_pipeline_matches_hand_computation():
    lower, upper = _limits()
    prev = np.zeros((2, 29))
    prev[1, :7] = 1.99  # near the upper arm limit: the clamp acts before smoothing
    prev[1, 7:] = 1.0
    actions = np.zeros((2, 29))
    actions[:, :7] = 1.0
    actions[0, 7:] = -1.0  # hand -> lower limit (absolute)
    actions[1, 7:] = 0.5  # hand -> lower + 0.75 * range = 1.0
    step = CFG.dof_speed_scale / 60.0
    out = tm.compute_joint_targets(actions, prev, lower, upper, arm_step=step, arm_moving_average=0.1,
                                   hand_moving_average=0.1)
    # env 0: arm target 0.025 then EMA -> 0.0025; hand target -0.5 then EMA -> -0.05
    np.testing.assert_allclose(out[0, :7], 0.1 * 0.025)
    np.testing.assert_allclose(out[0, 7:], 0.1 * -0.5)
    # env 1: arm target clamp(1.99 + 0.025) = 2.0, EMA -> 0.1*2 + 0.9*1.99
    np.testing.assert_allclose(out[1, :7], 0.1 * 2.0 + 0.9 * 1.99)
    np.testing.assert_allclose(out[1, 7:], 0.1 * 1.0 + 0.9 * 1.0)


def test_arm_step_is_bounded_by_0025_rad_before_smoothing():
    lower, upper = _limits()
    prev = np.zeros((1, 29))
    actions = np.ones((1, 29))
    out = tm.compute_joint_targets(actions, prev, lower, upper, arm_step=CFG.dof_speed_scale / 60.0,
                                   arm_moving_average=1.0, hand_moving_average=1.0)
    np.testing.assert_allclose(out[0, :7], 0.025)
    np.testing.assert_allclose(out[0, 7:], upper[7:])


def test_hand_clamped_after_smoothing_and_scale_roundtrip():
    lower, upper = _limits()
    x = np.linspace(-1, 1, 5)
    np.testing.assert_allclose(tm.unscale_from_limits(tm.scale_to_limits(x, -0.5, 1.5), -0.5, 1.5), x)
    prev = np.full((1, 29), 5.0)  # an out-of-range previous target is pulled back by the final clamp
    out = tm.compute_joint_targets(np.zeros((1, 29)), prev, lower, upper, arm_step=0.025,
                                   arm_moving_average=0.1, hand_moving_average=0.1)
    np.testing.assert_array_equal(out[0], upper)


# ---- reward terms -------------------------------------------------------------------------
def test_approach_term_sum_of_improvements_and_sentinel():
    closest = np.array([[-1.0] * 5, [0.30, 0.30, 0.30, 0.30, 0.30]])
    current = np.array([[0.5] * 5, [0.25, 0.35, 0.28, 0.30, 0.10]])
    lifted = np.array([False, False])
    term, new = tm.approach_term(closest, current, lifted, clip=10.0)
    np.testing.assert_allclose(term, [0.0, 0.05 + 0.02 + 0.20])
    np.testing.assert_allclose(new[1], [0.25, 0.30, 0.28, 0.30, 0.10])
    np.testing.assert_allclose(new[0], 0.5)
    term, _ = tm.approach_term(closest, current, np.array([False, True]), clip=10.0)
    assert term[1] == 0.0


def test_lift_terms_latch_and_one_time_bonus():
    z_spawn = 0.63
    lifted = np.zeros(3, bool)
    z = np.array([0.53, 0.70, 0.80])  # z_lift = -0.05, 0.12, 0.22
    lift, just, lifted = tm.lift_terms(z, z_spawn, lifted, offset=0.05, clip=0.5, threshold=0.15)
    np.testing.assert_allclose(lift, [0.0, 0.12, 0.0])
    np.testing.assert_array_equal(just, [False, False, True])
    np.testing.assert_array_equal(lifted, [False, False, True])
    # Next step: env 2 dropped back down but stays lifted, no second bonus; env 1 crosses now.
    lift, just, lifted = tm.lift_terms(np.array([0.53, 0.75, 0.55]), z_spawn, lifted, offset=0.05, clip=0.5,
                                       threshold=0.15)
    np.testing.assert_allclose(lift, [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(just, [False, True, False])
    np.testing.assert_array_equal(lifted, [False, True, True])


def test_keypoint_progress_gated_by_lift():
    best = np.array([-1.0, 0.20, 0.20, 0.20])
    d = np.array([0.3, 0.15, 0.25, 0.15])
    lifted = np.array([True, True, True, False])
    term, new = tm.keypoint_progress_term(best, d, lifted, clip=100.0)
    np.testing.assert_allclose(term, [0.0, 0.05, 0.0, 0.0])
    np.testing.assert_allclose(new, [0.3, 0.15, 0.20, 0.15])


def test_ten_consecutive_near_goal_steps_with_a_break():
    tol = 0.02  # success radius 0.03 with the 1.5 factor
    steps = np.zeros(1, np.int64)
    successes = []
    dists = [0.029] * 9 + [0.031] + [0.03] * 10  # 9 near, a break, then 10 near (boundary counts)
    for d in dists:
        steps, success = tm.near_goal_update(steps, np.array([d]), tol, keypoint_scale=1.5, success_steps=10)
        successes.append(bool(success[0]))
    assert successes.index(True) == 19
    assert sum(successes) == 1


def test_joint_speed_penalties():
    qvel = np.zeros((1, 29))
    qvel[0, :7] = [1, -1, 2, 0, 0, 0, -3]
    qvel[0, 7:] = -0.5
    arm, hand = tm.joint_speed_penalties(qvel, arm_weight=0.03, hand_weight=0.003)
    np.testing.assert_allclose(arm, [-0.03 * 7])
    np.testing.assert_allclose(hand, [-0.003 * 22 * 0.5])


# ---- curriculum ---------------------------------------------------------------------------
# A scripted run of 4 envs, interval 3, threshold 3: per step, the (env, successes) episodes that
# finish in it. The source's rule looks at each env's MOST RECENT finished episode (0 before one).
SCRIPT = {1: {0: 6}, 2: {1: 6}, 3: {0: 0}, 4: {2: 9, 3: 9}, 6: {1: 0, 2: 0, 3: 0}, 10: {0: 12}}
# Hand-computed from that rule (the tolerance in effect during each step, checked before use):
#   steps 1-2: fewer than 3 steps since the start -> 0.075.
#   step 3: last = [6, 6, 0, 0], mean 3 >= 3 -> 0.075 * 0.9 = 0.0675; interval restarts at 3.
#   step 6: last = [0, 6, 9, 9] (env 0's latest episode had 0), mean 6 -> 0.0675 * 0.9 = 0.06075.
#   steps 9, 10: last = [0, 0, 0, 0], mean 0 < 3 -> unchanged, checked again every step.
#   step 11: last = [12, 0, 0, 0], mean 3 -> 0.06075 * 0.9 = 0.054675.
EXPECTED = [0.075, 0.075, 0.0675, 0.0675, 0.0675, 0.06075, 0.06075, 0.06075, 0.06075, 0.06075, 0.054675, 0.054675]


def _curriculum(n: int = 4, reducer=None) -> ToleranceCurriculum:
    return ToleranceCurriculum(n, 0.075, 0.9, 0.01, interval=3, min_successes=3.0, reducer=reducer)


def _finish(cur: ToleranceCurriculum, step: int, env_ids: range) -> None:
    done = {e: k for e, k in SCRIPT.get(step, {}).items() if e in env_ids}
    local = np.array([e - env_ids.start for e in done], np.int64)
    cur.finish(local, np.array(list(done.values()), np.float64))


def test_curriculum_uses_each_envs_most_recent_finished_episode():
    cur = _curriculum()
    seen = []
    for step in range(1, len(EXPECTED) + 1):
        cur.begin_step()
        seen.append(cur.tolerance)
        _finish(cur, step, range(4))
    np.testing.assert_allclose(seen, EXPECTED, rtol=0, atol=1e-15)
    np.testing.assert_array_equal(cur.last_successes, [12, 0, 0, 0])


def test_curriculum_floor():
    cur = ToleranceCurriculum(2, 0.075, 0.9, 0.01, interval=1, min_successes=3.0)
    cur.finish(np.array([0, 1]), np.array([10.0, 10.0]))
    for _ in range(40):
        cur.begin_step()
    assert cur.tolerance == 0.01  # 0.075 * 0.9^k never hits 0.01 exactly: the floor clamps


def test_curriculum_shards_with_an_all_reduce_equal_one_curriculum():
    """Two shards (envs 0-1 and 2-3), each with a fake all-reduce that adds the other shard's
    statistic, stepped in lockstep, take the unsharded decisions; without it they do not."""
    shards: dict[str, ToleranceCurriculum] = {}

    def reducer_of(other: str):
        def reduce(total: float, count: int) -> tuple[float, int]:
            o_total, o_count = shards[other].local_stat()
            return total + o_total, count + o_count
        return reduce

    shards["a"], shards["b"] = _curriculum(2, reducer_of("b")), _curriculum(2, reducer_of("a"))
    alone = {"a": _curriculum(2), "b": _curriculum(2)}
    seen = {k: [] for k in ("a", "b", "alone_a", "alone_b")}
    for step in range(1, len(EXPECTED) + 1):
        for cur in (*shards.values(), *alone.values()):
            cur.begin_step()  # every process checks before any of them records this step's episodes
        for name, ids in (("a", range(0, 2)), ("b", range(2, 4))):
            seen[name].append(shards[name].tolerance)
            seen[f"alone_{name}"].append(alone[name].tolerance)
            _finish(shards[name], step, ids)
            _finish(alone[name], step, ids)
    np.testing.assert_allclose(seen["a"], EXPECTED, rtol=0, atol=1e-15)
    np.testing.assert_allclose(seen["b"], EXPECTED, rtol=0, atol=1e-15)
    assert seen["alone_a"] != EXPECTED and seen["alone_b"] != EXPECTED


def test_curriculum_reducer_errors():
    with pytest.raises(ConfigError, match="reducer must be callable as reducer"):
        _curriculum(reducer=3)
    cur = _curriculum()
    cur.begin_step()
    with pytest.raises(ConfigError, match=r"must be set before the first step .* stepped 1 times"):
        cur.set_reducer(lambda total, count: (total, count))
    bad = ToleranceCurriculum(2, 0.075, 0.9, 0.01, interval=1, min_successes=3.0, reducer=lambda t, c: (t, 0))
    with pytest.raises(ConfigError, match="reducer returned a count of 0"):
        bad.begin_step()


# ---- goals --------------------------------------------------------------------------------
def test_first_goal_ranges_and_min_height():
    n = 2000
    rng = EnvRandom(np.arange(n), 7)
    spawn_z = 0.63  # the source's spawn: table centre 0.38 + 0.25
    pos, quat = tm.sample_first_goal(rng, np.arange(n), CFG, spawn_z)
    assert (pos[:, 0] >= -0.35).all() and (pos[:, 0] < 0.35).all()
    assert (pos[:, 1] >= -0.2).all() and (pos[:, 1] < 0.2).all()
    assert (pos[:, 2] >= spawn_z + 0.10 - 1e-12).all() and (pos[:, 2] < 0.95).all()
    assert np.isclose(pos[:, 2], spawn_z + 0.10).mean() > 0.2  # the clip is active for ~half
    np.testing.assert_allclose(np.linalg.norm(quat, axis=1), 1.0, atol=1e-12)
    # Uniform SO(3): E[w^2] = 1/4 per component.
    np.testing.assert_allclose((quat**2).mean(axis=0), 0.25, atol=0.03)


def test_delta_goal_against_mujoco_composition():
    prev_pos = np.array([[0.30, 0.0, 0.9]])
    prev_quat = _random_quats(1, 9)
    offset = np.array([[0.08, -0.05, 0.09]])
    axis_raw = np.array([[0.2, 0.4, 0.4]])
    angle = np.array([1.0])
    pos, quat = tm.delta_goal(prev_pos, prev_quat, offset, axis_raw, angle, np.array(CFG.goal_low),
                              np.array(CFG.goal_high))
    np.testing.assert_allclose(pos, [[0.35, -0.05, 0.95]])  # x and z clamped to the box
    axis = axis_raw[0] / np.linalg.norm(axis_raw[0])
    dq, ref = np.zeros(4), np.zeros(4)
    mujoco.mju_axisAngle2Quat(dq, axis, 1.0)
    mujoco.mju_mulQuat(ref, prev_quat[0], dq)
    ref *= np.sign(ref[0])
    np.testing.assert_allclose(quat[0], ref, atol=1e-14)


def test_sampled_delta_goal_axis_in_positive_octant_and_angle_bounded():
    n = 1000
    rng = EnvRandom(np.arange(n), 11)
    prev_pos = np.tile([0.0, 0.0, 0.8], (n, 1))
    prev_quat = np.tile([1.0, 0, 0, 0], (n, 1))
    pos, quat = tm.sample_delta_goal(rng, np.arange(n), prev_pos, prev_quat, CFG)
    assert (np.abs(pos - prev_pos) <= 0.1 + 1e-12).all()
    # From the identity the new quat is the delta itself: w = cos(theta/2) >= cos(45 deg).
    assert (quat[:, 0] >= math.cos(math.pi / 4) - 1e-12).all()
    # sign(theta) * axis: with w >= 0 the vector part is sin(theta/2) * axis, so all of its
    # components share theta's sign (positive-octant axis).
    vec = quat[:, 1:]
    signs = np.sign(vec)
    assert ((signs >= 0).all(axis=1) | (signs <= 0).all(axis=1)).all()
    assert (signs > 0).all(axis=1).mean() > 0.4 and (signs < 0).all(axis=1).mean() > 0.4


# ---- config -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("frame_skip", 0, "frame_skip must be an int >= 1"),
        ("arm_moving_average", 0.0, r"arm_moving_average must be in \(0, 1\]"),
        ("tolerance_min", 0.1, "tolerance_min .* must be <= tolerance_start"),
        ("goal_low", (0.0, 0.0, 1.0), "goal_low .* must be < goal_high"),
        ("lift_weight", float("nan"), "lift_weight must be a finite float"),
        ("approach_weight", -1.0, "approach_weight must be >= 0"),
        ("fixed_keypoint_size", (0.1, 0.2), "fixed_keypoint_size must be 3 finite floats"),
    ],
)
def test_config_rejects_bad_values(field, value, match):
    with pytest.raises(ConfigError, match=match):
        dataclasses.replace(CFG, **{field: value})


def test_config_defaults_are_the_paper_values():
    # The source's episodeLength 600 truncates when its counter reaches 599: 599 control steps.
    assert CFG.frame_skip == 2 and CFG.max_episode_steps == 599
    assert CFG.dof_speed_scale / 60.0 == pytest.approx(0.025)
    assert (CFG.approach_weight, CFG.lift_weight, CFG.lift_bonus, CFG.keypoint_weight, CFG.success_bonus) == (
        50.0, 20.0, 300.0, 200.0, 1000.0)
    assert (CFG.arm_speed_penalty, CFG.hand_speed_penalty) == (0.03, 0.003)
    assert (CFG.tolerance_start, CFG.tolerance_decay, CFG.tolerance_min, CFG.curriculum_interval) == (
        0.075, 0.9, 0.01, 3000)
