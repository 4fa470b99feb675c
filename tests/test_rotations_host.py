"""mjvec._rotations_host's compiled rotation against the namespace-generic formula it stands in for
(mjvec.rotations), bit for bit, on the rows the randomization wrappers pass and on adversarial ones."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from mjvec import _rotations_host, rotations


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(f"i{a.dtype.itemsize}")


def _same(got: np.ndarray, want: np.ndarray) -> None:
    """Equal bits, except that where both are nan the sign and payload are not compared (which nan an
    operation returns is its operands' order, the compiler's choice)."""
    both_nan = np.isnan(got) & np.isnan(want)
    np.testing.assert_array_equal(np.where(both_nan, 0, _bits(got)), np.where(both_nan, 0, _bits(want)))


def _inputs(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    return q, rng.uniform(0.0, 1.0, (n, 3)), rng.uniform(-0.05, 0.05, n)


@pytest.mark.parametrize("n", [1, 3, 64, 1000])
def test_the_kernel_gives_the_generic_formulas_bits(n: int) -> None:
    q, axis, half = _inputs(n, n)
    got = _rotations_host.rotate_by_axis_angle(q, axis, half)
    assert got is not None and got.shape == (n, 4)
    _same(got, rotations._rotate_by_axis_angle(q, axis, half))
    _same(rotations.rotate_by_axis_angle(q, axis, half), got)  # the public function takes the kernel


def test_strided_views_and_special_values_keep_the_bits() -> None:
    """A pose array's quaternion columns (a view with a row stride), zero and tiny axes (the clip),
    nan, inf and signed zeros in every input, and large half angles inside the kernel's domain."""
    q, axis, half = _inputs(40, 1)
    pose = np.concatenate([np.ones((40, 3)), q], axis=1)
    specials = [0.0, -0.0, np.nan, np.inf, -np.inf, 1e-300, -1e300]
    for i, v in enumerate(specials):
        pose[i, 3 + i % 4] = v
        axis[10 + i, i % 3] = v
    axis[20] = 0.0
    axis[21] = [1e-200, 0.0, -0.0]
    half[30:36] = [0.0, -0.0, 1e6, -1e15, 2.0**52, np.pi / 4]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = rotations._rotate_by_axis_angle(pose[:, 3:], axis, half)
        got = _rotations_host.rotate_by_axis_angle(pose[:, 3:], axis, half)
    assert got is not None
    _same(got, want)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf, np.nextafter(2.0**52, np.inf)])
def test_a_half_angle_outside_the_kernels_domain_takes_the_generic_formula(bad: float) -> None:
    q, axis, half = _inputs(8, 2)
    half[5] = bad
    assert _rotations_host.rotate_by_axis_angle(q, axis, half) is None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        _same(rotations.rotate_by_axis_angle(q, axis, half), rotations._rotate_by_axis_angle(q, axis, half))


def test_other_shapes_and_dtypes_take_the_generic_formula() -> None:
    """Broadcast shapes, a single quaternion, float32 and empty rows are not the kernel's: it answers
    None (or is not called) and the public function returns the generic result."""
    q, axis, half = _inputs(6, 3)
    shapes = ((q[:1], axis, half), (q[0], axis[0], half[0:1]), (q, axis, half[:, None]), (q[:0], axis[:0], half[:0]))
    for args in shapes:
        assert _rotations_host.rotate_by_axis_angle(*args) is None
    for args in ((q[:1], axis, half), (q.astype(np.float32), axis.astype(np.float32), half.astype(np.float32))):
        _same(np.asarray(rotations.rotate_by_axis_angle(*args)), np.asarray(rotations._rotate_by_axis_angle(*args)))


def test_the_pose_latency_kernel_is_the_queue_read_plus_the_generic_noise() -> None:
    """object_dr's fused step (the delayed pose from the ring, position noise, rotation) against the
    numpy lines it stands in for, bit for bit: a ring wrapped by several pushes, every age, special
    values in the poses and the draws; a half angle outside the sincos domain answers False."""
    from mjvec.randomization.object_dr import _delayed_noisy_pose
    from mjvec.randomization.queues import DelayQueue
    from mjvec.xp import Rows

    rng = np.random.default_rng(11)
    n, depth, pos_std = 50, 4, 0.01
    queue = DelayQueue(depth)
    for _ in range(7):
        queue.push(rng.normal(size=(n, 7)), Rows.of_ids([], n))
    queue.buf[2, 3, 4] = np.nan
    queue.buf[:, 5, 3:] = -0.0
    ages = rng.integers(0, depth, n)
    noise, axis, half = rng.normal(size=(n, 3)), rng.uniform(0.0, 1.0, (n, 3)), rng.uniform(-0.05, 0.05, n)
    axis[7] = 0.0
    noise[8, 1] = -0.0
    pos, quat = np.empty((n, 3)), np.empty((n, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert _delayed_noisy_pose(queue.buf, queue.head, ages, pos_std, noise, axis, half, pos, quat)
        pose = queue.buf[(queue.head + ages) % depth, np.arange(n)]
        _same(pos, pose[:, :3] + pos_std * noise)
        _same(quat, rotations._rotate_by_axis_angle(pose[:, 3:], axis, half))
    half[9] = np.inf
    assert not _delayed_noisy_pose(queue.buf, queue.head, ages, pos_std, noise, axis, half, pos, quat)


def _unit_quats(n: int, seed: int) -> np.ndarray:
    q = np.random.default_rng(seed).normal(size=(n, 4))
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def test_quat_mul_and_rotation_vector_give_the_generic_formulas_bits() -> None:
    """The cube's turn over a step (CubeRotate-v0's reward: rotation_vector(quat_mul(q, conj(p))))
    through the kernels and through the generic formulas, bit for bit: unit quaternions, their
    strided views in a pose array, rows of w < 0, -0.0 and exactly 0 (the canonical sign), the
    identity and near-identity turns (the sin_half <= 1e-12 branch), half turns (w = 0), unnormalized
    rows, random bit patterns (quat_mul has no domain), and (1, 4)."""
    q, p = _unit_quats(3000, 1), _unit_quats(3000, 2)
    pose = np.concatenate([np.ones((3000, 3)), q], axis=1)
    q[:8] = [[1, 0, 0, 0], [-1, 0, 0, 0], [-0.0, 1, 0, 0], [0.0, -0.0, 0, 1], [1, 1e-13, 0, 0],
             [1, 1e-12, -1e-12, 0], [-1, 0, 0, 1e-300], [2.0, -3.0, 0.5, 7.0]]
    with np.errstate(all="ignore"):
        bits = np.random.default_rng(3).integers(-(2**63), 2**63 - 1, (2000, 4), dtype=np.int64).view(np.float64)
    for a, b in ((q, p), (pose[:, 3:], p), (bits, bits[::-1]), (q[:1], p[:1])):
        with np.errstate(all="ignore"):
            want = rotations._quat_mul(a, b)
        got = _rotations_host.quat_mul(a, b)
        assert got is not None
        _same(got, want)
        _same(rotations.quat_mul(a, b), want)
    for r in (q, pose[:, 3:], rotations.quat_mul(q, rotations.quat_conj(p)), q[:1], p[::7]):
        want = rotations._rotation_vector(r)
        got = _rotations_host.rotation_vector(r)
        assert got is not None
        _same(got, want)
        _same(rotations.rotation_vector(r), want)


def test_rotation_vector_takes_the_generic_formula_outside_its_domain() -> None:
    """A non-finite element sends the call to the generic formula (its answer unchanged); other
    shapes (broadcast (4,) rows, 3-D stacks) and float32 too."""
    q = _unit_quats(10, 4)
    for v in (np.nan, np.inf, -np.inf):
        bad = q.copy()
        bad[3, 2] = v
        assert _rotations_host.rotation_vector(bad) is None
    assert _rotations_host.rotation_vector(q[0]) is None and _rotations_host.quat_mul(q[0], q[1]) is None
    assert _rotations_host.quat_mul(q, q[:1]) is None
    stack = q.reshape(2, 5, 4)
    _same(rotations.rotation_vector(stack), rotations._rotation_vector(stack))
    _same(rotations.quat_mul(q, q[:1]), rotations._quat_mul(q, q[:1]))
    single = q.astype(np.float32)
    assert rotations.rotation_vector(single).dtype == np.float32


def test_quat_rotate_gives_the_generic_formulas_bits() -> None:
    """A free body's angular velocity to the world frame (quat_rotate(q, qvel[3:6])), as the tasks
    call it on strided qpos / qvel columns, through the kernel and the generic formula: unit and
    unnormalized rows, -0.0, random bit patterns (no domain; nan payloads aside), and (1, 4)."""
    q = _unit_quats(3000, 5)
    q[:3] = [[1, 0, 0, 0], [-0.0, 0, 1, 0], [2.0, -1.0, 0.5, 3.0]]
    state = np.random.default_rng(6).normal(size=(3000, 13))
    state[:, 3:7] = q
    with np.errstate(all="ignore"):
        bits = np.random.default_rng(7).integers(-(2**63), 2**63 - 1, (2000, 7), dtype=np.int64).view(np.float64)
    cases = ((q, state[:, 10:13]), (state[:, 3:7], state[:, 7:10]), (bits[:, :4], bits[:, 4:]), (q[:1], q[:1, 1:]))
    for qq, v in cases:
        with np.errstate(all="ignore"):
            want = rotations._quat_rotate(qq, v)
            got = _rotations_host.quat_rotate(qq, v)
            assert got is not None
            _same(got, want)
            _same(rotations.quat_rotate(qq, v), want)
    assert _rotations_host.quat_rotate(q, q[:, 1:2]) is None and _rotations_host.quat_rotate(q[0], q[0, 1:]) is None
    _same(rotations.quat_rotate(q[:1], state[:, 7:10]), rotations._quat_rotate(q[:1], state[:, 7:10]))
