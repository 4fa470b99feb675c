"""The task math, goal sampling and curriculum on the same inputs in numpy (float64, the host
path) and torch (float32, as on the Warp device), term by term.

Oracle: the numpy results (themselves checked against MuJoCo's functions in test_task_math.py).
float32 tolerance: rtol 2e-6 relative to each term's scale plus atol 1e-6 (measured below 5e-7
relative for every term). Boolean terms are compared exactly, away from their thresholds (inputs
closer than 1e-4 to a threshold are moved off it, so float32 rounding cannot flip them).
"""

from __future__ import annotations

import numpy as np
import pytest

from mjvec.rng import EnvRandom
from mjvec.tasks.simtoolreal import terms as tm
from mjvec.tasks.simtoolreal.config import SimToolRealConfig
from mjvec.tasks.simtoolreal.curriculum import ToleranceCurriculum
from mjvec.xp import Rows

torch = pytest.importorskip("torch")

N = 512
RTOL, ATOL = 2e-6, 1e-6


def _t(a: np.ndarray):
    return torch.as_tensor(a, dtype=torch.float32 if a.dtype.kind == "f" else None)


def _close(got, want: np.ndarray, what: str) -> None:
    got = got.numpy() if hasattr(got, "numpy") else np.asarray(got)
    if want.dtype == bool or want.dtype.kind in "iu":
        np.testing.assert_array_equal(got, want, err_msg=what)
        return
    scale = max(float(np.abs(want).max(initial=0.0)), 1.0)
    np.testing.assert_allclose(got, want, rtol=0, atol=ATOL + RTOL * scale, err_msg=what)


def _both(fn, *args, **kwargs) -> tuple:
    """fn on numpy float64 args and on torch float32 copies of them; each result as a tuple."""
    host = fn(*args, **kwargs)
    dev = fn(*(_t(a) if isinstance(a, np.ndarray) else a for a in args), **kwargs)
    return _as_tuple(host), _as_tuple(dev)


def _as_tuple(result) -> tuple:
    return result if isinstance(result, tuple) else (result,)


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    q = rng.normal(size=(n, 4))
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def _off(x: np.ndarray, threshold: float, margin: float = 1e-4) -> np.ndarray:
    """x with values within margin of threshold moved margin away from it."""
    near = np.abs(x - threshold) < margin
    return np.where(near, threshold + np.copysign(margin, x - threshold + 1e-30), x)


def test_rotation_and_keypoint_terms_agree() -> None:
    rng = np.random.default_rng(0)
    qa, qb, v = _unit(rng, N), _unit(rng, N), rng.normal(size=(N, 3))
    pos, dims = rng.uniform(-1, 1, (N, 3)), rng.uniform(0.02, 0.3, (N, 3))
    cases = {
        "quat_mul": (tm.quat_mul, qa, qb),
        "quat_rotate": (tm.quat_rotate, qa, v),
        "quat_to_mat": (tm.quat_to_mat, qa),
        "quat_normalize": (tm.quat_normalize, 3.0 * qa),
        "quat_from_axis_angle": (tm.quat_from_axis_angle, v / np.linalg.norm(v, axis=1, keepdims=True), v[:, 0]),
        "com_velocity": (tm.object_com_velocity, v, rng.normal(size=(N, 3)), qa, rng.normal(size=(N, 3)) * 0.05),
        "keypoint_offsets": (tm.keypoint_offsets, dims, 1.5),
    }
    for name, (fn, *args) in cases.items():
        host, dev = _both(fn, *args)
        for h, d in zip(host, dev, strict=True):
            _close(d, h, name)
    offsets = tm.keypoint_offsets(dims, 1.5)
    host, dev = _both(tm.keypoint_positions, pos, qa, offsets)
    _close(dev[0], host[0], "keypoint_positions")
    kp_goal = tm.keypoint_positions(pos + rng.normal(size=(N, 3)) * 0.05, qb, offsets)
    host, dev = _both(tm.max_keypoint_distance, host[0], kp_goal)
    _close(dev[0], host[0], "max_keypoint_distance")


def test_action_pipeline_and_reward_terms_agree() -> None:
    rng = np.random.default_rng(1)
    cfg = SimToolRealConfig()
    lower, upper = -rng.uniform(0.5, 3.0, 29), rng.uniform(0.5, 3.0, 29)
    prev = rng.uniform(lower, upper, (N, 29))
    actions = rng.uniform(-1.2, 1.2, (N, 29))
    host, dev = _both(tm.compute_joint_targets, actions, prev, lower, upper, arm_step=0.1,
                      arm_moving_average=0.1, hand_moving_average=0.1)
    _close(dev[0], host[0], "compute_joint_targets")
    host, dev = _both(tm.unscale_from_limits, prev, lower, upper)
    _close(dev[0], host[0], "unscale_from_limits")

    lifted_prev = rng.random(N) < 0.3
    z = _off(rng.uniform(0.55, 0.8, N), 0.63 - cfg.lift_offset + cfg.lift_threshold)
    host = tm.lift_terms(z, 0.63, lifted_prev, offset=cfg.lift_offset, clip=cfg.lift_clip,
                         threshold=cfg.lift_threshold)
    dev = tm.lift_terms(_t(z), 0.63, torch.as_tensor(lifted_prev), offset=cfg.lift_offset,
                        clip=cfg.lift_clip, threshold=cfg.lift_threshold)
    for h, d, name in zip(host, dev, ("lift", "just_lifted", "lifted"), strict=True):
        _close(d, h, name)
    assert host[1].any() and (~host[2]).any()  # both outcomes occur

    current = rng.uniform(0.0, 0.3, (N, 5))
    closest = np.where(rng.random((N, 5)) < 0.2, -1.0, rng.uniform(0.0, 0.3, (N, 5)))
    host = tm.approach_term(closest, current, lifted_prev, clip=cfg.approach_clip)
    dev = tm.approach_term(_t(closest), _t(current), torch.as_tensor(lifted_prev), clip=cfg.approach_clip)
    for h, d in zip(host, dev, strict=True):
        _close(d, h, "approach_term")
    dist, best = rng.uniform(0, 0.5, N), np.where(rng.random(N) < 0.2, -1.0, rng.uniform(0, 0.5, N))
    host = tm.keypoint_progress_term(best, dist, lifted_prev, clip=cfg.keypoint_clip)
    dev = tm.keypoint_progress_term(_t(best), _t(dist), torch.as_tensor(lifted_prev), clip=cfg.keypoint_clip)
    for h, d in zip(host, dev, strict=True):
        _close(d, h, "keypoint_progress_term")

    tolerance = 0.05
    dist = _off(dist, tolerance * 1.5)
    counter = rng.integers(0, 12, N)
    host = tm.near_goal_update(counter, dist, tolerance, keypoint_scale=1.5, success_steps=10)
    dev = tm.near_goal_update(torch.as_tensor(counter), _t(dist), torch.tensor(tolerance, dtype=torch.float64),
                              keypoint_scale=1.5, success_steps=10)
    for h, d in zip(host, dev, strict=True):
        _close(d, h, "near_goal_update")
    assert host[1].any() and (~host[1]).any()
    host, dev = _both(tm.joint_speed_penalties, rng.normal(size=(N, 29)), arm_weight=0.03, hand_weight=0.003)
    for h, d in zip(host, dev, strict=True):
        _close(d, h, "joint_speed_penalties")


def test_goal_sampling_agrees() -> None:
    """Same streams in both namespaces, so the sampled goals are the same goals."""
    cfg = SimToolRealConfig()
    ids = np.arange(100, 100 + N)
    host_rng, dev_rng = EnvRandom(ids, 5), EnvRandom(ids, 5, like=torch.zeros(1, dtype=torch.float64))
    rows_h = Rows.of_ids(np.arange(0, N, 2), N)
    mask = np.zeros(N, bool)
    mask[::2] = True
    rows_d = Rows.of_mask(torch.as_tensor(mask))
    pos_h, quat_h = tm.sample_first_goal(host_rng, rows_h, cfg, 0.63)
    pos_d, quat_d = tm.sample_first_goal(dev_rng, rows_d, cfg, 0.63)
    _close(pos_d[torch.as_tensor(mask)], pos_h, "first goal position")
    _close(quat_d[torch.as_tensor(mask)], quat_h, "first goal quaternion")
    pos_h2, quat_h2 = tm.sample_delta_goal(host_rng, rows_h, pos_h, quat_h, cfg)
    pos_d2, quat_d2 = tm.sample_delta_goal(dev_rng, rows_d, pos_d, quat_d, cfg)
    _close(pos_d2[torch.as_tensor(mask)], pos_h2, "delta goal position")
    _close(quat_d2[torch.as_tensor(mask)], quat_h2, "delta goal quaternion")


def test_curriculum_agrees_step_by_step() -> None:
    """The same finished episodes fed to both curricula: the same tolerance after every step."""
    rng = np.random.default_rng(3)
    kw = {"start": 0.075, "decay": 0.9, "minimum": 0.01, "interval": 3, "min_successes": 2.0}
    host = ToleranceCurriculum(64, **kw)
    dev = ToleranceCurriculum(64, **kw, like=torch.zeros(1))
    changes = 0
    for step in range(60):
        tightened_h = host.begin_step()
        tightened_d = dev.begin_step()
        assert bool(tightened_d) == tightened_h, step
        changes += tightened_h
        assert float(dev.tolerance) == float(host.tolerance), step
        done = rng.random(64) < 0.2
        successes = rng.integers(0, 5, int(done.sum())).astype(np.float64)
        host.finish(Rows.of_ids(np.flatnonzero(done), 64), successes)
        full = np.zeros(64)
        full[done] = successes
        dev.finish(Rows.of_mask(torch.as_tensor(done)), torch.as_tensor(full))
        np.testing.assert_array_equal(dev.last_successes.numpy(), host.last_successes)
    assert changes >= 3 and float(host.tolerance) < kw["start"]


def test_device_curriculum_shards_with_a_device_all_reduce_equal_one_host_curriculum() -> None:
    """On a device the reducer gets (0-d tensor, int) at every step and returns device values (an
    all-reduce that never reads back): two such shards take the unsharded host curriculum's steps."""
    rng = np.random.default_rng(4)
    kw = {"start": 0.075, "decay": 0.9, "minimum": 0.01, "interval": 3, "min_successes": 2.0}
    shards: dict[str, ToleranceCurriculum] = {}
    calls = {"a": 0, "b": 0}

    def reducer_of(me: str, other: str):
        def reduce(total, count):
            assert isinstance(total, torch.Tensor)  # never a host float on the device path
            calls[me] += 1
            o_total, o_count = shards[other].local_stat()
            return total + o_total, count + o_count

        return reduce

    shards["a"] = ToleranceCurriculum(32, **kw, reducer=reducer_of("a", "b"), like=torch.zeros(1))
    shards["b"] = ToleranceCurriculum(32, **kw, reducer=reducer_of("b", "a"), like=torch.zeros(1))
    whole = ToleranceCurriculum(64, **kw)
    changes = 0
    for step in range(40):
        for cur in (whole, *shards.values()):
            cur.begin_step()
        for cur in shards.values():
            assert float(cur.tolerance) == float(whole.tolerance), step
        changes += float(whole.tolerance) != kw["start"]
        done = rng.random(64) < 0.25
        successes = np.where(done, rng.integers(0, 5, 64), 0).astype(np.float64)
        whole.finish(Rows.of_ids(np.flatnonzero(done), 64), successes[done])
        for name, part in (("a", slice(0, 32)), ("b", slice(32, 64))):
            shards[name].finish(Rows.of_mask(torch.as_tensor(done[part])), torch.as_tensor(successes[part]))
    assert changes and calls == {"a": 40, "b": 40}
