"""Geoms of one tool inside an MjsBody, as primitives or as convex meshes.

Slot contract (what lets the backends batch every tool in one group): a tool adds the geoms
`{prefix}_handle` and `{prefix}_head`; in mesh mode each real part uses the mesh
`{prefix}_handle_mesh` / `{prefix}_head_mesh`. A headless tool's head slot is INERT: a tiny box at
the handle's centre that collides with nothing, weighs nothing and is not drawn, so the tool is
physically just its handle while every scene has the same geoms (and so one MjData layout). Names,
contact bits, friction, group and rgba depend only on the topology and on the arguments, never on
the tool's sizes; only types, sizes, poses and mesh vertices vary from tool to tool.
"""

from __future__ import annotations

import mujoco
import numpy as np

from mjvec import portable
from mjvec.errors import ConfigError, allowed
from mjvec.tasks.simtoolreal.catalog.tools import TOOL_GEOMETRIES, Tool

TOOL_FRICTION = 0.5
TOOL_RGBA = ((0.85, 0.55, 0.2, 1.0), (0.35, 0.35, 0.4, 1.0))  # handle, head
GHOST_RGBA = (0.2, 0.9, 0.2, 0.35)
VISUAL_GROUP = 2
# The inert head slot of headless tools: drawn in no default-visible group (0-2), and with a
# contact type no geom's affinity has, so it never collides, yet MuJoCo keeps it in the body's
# collision BVH (a geom with no contact bits at all is left out, which would change the tree).
HIDDEN_GROUP = 5
INERT_CONTYPE = 1 << 30
INERT_HALF_SIZE = 1e-3

# Mesh capsule resolution: points per ring, and latitude rings per hemisphere (pole excluded).
# The hull is inscribed in the true capsule; mass and inertia come from the tool's explicit
# analytic inertial (see scene._set_tool_inertial), never from the hull.
CAPSULE_SEGMENTS = 16
CAPSULE_RINGS = 4

_CAPSULE_X_QUAT = (np.sqrt(0.5), 0.0, np.sqrt(0.5), 0.0)  # turns MuJoCo's capsule axis z onto x


def box_vertices(dims: tuple[float, float, float]) -> np.ndarray:
    """(8, 3) corners of a box with full extents `dims`, centred at the origin."""
    half = np.asarray(dims, dtype=np.float64) / 2.0
    signs = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], dtype=np.float64)
    return signs * half


def capsule_vertices(length: float, radius: float) -> np.ndarray:
    """Point cloud on a capsule along x (cylinder part `length`), centred at the origin.

    Two rings bound the cylinder part; each hemisphere adds CAPSULE_RINGS rings and its pole. All
    rings share the same angles, so the convex hull is a stack of frusta (no sliver faces).
    """
    angles = 2.0 * np.pi * np.arange(CAPSULE_SEGMENTS) / CAPSULE_SEGMENTS
    sin, cos = portable.sincos(angles)
    ring = np.stack([cos, sin], axis=1)
    points = []
    for side in (-1.0, 1.0):
        for k in range(CAPSULE_RINGS + 1):
            polar = 0.5 * np.pi * k / (CAPSULE_RINGS + 1)  # 0 = on the cylinder's end circle
            sin_polar, cos_polar = portable.sincos(polar)
            x = side * (length / 2.0 + radius * sin_polar)
            yz = radius * cos_polar * ring
            points.append(np.column_stack([np.full(CAPSULE_SEGMENTS, x), yz]))
        points.append(np.array([[side * (length / 2.0 + radius), 0.0, 0.0]]))
    return np.concatenate(points)


def _style(geom: mujoco.MjsGeom, rgba: tuple, *, ghost: bool) -> None:
    geom.rgba = list(GHOST_RGBA if ghost else rgba)
    geom.friction = [TOOL_FRICTION, 0.005, 0.0001]
    if ghost:
        # A mocap ghost must not touch anything nor carry mass: it is drawn, never simulated.
        geom.contype, geom.conaffinity, geom.density, geom.group = 0, 0, 0.0, VISUAL_GROUP
    else:
        geom.contype, geom.conaffinity, geom.group = 1, 1, 0


def _add_part(
    spec: mujoco.MjSpec,
    body: mujoco.MjsBody,
    name: str,
    verts: np.ndarray | None,
    primitive: dict,
    density: float,
    rgba: tuple,
    *,
    ghost: bool,
) -> mujoco.MjsGeom:
    if verts is None:
        geom = body.add_geom(name=name, density=density, **primitive)
    else:
        mesh = spec.add_mesh(name=f"{name}_mesh")
        mesh.uservert = verts.ravel().tolist()
        mesh.inertia = mujoco.mjtMeshInertia.mjMESH_INERTIA_CONVEX
        geom = body.add_geom(
            name=name, type=mujoco.mjtGeom.mjGEOM_MESH, meshname=f"{name}_mesh", pos=primitive["pos"], density=density
        )
    _style(geom, rgba, ghost=ghost)
    return geom


def add_tool_geoms(
    spec: mujoco.MjSpec,
    body: mujoco.MjsBody,
    tool: Tool,
    *,
    geometry: str = "primitive",
    prefix: str = "object",
    ghost: bool = False,
) -> list[mujoco.MjsGeom]:
    """Add `tool`'s handle and head geoms to `body` (an inert head slot if it has none); returns
    them, handle first.

    geometry: "primitive" (box / capsule / box) or "mesh" (convex meshes with the same outer shape;
    meshes are added to `spec`). ghost: a massless, non-colliding, translucent copy for a mocap goal.
    Geom densities are the tool's; the scene gives the body the matching explicit analytic inertial.
    """
    if geometry not in TOOL_GEOMETRIES:
        raise ConfigError(f"tool geometry {geometry!r} is not allowed; allowed {allowed(TOOL_GEOMETRIES)}")
    mesh = geometry == "mesh"
    length, width, height = tool.handle_dims
    if tool.handle_type == "box":
        primitive = {
            "type": mujoco.mjtGeom.mjGEOM_BOX,
            "pos": [0.0, 0.0, 0.0],
            "size": [length / 2, width / 2, height / 2],
        }
        verts = box_vertices(tool.handle_dims) if mesh else None
    else:
        primitive = {
            "type": mujoco.mjtGeom.mjGEOM_CAPSULE,
            "pos": [0.0, 0.0, 0.0],
            "size": [width / 2, length / 2, 0.0],
            "quat": list(_CAPSULE_X_QUAT),
        }
        verts = capsule_vertices(length, width / 2) if mesh else None
    geoms = [
        _add_part(spec, body, f"{prefix}_handle", verts, primitive, tool.handle_density, TOOL_RGBA[0], ghost=ghost)
    ]
    if tool.head_dims is not None:
        head = {
            "type": mujoco.mjtGeom.mjGEOM_BOX,
            "pos": [float(tool.head_center_x), 0.0, 0.0],
            "size": [d / 2 for d in tool.head_dims],
        }
        verts = box_vertices(tool.head_dims) if mesh else None
        geoms.append(
            _add_part(spec, body, f"{prefix}_head", verts, head, float(tool.head_density), TOOL_RGBA[1], ghost=ghost)
        )
    else:
        geoms.append(_add_inert_slot(body, f"{prefix}_head", ghost=ghost))
    return geoms


def _add_inert_slot(body: mujoco.MjsBody, name: str, *, ghost: bool) -> mujoco.MjsGeom:
    """A geom that exists only to keep the slot layout: no contact, no mass, not drawn. (A ghost's
    geoms have no contact bits at all, so neither has its inert slot.)"""
    geom = body.add_geom(name=name, type=mujoco.mjtGeom.mjGEOM_BOX, pos=[0.0, 0.0, 0.0], size=[INERT_HALF_SIZE] * 3,
                         density=0.0)
    geom.contype, geom.conaffinity, geom.group = 0 if ghost else INERT_CONTYPE, 0, HIDDEN_GROUP
    geom.rgba = [0.0, 0.0, 0.0, 0.0]
    geom.friction = [TOOL_FRICTION, 0.005, 0.0001]  # as a real head's: one field fewer differs per tool
    return geom
