"""Heightfield terrain for locomotion tasks: a grid of sub-terrains (or one image) as ONE MuJoCo hfield,
per-env spawn origins, and the surface height anywhere on it.

After the terrain generators of mjlab and Isaac Lab: a grid of tiles whose ROWS are difficulty
levels (level 0 easiest, along +x) and whose COLUMNS are terrain types (the kinds of
`mjvec.assets.subterrains`, along +y), with an optional flat border::

    from mjvec.assets.terrain import TerrainGridConfig, build_terrain
    from mjvec.assets.subterrains import FlatTerrain, PyramidStairsTerrain, RandomUniformTerrain

    config = TerrainGridConfig(types=(FlatTerrain(), RandomUniformTerrain(), PyramidStairsTerrain()),
                               num_levels=5, tile_size=(8.0, 8.0), horizontal_scale=0.1)
    terrain = build_terrain(config, rng=0)          # numpy only: build once, add to every variant
    spec = mujoco.MjSpec()
    geom = terrain.add_to_spec(spec)                # the hfield and its geom (set friction etc. on it)
    xyz = terrain.env_origins(global_ids)           # (N, 3): each env's tile centre, on the surface

Grid layout (`build_terrain`): vertices `horizontal_scale` m apart; tile (level l, type t) covers
vertex columns [b + l n_x, b + (l + 1) n_x] and rows [b + t n_y, b + (t + 1) n_y] (n = tile size /
horizontal_scale, b = border cells); the grid is centred on the world origin; a vertex on the edge of
two tiles takes the later tile's height (types outer, levels inner). Level l has difficulty
``lo + (hi - lo) * l / (num_levels - 1)`` over `difficulty_range` (lo with one level).

Randomness: tile (l, t) draws from its own generator, ``SeedSequence(entropy, spawn_key=(l, t))``,
with entropy the int `rng` given, or one 63-bit draw from the Generator given: a tile's noise does not
depend on the grid's size or on the other tiles. Nothing uses numpy's global RNG.

The MuJoCo hfield holds the heights normalised to [0, 1] in float32 (min exactly 0, max exactly 1,
so MuJoCo's own normalisation keeps them bit for bit), its size[2] the height range and the geom's
z position the lowest height. `Terrain.heights` and `Terrain.height_at` are the surface MuJoCo
collides with, computed from those float32 values: each grid cell is two triangles split along the
diagonal from vertex (r, c) to (r + 1, c + 1), as MuJoCo splits it (tests/test_terrain.py checks
against mj_ray).

Env assignment (`Terrain.tile_of_env`), a function of the GLOBAL env id g alone (so it does not
depend on num_envs, shards or resets): type ``g % num_types``, level ``(g // num_types) % (max_level
+ 1)`` (max_level defaults to the last level): envs fill the types first, then the levels.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import mujoco
import numpy as np

from mjvec.assets.subterrains import (
    SUBTERRAIN_KINDS,
    FlatTerrain,
    PyramidSlopeTerrain,
    PyramidStairsTerrain,
    RandomUniformTerrain,
    SubTerrain,
    checked_number,
    checked_range,
    image_levels,
)
from mjvec.errors import ConfigError, allowed, is_int

# Largest grid (vertices) built: 64 MB of float32 data; beyond it, coarsen horizontal_scale.
MAX_VERTICES = 2**24
# MuJoCo needs a positive elevation range; a flat terrain's all-zero data makes its value moot.
_FLAT_RANGE = 1e-3


def _cells(owner: str, name: str, length: float, scale: float) -> int:
    """length / scale as an int, refused unless length is a whole number of cells."""
    cells = round(length / scale)
    if abs(cells * scale - length) > 1e-9 * max(1.0, length):
        raise ConfigError(f"{owner}.{name} = {length} must be a whole number of horizontal_scale = {scale} m cells; "
                          f"use {max(cells, 1) * scale:g}")
    return cells


@dataclass(frozen=True)
class TerrainGridConfig:
    """A grid of sub-terrains (see the module docstring): `types` (one column each), `num_levels`
    rows, each tile `tile_size` (x, y) m, vertices `horizontal_scale` m apart, a flat border of
    `border_width` m, difficulty from `difficulty_range` over the levels, and the hfield's
    `base_thickness` (MuJoCo's size[3]: the solid below the lowest point)."""

    types: tuple[SubTerrain, ...] = (FlatTerrain(), RandomUniformTerrain(), PyramidSlopeTerrain(),
                                     PyramidStairsTerrain())
    num_levels: int = 10
    tile_size: tuple[float, float] = (8.0, 8.0)
    horizontal_scale: float = 0.1
    border_width: float = 0.0
    difficulty_range: tuple[float, float] = (0.0, 1.0)
    base_thickness: float = 1.0

    def __post_init__(self) -> None:
        owner = "TerrainGridConfig"
        if not isinstance(self.types, (tuple, list)) or not self.types:
            raise ConfigError(f"{owner}.types must be a non-empty tuple of sub-terrain configs, got {self.types!r}")
        object.__setattr__(self, "types", tuple(self.types))
        for kind in self.types:
            if not isinstance(kind, SUBTERRAIN_KINDS):
                raise ConfigError(f"{owner}.types holds {kind!r}; allowed kinds are "
                                  f"{allowed(k.__name__ for k in SUBTERRAIN_KINDS)} (mjvec.assets.subterrains)")
        if not is_int(self.num_levels) or self.num_levels < 1:
            raise ConfigError(f"{owner}.num_levels must be an int >= 1, got {self.num_levels!r}")
        scale = checked_number(owner, "horizontal_scale", self.horizontal_scale, 0.0, strict=True)
        if not isinstance(self.tile_size, (tuple, list)) or len(self.tile_size) != 2:
            raise ConfigError(f"{owner}.tile_size must be an (x, y) pair of lengths in m, got {self.tile_size!r}")
        tile = tuple(checked_number(owner, "tile_size", x, 0.0, strict=True) for x in self.tile_size)
        object.__setattr__(self, "tile_size", tile)
        cells = [_cells(owner, "tile_size", x, scale) for x in tile]
        border = _cells(owner, "border_width", checked_number(owner, "border_width", self.border_width, 0.0), scale)
        object.__setattr__(self, "difficulty_range", checked_range(owner, "difficulty_range", self.difficulty_range))
        if self.difficulty_range[1] > 1.0:
            raise ConfigError(f"{owner}.difficulty_range must lie in [0, 1], got {self.difficulty_range!r}")
        checked_number(owner, "base_thickness", self.base_thickness, 0.0, strict=True)
        vertices = (2 * border + self.num_levels * cells[0] + 1) * (2 * border + len(self.types) * cells[1] + 1)
        if vertices > MAX_VERTICES:
            raise ConfigError(f"the terrain grid would have {vertices:,} vertices, more than {MAX_VERTICES:,}; "
                              "raise horizontal_scale or lower num_levels, the types or tile_size")
        for kind in self.types:
            if isinstance(kind, PyramidStairsTerrain) and kind.step_width < 2 * scale - 1e-12:
                raise ConfigError(f"PyramidStairsTerrain.step_width = {kind.step_width} spans less than two "
                                  f"horizontal_scale = {scale} m cells (a riser takes one); widen the steps or "
                                  "refine horizontal_scale")

    def difficulty(self, level: int) -> float:
        """The difficulty of level `level` (see the module docstring)."""
        lo, hi = self.difficulty_range
        return lo if self.num_levels == 1 else lo + (hi - lo) * level / (self.num_levels - 1)


@dataclass(frozen=True)
class ImageHeightfield:
    """A whole terrain from one image, as an MJCF ``<hfield file=... size=...>`` makes it (MuJoCo
    Playground's rough terrain: ``ImageHeightfield("hfield.png", size=(10, 10), height=0.05,
    base=0.1)``): `size` the half extents (x, y) m, `height` the elevation (m) of the brightest
    pixel (the darkest is 0), `base` MuJoCo's size[3]. One tile (level 0, type 0) at the origin."""

    path: str | Path = ""
    size: tuple[float, float] = (10.0, 10.0)
    height: float = 0.05
    base: float = 0.1

    def __post_init__(self) -> None:
        owner = "ImageHeightfield"
        if not isinstance(self.size, (tuple, list)) or len(self.size) != 2:
            raise ConfigError(f"{owner}.size must be (x, y) half extents in m, got {self.size!r}")
        object.__setattr__(self, "size", tuple(checked_number(owner, "size", x, 0.0, strict=True) for x in self.size))
        checked_number(owner, "height", self.height, 0.0, strict=True)
        checked_number(owner, "base", self.base, 0.0, strict=True)
        image_levels(self.path)


@dataclass(frozen=True, eq=False)
class Terrain:
    """A built terrain (`build_terrain`): what its hfield holds and where its tiles are.

    data: (nrow, ncol) float32, read-only: the hfield's elevations in [0, 1] (row r at y = -size[1]
        + r * dy, column c at x = -size[0] + c * dx; dx, dy = `spacing`).
    size: MuJoCo's hfield size (x half extent, y half extent, height range, base thickness).
    base_z: the geom's z position: the surface is ``base_z + data * size[2]``.
    heights: (nrow, ncol) float64, read-only: that surface at the vertices (m).
    centers: (num_levels, num_types, 2) float64, read-only: each tile's centre (x, y).
    difficulties: (num_levels,) float64: each level's difficulty.
    """

    config: TerrainGridConfig | ImageHeightfield
    data: np.ndarray
    size: tuple[float, float, float, float]
    base_z: float
    centers: np.ndarray
    difficulties: np.ndarray
    heights: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        heights = self.base_z + self.data.astype(np.float64) * self.size[2]
        for array in (self.data, self.centers, self.difficulties, heights):
            array.setflags(write=False)
        object.__setattr__(self, "heights", heights)

    @property
    def num_levels(self) -> int:
        return int(self.centers.shape[0])

    @property
    def num_types(self) -> int:
        return int(self.centers.shape[1])

    @property
    def spacing(self) -> tuple[float, float]:
        """(dx, dy): the distance between neighbouring vertices along x and along y."""
        nrow, ncol = self.data.shape
        return 2 * self.size[0] / (ncol - 1), 2 * self.size[1] / (nrow - 1)

    def height_at(self, xy: np.ndarray) -> np.ndarray:
        """(...,) the surface height under world points `xy` (..., 2), on MuJoCo's two triangles per
        cell (see the module docstring). ConfigError for a point off the terrain."""
        xy = np.asarray(xy, np.float64)
        if xy.shape[-1:] != (2,):
            raise ConfigError(f"height_at takes (..., 2) points (x, y), got shape {xy.shape}")
        sx, sy = self.size[:2]
        off = (np.abs(xy[..., 0]) > sx * (1 + 1e-12)) | (np.abs(xy[..., 1]) > sy * (1 + 1e-12))
        if off.any():
            raise ConfigError(f"point {xy[off][0].tolist()} is off the terrain, which spans x in [{-sx}, {sx}] and "
                              f"y in [{-sy}, {sy}]")
        nrow, ncol = self.data.shape
        dx, dy = self.spacing
        gx, gy = (xy[..., 0] + sx) / dx, (xy[..., 1] + sy) / dy
        c = np.clip(np.floor(gx).astype(np.int64), 0, ncol - 2)
        r = np.clip(np.floor(gy).astype(np.int64), 0, nrow - 2)
        fx, fy = gx - c, gy - r
        h = self.heights
        h00, h10, h01, h11 = h[r, c], h[r, c + 1], h[r + 1, c], h[r + 1, c + 1]
        upper = h00 + fx * (h11 - h01) + fy * (h01 - h00)  # triangle (r, c), (r+1, c+1), (r+1, c)
        lower = h00 + fx * (h10 - h00) + fy * (h11 - h10)  # triangle (r, c), (r, c+1), (r+1, c+1)
        return np.where(fy >= fx, upper, lower)

    def tile_of_env(self, global_ids: np.ndarray, max_level: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """((N,) levels, (N,) types) of envs with these global ids (see the module docstring)."""
        ids = np.asarray(global_ids)
        if ids.dtype.kind not in "iu" or (ids < 0).any():
            raise ConfigError(f"global_ids must be ints >= 0, got {np.asarray(global_ids)!r}")
        top = self.num_levels - 1 if max_level is None else max_level
        if not is_int(top) or not 0 <= top < self.num_levels:
            raise ConfigError(f"max_level must be an int in [0, {self.num_levels - 1}], got {max_level!r}")
        ids = ids.astype(np.int64).reshape(-1)
        return (ids // self.num_types) % (int(top) + 1), ids % self.num_types

    def origins(self, levels: np.ndarray, types: np.ndarray) -> np.ndarray:
        """(N, 3): the centre of tile (levels[i], types[i]), on the surface there (a spawn point:
        add the robot's own standing height)."""
        levels, types = np.asarray(levels).reshape(-1), np.asarray(types).reshape(-1)
        if levels.shape != types.shape:
            raise ConfigError(f"levels and types must have one shape, got {levels.shape} and {types.shape}")
        for name, values, count in (("levels", levels, self.num_levels), ("types", types, self.num_types)):
            if values.dtype.kind not in "iu" or ((values < 0) | (values >= count)).any():
                raise ConfigError(f"{name} must be ints in [0, {count - 1}], got {values.tolist()[:8]}")
        xy = self.centers[levels, types]
        return np.concatenate([xy, self.height_at(xy)[:, None]], axis=1)

    def env_origins(self, global_ids: np.ndarray, max_level: int | None = None) -> np.ndarray:
        """(N, 3) spawn points of envs with these global ids: `origins` of their `tile_of_env`."""
        return self.origins(*self.tile_of_env(global_ids, max_level))

    def add_to_spec(self, spec: mujoco.MjSpec, name: str = "terrain", body: mujoco.MjsBody | None = None
                    ) -> mujoco.MjsGeom:
        """Add the hfield `name` and its geom `name` (on `body`, default the world body) to `spec`;
        returns the geom (set its friction, material, contype ... there). Call once per fresh spec
        (a variant's make_variant): every variant then holds the same hfield."""
        if any(h.name == name for h in spec.hfields):
            raise ConfigError(f"the spec already has an hfield named {name!r}; pass another name to add_to_spec")
        nrow, ncol = self.data.shape
        spec.add_hfield(name=name, size=list(self.size), nrow=nrow, ncol=ncol, userdata=self.data.ravel().tolist())
        parent = spec.worldbody if body is None else body
        return parent.add_geom(name=name, type=mujoco.mjtGeom.mjGEOM_HFIELD, hfieldname=name,
                               pos=[0.0, 0.0, self.base_z])


def _entropy(rng: np.random.Generator | int) -> int:
    if isinstance(rng, np.random.Generator):
        return int(rng.integers(0, 2**63))
    if not is_int(rng) or rng < 0:
        raise ConfigError(f"rng must be an int seed >= 0 or a numpy Generator, got {rng!r}")
    return int(rng)


def _grid_heights(config: TerrainGridConfig, entropy: int) -> tuple[np.ndarray, np.ndarray]:
    """((nrow, ncol) heights in m, (levels, types, 2) tile centres) of the grid (module docstring)."""
    scale = config.horizontal_scale
    nx, ny = (round(x / scale) for x in config.tile_size)
    border = round(config.border_width / scale)
    cols, rows = 2 * border + config.num_levels * nx + 1, 2 * border + len(config.types) * ny + 1
    heights = np.zeros((rows, cols))
    centers = np.zeros((config.num_levels, len(config.types), 2))
    half_x, half_y = (cols - 1) * scale / 2, (rows - 1) * scale / 2
    local = np.arange(nx + 1) * scale - config.tile_size[0] / 2, np.arange(ny + 1) * scale - config.tile_size[1] / 2
    u, v = np.meshgrid(*local)
    for t, kind in enumerate(config.types):
        for level in range(config.num_levels):
            rng = np.random.default_rng(np.random.SeedSequence(entropy, spawn_key=(level, t)))
            c0, r0 = border + level * nx, border + t * ny
            heights[r0 : r0 + ny + 1, c0 : c0 + nx + 1] = kind.heights(
                u, v, config.tile_size, config.difficulty(level), rng, scale)
            centers[level, t] = (-half_x + (c0 + nx / 2) * scale, -half_y + (r0 + ny / 2) * scale)
    return heights, centers


def build_terrain(config: TerrainGridConfig | ImageHeightfield, rng: np.random.Generator | int = 0) -> Terrain:
    """The `Terrain` of a grid config (its random tiles drawn from `rng`: an int seed or a numpy
    Generator, see the module docstring) or of an image (no randomness). Numpy only: build it once
    and `add_to_spec` it into every variant's spec."""
    if isinstance(config, ImageHeightfield):
        levels = image_levels(config.path)
        return Terrain(config, levels.copy(), (*config.size, config.height, config.base), 0.0,
                       np.zeros((1, 1, 2)), np.zeros(1))
    if not isinstance(config, TerrainGridConfig):
        raise ConfigError(f"build_terrain takes a TerrainGridConfig or an ImageHeightfield, got {config!r}")
    heights, centers = _grid_heights(config, _entropy(rng))
    low, high = float(heights.min()), float(heights.max())
    data = ((heights - low) / (high - low)).astype(np.float32) if high > low else np.zeros(heights.shape, np.float32)
    rows, cols = heights.shape
    size = ((cols - 1) * config.horizontal_scale / 2, (rows - 1) * config.horizontal_scale / 2,
            high - low if high > low else _FLAT_RANGE, config.base_thickness)
    difficulties = np.array([config.difficulty(level) for level in range(config.num_levels)])
    return Terrain(config, data, size, low, centers, difficulties)
