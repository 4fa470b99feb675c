"""Assets pooled in a variant group's template: meshes and heightfields that select per env.

A mesh or heightfield is an asset: a geom points at one through `geom_dataid`, and both engines
hold `geom_dataid` per env (`mujoco.batch` expands it per simulation; mujoco_warp reads it per
world in its collision, ray and bound kernels). So variants that differ only in which mesh or
heightfield a geom shows share one engine group: the group's template is its first variant
compiled alone plus every DISTINCT asset of the other variants, and each env's `geom_dataid` row
selects its own.

`AssetPool` streams the variants of one group: for each, the template id of every asset its
geoms use (an asset already pooled is recognised by a digest of its compiled data, so equal
assets are pooled once), queuing the unseen ones; `union_template` adds the queued assets to the
first variant's spec, compiles it, and checks that every asset compiled to exactly the data it has
in its own variant (ConfigError otherwise).

- A mesh is added from its `MjsMesh` attributes (`MESH_ATTRS`), as its variant defined it.
- A heightfield is added from its COMPILED data (nrow, ncol, size and the elevation grid, which
  MuJoCo has already normalised to [0, 1]; normalising it again is exact), so a heightfield loaded
  from a PNG or from a spec's asset dict needs no file in the template.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

import mujoco
import numpy as np

from mjvec.errors import ConfigError

# MjsMesh attributes that define a mesh's compiled data.
MESH_ATTRS = (
    "file", "content_type", "refpos", "refquat", "scale", "inertia", "smoothnormal", "maxhullvert",
    "needsdf", "octree_maxdepth", "uservert", "usernormal", "usertexcoord", "userface", "userfacenormal",
    "userfacetexcoord", "usernode", "usertet",
)
MESH_GEOM_TYPES = (int(mujoco.mjtGeom.mjGEOM_MESH), int(mujoco.mjtGeom.mjGEOM_SDF))
HFIELD_GEOM_TYPES = (int(mujoco.mjtGeom.mjGEOM_HFIELD),)
ASSET_GEOM_TYPES = MESH_GEOM_TYPES + HFIELD_GEOM_TYPES


def mesh_key(model: mujoco.MjModel, mesh: int) -> bytes:
    """A digest of mesh `mesh`'s compiled vertices, faces and frame: equal digests, equal meshes."""
    digest = hashlib.blake2b(digest_size=16)
    for name in ("vert", "face"):
        adr, num = int(getattr(model, f"mesh_{name}adr")[mesh]), int(getattr(model, f"mesh_{name}num")[mesh])
        digest.update(np.ascontiguousarray(getattr(model, f"mesh_{name}")[adr : adr + num]).tobytes())
    for name in ("mesh_pos", "mesh_quat", "mesh_scale"):
        digest.update(np.ascontiguousarray(getattr(model, name)[mesh]).tobytes())
    return digest.digest()


def hfield_grid(model: mujoco.MjModel, hfield: int) -> np.ndarray:
    """(nrow, ncol) float32 view of heightfield `hfield`'s compiled elevation data (in [0, 1])."""
    nrow, ncol = int(model.hfield_nrow[hfield]), int(model.hfield_ncol[hfield])
    adr = int(model.hfield_adr[hfield])
    return model.hfield_data[adr : adr + nrow * ncol].reshape(nrow, ncol)


def hfield_key(model: mujoco.MjModel, hfield: int) -> bytes:
    """A digest of heightfield `hfield`'s compiled grid shape, size and data: equal digests, equal fields."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(np.array([model.hfield_nrow[hfield], model.hfield_ncol[hfield]], np.int64).tobytes())
    digest.update(np.ascontiguousarray(model.hfield_size[hfield]).tobytes())
    digest.update(np.ascontiguousarray(hfield_grid(model, hfield)).tobytes())
    return digest.digest()


def _copy_attr(value: object) -> object:
    """A copy that outlives its spec (MjsMesh vectors are views into the spec's memory)."""
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__"):
        return value
    return list(value)  # type: ignore[call-overload]


def _mesh_attrs(model: mujoco.MjModel, spec: mujoco.MjSpec, mesh: int) -> dict[str, object]:
    return {a: _copy_attr(getattr(spec.mesh(model.mesh(mesh).name), a)) for a in MESH_ATTRS}


def _hfield_attrs(model: mujoco.MjModel, spec: mujoco.MjSpec, hfield: int) -> dict[str, object]:
    return {"nrow": int(model.hfield_nrow[hfield]), "ncol": int(model.hfield_ncol[hfield]),
            "size": model.hfield_size[hfield].tolist(), "userdata": hfield_grid(model, hfield).ravel().tolist()}


@dataclass(frozen=True)
class _Kind:
    """How one kind of asset is counted, keyed, read from a variant and added to a spec."""

    name: str
    geom_types: tuple[int, ...]
    count: str
    key: Callable[[mujoco.MjModel, int], bytes]
    attrs: Callable[[mujoco.MjModel, mujoco.MjSpec, int], dict[str, object]]
    add: str
    element: str
    collection: str


KINDS = (
    _Kind("mesh", MESH_GEOM_TYPES, "nmesh", mesh_key, _mesh_attrs, "add_mesh", "mesh", "meshes"),
    _Kind("hfield", HFIELD_GEOM_TYPES, "nhfield", hfield_key, _hfield_attrs, "add_hfield", "hfield", "hfields"),
)


@dataclass
class _Queued:
    name: str  # the asset's name in its own variant
    attrs: dict[str, object]
    key: bytes


class AssetPool:
    """The assets of one variant group's template (see the module docstring).

    first: the group's first variant compiled alone (its assets keep their ids in the template).
    """

    def __init__(self, first: mujoco.MjModel) -> None:
        self.first = first
        self.id_of_key = {k.name: {k.key(first, i): i for i in range(getattr(first, k.count))} for k in KINDS}
        self.queued: dict[str, list[_Queued]] = {k.name: [] for k in KINDS}

    @property
    def grown(self) -> bool:
        """Whether any variant brought an asset the first variant does not have."""
        return any(self.queued.values())

    def template_dataids(self, model: mujoco.MjModel, spec: mujoco.MjSpec) -> np.ndarray:
        """(ngeom,) the variant's geom_dataid in template asset ids; unseen assets are queued."""
        ids = model.geom_dataid.copy()
        for kind in KINDS:
            pooled, queue = self.id_of_key[kind.name], self.queued[kind.name]
            for g in np.flatnonzero(np.isin(model.geom_type, kind.geom_types) & (ids >= 0)):
                asset = int(ids[g])
                key = kind.key(model, asset)
                if key not in pooled:
                    pooled[key] = getattr(self.first, kind.count) + len(queue)
                    name = getattr(model, kind.element)(asset).name
                    queue.append(_Queued(name, kind.attrs(model, spec, asset), key))
                ids[g] = pooled[key]
        return ids

    def union_template(self, spec: mujoco.MjSpec, variants: list[int]) -> mujoco.MjModel:
        """`spec` (the first variant's, fresh) plus every queued asset, compiled and checked asset by asset."""
        added: dict[str, list[str]] = {}
        for kind in KINDS:
            taken = {e.name for e in getattr(spec, kind.collection)}
            added[kind.name] = []
            for k, queued in enumerate(self.queued[kind.name]):
                new = f"{queued.name}#{k}"
                while new in taken:
                    new += "_"
                element = getattr(spec, kind.add)(name=new)
                for attr, value in queued.attrs.items():
                    setattr(element, attr, value)
                added[kind.name].append(new)
        try:
            template = spec.compile()
        except ValueError as error:
            raise ConfigError(
                f"the template of variant group {variants[:4]} (its first variant plus the other variants' meshes "
                f"and heightfields) does not compile: {error}"
            ) from error
        for kind in KINDS:
            first_count = getattr(self.first, kind.count)
            element = getattr(self.first, kind.element)
            expected = [(kind.key(self.first, i), element(i).name) for i in range(first_count)]
            expected += [(q.key, q.name) for q in self.queued[kind.name]]
            bad = [q.name for k, (q, name) in enumerate(zip(self.queued[kind.name], added[kind.name], strict=True))
                   if getattr(template, kind.element)(name).id != first_count + k]
            bad += [name for asset, (key, name) in enumerate(expected) if kind.key(template, asset) != key]
            if bad:
                raise ConfigError(
                    f"{kind.name} {bad[0]!r} of a variant of group {variants[:4]} did not compile to the same data "
                    "inside the group's template as in its own variant; this scene's assets cannot be batched "
                    f"(each variant's {kind.name} must be defined by its own attributes alone)"
                )
        return template
