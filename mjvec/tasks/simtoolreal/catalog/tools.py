"""The procedural "handle + head" tool catalog (reference/simtoolreal.md sections 2 and 8).

A tool is one rigid body: a handle (box, or a cylinder turned into a capsule) centred at the object
origin with its long axis along +x, plus an optional box head flush at +x. The catalog draws
`per_distribution` tools from each of the 12 size/density distributions with one
`np.random.RandomState(seed)`, in the source's order (per distribution: handle densities, head
densities, handle sizes, head sizes; then one shuffle of the whole pool with the same stream), so
tool k is a pure function of (seed, per_distribution, k), identical on every machine and process.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from mjvec.errors import ConfigError, allowed, is_int

TOPOLOGY_CLASSES = ("box_only", "box_box", "capsule_box")
TOOL_GEOMETRIES = ("primitive", "mesh")
HANDLE_TYPES = ("box", "cyl")
HEAD_DENSITIES = ("heavy", "light")

# The source's pool draws this many tools per distribution (1,200 tools); this package's catalog
# defaults to half that (600), the size the MuJoCo port in UniLab uses.
SOURCE_PER_DISTRIBUTION = 100
# "object_scales" divides handle dims by the source's objectBaseSize.
OBJECT_BASE_SIZE = 0.04
# Handle density: 3D-printed parts. A "light" head uses the same range; a "heavy" head is metal-like.
LIGHT_DENSITY = (300.0, 600.0)
HEAVY_DENSITY = (800.0, 2000.0)


@dataclass(frozen=True)
class ToolDistribution:
    """One row of the source's size/density table. Cylinder handles are (length, diameter)."""

    category: str
    handle_type: str
    handle_min: tuple[float, ...]
    handle_max: tuple[float, ...]
    head_min: tuple[float, float, float] | None
    head_max: tuple[float, float, float] | None
    head_density: str | None

    def __post_init__(self) -> None:
        if self.handle_type not in HANDLE_TYPES:
            raise ConfigError(f"handle_type {self.handle_type!r} is not allowed; allowed {allowed(HANDLE_TYPES)}")
        want = 3 if self.handle_type == "box" else 2
        if len(self.handle_min) != want or len(self.handle_max) != want:
            raise ConfigError(f"a {self.handle_type} handle needs {want} dims, got {self.handle_min}/{self.handle_max}")
        if (self.head_min is None) != (self.head_density is None) or (self.head_min is None) != (self.head_max is None):
            raise ConfigError("head_min, head_max and head_density must be all None or all set")
        if self.head_density is not None and self.head_density not in HEAD_DENSITIES:
            raise ConfigError(f"head_density {self.head_density!r} is not allowed; allowed {allowed(HEAD_DENSITIES)}")

    @property
    def topology(self) -> str:
        if self.head_min is None:
            return "box_only"
        return "box_box" if self.handle_type == "box" else "capsule_box"

    @property
    def head_density_range(self) -> tuple[float, float] | None:
        if self.head_density is None:
            return None
        return HEAVY_DENSITY if self.head_density == "heavy" else LIGHT_DENSITY


_HAMMER_HEAD = ((0.02, 0.05, 0.02), (0.06, 0.12, 0.06))
_SCREWDRIVER_HEAD = ((0.07, 0.01, 0.01), (0.15, 0.015, 0.015))
_SPATULA_HEAD = ((0.05, 0.03, 0.01), (0.15, 0.07, 0.03))
_BRUSH_V1_HEAD = ((0.05, 0.03, 0.03), (0.12, 0.05, 0.08))
_BRUSH_V2_HEAD = ((0.05, 0.05, 0.02), (0.12, 0.12, 0.04))
_BRUSH_BOX = ((0.05, 0.01, 0.01), (0.20, 0.04, 0.03))
_BRUSH_CYL = ((0.05, 0.01), (0.20, 0.03))

# The source's 12 distributions in its order; brush v1 and v2 differ only in their head range.
DISTRIBUTIONS: tuple[ToolDistribution, ...] = (
    ToolDistribution("hammer", "box", (0.15, 0.02, 0.015), (0.30, 0.04, 0.03), *_HAMMER_HEAD, "heavy"),
    ToolDistribution("hammer", "cyl", (0.15, 0.015), (0.30, 0.03), *_HAMMER_HEAD, "heavy"),
    ToolDistribution("screwdriver", "box", (0.07, 0.025, 0.025), (0.12, 0.04, 0.04), *_SCREWDRIVER_HEAD, "heavy"),
    ToolDistribution("screwdriver", "cyl", (0.07, 0.025), (0.12, 0.04), *_SCREWDRIVER_HEAD, "heavy"),
    ToolDistribution("marker", "cyl", (0.075, 0.015), (0.15, 0.03), (0.01, 0.005, 0.005), (0.03, 0.01, 0.01), "light"),
    ToolDistribution("spatula", "box", (0.10, 0.0125, 0.006), (0.20, 0.025, 0.025), *_SPATULA_HEAD, "light"),
    ToolDistribution("spatula", "cyl", (0.10, 0.0125), (0.20, 0.025), *_SPATULA_HEAD, "light"),
    ToolDistribution("eraser", "box", (0.07, 0.02, 0.02), (0.15, 0.07, 0.07), None, None, None),
    ToolDistribution("brush", "box", *_BRUSH_BOX, *_BRUSH_V1_HEAD, "light"),
    ToolDistribution("brush", "cyl", *_BRUSH_CYL, *_BRUSH_V1_HEAD, "light"),
    ToolDistribution("brush", "box", *_BRUSH_BOX, *_BRUSH_V2_HEAD, "light"),
    ToolDistribution("brush", "cyl", *_BRUSH_CYL, *_BRUSH_V2_HEAD, "light"),
)


def _box_inertia(mass: float, dims: np.ndarray) -> np.ndarray:
    x, y, z = dims
    return mass / 12.0 * np.array([y * y + z * z, x * x + z * z, x * x + y * y])


def _capsule_mass_inertia(density: float, length: float, radius: float) -> tuple[float, np.ndarray]:
    """Mass and (axial x, y, z) inertia about the centre of a capsule along x: cylinder + 2 hemispheres."""
    m_cyl = density * np.pi * radius**2 * length
    m_sph = density * 4.0 / 3.0 * np.pi * radius**3
    axial = m_cyl * radius**2 / 2.0 + m_sph * 2.0 * radius**2 / 5.0
    # Each hemisphere: about its own COM, shifted to the capsule centre (COM 3r/8 past the cylinder end).
    perp = m_cyl * (length**2 / 12.0 + radius**2 / 4.0) + m_sph * (
        2.0 * radius**2 / 5.0 + length**2 / 4.0 + 3.0 * length * radius / 8.0
    )
    return m_cyl + m_sph, np.array([axial, perp, perp])


@dataclass(frozen=True)
class Tool:
    """One catalog tool. Dims are full extents in metres; a cylinder handle is (length, d, d).

    A "cyl" handle is simulated as a capsule of radius d/2 whose cylinder part has length L (the
    source's Isaac Gym cylinder-to-capsule replacement); the head centre is at x = L/2 + head_x/2.
    """

    tool_id: int
    distribution: int
    category: str
    topology: str
    handle_type: str
    handle_dims: tuple[float, float, float]
    head_dims: tuple[float, float, float] | None
    handle_density: float
    head_density: float | None

    def __post_init__(self) -> None:
        if not is_int(self.tool_id) or self.tool_id < 0:
            raise ConfigError(f"tool_id {self.tool_id!r} is not allowed; allowed an int >= 0")
        if not isinstance(self.distribution, (int, np.integer)) or not 0 <= self.distribution < len(DISTRIBUTIONS):
            raise ConfigError(f"distribution {self.distribution} is out of range; allowed 0..{len(DISTRIBUTIONS) - 1}")
        if self.topology not in TOPOLOGY_CLASSES:
            raise ConfigError(f"topology {self.topology!r} is not allowed; allowed {allowed(TOPOLOGY_CLASSES)}")
        if self.handle_type not in HANDLE_TYPES:
            raise ConfigError(f"handle_type {self.handle_type!r} is not allowed; allowed {allowed(HANDLE_TYPES)}")
        dist = DISTRIBUTIONS[self.distribution]
        if (self.category, self.handle_type) != (dist.category, dist.handle_type):
            raise ConfigError(
                f"category/handle_type {self.category!r}/{self.handle_type!r} do not match distribution "
                f"{self.distribution}; allowed {{{dist.category}/{dist.handle_type}}}"
            )
        want = "box_only" if self.head_dims is None else ("box_box" if self.handle_type == "box" else "capsule_box")
        if self.topology != want:
            raise ConfigError(f"topology {self.topology!r} does not match the parts; allowed {{{want}}}")
        self._check_sizes()

    def _check_sizes(self) -> None:
        if (self.head_dims is None) != (self.head_density is None):
            raise ConfigError("head_dims and head_density must be both None or both set")
        if len(self.handle_dims) != 3 or (self.head_dims is not None and len(self.head_dims) != 3):
            raise ConfigError(f"handle_dims/head_dims need 3 entries, got {self.handle_dims}/{self.head_dims}")
        sizes = (*self.handle_dims, self.handle_density)
        if self.head_dims is not None:
            sizes += (*self.head_dims, self.head_density)
        if not all(np.isfinite(v) and v > 0 for v in sizes):
            raise ConfigError(f"tool {self.tool_id}: dims and densities must be finite and > 0, got {sizes}")
        if self.handle_type == "cyl" and self.handle_dims[1] != self.handle_dims[2]:
            raise ConfigError(f"a cyl handle is (length, d, d), got {self.handle_dims}")

    @property
    def object_scales(self) -> np.ndarray:
        """(3,) handle dims / OBJECT_BASE_SIZE: the policy's "object_scales" input."""
        return np.asarray(self.handle_dims, dtype=np.float64) / OBJECT_BASE_SIZE

    @property
    def grasp_bbox(self) -> np.ndarray:
        """(3,) full extents (m) of the handle: the paper's coarse grasp-region bounding box."""
        return np.asarray(self.handle_dims, dtype=np.float64)

    @property
    def head_center_x(self) -> float | None:
        """x of the head centre in the object frame (the head is flush with the handle's +x end)."""
        return None if self.head_dims is None else self.handle_dims[0] / 2.0 + self.head_dims[0] / 2.0

    def _parts(self) -> list[tuple[float, float, np.ndarray]]:
        """(mass, centre x, diagonal inertia about the part's own centre) of handle and head."""
        dims = np.asarray(self.handle_dims)
        if self.handle_type == "box":
            mass = self.handle_density * float(np.prod(dims))
            parts = [(mass, 0.0, _box_inertia(mass, dims))]
        else:
            mass, own = _capsule_mass_inertia(self.handle_density, dims[0], dims[1] / 2.0)
            parts = [(mass, 0.0, own)]
        if self.head_dims is not None:
            head = np.asarray(self.head_dims)
            mass = float(self.head_density) * float(np.prod(head))
            parts.append((mass, float(self.head_center_x), _box_inertia(mass, head)))
        return parts

    @functools.cached_property
    def mass(self) -> float:
        """Analytic mass (kg): density x volume per part (the head may overlap the capsule's cap)."""
        return float(sum(m for m, _, _ in self._parts()))

    @functools.cached_property
    def com_x(self) -> float:
        """x of the centre of mass in the object frame (y = z = 0 by symmetry)."""
        return float(sum(m * x for m, x, _ in self._parts()) / self.mass)

    @functools.cached_property
    def inertia(self) -> np.ndarray:
        """(3,) principal inertia about the COM, along the object axes (parallel-axis theorem on x);
        read-only (computed once per tool)."""
        com = self.com_x
        total = np.zeros(3)
        for m, x, own in self._parts():
            total += own + m * (x - com) ** 2 * np.array([0.0, 1.0, 1.0])
        total.setflags(write=False)
        return total


def _draw_pool(rng: np.random.RandomState, per_distribution: int) -> list[tuple]:
    """Unshuffled (distribution, handle dims, head dims, handle density, head density) rows."""
    rows = []
    for index, dist in enumerate(DISTRIBUTIONS):
        handle_density = rng.uniform(*LIGHT_DENSITY, size=per_distribution)
        density_range = dist.head_density_range
        head_density = None if density_range is None else rng.uniform(*density_range, size=per_distribution)
        handle = rng.uniform(dist.handle_min, dist.handle_max, size=(per_distribution, len(dist.handle_min)))
        head = None if dist.head_min is None else rng.uniform(dist.head_min, dist.head_max, size=(per_distribution, 3))
        for k in range(per_distribution):
            dims = tuple(float(v) for v in handle[k])
            if dist.handle_type == "cyl":
                dims = (dims[0], dims[1], dims[1])
            rows.append(
                (
                    index,
                    dims,
                    None if head is None else tuple(float(v) for v in head[k]),
                    float(handle_density[k]),
                    None if head_density is None else float(head_density[k]),
                )
            )
    return rows


class ToolCatalog:
    """`12 x per_distribution` tools, shuffled; `catalog[tool_id]` is a `Tool`.

    The default (seed 42, 50 per distribution) is the 600-tool pool: box_only 50, box_box 250,
    capsule_box 300.
    """

    def __init__(self, seed: int = 42, per_distribution: int = 50) -> None:
        if not is_int(seed) or not 0 <= seed < 2**32:
            raise ConfigError(f"seed {seed!r} is not allowed; allowed an int in 0..2**32-1")
        if not is_int(per_distribution) or per_distribution < 1:
            raise ConfigError(f"per_distribution {per_distribution!r} is not allowed; allowed an int >= 1")
        self.seed, self.per_distribution = int(seed), int(per_distribution)
        rng = np.random.RandomState(self.seed)
        rows = _draw_pool(rng, self.per_distribution)
        order = list(range(len(rows)))
        rng.shuffle(order)
        self._tools = tuple(
            Tool(
                tool_id,
                rows[i][0],
                DISTRIBUTIONS[rows[i][0]].category,
                DISTRIBUTIONS[rows[i][0]].topology,
                DISTRIBUTIONS[rows[i][0]].handle_type,
                *rows[i][1:],
            )
            for tool_id, i in enumerate(order)
        )
        self._topology = np.array([TOPOLOGY_CLASSES.index(t.topology) for t in self._tools])

    def __len__(self) -> int:
        return len(self._tools)

    def __getitem__(self, tool_id: int) -> Tool:
        if not is_int(tool_id) or not 0 <= tool_id < len(self._tools):
            raise ConfigError(f"tool_id {tool_id!r} is out of range; allowed an int in 0..{len(self._tools) - 1}")
        return self._tools[int(tool_id)]

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools)

    def __repr__(self) -> str:
        return f"ToolCatalog(seed={self.seed}, per_distribution={self.per_distribution})"

    def counts_by_topology(self) -> dict[str, int]:
        """Number of tools per topology class, every class present (possibly 0)."""
        return {name: int(np.sum(self._topology == i)) for i, name in enumerate(TOPOLOGY_CLASSES)}

    def ids_of_topology(self, name: str) -> np.ndarray:
        """Sorted int64 tool ids of one topology class."""
        if name not in TOPOLOGY_CLASSES:
            raise ConfigError(f"topology {name!r} is not allowed; allowed {allowed(TOPOLOGY_CLASSES)}")
        return np.flatnonzero(self._topology == TOPOLOGY_CLASSES.index(name)).astype(np.int64)


@functools.lru_cache(maxsize=1)
def source_env0_tool() -> Tool:
    """Tool 0 of the source's own pool (seed 42, `SOURCE_PER_DISTRIBUTION` per distribution): the tool
    of env 0 in the paper's run, whose mass the paper's random pushes are scaled by in every env.

    It is a different tool from tool 0 of the default 600-tool catalog (the pools' shuffles differ).
    """
    return ToolCatalog(seed=42, per_distribution=SOURCE_PER_DISTRIBUTION)[0]
