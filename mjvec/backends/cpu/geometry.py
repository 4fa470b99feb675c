"""Per-env geom size / position writes on the CPU backend (a mixin of `CpuBackend`).

A size write refreshes the derived `geom_rbound` / `geom_aabb` rows; any size or position write
is refused (and rolled back by the caller) if it would move the geom outside its body's collision
BVH, which mjbatch-uni 0.2.5 keeps per model, not per sim (see `_geometry`).
"""

from __future__ import annotations

from typing import Any

import mujoco
import numpy as np

from mjvec.backends import _geometry as G
from mjvec.backends.base import FieldWrite
from mjvec.errors import FieldWriteError

# Writes that move or resize a geom: derived bounds are refreshed and the BVH containment checked.
GEOMETRY_FIELDS = frozenset({"geom_size", "geom_pos"})


class GeometryWrites:
    """Needs the host's `_plans`, `_geom_local`, `_group_of_env`, `_local_of_env`, `_model`, `_bvh_margin`,
    `_field_rows(g, name)` and `_field_array(g, name)` (see CpuBackend)."""

    _plans: list[Any]
    _geom_local: list[np.ndarray]
    _group_of_env: np.ndarray
    _local_of_env: np.ndarray
    _model: mujoco.MjModel
    _bvh_margin: float

    def _check_sizes(self, write: FieldWrite, ids: np.ndarray, values: np.ndarray) -> None:
        """geom_size writes: primitive geoms only (mesh shapes are assets), sizes positive."""
        slots = np.arange(self._model.ngeom) if write.index is None else write.index
        groups = self._group_of_env[ids]
        for g in np.unique(groups):
            model = self._plans[int(g)].pack.model
            local = self._geom_local[int(g)][slots]
            local = local[local >= 0]
            # A slot's type is a per-variant row (a group may mix types): check each env's own.
            rows = self._local_of_env[ids[groups == g]]
            types = np.asarray(self._field_rows(int(g), "geom_type"))[rows][:, local]
            bad = sorted({int(local[c]) for c in np.flatnonzero(~np.isin(types, list(G.PRIMITIVES)).any(axis=0))})
            if bad:
                names = sorted({model.geom(j).name for j in bad})
                kinds = sorted({mujoco.mjtGeom(int(t)).name for t in types.ravel() if int(t) not in G.PRIMITIVES})
                raise FieldWriteError(
                    f"geom_size of geoms {names} cannot be written: they are meshes (type {kinds[:4]}) in some "
                    "of these envs, whose shape is a shared asset; randomize primitive geoms only "
                    "(e.g. tool_geometry='primitive')"
                )
        if (values[..., 0] <= 0).any() or (values < 0).any():
            raise FieldWriteError("FieldWrite('geom_size').values must be positive (first component > 0, none < 0)")

    def _refresh_geometry(self, geometry: list, undo: list) -> None:
        """Refresh geom_rbound/geom_aabb after size writes; refuse geoms that leave their BVH.

        Raises FieldWriteError (the caller rolls every write back) naming the geom, the envs, how
        far it reaches outside its body's collision BVH, and the bvh_margin that would fit it.
        """
        for field, g, rows, geoms in geometry:
            if field == "geom_size":
                rbound, aabb = self._size_bounds(g, rows, geoms, self._field_rows(g, "geom_size")[rows][:, geoms])
                for name, new in (("geom_rbound", rbound), ("geom_aabb", aabb)):
                    target = self._field_array(g, name)
                    undo.append((target, rows, target[rows].copy()))
                    target[rows[:, None], geoms[None, :]] = new
            self._check_reach(field, g, rows, geoms, self._field_rows(g, "geom_aabb")[rows][:, geoms],
                              self._field_rows(g, "geom_pos")[rows][:, geoms])

    def _dry_check_geometry(self, field: str, g: int, rows: np.ndarray, geoms: np.ndarray, vals: np.ndarray) -> None:
        """The reach check of a geom_size / geom_pos write of `vals` (K, M, 3), without writing anything."""
        if field == "geom_size":
            aabb, pos = self._size_bounds(g, rows, geoms, vals)[1], self._field_rows(g, "geom_pos")[rows][:, geoms]
        else:
            aabb, pos = self._field_rows(g, "geom_aabb")[rows][:, geoms], vals
        self._check_reach(field, g, rows, geoms, aabb, pos)

    def _size_bounds(self, g: int, rows: np.ndarray, geoms: np.ndarray,
                     size: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(rbound, aabb) of geoms (M,) of group rows (K,) at sizes (K, M, 3), with each env's own geom types."""
        return G.primitive_bounds(np.asarray(self._field_rows(g, "geom_type"))[rows][:, geoms], size)

    def _check_reach(self, field: str, g: int, rows: np.ndarray, geoms: np.ndarray, aabb: np.ndarray,
                     pos: np.ndarray) -> None:
        """Raise FieldWriteError if geoms (M,) of group rows (K,), with these aabb (K, M, 6) and
        pos (K, M, 3), reach outside their body's collision BVH."""
        model = self._plans[g].pack.model
        for c, j in enumerate(geoms.tolist()):
            body = int(model.geom_bodyid[j])
            lo, hi = G.box_in_inertial_frame(
                aabb[:, c], pos[:, c], self._field_rows(g, "geom_quat")[rows, j],
                self._field_rows(g, "body_ipos")[rows, body], self._field_rows(g, "body_iquat")[rows, body],
            )
            over = G.outside_boxes(lo, hi, G.bvh_path_boxes(model, j))
            if (over > 1e-9).any():
                envs = self._plans[g].env_ids[rows[over > 1e-9]]
                raise FieldWriteError(
                    f"{field} write puts geom {model.geom(j).name!r} in envs {envs[:8].tolist()} up to "
                    f"{over.max():.4f} m outside its body's collision BVH, where it would silently lose "
                    f"contacts (mjbatch-uni cannot rebuild BVHs per env). Build the backend with "
                    f"bvh_margin >= {self._bvh_margin + over.max():.3f} (make_vec(..., bvh_margin=...)) "
                    "or narrow the range"
                )
