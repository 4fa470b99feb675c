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
