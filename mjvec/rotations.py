"""Quaternions and rotations for every array namespace (numpy on the host, torch on a device).

One module for the tasks, the perception wrappers, the assets and the backends' geometry. Each
function takes arrays with the rotation on the last axis (leading axes broadcast), runs in the
namespace of its inputs (`mjvec.xp`), and is written out component by component: the same formula
gives the same bits in numpy and (to float32 round-off) in torch. Quaternions are MuJoCo's
(w, x, y, z) unless a name says xyzw.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mjvec import _rotations_host, portable
from mjvec._jit import host_arrays as _host_arrays
from mjvec.xp import namespace_of

Array = Any  # an array of the caller's namespace

_XYZW = [1, 2, 3, 0]
_WXYZ = [3, 0, 1, 2]


def _compiled_or(compiled: Any, generic: Any, *arrays: Array) -> Array:
    """compiled(*arrays) where every one is a float64 numpy array and the kernel answers (it returns
    None for shapes or values outside its domain: `mjvec._rotations_host`, the same bits in one
    pass), else generic(*arrays)."""
    if _host_arrays(arrays, (np.float64,)):
        out = compiled(*arrays)
        if out is not None:
            return out
    return generic(*arrays)


def _like(value: Any, like: Array) -> Array:
    if isinstance(like, np.ndarray):
        return np.asarray(value, dtype=like.dtype)
    return namespace_of(like).asarray(value, dtype=like.dtype, device=like.device)


def quat_mul(a: Array, b: Array) -> Array:
    """Hamilton product a*b of (..., 4) wxyz quaternions (broadcasting), like mju_mulQuat."""
    return _compiled_or(_rotations_host.quat_mul, _quat_mul, a, b)


def _quat_mul(a: Array, b: Array) -> Array:
    xp = namespace_of(a)
    aw, ax, ay, az = a[..., 0], a[..., 1], a[..., 2], a[..., 3]
    bw, bx, by, bz = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
    return xp.stack(
        [
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ],
        axis=-1,
    )


def quat_conj(q: Array) -> Array:
    """Conjugate of (..., 4) wxyz quaternions (the inverse for unit quaternions)."""
    return q * _like([1.0, -1.0, -1.0, -1.0], q)


def cross(a: Array, b: Array) -> Array:
    """Cross product of (..., 3) vectors (broadcasting); np.cross's overhead dominates at this size."""
    xp = namespace_of(a)
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    return xp.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)


def quat_rotate(q: Array, v: Array) -> Array:
    """Rotate (..., 3) vectors by (..., 4) unit wxyz quaternions (broadcasting), like mju_rotVecQuat."""
    return _compiled_or(_rotations_host.quat_rotate, _quat_rotate, q, v)


def _quat_rotate(q: Array, v: Array) -> Array:
    w = q[..., :1]
    u = q[..., 1:]
    t = 2.0 * cross(u, v)
    return v + w * t + cross(u, t)


def quat_sandwich(q: Array, v: Array) -> Array:
    """Rotate (..., 3) vectors by (..., 4) unit wxyz quaternions as the product q (0, v) q^-1.

    The same rotation as `quat_rotate`, another rounding: the form the robot's URDF frames are
    composed with (`mjvec.assets._frames`), kept so that the compiled robot stays bit for bit.
    """
    xp = namespace_of(v)
    qv = xp.concat([xp.zeros_like(v[..., :1]), v], axis=-1)
    return quat_mul(quat_mul(q, qv), quat_conj(q))[..., 1:]


def quat_from_axis_angle(axis: Array, angle: Array) -> Array:
    """(..., 4) wxyz quaternions of a rotation by `angle` (...) about unit `axis` (..., 3)."""
    xp = namespace_of(axis)
    sin_half, cos_half = portable.sincos(0.5 * angle[..., None])
    return xp.concat([cos_half, sin_half * axis], axis=-1)


def quat_normalize(q: Array) -> Array:
    """Unit quaternions with a non-negative w (q and -q are the same rotation)."""
    xp = namespace_of(q)
    q = q / xp.linalg.vector_norm(q, axis=-1, keepdims=True)
    return canonical_quat(q)


def canonical_quat(q: Array) -> Array:
    """The same rotations with w >= 0 (q and -q are one rotation; a policy sees one of them)."""
    xp = namespace_of(q)
    return xp.where(q[..., :1] < 0.0, -q, q)


def wxyz_to_xyzw(q: Array) -> Array:
    return q[..., _XYZW]


def xyzw_to_wxyz(q: Array) -> Array:
    return q[..., _WXYZ]


def quat_to_mat(q: Array) -> Array:
    """(..., 3, 3) rotation matrices of (..., 4) unit wxyz quaternions, in the 1 - 2 (...) form."""
    xp = namespace_of(q)
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    rows = [
        1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
        2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
        2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y),
    ]
    return xp.reshape(xp.stack(rows, axis=-1), (*q.shape[:-1], 3, 3))


def quat_to_mat_mj(q: Array) -> Array:
    """(..., 3, 3) rotation matrices of (..., 4) unit wxyz quaternions in mju_quat2Mat's form
    (squares summed, not 1 - 2 (...)): within an ulp of what MuJoCo's kinematics computes."""
    xp = namespace_of(q)
    q0, q1, q2, q3 = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    q00, q01, q02, q03 = q0 * q0, q0 * q1, q0 * q2, q0 * q3
    q11, q12, q13, q22, q23, q33 = q1 * q1, q1 * q2, q1 * q3, q2 * q2, q2 * q3, q3 * q3
    rows = [
        q00 + q11 - q22 - q33, 2 * (q12 - q03), 2 * (q13 + q02),
        2 * (q12 + q03), q00 - q11 + q22 - q33, 2 * (q23 - q01),
        2 * (q13 - q02), 2 * (q23 + q01), q00 - q11 - q22 + q33,
    ]
    return xp.reshape(xp.stack(rows, axis=-1), (*q.shape[:-1], 3, 3))


def rotation_vector(q: Array) -> Array:
    """(..., 3) axis * angle (rad, in [0, pi]) of unit wxyz quaternions (..., 4)."""
    return _compiled_or(_rotations_host.rotation_vector, _rotation_vector, q)


def _rotation_vector(q: Array) -> Array:
    xp = namespace_of(q)
    q = canonical_quat(q)
    sin_half = xp.linalg.vector_norm(q[..., 1:], axis=-1)
    angle = 2.0 * portable.atan2(sin_half, q[..., 0])
    # angle / sin(angle / 2) -> 2 as the angle -> 0.
    factor = xp.where(sin_half > 1e-12, angle / xp.maximum(sin_half, _like(1e-12, sin_half)), 2.0)
    return q[..., 1:] * factor[..., None]


def rotate_by_axis_angle(q: Array, axis: Array, half: Array) -> Array:
    """(..., 4) q times the rotation by angle 2 * half (...) about the unnormalized axis (..., 3):
    the rotation acts in q's own frame (a right product)."""
    return _compiled_or(_rotations_host.rotate_by_axis_angle, _rotate_by_axis_angle, q, axis, half)


def _rotate_by_axis_angle(q: Array, axis: Array, half: Array) -> Array:
    xp = namespace_of(q)
    sin_half, cos_half = portable.sincos(half)
    s = sin_half / xp.clip(xp.sqrt(xp.sum(axis * axis, axis=-1)), min=1e-12)
    delta = xp.stack([cos_half, axis[..., 0] * s, axis[..., 1] * s, axis[..., 2] * s], axis=-1)
    return quat_mul(q, delta)
