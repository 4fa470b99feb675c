"""Per-world geom size / position writes on the Warp engine: what they refresh.

mujoco_warp culls contact pairs with each world's `geom_rbound` and `geom_aabb` (it has no body
BVH), so a `geom_size` write refreshes both for exactly the worlds and geoms written, with the
compiler's formulas (`_geometry.primitive_bounds`). (Mesh and SDF sizes, and non-positive ones,
are refused before anything is written: `_geometry.check_sizes`, for both engines.)

mujoco_warp also computes the pose of a STATIC geom (one on a body welded to the world, not under
a mocap body: the table) once, in make_data, from the template, and never again. `StaticGeoms`
computes those poses per world from the world's own `body_pos`/`body_quat`/`geom_pos`/`geom_quat`
rows, with MuJoCo's kinematics in float64: at construction (a variant may place a static geom
elsewhere) and after every `geom_pos` or `body_pos` write that moves one.
"""

from __future__ import annotations

from typing import Any

import mujoco
import numpy as np
import torch

from mjvec.backends import _geometry as geometry_math
from mjvec.backends.warp.build import Worlds, model_view, torch_view
from mjvec.rotations import quat_mul, quat_to_mat_mj

# Writes after which bounds or static geom poses are refreshed.
GEOMETRY_TRIGGERS = frozenset({"geom_size", "geom_pos", "body_pos"})


class StaticGeoms:
    """The static geoms of a template model and their per-world poses (see the module docstring)."""

    def __init__(self, model: mujoco.MjModel) -> None:
        body = model.geom_bodyid
        self.geoms = np.flatnonzero(
            (model.body_weldid[body] == 0) & (model.body_mocapid[model.body_rootid[body]] == -1))
        static = (model.body_weldid == 0) & (model.body_mocapid[model.body_rootid] == -1)
        self.bodies = np.flatnonzero(static)[1:]  # parents come before their children; 0 is the world
        self.parent = model.body_parentid
        self.nbody = model.nbody
        self.geom_body = body[self.geoms]

    def poses(self, body_pos: np.ndarray, body_quat: np.ndarray, geom_pos: np.ndarray,
              geom_quat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(xpos (K, S, 3), xmat (K, S, 9)) of the static geoms, from per-world (K, ...) float rows."""
        k = body_pos.shape[0]
        xpos = np.zeros((k, self.nbody, 3))
        xquat = np.zeros((k, self.nbody, 4))
        xquat[:, 0, 0] = 1.0
        for b in self.bodies:  # mj_kinematics for bodies without joints
            p = self.parent[b]
            xpos[:, b] = xpos[:, p] + np.einsum("kij,kj->ki", quat_to_mat_mj(xquat[:, p]), body_pos[:, b])
            q = quat_mul(xquat[:, p], body_quat[:, b].astype(np.float64))
            xquat[:, b] = q / np.linalg.norm(q, axis=-1, keepdims=True)
        bodies = self.geom_body
        rot = quat_to_mat_mj(xquat[:, bodies])
        gpos = xpos[:, bodies] + np.einsum("ksij,ksj->ksi", rot, geom_pos[:, self.geoms])
        gmat = quat_to_mat_mj(quat_mul(xquat[:, bodies], geom_quat[:, self.geoms].astype(np.float64)))
        return gpos, gmat.reshape(*gmat.shape[:-2], 9)

    def write(self, group: Worlds, rows: np.ndarray, sources: dict[str, np.ndarray]) -> None:
        """Set Data.geom_xpos/geom_xmat of the static geoms in worlds `rows` from `sources`
        (body_pos, body_quat, geom_pos, geom_quat as (K, ...) arrays)."""
        if not self.geoms.size or not rows.size:
            return
        xpos, xmat = self.poses(sources["body_pos"], sources["body_quat"], sources["geom_pos"], sources["geom_quat"])
        m = group.template
        gx = torch_view(group.d.geom_xpos, (m.ngeom, 3))
        gm = torch_view(group.d.geom_xmat, (m.ngeom, 9))
        index = torch.as_tensor(rows, device=gx.device)[:, None]
        geoms = torch.as_tensor(self.geoms, device=gx.device)[None, :]
        gx[index, geoms] = torch.as_tensor(xpos, dtype=gx.dtype).to(gx.device)
        gm[index, geoms] = torch.as_tensor(xmat, dtype=gm.dtype).to(gm.device)


def refresh_geometry(worlds: list[Worlds], statics: list[StaticGeoms],
                     moved: list[tuple[str, int, np.ndarray, np.ndarray]]) -> None:
    """Refresh bounds and static geom poses after writes of (field, group, world rows, geom/body ids)."""
    touched: dict[int, set[int]] = {}
    for name, g, rows, index in moved:
        group = worlds[g]
        device = model_view(group, "geom_size").device
        index_t, rows_t = torch.as_tensor(index, device=device), torch.as_tensor(rows, device=device)
        if name == "geom_size":
            size = model_view(group, "geom_size")[rows_t[:, None], index_t[None, :]].cpu().numpy()
            rbound, aabb = geometry_math.primitive_bounds(group.template.geom_type[index], size.astype(np.float64))
            for field, value in (("geom_rbound", rbound), ("geom_aabb", aabb)):
                target = model_view(group, field)
                value_t = torch.as_tensor(value, dtype=target.dtype, device=device)
                target[rows_t[:, None], index_t[None, :]] = value_t
            continue
        static = statics[g]
        hit = np.isin(index, static.geoms) if name == "geom_pos" else np.isin(index, static.bodies)
        if hit.any():
            touched.setdefault(g, set()).update(rows.tolist())
    for g, rows in touched.items():
        rows_a = np.array(sorted(rows), np.int64)
        statics[g].write(worlds[g], rows_a, pose_sources(worlds[g], rows_a))


def pose_sources(worlds: Worlds, rows: np.ndarray) -> dict[str, Any]:
    """Worlds `rows`' current body/geom poses (float32 rows as float64; template where not per world)."""
    out = {}
    for name in ("body_pos", "body_quat", "geom_pos", "geom_quat"):
        if name in worlds.per_world:
            view = model_view(worlds, name)
            out[name] = view[torch.as_tensor(rows, device=view.device)].cpu().numpy().astype(np.float64)
        else:
            out[name] = np.repeat(getattr(worlds.template, name)[None], rows.size, axis=0)
    return out
