"""Compiled host kernels of `mjvec.rotations`' formulas for float64 numpy rows: the SAME IEEE-754
operations in the same order as the namespace-generic formulas (`mjvec._jit`: no fast-math), one
row at a time in one pass instead of a dozen numpy calls. Every result is bit-identical to the
generic formula's (tests/test_rotations_host.py); torch on a device runs the generic formulas.
"""

from __future__ import annotations

import math

import numpy as np

from mjvec._jit import clip, inline, kernel
from mjvec._portable_host import _sincos1, in_sincos_domain


@inline
def rotate_row(q: np.ndarray, axis: np.ndarray, half: float, out: np.ndarray) -> None:
    """out (4,) = one row of `mjvec.rotations.rotate_by_axis_angle`: q (4,) times the rotation by
    2 half about axis (3,); half in the sincos kernel's domain (finite, |half| <= SINCOS_MAX)."""
    sin_half, cos_half = _sincos1(half)
    ux, uy, uz = axis[0], axis[1], axis[2]
    # numpy's sum of a 3-row's squares: from +0.0, one by one (either memory order, below 8).
    s = sin_half / clip(math.sqrt(((0.0 + ux * ux) + uy * uy) + uz * uz), 1e-12, math.inf)
    bw, bx, by, bz = cos_half, ux * s, uy * s, uz * s
    aw, ax, ay, az = q[0], q[1], q[2], q[3]
    out[0] = aw * bw - ax * bx - ay * by - az * bz
    out[1] = aw * bx + ax * bw + ay * bz - az * by
    out[2] = aw * by - ax * bz + ay * bw + az * bx
    out[3] = aw * bz + ax * by - ay * bx + az * bw


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
