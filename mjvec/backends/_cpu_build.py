"""Building the CPU backend's batches: group variants by topology, pack them, widen the BVHs.

Only `mjvec.backends.cpu` uses this module; the compile-and-group loop is `_groups.compile_groups`.
"""

from __future__ import annotations

import logging

import mujoco
import numpy as np

from mjvec.backends._groups import compile_groups
from mjvec.backends.base import Scene

log = logging.getLogger(__name__)


def topology_key(model: mujoco.MjModel) -> tuple:
    """Variants batch together iff they have the same geom slots (count and names) and the same
    compiled body/dof structure.

    A slot's type may differ between variants: geom_type, contact bits, size, pose and dataid are
    per-variant rows of a VariantPack (tested bit-exact against each variant alone with a capsule
    and a box in one slot). The compiler's structure flags are not per-variant rows, and a variant
    computed under another's (e.g. a body whose inertial frame is its own frame, which MuJoCo
    treats as "simple") is right only to rounding, so they are part of the key.
    """
    names = tuple(model.geom(i).name for i in range(model.ngeom))
    structure = (model.body_simple, model.body_sameframe, model.dof_simplenum, model.body_bvhnum)
    return (model.ngeom, model.nbody, model.nq, names, *(a.tobytes() for a in structure))


def _bvh_roots(model: mujoco.MjModel) -> np.ndarray:
    """(nbody, 6) root BVH box (center, half-size) of each body in its inertial frame; nan if none."""
    roots = np.full((model.nbody, 6), np.nan)
    has = model.body_bvhnum > 0
    roots[has] = model.bvh_aabb[model.body_bvhadr[has]]
    return roots


def _union_boxes(boxes: np.ndarray) -> np.ndarray:
    """(K, 6) center/half-size boxes -> the (6,) box enclosing all of them."""
    lo = np.min(boxes[:, :3] - boxes[:, 3:], axis=0)
    hi = np.max(boxes[:, :3] + boxes[:, 3:], axis=0)
    return np.concatenate([(lo + hi) / 2, (hi - lo) / 2])


def widen_bvh(model: mujoco.MjModel, roots: list[np.ndarray], margin: float = 0.0) -> int:
    """Make every BVH node of each variant-dependent body enclose that body in EVERY variant.

    mjbatch-uni 0.2.5 keeps the canonical variant's `bvh_aabb` (an asset field it cannot expand)
    for all sims, so a variant reaching outside the canonical boxes silently loses contacts
    (reference/backends.md pitfall 1). Each variant's root box is in that variant's own inertial
    frame, which is also the frame its sim uses at run time, so the union of the roots is a valid
    box for all of them. Setting inner nodes and leaves to it too only costs narrowphase calls
    inside small tool bodies. A `margin` > 0 then grows every finite box of every body by that
    much, so per-env geom moves and resizes up to it stay inside. Returns the bodies widened.
    """
    stacked = np.stack(roots)  # (V, nbody, 6)
    widened = 0
    for body in range(model.nbody):
        adr, num = model.body_bvhadr[body], model.body_bvhnum[body]
        boxes = stacked[:, body]
        if not (np.isnan(boxes).any() or (boxes == boxes[0]).all()):
            model.bvh_aabb[adr : adr + num] = _union_boxes(boxes)
            widened += 1
        if margin > 0 and num > 0:
            # Planes make huge (not infinite) boxes whose finite faces matter too (the world root's
            # top is the table top), so every box grows; float64 still resolves the margin there.
            model.bvh_aabb[adr : adr + num, 3:] += margin
    return widened


def plan_groups(scene: Scene, *, widen: bool = True, margin: float = 0.0, progress: bool = True) -> list:
    """Compile each used variant once, group by topology, one VariantPack per group, BVH widened."""
    groups = compile_groups(scene, topology_key, _bvh_roots, progress=progress)
    if widen:
        for group in groups:
            n = widen_bvh(group.pack.model, group.snapshots, margin)
            log.debug("group of %d variants: widened the BVH of %d bodies", len(group.variants), n)
    return groups
