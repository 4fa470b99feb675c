"""Heightfield scenes for the backend tests: a free body on a terrain whose heightfield is variant v's own.

`hfield_scene(v, vary=..., body=...)` is a pure function of v. With vary="data" every variant's
heightfield has the same grid and size and its own elevations; with vary="shape" the grid (nrow,
ncol) and the size differ too. `rough` terrains are random uniform noise (contacts change at every
cell, so a body sliding over one diverges at once from the same slide on another variant's);
`smooth` ones are a few sines (a body dropped on one comes to rest at the terrain's own height).
"""

from __future__ import annotations

import mujoco
import numpy as np

NUM_VARIANTS = 4
TIMESTEP = 0.004
RADIUS = 0.02  # of the sphere body
BOX = (0.05, 0.04, 0.03)  # half sizes of the box body


def elevation(v: int, nrow: int, ncol: int, surface: str) -> np.ndarray:
    """(nrow, ncol) variant v's elevations in [0, 1] (MuJoCo normalises them anyway)."""
    if surface == "rough":
        return np.random.default_rng(100 + v).uniform(0.0, 1.0, (nrow, ncol))
    x, y = np.linspace(-1, 1, ncol)[None], np.linspace(-1, 1, nrow)[:, None]
    h = 0.5 + 0.25 * np.sin(2 * x + v) + 0.25 * np.cos(1.5 * y - 0.5 * v)
    return (h - h.min()) / (h.max() - h.min())


def grid(v: int, vary: str) -> tuple[int, int, list[float]]:
    """(nrow, ncol, size) of variant v's heightfield."""
    if vary == "data":
        return 24, 24, [1.0, 1.0, 0.15, 0.1]
    return 24 + 4 * (v % 2), 24 + 2 * (v % 3), [1.0 + 0.1 * v, 1.0 - 0.05 * v, 0.1 + 0.05 * v, 0.1]


def hfield_scene(v: int, *, vary: str = "data", body: str = "box", surface: str = "rough") -> mujoco.MjSpec:
    """Variant v: the terrain (an hfield geom named 'ground') and a free body 'body' above it."""
    spec = mujoco.MjSpec()
    spec.option.timestep = TIMESTEP
    nrow, ncol, size = grid(v, vary)
    spec.add_hfield(name="terrain", size=size, nrow=nrow, ncol=ncol,
                    userdata=elevation(v, nrow, ncol, surface).ravel().tolist())
    spec.worldbody.add_geom(name="ground", type=mujoco.mjtGeom.mjGEOM_HFIELD, hfieldname="terrain")
    obj = spec.worldbody.add_body(name="body", pos=[0.0, 0.0, 0.5])
    obj.add_freejoint(name="free")
    if body == "sphere":
        obj.add_geom(name="shape", type=mujoco.mjtGeom.mjGEOM_SPHERE, size=[RADIUS, 0, 0])
    else:
        obj.add_geom(name="shape", type=mujoco.mjtGeom.mjGEOM_BOX, size=list(BOX))
    return spec


def maker(**kwargs):
    """make_variant(v) = hfield_scene(v, **kwargs)."""

    def make(v: int) -> mujoco.MjSpec:
        return hfield_scene(v, **kwargs)

    return make


def surface_height(model: mujoco.MjModel, x: float, y: float) -> float:
    """The terrain's height under (x, y): MuJoCo's own ray cast straight down onto the hfield (the
    free body left out)."""
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    geomid = np.array([-1], np.int32)
    top = 10.0
    body = model.body("body").id
    dist = mujoco.mj_ray(model, data, np.array([x, y, top]), np.array([0.0, 0.0, -1.0]), None, 1, body, geomid)
    assert model.geom(int(geomid[0])).name == "ground"
    return top - dist


def facet_point(model: mujoco.MjModel, rng: np.random.Generator) -> tuple[float, float]:
    """A random (x, y) inside one triangle of the terrain's mesh, a quarter of a cell from every edge
    and diagonal (MuJoCo splits each cell along one diagonal; this point is clear of either)."""
    nrow, ncol = int(model.hfield_nrow[0]), int(model.hfield_ncol[0])
    sx, sy = model.hfield_size[0][:2]
    r, c = int(rng.integers(2, nrow - 3)), int(rng.integers(2, ncol - 3))
    dx, dy = 2 * sx / (ncol - 1), 2 * sy / (nrow - 1)
    return float(-sx + (c + 0.5) * dx), float(-sy + (r + 0.25) * dy)


def drop_states(models: list[mujoco.MjModel], rng: np.random.Generator, gap: float, *, slide: float = 0.0,
                lowest: float = RADIUS, on_facets: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(qpos, qvel) per env: the body `gap` above its own terrain (its lowest point `lowest` below
    its centre), yawed, moving sideways at up to `slide` m/s; at a random point, or inside a
    triangle of the terrain (`facet_point`) with on_facets."""
    n = len(models)
    qpos = np.tile(models[0].qpos0, (n, 1))
    qpos[:, :2] = rng.uniform(-0.6, 0.6, (n, 2))
    yaw = rng.uniform(-1.0, 1.0, n)
    qpos[:, 3:7] = np.stack([np.cos(yaw / 2), 0 * yaw, 0 * yaw, np.sin(yaw / 2)], axis=1)
    for i, model in enumerate(models):
        if on_facets:
            qpos[i, :2] = facet_point(model, rng)
        qpos[i, 2] = surface_height(model, qpos[i, 0], qpos[i, 1]) + lowest + gap
    qvel = np.zeros((n, 6))
    qvel[:, :2] = rng.uniform(-slide, slide, (n, 2))
    return qpos, qvel
