"""Primitive geom bounds and BVH boxes, for per-env geom size / position writes (both backends).

MuJoCo's compiler derives `geom_rbound` and `geom_aabb` from `geom_size`, and each body's
collision BVH (`bvh_aabb`, in the body's inertial frame) from its geoms' boxes and poses. A
backend that lets a geom's size or pose change per env recomputes them with these formulas, or
broadphase and midphase would cull contacts against stale bounds.
"""

from __future__ import annotations

import mujoco
import numpy as np

G = mujoco.mjtGeom
PRIMITIVES = {int(G.mjGEOM_SPHERE), int(G.mjGEOM_CAPSULE), int(G.mjGEOM_ELLIPSOID), int(G.mjGEOM_CYLINDER),
              int(G.mjGEOM_BOX)}
_SIGNS = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], np.float64)


def primitive_bounds(geom_type: np.ndarray, size: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rbound (K, M), aabb (K, M, 6)) of primitive geoms of types (M,) with sizes (K, M, 3).

    The same formulas as MuJoCo's compiler (aabb centred at the geom frame's origin).
    """
    r, a, b = size[..., 0], size[..., 1], size[..., 2]
    t = np.broadcast_to(geom_type, r.shape)
    sphere, capsule, cylinder = t == int(G.mjGEOM_SPHERE), t == int(G.mjGEOM_CAPSULE), t == int(G.mjGEOM_CYLINDER)
    round_xy = sphere | capsule | cylinder
    hz = np.where(sphere, r, np.where(capsule, r + a, np.where(cylinder, a, b)))
    half = np.stack([r, np.where(round_xy, r, a), hz], axis=-1)
    rbound = np.select(
        [sphere, capsule, cylinder, t == int(G.mjGEOM_ELLIPSOID)],
        [r, r + a, np.sqrt(r * r + a * a), np.maximum(np.maximum(r, a), b)],
        np.sqrt(r * r + a * a + b * b),
    )
    aabb = np.concatenate([np.zeros_like(half), half], axis=-1)
    return rbound, aabb


def _quat_mat(q: np.ndarray) -> np.ndarray:
    w, x, y, z = np.moveaxis(q, -1, 0)
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
        np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
        np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
    ], -2)


def box_in_inertial_frame(aabb: np.ndarray, pos: np.ndarray, quat: np.ndarray, ipos: np.ndarray,
                          iquat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi) (K, 3) of a geom's aabb (K, 6) placed at pos/quat (K, 3)/(K, 4) in its body,
    expressed in the body's inertial frame ipos/iquat (K, 3)/(K, 4): the frame of `bvh_aabb`."""
    corners = aabb[:, None, :3] + _SIGNS[None] * aabb[:, None, 3:]  # (K, 8, 3) geom frame
    in_body = pos[:, None] + np.einsum("kij,knj->kni", _quat_mat(quat), corners)
    in_inertial = np.einsum("kji,knj->kni", _quat_mat(iquat), in_body - ipos[:, None])
    return in_inertial.min(axis=1), in_inertial.max(axis=1)
