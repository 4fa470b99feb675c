"""Primitive geom bounds, for per-world geom size writes on the Warp backend.

MuJoCo's compiler derives `geom_rbound` and `geom_aabb` from `geom_size`. mujoco_warp culls contact
pairs with them (its own set_const recomputes them in float32), so the Warp backend refreshes them
with these formulas, in float64, after a size write. (The CPU backend runs mj_setConst itself.)
"""

from __future__ import annotations

import mujoco
import numpy as np

G = mujoco.mjtGeom
PRIMITIVES = {int(G.mjGEOM_SPHERE), int(G.mjGEOM_CAPSULE), int(G.mjGEOM_ELLIPSOID), int(G.mjGEOM_CYLINDER),
              int(G.mjGEOM_BOX)}


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
