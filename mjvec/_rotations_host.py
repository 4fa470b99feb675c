"""Compiled host kernels of `mjvec.rotations`' formulas for float64 numpy rows: the SAME IEEE-754
operations in the same order as the namespace-generic formulas (`mjvec._jit`: no fast-math), one
row at a time in one pass instead of a dozen numpy calls. Every result is bit-identical to the
generic formula's (tests/test_rotations_host.py); torch on a device runs the generic formulas.
"""

from __future__ import annotations

import math

import numpy as np

from mjvec._jit import clip, inline, kernel, maximum
from mjvec._portable_host import _sincos1, atan2_1, in_sincos_domain


@inline
def _product(aw: float, ax: float, ay: float, az: float, bw: float, bx: float, by: float, bz: float,
             out: np.ndarray) -> None:
    """out (4,) = the Hamilton product (aw, ax, ay, az) (bw, bx, by, bz), as `mjvec.rotations.quat_mul`."""
    out[0] = aw * bw - ax * bx - ay * by - az * bz
    out[1] = aw * bx + ax * bw + ay * bz - az * by
    out[2] = aw * by - ax * bz + ay * bw + az * bx
    out[3] = aw * bz + ax * by - ay * bx + az * bw


@inline
def rotate_row(q: np.ndarray, axis: np.ndarray, half: float, out: np.ndarray) -> None:
    """out (4,) = one row of `mjvec.rotations.rotate_by_axis_angle`: q (4,) times the rotation by
    2 half about axis (3,); half in the sincos kernel's domain (finite, |half| <= SINCOS_MAX)."""
    sin_half, cos_half = _sincos1(half)
    ux, uy, uz = axis[0], axis[1], axis[2]
    # numpy's sum of a 3-row's squares: from +0.0, one by one (either memory order, below 8).
    s = sin_half / clip(math.sqrt(((0.0 + ux * ux) + uy * uy) + uz * uz), 1e-12, math.inf)
    _product(q[0], q[1], q[2], q[3], cos_half, ux * s, uy * s, uz * s, out)


@kernel
def _rotate_by_axis_angle(q: np.ndarray, axis: np.ndarray, half: np.ndarray, out: np.ndarray) -> bool:
    if not in_sincos_domain(half):  # else the caller's generic formula
        return False
    for i in range(half.shape[0]):
        rotate_row(q[i], axis[i], half[i], out[i])
    return True


def rotate_by_axis_angle(q: np.ndarray, axis: np.ndarray, half: np.ndarray) -> np.ndarray | None:
    """`mjvec.rotations.rotate_by_axis_angle` of (n, 4) q, (n, 3) axis and (n,) half, all float64
    numpy (any strides), or None where those shapes do not hold or a half angle is outside the
    sincos kernel's domain (the caller then runs the generic formula)."""
    n = half.shape[0] if half.ndim == 1 else -1
    if n < 1 or q.shape != (n, 4) or axis.shape != (n, 3):
        return None
    out = np.empty((n, 4))
    return out if _rotate_by_axis_angle(q, axis, half, out) else None


@inline
def mul_row(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """out (4,) = `mjvec.rotations.quat_mul` of one pair of rows a, b (4,)."""
    _product(a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3], out)


@kernel
def _quat_mul(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    for i in range(a.shape[0]):
        mul_row(a[i], b[i], out[i])


def quat_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray | None:
    """`mjvec.rotations.quat_mul` of two (n, 4) float64 numpy arrays (any strides), or None where
    the shapes are not both (n, 4) with n >= 1. No domain: the same operations on any input."""
    if a.ndim != 2 or a.shape != b.shape or a.shape[1] != 4 or a.shape[0] < 1:
        return None
    out = np.empty(a.shape)
    _quat_mul(a, b, out)
    return out


@inline
def rotate_vec_row(q: np.ndarray, v: np.ndarray, out: np.ndarray) -> None:
    """out (3,) = `mjvec.rotations.quat_rotate` of one row: v (3,) rotated by q (4,)."""
    w, ux, uy, uz = q[0], q[1], q[2], q[3]
    vx, vy, vz = v[0], v[1], v[2]
    # t = 2 cross(u, v); v + w t + cross(u, t), summed left to right as numpy does
    tx, ty, tz = 2.0 * (uy * vz - uz * vy), 2.0 * (uz * vx - ux * vz), 2.0 * (ux * vy - uy * vx)
    out[0] = (vx + w * tx) + (uy * tz - uz * ty)
    out[1] = (vy + w * ty) + (uz * tx - ux * tz)
    out[2] = (vz + w * tz) + (ux * ty - uy * tx)


@kernel
def _quat_rotate(q: np.ndarray, v: np.ndarray, out: np.ndarray) -> None:
    for i in range(q.shape[0]):
        rotate_vec_row(q[i], v[i], out[i])


def quat_rotate(q: np.ndarray, v: np.ndarray) -> np.ndarray | None:
    """`mjvec.rotations.quat_rotate` of (n, 4) q and (n, 3) v, float64 numpy (any strides), or None
    where those shapes do not hold (n >= 1). No domain: the same operations on any input."""
    if q.ndim != 2 or v.ndim != 2 or q.shape[1] != 4 or v.shape != (q.shape[0], 3) or q.shape[0] < 1:
        return None
    out = np.empty(v.shape)
    _quat_rotate(q, v, out)
    return out


@inline
def rotation_vector_row(q: np.ndarray, out: np.ndarray) -> None:
    """out (3,) = `mjvec.rotations.rotation_vector` of one finite row q (4,)."""
    w, x, y, z = q[0], q[1], q[2], q[3]
    if w < 0.0:  # canonical_quat: the row negated
        w, x, y, z = -w, -x, -y, -z
    # numpy's norm of a 3-row: its squares summed one by one (below 8), then sqrt
    sin_half = math.sqrt((x * x + y * y) + z * z)
    angle = 2.0 * atan2_1(sin_half, w)
    factor = angle / maximum(sin_half, 1e-12) if sin_half > 1e-12 else 2.0
    out[0], out[1], out[2] = x * factor, y * factor, z * factor


@inline
def finite_rows(q: np.ndarray) -> bool:
    """Every element of the 2-D array q finite."""
    for i in range(q.shape[0]):
        for k in range(q.shape[1]):
            if not math.isfinite(q[i, k]):
                return False
    return True


@kernel
def _rotation_vector(q: np.ndarray, out: np.ndarray) -> bool:
    if not finite_rows(q):
        return False
    for i in range(q.shape[0]):
        rotation_vector_row(q[i], out[i])
    return True


def rotation_vector(q: np.ndarray) -> np.ndarray | None:
    """`mjvec.rotations.rotation_vector` of (n, 4) float64 numpy rows (any strides), or None where
    the shape is not (n, 4) with n >= 1 or an element is not finite (the caller's generic formula)."""
    if q.ndim != 2 or q.shape[1] != 4 or q.shape[0] < 1:
        return None
    out = np.empty((q.shape[0], 3))
    return out if _rotation_vector(q, out) else None
