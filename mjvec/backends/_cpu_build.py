"""Building the CPU backend's batches: group variants by topology, pack them, widen the BVHs.

Only `mjvec.backends.cpu` uses this module. It compiles each USED variant exactly once (streaming:
a spec and its model are dropped after their rows are snapshotted), so peak memory does not grow
with the number of variants.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import mujoco
import numpy as np
from tqdm.auto import tqdm

from mjvec.backends.base import Scene
from mjvec.errors import ConfigError

log = logging.getLogger(__name__)


@dataclass
class GroupPlan:
    """One topology group: the variants it holds and the envs assigned to it.

    variants: sorted global variant ids in this group; pack row r is variants[r].
    env_ids: sorted local env ids whose variant is in this group.
    rows: (len(env_ids),) pack row of each of those envs.
    """

    key: tuple
    variants: list[int]
    env_ids: np.ndarray
    rows: np.ndarray
    pack: object = None


def topology_key(model: mujoco.MjModel) -> tuple:
    """Variants batch together iff they have the same geom slots (count, types, names)."""
    names = tuple(model.geom(i).name for i in range(model.ngeom))
    return (model.ngeom, model.nbody, model.nq, model.geom_type.tobytes(), names)


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


def widen_bvh(model: mujoco.MjModel, roots: list[np.ndarray]) -> int:
    """Make every BVH node of each variant-dependent body enclose that body in EVERY variant.

    mjbatch-uni 0.2.5 keeps the canonical variant's `bvh_aabb` (an asset field it cannot expand)
    for all sims, so a variant reaching outside the canonical boxes silently loses contacts
    (reference/backends.md pitfall 1). Each variant's root box is in that variant's own inertial
    frame, which is also the frame its sim uses at run time, so the union of the roots is a valid
    box for all of them. Setting inner nodes and leaves to it too only costs narrowphase calls
    inside small tool bodies. Returns the number of bodies widened.
    """
    stacked = np.stack(roots)  # (V, nbody, 6)
    widened = 0
    for body in range(model.nbody):
        boxes = stacked[:, body]
        if np.isnan(boxes).any() or (boxes == boxes[0]).all():
            continue
        union = _union_boxes(boxes)
        adr, num = model.body_bvhadr[body], model.body_bvhnum[body]
        model.bvh_aabb[adr : adr + num] = union
        widened += 1
    return widened


def plan_groups(scene: Scene, *, widen: bool = True, progress: bool = True) -> list[GroupPlan]:
    """Compile each used variant once, group by topology, and build one VariantPack per group."""
    from mjbatch import VariantPack

    used = [int(v) for v in scene.used_variants]
    builders: dict[tuple, object] = {}
    plans: dict[tuple, GroupPlan] = {}
    roots: dict[tuple, list[np.ndarray]] = {}
    timestep = None
    for v in tqdm(used, desc=f"compiling {scene.name} variants", disable=not progress, leave=False):
        spec = scene.make_variant(v)
        model = spec.compile()
        if timestep is None:
            timestep = model.opt.timestep
        elif model.opt.timestep != timestep:
            # mjbatch-uni ignores a variant's own timestep (pitfall 5): refuse instead.
            raise ConfigError(
                f"variant {v} has timestep {model.opt.timestep}, but variant {used[0]} has {timestep}; "
                "all variants of a scene must share one timestep"
            )
        key = topology_key(model)
        if key not in builders:
            builders[key] = VariantPack.builder()
            plans[key] = GroupPlan(key, [], np.zeros(0, np.int64), np.zeros(0, np.int64))
            roots[key] = []
        builders[key].add_variant(spec, model)
        plans[key].variants.append(v)
        roots[key].append(_bvh_roots(model))
    variant_of_env = scene.variant_of_env
    out = []
    for key, plan in plans.items():
        builder = builders[key]
        canonical = plan.variants[builder.canonical_index]
        try:
            pack = builder.build(scene.make_variant(canonical))
        except ValueError as error:
            # mjbatch numbers variants within the group; name the scene's variant ids instead.
            raise ConfigError(
                f"variants {plan.variants[:8]} share a geom layout but cannot be batched: {error} "
                f"(group variant i = scene variant {plan.variants[:8]}[i]). Variants may differ only "
                "in geom size/pos/quat/rgba/mesh and body mass/inertia/COM."
            ) from error
        if widen:
            n = widen_bvh(pack.model, roots[key])
            log.debug("group %d variants: widened BVH of %d bodies", len(plan.variants), n)
        row_of_variant = {v: r for r, v in enumerate(plan.variants)}
        plan.env_ids = np.flatnonzero(np.isin(variant_of_env, plan.variants)).astype(np.int64)
        plan.rows = np.array([row_of_variant[int(variant_of_env[e])] for e in plan.env_ids], np.int64)
        plan.pack = pack
        out.append(plan)
    out.sort(key=lambda p: int(p.env_ids[0]))
    return out
