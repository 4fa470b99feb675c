"""Per-env geom size writes: which are refused (both engines), and primitive geom bounds (Warp).

A geom_size write is refused for a mesh (or SDF) geom, whose shape is a shared asset, and for
non-positive sizes (`check_sizes`). MuJoCo's compiler derives `geom_rbound` and `geom_aabb` from
`geom_size`; mujoco_warp culls contact pairs with them (its own set_const recomputes them in
float32), so the Warp engine refreshes them with `primitive_bounds`, in float64, after a size write.
(The CPU engine runs mj_setConst, which recomputes them itself.)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import mujoco
import numpy as np

from mjvec.backends.variants import VariantGroup
from mjvec.errors import FieldWriteError

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


def check_sizes(groups: Sequence[VariantGroup], split: Sequence[tuple[int, np.ndarray, np.ndarray]],
                types_of: Callable[[int], np.ndarray], slots: np.ndarray, values: np.ndarray) -> None:
    """A geom_size write of canonical geom `slots`, for the (group, positions, rows) of `split`: primitive
    geoms only (a mesh's shape is a shared asset), sizes positive; FieldWriteError otherwise.

    types_of(g): group g's (E_g, ngeom_g) geom types, each row its env's own (a slot's type may differ
    between the variants of one group).
    """
    for g, _, rows in split:
        local = groups[g].geom_map[slots]
        local = local[local >= 0]
        types = np.asarray(types_of(g))[rows][:, local]
        bad = np.flatnonzero(~np.isin(types, list(PRIMITIVES)).any(axis=0))
        if bad.size:
            template = groups[g].template
            names = sorted({template.geom(int(local[c])).name for c in bad})
            kinds = sorted({mujoco.mjtGeom(int(t)).name for t in types.ravel() if int(t) not in PRIMITIVES})
            raise FieldWriteError(
                f"geom_size of geoms {names} cannot be written: they are {kinds[:4]} in some of these envs, "
                "whose shape is a shared asset; randomize primitive geoms only (e.g. tool_geometry='primitive')"
            )
    if (values[..., 0] <= 0).any() or (values < 0).any():
        raise FieldWriteError("FieldWrite('geom_size').values must be positive (first component > 0, none < 0)")
