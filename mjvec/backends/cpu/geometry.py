"""Per-env geom size / position writes on the CPU backend (a mixin of `CpuBackend`).

MuJoCo derives `geom_rbound` and `geom_aabb` from a geom's size, and each body's collision BVH
(`bvh_aabb`, in the body's inertial frame) from its geoms' boxes and poses. `mujoco.batch` holds
all three per simulation, so after a write to `geom_size`, `geom_pos` or `body_ipos` the backend
recomputes them for exactly the simulations and bodies touched, with the compiler's formulas:
a leaf is the inertial-frame bounding box of its geom's box, a node the union of its children.
"""

from __future__ import annotations

import mujoco
import numpy as np

from mjvec.backends import _geometry as G
from mjvec.backends.base import FieldWrite
from mjvec.errors import FieldWriteError

# Writes after which geom bounds and body BVHs are refreshed.
GEOMETRY_TRIGGERS = frozenset({"geom_size", "geom_pos", "body_ipos"})


class GeometryWrites:
    """Needs the host's `_groups`, `_routing`, `_model`, `_rows(g, name)` and `_writable_rows(g, name)`."""

    def _check_sizes(self, write: FieldWrite, ids: np.ndarray, values: np.ndarray) -> None:
        """geom_size writes: primitive geoms only (a mesh's shape is a shared asset), sizes positive."""
        slots = np.arange(self._model.ngeom) if write.index is None else write.index
        for g, _, rows in self._routing.split(ids):
            local = self._groups[g].geom_map[slots]
            local = local[local >= 0]
            # A slot's type may differ between the variants of one group: check each env's own.
            types = np.asarray(self._rows(g, "geom_type"))[rows][:, local]
            bad = np.flatnonzero(~np.isin(types, list(G.PRIMITIVES)).any(axis=0))
            if bad.size:
                model = self._groups[g].template
                names = sorted({model.geom(int(local[c])).name for c in bad})
                kinds = sorted({mujoco.mjtGeom(int(t)).name for t in types.ravel() if int(t) not in G.PRIMITIVES})
                raise FieldWriteError(
                    f"geom_size of geoms {names} cannot be written: they are {kinds[:4]} in some of these envs, "
                    "whose shape is a shared asset; randomize primitive geoms only (e.g. tool_geometry='primitive')"
                )
        if (values[..., 0] <= 0).any() or (values < 0).any():
            raise FieldWriteError("FieldWrite('geom_size').values must be positive (first component > 0, none < 0)")

    def _check_not_simple(self, write: FieldWrite, ids: np.ndarray) -> None:
        """body_ipos writes: MuJoCo caches a "simple" body's inertial frame as its body frame, so
        its COM cannot move per env (mj_setConst refuses it); name such bodies and the fix."""
        bodies = np.arange(self._model.nbody) if write.index is None else write.index
        for g, _, rows in self._routing.split(ids):
            simple = np.asarray(self._rows(g, "body_simple"))[rows][:, bodies].astype(bool)
            if simple.any():
                model = self._groups[g].template
                names = sorted({model.body(int(bodies[c])).name for c in np.flatnonzero(simple.any(axis=0))})
                envs = self._groups[g].env_ids[rows[simple.any(axis=1)]]
                raise FieldWriteError(
                    f"body_ipos of bodies {names} cannot be written in envs {envs[:8].tolist()}: MuJoCo compiled them "
                    "as 'simple' (inertial frame = body frame), a cached structure a per-env COM would break. Compile "
                    "those bodies with MjsBody.simple = False (MJCF: <body simple=\"false\">) to randomize their COM"
                )

    def _refresh_geometry(self, moved: list[tuple[str, int, np.ndarray, np.ndarray]]) -> None:
        """Refresh bounds and BVHs after writes of (field, group, sim rows, geom or body ids)."""
        bodies: dict[int, tuple[set[int], set[int]]] = {}
        for field, g, rows, index in moved:
            model = self._groups[g].template
            if field == "geom_size":
                size = self._rows(g, "geom_size")[rows][:, index]
                types = np.asarray(self._rows(g, "geom_type"))[rows][:, index]
                rbound, aabb = G.primitive_bounds(types, size)
                self._writable_rows(g, "geom_rbound")[rows[:, None], index[None, :]] = rbound
                self._writable_rows(g, "geom_aabb")[rows[:, None], index[None, :]] = aabb
            touched = index if field == "body_ipos" else model.geom_bodyid[index]
            sims, ids = bodies.setdefault(g, (set(), set()))
            sims.update(rows.tolist())
            ids.update(int(b) for b in touched if model.body_bvhnum[b] > 0)
        for g, (sims, ids) in bodies.items():
            rows = np.array(sorted(sims), np.int64)
            for body in sorted(ids):
                self._refresh_bvh(g, rows, body)

    def _refresh_bvh(self, g: int, rows: np.ndarray, body: int) -> None:
        """Recompute body `body`'s BVH nodes for group g's simulations `rows`."""
        model = self._groups[g].template
        adr, num = int(model.body_bvhadr[body]), int(model.body_bvhnum[body])
        boxes = np.array(self._rows(g, "bvh_aabb")[rows, adr : adr + num])
        geom_aabb, pos, quat = (self._rows(g, n)[rows] for n in ("geom_aabb", "geom_pos", "geom_quat"))
        ipos, iquat = self._rows(g, "body_ipos")[rows, body], self._rows(g, "body_iquat")[rows, body]
        # Deepest nodes first, so that every node's children are final when it is reached.
        for node in sorted(range(num), key=lambda k: -int(model.bvh_depth[adr + k])):
            geom = int(model.bvh_nodeid[adr + node])
            if geom >= 0:
                lo, hi = G.box_in_inertial_frame(geom_aabb[:, geom], pos[:, geom], quat[:, geom], ipos, iquat)
            else:
                kids = [int(c) for c in model.bvh_child[adr + node] if c >= 0]
                child = boxes[:, kids]
                lo, hi = (child[..., :3] - child[..., 3:]).min(axis=1), (child[..., :3] + child[..., 3:]).max(axis=1)
            boxes[:, node] = np.concatenate([(lo + hi) / 2, (hi - lo) / 2], axis=1)
        self._writable_rows(g, "bvh_aabb")[rows, adr : adr + num] = boxes
