"""Grouping a scene's variants by topology, shared by the CPU and Warp backends.

Each USED variant is compiled exactly once, streaming: its spec and model are dropped after a
`mjbatch.VariantPackBuilder` (and the caller's `snapshot`) took the small rows they need, so peak
memory does not grow with the number of variants.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import mujoco
import numpy as np
from tqdm.auto import tqdm

from mjvec.backends.base import Scene
from mjvec.errors import ConfigError


@dataclass
class VariantGroup:
    """Variants that batch together, and the envs assigned to them.

    variants: sorted scene variant ids; pack row r is variants[r].
    env_ids: sorted local env ids whose variant is in this group.
    rows: (len(env_ids),) pack row of each of those envs.
    pack: the group's `mjbatch.VariantPack`.
    snapshots: per variant (pack row order), what the caller's `snapshot(model)` returned.
    """

    key: tuple
    variants: list[int]
    env_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    rows: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    pack: Any = None
    snapshots: list[Any] = field(default_factory=list)


def compile_groups(
    scene: Scene,
    key: Callable[[mujoco.MjModel], tuple],
    snapshot: Callable[[mujoco.MjModel], Any],
    *,
    progress: bool = True,
) -> list[VariantGroup]:
    """Compile each used variant once, group by `key(model)`, build one VariantPack per group.

    Groups come sorted by their first env id. Raises ConfigError when variants disagree on the
    timestep (mjbatch-uni would silently ignore a variant's own) or cannot share a pack.
    """
    from mjbatch import VariantPack

    used = [int(v) for v in scene.used_variants]
    builders: dict[tuple, Any] = {}
    groups: dict[tuple, VariantGroup] = {}
    timestep = None
    for v in tqdm(used, desc=f"compiling {scene.name} variants", disable=not progress, leave=False):
        spec = scene.make_variant(v)
        model = spec.compile()
        if timestep is None:
            timestep = model.opt.timestep
        elif model.opt.timestep != timestep:
            raise ConfigError(
                f"variant {v} has timestep {model.opt.timestep}, but variant {used[0]} has {timestep}; "
                "all variants of a scene must share one timestep"
            )
        k = key(model)
        if k not in builders:
            builders[k] = VariantPack.builder()
            groups[k] = VariantGroup(k, [])
        builders[k].add_variant(spec, model)
        groups[k].variants.append(v)
        groups[k].snapshots.append(snapshot(model))
    for k, group in groups.items():
        builder = builders[k]
        try:
            group.pack = builder.build(scene.make_variant(group.variants[builder.canonical_index]))
        except ValueError as error:
            # mjbatch numbers variants within the group; name the scene's variant ids instead.
            raise ConfigError(
                f"variants {group.variants[:8]} share a geom layout but cannot be batched: {error} "
                f"(group variant i = scene variant {group.variants[:8]}[i]). Variants may differ only "
                "in geom size/pos/quat/rgba/mesh and body mass/inertia/COM."
            ) from error
        row_of_variant = {v: r for r, v in enumerate(group.variants)}
        group.env_ids = np.flatnonzero(np.isin(scene.variant_of_env, group.variants)).astype(np.int64)
        group.rows = np.array([row_of_variant[int(scene.variant_of_env[e])] for e in group.env_ids], np.int64)
    return sorted(groups.values(), key=lambda g: int(g.env_ids[0]))


def geom_layout(models: Sequence[mujoco.MjModel]) -> tuple[mujoco.MjModel, list[np.ndarray]]:
    """The canonical model (most geoms) and, per model, canonical geom slot -> its geom id (-1).

    Topology groups may differ only in their geoms; every other entity count must agree, so that
    body/dof/actuator-indexed fields mean the same index in every env.
    """
    canonical = max(models, key=lambda m: m.ngeom)
    for m in models:
        for count in ("nbody", "njnt", "nq", "nv", "nu", "nsite", "nmocap", "nsensordata"):
            if getattr(m, count) != getattr(canonical, count):
                raise ConfigError(
                    f"topology groups differ in {count} ({getattr(m, count)} vs {getattr(canonical, count)}); "
                    "variants may differ only in their geoms"
                )
    names = [canonical.geom(i).name for i in range(canonical.ngeom)]
    maps = []
    for m in models:
        local = {m.geom(i).name: i for i in range(m.ngeom)}
        missing = set(local) - set(names)
        if missing:
            raise ConfigError(f"geoms {sorted(missing)} are absent from the canonical layout {names}")
        maps.append(np.array([local.get(n, -1) for n in names], np.int64))
    return canonical, maps
