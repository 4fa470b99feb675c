"""The seeded cube catalog of CubeRotate-v0: cube k is a pure function of (seed, k).

Each cube is a (half size, mass, friction) drawn uniformly from `CUBE_HALF_SIZE_RANGE`,
`CUBE_MASS_RANGE` and `CUBE_FRICTION_RANGE` with ``np.random.default_rng((seed, k))``, so the first
K cubes of a larger catalog are the K cubes of a smaller one. The scene that holds a cube is the
task's (`mjvec.tasks.cube_rotate.scene`).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from mjvec.errors import ConfigError, is_int

CUBE_HALF_SIZE_RANGE = (0.0225, 0.025)  # m: 4.5 to 5 cm edges
CUBE_MASS_RANGE = (0.04, 0.10)  # kg
# Sliding coefficient of the cube's geom. MuJoCo takes the larger of two geoms' coefficients, so this
# is the cube-palm friction (the palm's own is the scene's PALM_FRICTION); the fingertips' pads keep their 1.0.
CUBE_FRICTION_RANGE = (0.15, 0.3)
MAX_CUBES = 64


@dataclass(frozen=True)
class Cube:
    """One cube of the catalog: half edge length (m), mass (kg), sliding friction coefficient."""

    cube_id: int
    half_size: float
    mass: float
    friction: float

    @property
    def inertia(self) -> tuple[float, float, float]:
        """The principal moments of a solid cube (kg m^2): m (2 h)^2 / 6 about every axis."""
        moment = self.mass * (2.0 * self.half_size) ** 2 / 6.0
        return (moment, moment, moment)


def _check_int(name: str, value: object, low: int, high: int) -> int:
    if not is_int(value) or not low <= value <= high:
        raise ConfigError(f"{name} must be an int in [{low}, {high}], got {value!r}")
    return int(value)


class CubeCatalog:
    """`num_cubes` cubes; `catalog[cube_id]` is a `Cube`. Cube k draws its half size, mass and
    friction uniformly from the module's ranges with ``np.random.default_rng((seed, k))``."""

    def __init__(self, num_cubes: int = MAX_CUBES, seed: int = 0) -> None:
        self.num_cubes = _check_int("num_cubes", num_cubes, 1, MAX_CUBES)
        self.seed = _check_int("seed", seed, 0, 2**32 - 1)
        cubes = []
        for k in range(self.num_cubes):
            rng = np.random.default_rng((self.seed, k))
            half, mass, friction = (rng.uniform(*r) for r in (CUBE_HALF_SIZE_RANGE, CUBE_MASS_RANGE,
                                                              CUBE_FRICTION_RANGE))
            cubes.append(Cube(k, float(half), float(mass), float(friction)))
        self._cubes = tuple(cubes)

    def __len__(self) -> int:
        return self.num_cubes

    def __getitem__(self, cube_id: int) -> Cube:
        return self._cubes[_check_int("cube_id", cube_id, 0, self.num_cubes - 1)]

    def __iter__(self) -> Iterator[Cube]:
        return iter(self._cubes)

    def __repr__(self) -> str:
        return f"CubeCatalog(num_cubes={self.num_cubes}, seed={self.seed})"


@functools.lru_cache(maxsize=1)
def default_cube_catalog() -> CubeCatalog:
    """The `MAX_CUBES`-cube catalog of seed 0, built once per process."""
    return CubeCatalog()
