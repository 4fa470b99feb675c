"""The checks of per-env geometry writes on the CPU backend (a mixin of `CpuBackend`).

A geom_size, geom_pos or body_ipos write is followed by mj_setConst for the envs written (their
recompute level comes from MuJoCo's own table, `mjvec.backends.fields`), which recomputes what the
compiler derives from geometry: `geom_rbound`, `geom_aabb`, each body's BVH (`bvh_aabb`) and the
`geom_sameframe` / `body_sameframe` flags that let `mj_kinematics` skip a geom's offset. What it
cannot make exact is refused here: resizing a mesh (a shared asset) and moving a "simple" body's COM.
"""

from __future__ import annotations

import mujoco
import numpy as np

from mjvec.backends import _geometry as G
from mjvec.backends.base import FieldWrite
from mjvec.errors import FieldWriteError


class GeometryWrites:
    """Needs the host's `_groups`, `_routing`, `_model` and `_rows(g, name)`."""

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
