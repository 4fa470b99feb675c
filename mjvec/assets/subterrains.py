"""The sub-terrain kinds of a terrain grid (`mjvec.assets.terrain`): typed configs and their heights.

Each kind is a frozen dataclass validated in ``__post_init__``. Its `heights(u, v, tile, difficulty,
rng, spacing)` gives the surface height (m) at tile-local points (u, v) (m from the tile's centre,
arrays of one shape: the terrain grid's vertices, `spacing` m apart) of a tile of size `tile` = (x, y)
m, at difficulty in [0, 1] (0 easiest); every random draw comes from `rng`, the tile's own generator.
Heights are 0 along a tile's edges for every kind but `RandomUniformTerrain` (whose noise reaches the
edge) and `ImageTerrain`, so neighbouring tiles meet.
How each kind gets harder with difficulty (what `hardness` returns, tested to rise level by level):

- `FlatTerrain`: never (0).
- `RandomUniformTerrain`: the noise amplitude (m), from `amplitude_range`.
- `PyramidSlopeTerrain`: the slope (rise per run), from `slope_range`; a square pyramid (or a pit,
  `inverted`) with a flat platform of `platform_width` at its top (bottom).
- `PyramidStairsTerrain`: the step height (m), from `step_height_range`; concentric steps of
  `step_width` rising to (or, `inverted`, falling to) the centre's platform.
- `ImageTerrain`: the image's height scale (m), from `height_range`: an image's grey levels as
  MuJoCo reads a PNG heightfield (`image_levels`), stretched over the tile.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np

from mjvec.errors import ConfigError

_NUMBER = (int, float, np.integer, np.floating)


def checked_number(owner: str, name: str, value: object, low: float, *, strict: bool = False) -> float:
    """`value` as a float, or ConfigError naming `owner.name` unless it is a finite number >= low
    (> low with strict)."""
    if isinstance(value, bool) or not isinstance(value, _NUMBER) or not np.isfinite(value):
        raise ConfigError(f"{owner}.{name} must be a finite number, got {value!r}")
    if value < low or (strict and value == low):
        raise ConfigError(f"{owner}.{name} must be {'>' if strict else '>='} {low}, got {value!r}")
    return float(value)


def checked_range(owner: str, name: str, value: object, low: float = 0.0) -> tuple[float, float]:
    """`value` as a (low, high) float pair, or ConfigError naming `owner.name` unless both are numbers
    >= low in order."""
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise ConfigError(f"{owner}.{name} must be a (low, high) pair of numbers, got {value!r}")
    a, b = (checked_number(owner, name, x, low) for x in value)
    if a > b:
        raise ConfigError(f"{owner}.{name} must have low <= high, got {value!r}; swap the two values")
    return a, b


def _lerp(pair: tuple[float, float], difficulty: float) -> float:
    return pair[0] + (pair[1] - pair[0]) * difficulty


def _edge_distance(u: np.ndarray, v: np.ndarray, tile: tuple[float, float]) -> np.ndarray:
    """Distance (m) from (u, v) to the tile's nearest edge (0 on the edge, largest at the centre)."""
    return np.minimum(tile[0] / 2 - np.abs(u), tile[1] / 2 - np.abs(v))


def _platform_depth(owner: str, platform: float, tile: tuple[float, float]) -> float:
    """How far from the edge the centre's platform starts."""
    if platform >= min(tile):
        raise ConfigError(f"{owner}.platform_width {platform} must be less than the tile's smaller side "
                          f"{min(tile)}; shrink the platform or enlarge TerrainGridConfig.tile_size")
    return (min(tile) - platform) / 2


@dataclass(frozen=True)
class FlatTerrain:
    """A flat tile at height 0."""

    def heights(self, u: np.ndarray, v: np.ndarray, tile: tuple[float, float], difficulty: float,
                rng: np.random.Generator, spacing: float) -> np.ndarray:
        return np.zeros(np.shape(u))

    def hardness(self, difficulty: float) -> float:
        return 0.0


@dataclass(frozen=True)
class RandomUniformTerrain:
    """Random uniform noise ("rough"): heights drawn uniformly from {0, step, 2 step, ...} up to the
    amplitude (m, `amplitude_range` from difficulty 0 to 1) on a grid of `cell` m (bilinear between
    its points; 0: the terrain grid's own spacing), flat at 0 on a centred square of `platform_width`."""

    amplitude_range: tuple[float, float] = (0.02, 0.10)
    step: float = 0.005
    cell: float = 0.0
    platform_width: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "amplitude_range", checked_range("RandomUniformTerrain", "amplitude_range",
                                                           self.amplitude_range))
        checked_number("RandomUniformTerrain", "step", self.step, 0.0, strict=True)
        checked_number("RandomUniformTerrain", "cell", self.cell, 0.0)
        checked_number("RandomUniformTerrain", "platform_width", self.platform_width, 0.0)

    def heights(self, u: np.ndarray, v: np.ndarray, tile: tuple[float, float], difficulty: float,
                rng: np.random.Generator, spacing: float) -> np.ndarray:
        levels = int(np.floor(_lerp(self.amplitude_range, difficulty) / self.step + 1e-9))
        cell = self.cell if self.cell > 0 else spacing
        nx, ny = (int(np.ceil(side / cell - 1e-9)) + 1 for side in tile)
        noise = self.step * rng.integers(0, levels + 1, (ny, nx)).astype(np.float64)
        x, y = (u + tile[0] / 2) / cell, (v + tile[1] / 2) / cell
        if self.cell == 0:  # one noise value per vertex: index it exactly, no interpolation
            out = noise[np.rint(y).astype(np.int64), np.rint(x).astype(np.int64)]
        else:
            out = bilinear(noise, x, y)
        if self.platform_width > 0:
            _platform_depth("RandomUniformTerrain", self.platform_width, tile)
            out[(np.abs(u) <= self.platform_width / 2) & (np.abs(v) <= self.platform_width / 2)] = 0.0
        return out

    def hardness(self, difficulty: float) -> float:
        return self.step * np.floor(_lerp(self.amplitude_range, difficulty) / self.step + 1e-9)


@dataclass(frozen=True)
class PyramidSlopeTerrain:
    """A square pyramid of slope `slope_range` (rise per run, difficulty 0 to 1) from the tile's edge
    (height 0) to a flat platform of `platform_width` m at the centre; a pit with `inverted`."""

    slope_range: tuple[float, float] = (0.0, 0.4)
    platform_width: float = 1.0
    inverted: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "slope_range", checked_range("PyramidSlopeTerrain", "slope_range", self.slope_range))
        checked_number("PyramidSlopeTerrain", "platform_width", self.platform_width, 0.0)
        if not isinstance(self.inverted, bool):
            raise ConfigError(f"PyramidSlopeTerrain.inverted must be True or False, got {self.inverted!r}")

    def heights(self, u: np.ndarray, v: np.ndarray, tile: tuple[float, float], difficulty: float,
                rng: np.random.Generator, spacing: float) -> np.ndarray:
        top = _platform_depth("PyramidSlopeTerrain", self.platform_width, tile)
        rise = _lerp(self.slope_range, difficulty) * np.minimum(_edge_distance(u, v, tile), top)
        return -rise if self.inverted else rise

    def hardness(self, difficulty: float) -> float:
        return _lerp(self.slope_range, difficulty)


@dataclass(frozen=True)
class PyramidStairsTerrain:
    """Concentric square steps of `step_width` m and a height from `step_height_range` (m, difficulty
    0 to 1), rising from the tile's edge (height 0) to a flat platform of `platform_width` m at the
    centre; descending into a pit with `inverted`. A heightfield cannot hold a vertical riser: each
    riser is a ramp one grid cell wide, so step_width must span at least two cells."""

    step_height_range: tuple[float, float] = (0.05, 0.23)
    step_width: float = 0.3
    platform_width: float = 1.0
    inverted: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "step_height_range", checked_range("PyramidStairsTerrain", "step_height_range",
                                                             self.step_height_range))
        checked_number("PyramidStairsTerrain", "step_width", self.step_width, 0.0, strict=True)
        checked_number("PyramidStairsTerrain", "platform_width", self.platform_width, 0.0)
        if not isinstance(self.inverted, bool):
            raise ConfigError(f"PyramidStairsTerrain.inverted must be True or False, got {self.inverted!r}")

    def heights(self, u: np.ndarray, v: np.ndarray, tile: tuple[float, float], difficulty: float,
                rng: np.random.Generator, spacing: float) -> np.ndarray:
        top = _platform_depth("PyramidStairsTerrain", self.platform_width, tile)
        steps = np.floor(np.minimum(_edge_distance(u, v, tile), top) / self.step_width + 1e-9)
        rise = _lerp(self.step_height_range, difficulty) * steps
        return -rise if self.inverted else rise

    def hardness(self, difficulty: float) -> float:
        return _lerp(self.step_height_range, difficulty)


@dataclass(frozen=True)
class ImageTerrain:
    """An image's grey levels (a PNG, read as MuJoCo reads a heightfield file: `image_levels`)
    stretched over the tile, bilinear between pixels, scaled to `height_range` m (difficulty 0 to 1)."""

    path: str | Path = ""
    height_range: tuple[float, float] = (0.05, 0.05)

    def __post_init__(self) -> None:
        object.__setattr__(self, "height_range", checked_range("ImageTerrain", "height_range", self.height_range))
        image_levels(self.path)  # refused here if it cannot be read

    def heights(self, u: np.ndarray, v: np.ndarray, tile: tuple[float, float], difficulty: float,
                rng: np.random.Generator, spacing: float) -> np.ndarray:
        levels = image_levels(self.path)
        rows, cols = levels.shape
        return _lerp(self.height_range, difficulty) * bilinear(
            levels.astype(np.float64), (u / tile[0] + 0.5) * (cols - 1), (v / tile[1] + 0.5) * (rows - 1))

    def hardness(self, difficulty: float) -> float:
        return _lerp(self.height_range, difficulty)


SUBTERRAIN_KINDS = (FlatTerrain, RandomUniformTerrain, PyramidSlopeTerrain, PyramidStairsTerrain, ImageTerrain)
SubTerrain = FlatTerrain | RandomUniformTerrain | PyramidSlopeTerrain | PyramidStairsTerrain | ImageTerrain


def bilinear(grid: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """`grid` (rows along y, columns along x) at fractional indices (x, y), bilinear, clamped to the grid."""
    rows, cols = grid.shape
    x = np.clip(x, 0, cols - 1)
    y = np.clip(y, 0, rows - 1)
    c0 = np.minimum(np.floor(x).astype(np.int64), max(cols - 2, 0))
    r0 = np.minimum(np.floor(y).astype(np.int64), max(rows - 2, 0))
    c1, r1 = np.minimum(c0 + 1, cols - 1), np.minimum(r0 + 1, rows - 1)
    fx, fy = x - c0, y - r0
    low = grid[r0, c0] * (1 - fx) + grid[r0, c1] * fx
    high = grid[r1, c0] * (1 - fx) + grid[r1, c1] * fx
    return low * (1 - fy) + high * fy


@functools.lru_cache(maxsize=8)
def _read_image(path: str, mtime: float) -> np.ndarray:
    spec = mujoco.MjSpec()
    spec.add_hfield(name="image", file=path, size=[1.0, 1.0, 1.0, 1.0])
    spec.worldbody.add_geom(type=mujoco.mjtGeom.mjGEOM_HFIELD, hfieldname="image")
    try:
        model = spec.compile()
    except ValueError as error:
        raise ConfigError(f"cannot read the heightfield image {path!r}: {error}; give a PNG file") from error
    levels = model.hfield_data.reshape(int(model.hfield_nrow[0]), int(model.hfield_ncol[0])).copy()
    levels.setflags(write=False)
    return levels


def image_levels(path: str | Path) -> np.ndarray:
    """(rows, cols) float32 read-only grey levels of a heightfield image as MuJoCo compiles it: row 0
    is the image's BOTTOM row (MuJoCo's -y edge), values normalised to [0, 1] by the image's maximum."""
    if not isinstance(path, (str, Path)) or not str(path):
        raise ConfigError(f"a heightfield image path must be a non-empty str or Path, got {path!r}")
    file = Path(path).expanduser().resolve()
    if not file.is_file():
        raise ConfigError(f"heightfield image {str(path)!r} does not exist ({file}); give the path of a PNG file")
    return _read_image(str(file), file.stat().st_mtime)
