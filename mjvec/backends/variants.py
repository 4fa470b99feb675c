"""Compiler-coherent variants, shared by every backend: templates, per-env rows and routing.

A `Scene` has many variants (tools), each an independently compilable spec; that compile is the
oracle every env is checked against. `make_groups` compiles each USED variant exactly once and
splits the variants into groups that one engine object (a `mujoco.batch.Batch`, a mujoco_warp
Model) can run together:

- Variants share a group iff they agree on everything the engine cannot hold per env: every size
  of the model (so the MjData layout), structure such as the bodies' collision BVH trees, and every
  model array or option outside the engine's own list of per-env fields (`per_env`). Mesh and
  heightfield data are assets and do not split a group.
- Within a group, the per-env fields whose compiled values differ between the variants are FOUND
  by comparing the compiled variants bit for bit (no hand-written list). Each env gets the rows of
  its own variant; a field equal in every variant stays in the template.
- The template is the group's first variant compiled alone plus the distinct meshes and
  heightfields of the other variants, so that a per-env `geom_dataid` selects each env's own
  (`mjvec.backends.pooled`). Every added asset is checked to compile to the same data as in its
  own variant. Variants whose heightfields differ in data, grid shape (nrow, ncol) or size share a
  group: the geom bounds and body BVH boxes that follow from a heightfield's size are per-env
  fields of both engines.

`Routing` maps a backend's local env ids to (group, row of the group) and gathers per-group
arrays back into env order, geom-indexed fields in the canonical slot layout.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field

import mujoco
import numpy as np
from tqdm.auto import tqdm

from mjvec.backends.base import Scene
from mjvec.backends.pooled import ASSET_GEOM_TYPES, AssetPool
from mjvec.errors import ConfigError

# Model arrays that hold mesh or heightfield assets or only locate names: shared, never per env,
# and allowed to grow in a template that carries the assets of several variants.
_ASSET_PREFIXES = ("mesh_", "oct_", "hfield_", "name_")
_ASSET_ARRAYS = ("names", "names_map", "paths")
# Size counters of those assets (and of the BVH, whose mesh rows are assets too).
_ASSET_SIZES = ("nmesh", "noct", "nhfield", "nbvh", "nbuffer", "nnames", "npaths")
# BVH arrays: the bodies' rows come first, the meshes' rows (assets) follow.
_BVH_FIELDS = ("bvh_aabb", "bvh_child", "bvh_depth", "bvh_nodeid")


@functools.cache
def _field_names() -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """(array fields, 'opt.<name>' options, size counters) of MjModel: the same for every model."""
    model = mujoco.MjModel.from_xml_string("<mujoco/>")
    arrays = sorted(n for n in dir(model) if not n.startswith("_") and isinstance(getattr(model, n, None), np.ndarray))
    opt = model.opt
    options = sorted(f"opt.{n}" for n in dir(opt) if not n.startswith("_") and not callable(getattr(opt, n)))
    sizes = sorted(n for n in dir(model) if n.startswith("n") and isinstance(getattr(model, n, None), int))
    return tuple(arrays), tuple(options), tuple(sizes)


def model_arrays(model: mujoco.MjModel | None = None) -> list[str]:
    """Names of every array field of an MjModel, sorted (the same for every model)."""
    return list(_field_names()[0])


def option_fields(model: mujoco.MjModel | None = None) -> list[str]:
    """'opt.<name>' of every data field of MjOption, sorted."""
    return list(_field_names()[1])


@functools.cache
def _keyed_fields(per_env: frozenset[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(size counters, fields) that `structure_key` hashes for an engine holding `per_env` per env."""
    arrays, options, sizes = _field_names()
    fields = tuple(n for n in arrays + options if n not in per_env and not _is_asset(n) and n != "geom_dataid")
    return tuple(n for n in sizes if not n.startswith(_ASSET_SIZES)), fields


def layout_sizes(model: mujoco.MjModel) -> dict[str, int]:
    """Every size counter of `model` except its assets' (meshes, heightfields, names, BVH nodes):
    the sizes that variants of one group share, and that fix what an env allocates."""
    return {name: int(getattr(model, name)) for name in _keyed_fields(frozenset())[0]}


def field_value(model: mujoco.MjModel, name: str) -> np.ndarray:
    """An MjModel array or an 'opt.<name>' option as an array; BVH arrays cut to the bodies' rows."""
    if name.startswith("opt."):
        return np.asarray(getattr(model.opt, name[4:]))
    value = getattr(model, name)
    if name in _BVH_FIELDS:
        return value[: int(model.body_bvhnum.sum())]
    return value


def _is_asset(name: str) -> bool:
    return name.startswith(_ASSET_PREFIXES) or name in _ASSET_ARRAYS


def _asset_dataids(model: mujoco.MjModel) -> np.ndarray:
    """geom_dataid with mesh and heightfield references and primitives' -1 all set to -2: which
    asset a slot uses (if any) is per env (the slot's type stays in the key, as geom_type)."""
    ids = model.geom_dataid.copy()
    ids[np.isin(model.geom_type, ASSET_GEOM_TYPES) | (ids < 0)] = -2
    return ids


def structure_key(model: mujoco.MjModel, per_env: frozenset[str]) -> bytes:
    """A digest of everything an engine holding the `per_env` fields per env needs equal in one group."""
    digest = hashlib.blake2b(digest_size=16)
    sizes, fields = _keyed_fields(per_env)
    digest.update(str([getattr(model, n) for n in sizes]).encode())
    digest.update(f"nbodybvh={int(model.body_bvhnum.sum())};".encode())
    digest.update(_asset_dataids(model).tobytes())
    for name in fields:
        value = np.ascontiguousarray(field_value(model, name))
        digest.update(f"{name}{value.shape}".encode())
        digest.update(value.tobytes())
    return digest.digest()


@dataclass
class VariantGroup:
    """Variants one engine object runs together, and the envs assigned to them.

    variants: sorted scene variant ids; variant row r is variants[r].
    env_ids: (E,) sorted local env ids whose variant is in this group; the group's env k (its
        simulation or world k) is local env env_ids[k].
    rows: (E,) variant row of each of those envs.
    template: the model every env of the group runs on (see the module docstring).
    fields: name -> (V, *tail) per-variant rows of each per-env field whose compiled values differ
        between the variants ('opt.<name>' for options; BVH arrays hold the bodies' rows; geom_dataid
        holds template mesh and heightfield ids).
    geom_map: canonical geom slot -> this group's geom id, -1 where the slot is absent (set by
        `make_groups`).
    """

    key: bytes
    variants: list[int]
    template: mujoco.MjModel
    fields: dict[str, np.ndarray]
    env_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    rows: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    geom_map: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    @property
    def num_envs(self) -> int:
        return int(self.env_ids.size)

    def env_values(self, name: str) -> np.ndarray:
        """(E, *tail) each env's compiled value of `name` (a fresh array)."""
        rows = self.fields.get(name)
        if rows is not None:
            return rows[self.rows]
        value = field_value(self.template, name)
        return np.repeat(value[None], self.num_envs, axis=0)


class _GroupBuilder:
    """Streams the variants of one group: compares each with the first, keeps only what differs."""

    def __init__(self, key: bytes, variant: int, model: mujoco.MjModel, per_env: frozenset[str]) -> None:
        self.key = key
        self.variants = [variant]
        self.first = model
        names = [n for n in model_arrays(model) + option_fields(model)
                 if n in per_env and n != "geom_dataid" and not _is_asset(n)]
        self.reference = {n: np.array(field_value(model, n)) for n in names}
        self.reference = {n: v for n, v in self.reference.items() if v.size}
        self.reference_bytes = {n: v.tobytes() for n, v in self.reference.items()}
        self.rows: dict[str, list[np.ndarray]] = {}
        self.assets = AssetPool(model)
        self.dataids = [model.geom_dataid.copy()]

    def add(self, variant: int, model: mujoco.MjModel, spec: mujoco.MjSpec) -> None:
        count = len(self.variants)
        for name, ref in self.reference_bytes.items():
            value = field_value(model, name)
            rows = self.rows.get(name)
            if rows is not None:
                rows.append(np.array(value))
            elif value.tobytes() != ref:
                self.rows[name] = [self.reference[name]] * count + [np.array(value)]
        self.dataids.append(self.assets.template_dataids(model, spec))
        self.variants.append(variant)

    def build(self, scene: Scene) -> VariantGroup:
        fields = {name: np.stack(rows) for name, rows in self.rows.items()}
        dataids = np.stack(self.dataids)
        if (dataids != dataids[0]).any():
            fields["geom_dataid"] = dataids
        template = self.first
        if self.assets.grown:
            template = self.assets.union_template(scene.make_variant(self.variants[0]), self.variants)
        return VariantGroup(self.key, self.variants, template, fields)


def make_groups(scene: Scene, per_env: frozenset[str], *, progress: bool = True) -> list[VariantGroup]:
    """Compile each used variant once and group them (see the module docstring).

    per_env: the fields the engine can hold per env (MjModel array names and 'opt.<name>').
    Groups come sorted by their first env id; each has env_ids/rows set. Raises ConfigError when
    variants disagree on the timestep (one control period serves every env); each compiled variant
    is handed to `scene.check_variant` first (a memory check may refuse the scene there).
    """
    builders: dict[bytes, _GroupBuilder] = {}
    timestep = None
    used = [int(v) for v in scene.used_variants]
    for v in tqdm(used, desc=f"compiling {scene.name} variants", disable=not progress, leave=False):
        spec, model = scene.compile_variant(v)
        if scene.check_variant is not None:
            scene.check_variant(v, model)
        if timestep is None:
            timestep = model.opt.timestep
        elif model.opt.timestep != timestep:
            raise ConfigError(
                f"variant {v} has timestep {model.opt.timestep}, but variant {used[0]} has {timestep}; "
                "all variants of a scene must share one timestep"
            )
        key = structure_key(model, per_env)
        builder = builders.get(key)
        if builder is None:
            builders[key] = _GroupBuilder(key, v, model, per_env)
        else:
            builder.add(v, model, spec)
    groups = [b.build(scene) for b in builders.values()]
    for group in groups:
        row_of_variant = np.full(scene.num_variants, -1, np.int64)
        row_of_variant[group.variants] = np.arange(len(group.variants))
        group.env_ids = np.flatnonzero(row_of_variant[scene.variant_of_env] >= 0).astype(np.int64)
        group.rows = row_of_variant[scene.variant_of_env[group.env_ids]]
    groups.sort(key=lambda g: int(g.env_ids[0]))
    _set_geom_maps(groups)
    return groups


def _set_geom_maps(groups: Sequence[VariantGroup]) -> None:
    """Set each group's canonical-slot map; groups may differ only in their geoms."""
    canonical = canonical_model(groups)
    for group in groups:
        m = group.template
        for count in ("nbody", "njnt", "nq", "nv", "nu", "nsite", "nmocap", "nsensordata"):
            if getattr(m, count) != getattr(canonical, count):
                raise ConfigError(
                    f"variant groups differ in {count} ({getattr(m, count)} vs {getattr(canonical, count)}); "
                    "variants of one scene may differ only in their geoms"
                )
        names = [canonical.geom(i).name for i in range(canonical.ngeom)]
        local = {m.geom(i).name: i for i in range(m.ngeom)}
        missing = sorted(set(local) - set(names))
        if missing:
            raise ConfigError(f"geoms {missing} are absent from the canonical layout {names}")
        group.geom_map = np.array([local.get(n, -1) for n in names], np.int64)


def canonical_model(groups: Sequence[VariantGroup]) -> mujoco.MjModel:
    """The template with the most geoms: its names, ids and sizes define the env-level layout."""
    return max((g.template for g in groups), key=lambda m: m.ngeom)


class Routing:
    """Local env id <-> (group, row of the group), for a list of groups.

    group_of_env, row_of_env: (num_envs,) int64, read-only.
    """

    def __init__(self, groups: Sequence[VariantGroup], num_envs: int) -> None:
        self.groups = list(groups)
        self.group_of_env = np.full(num_envs, -1, np.int64)
        self.row_of_env = np.full(num_envs, -1, np.int64)
        for g, group in enumerate(self.groups):
            self.group_of_env[group.env_ids] = g
            self.row_of_env[group.env_ids] = np.arange(group.num_envs)
        if (self.group_of_env < 0).any():
            raise ConfigError("every env must belong to exactly one variant group")
        for array in (self.group_of_env, self.row_of_env):
            array.setflags(write=False)
        self.single = len(self.groups) == 1

    def split(self, env_ids: np.ndarray) -> list[tuple[int, np.ndarray, np.ndarray]]:
        """[(group, positions in env_ids, rows of the group)] for the groups env_ids touch, in order.

        Rows keep the order of env_ids; sorted env_ids give sorted rows.
        """
        if self.single:
            return [(0, np.arange(env_ids.size), self.row_of_env[env_ids])]
        groups = self.group_of_env[env_ids]
        out = []
        for g in range(len(self.groups)):
            pos = np.flatnonzero(groups == g)
            if pos.size:
                out.append((g, pos, self.row_of_env[env_ids[pos]]))
        return out

    def gather(self, per_group: Sequence[np.ndarray], canonical_value: np.ndarray, *, geom: bool) -> np.ndarray:
        """(num_envs, *tail) from per-group (E_g, *group_tail) arrays.

        geom: the first tail axis indexes geoms; group arrays are in their group's geom ids and the
        result in canonical slots, where a slot absent from an env's group keeps `canonical_value`'s
        entry (finite, and without effect in that env).
        """
        tail = canonical_value.shape
        out = np.empty((self.group_of_env.size, *tail), np.asarray(per_group[0]).dtype)
        for group, values in zip(self.groups, per_group, strict=True):
            if geom:
                out[group.env_ids] = canonical_value
                present = np.flatnonzero(group.geom_map >= 0)
                out[np.ix_(group.env_ids, present)] = values[:, group.geom_map[present]]
            else:
                out[group.env_ids] = np.reshape(values, (values.shape[0], *tail))
        return out

    def geom_types(self, per_group: Sequence[np.ndarray]) -> np.ndarray:
        """(num_envs, ngeom) each env's own mjtGeom type of canonical slot j, -1 where absent,
        from per-group (E_g, ngeom_g) types."""
        canonical = canonical_model(self.groups)
        out = np.full((self.group_of_env.size, canonical.ngeom), -1, np.int64)
        for group, types in zip(self.groups, per_group, strict=True):
            have = np.flatnonzero(group.geom_map >= 0)
            out[np.ix_(group.env_ids, have)] = np.asarray(types)[:, group.geom_map[have]]
        return out
