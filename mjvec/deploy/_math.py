"""The rotation arithmetic the deployment loop needs, written out component by component in the
same form (the same operations in the same order) as the trained env computes it, so the loop's
observation equals the env's bit for bit. Quaternions are (w, x, y, z) on the last axis."""

from __future__ import annotations

import numpy as np

XYZW = [1, 2, 3, 0]


def cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(..., 3) cross products."""
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    return np.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)


def quat_rotate(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """(..., 3) vectors v rotated by unit quaternions q: v + w t + u x t with t = 2 u x v."""
    w, u = q[..., :1], q[..., 1:]
    t = 2.0 * cross(u, v)
    return v + w * t + cross(u, t)


def quat_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The Hamilton product a * b."""
    aw, ax, ay, az = a[..., 0], a[..., 1], a[..., 2], a[..., 3]
    bw, bx, by, bz = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
    return np.stack([aw * bw - ax * bx - ay * by - az * bz, aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx, aw * bz + ax * by - ay * bx + az * bw], axis=-1)


def quat_to_mat(q: np.ndarray) -> np.ndarray:
    """(..., 3, 3) rotation matrices of unit quaternions, in the 1 - 2 (...) form."""
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    rows = [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
            2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
            2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]
    return np.reshape(np.stack(rows, axis=-1), (*q.shape[:-1], 3, 3))


def keypoints_from_rot(pos: np.ndarray, rot: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """(N, K, 3) points pos + rot @ offset for poses pos (N, 3), rotations rot (N, 3, 3) and
    offsets (N|1, K, 3): the product written out in j order, as the env computes its keypoints."""
    r = rot[:, None]
    return pos[:, None, :] + (offsets[..., 0, None] * r[..., 0] + offsets[..., 1, None] * r[..., 1]
                              + offsets[..., 2, None] * r[..., 2])


def canonical(q: np.ndarray) -> np.ndarray:
    """The same rotations with w >= 0."""
    return np.where(q[..., :1] < 0.0, -q, q)


def rotate_by_axis_angle(q: np.ndarray, axis: np.ndarray, half: np.ndarray) -> np.ndarray:
    """q times the rotation by 2 * half about the (unnormalized) axis, in q's own frame."""
    s = np.sin(half) / np.clip(np.sqrt(np.sum(axis * axis, axis=-1)), 1e-12, None)
    delta = np.stack([np.cos(half), axis[..., 0] * s, axis[..., 1] * s, axis[..., 2] * s], axis=-1)
    return quat_mul(q, delta)
