"""The SimToolReal scene: robot + table + floor + one tool (free body) + a mocap goal ghost.

`scene_spec(tool_id)` returns an MjSpec that compiles on its own; that independent compile is the
oracle every batched backend is checked against. Batching contract: two tools of the same
topology class give compiled models with identical names, counts and order of every element,
differing only in the tool's and the ghost's geom size/pos/quat/rbound/aabb/rgba (and geom_dataid
in mesh mode) and in the tool body's mass/inertia fields. That is why nothing tool-dependent goes
into a name, a site, a light or the model statistics (`spec.stat` is fixed below rather than
computed from each model's own extent and inertia, which would vary with the tool).
"""

from __future__ import annotations

import functools
import logging

import mujoco

from mjvec.assets.robot import DEFAULT_JOINT_POS, ENV_BIT, add_robot
from mjvec.errors import ConfigError, allowed
from mjvec.tasks.simtoolreal.catalog.geometry import add_tool_geoms
from mjvec.tasks.simtoolreal.catalog.tools import SOURCE_PER_DISTRIBUTION, TOOL_GEOMETRIES, Tool, ToolCatalog

log = logging.getLogger(__name__)

TABLE_GEOM_NAME = "table"
FLOOR_GEOM_NAME = "floor"
TABLE_POS = (0.0, 0.0, 0.38)
TABLE_HALF_SIZE = (0.2375, 0.20, 0.15)
TABLE_TOP_Z = TABLE_POS[2] + TABLE_HALF_SIZE[2]
TABLE_FRICTION = 0.5

OBJECT_BODY_NAME = "object"
OBJECT_JOINT_NAME = "object_freejoint"
# The source offsets the spawn from the table's CENTRE (its tableObjectZOffset over tableResetZ), not
# from the table top: the tool starts a little above the surface and drops onto it. This height is
# also the task's reference for the lift reward, `lifted` and the first goal's floor; all of them
# follow the table where its height is randomized (the task re-reads the table at each reset).
SPAWN_ABOVE_TABLE_CENTRE = 0.25
OBJECT_SPAWN_POS = (0.0, 0.0, TABLE_POS[2] + SPAWN_ABOVE_TABLE_CENTRE)
GOAL_BODY_NAME = "goal"
# The ghost's pose before the first reset: the lowest first goal (the floor the task raises first
# goals to, above the spawn height). Every reset moves it to the env's own goal.
GOAL_INIT_POS = (0.0, 0.0, OBJECT_SPAWN_POS[2] + 0.10)
# Keyframe 0: robot at DEFAULT_JOINT_POS (qpos and ctrl), tool at its spawn pose, goal at its init pose.
HOME_KEYFRAME = "home"

TIMESTEP = 1.0 / 120.0
GRAVITY = (0.0, 0.0, -9.81)
IMPRATIO = 10.0

# Fixed model statistics (see the module docstring): about what MuJoCo computes for this scene
# (the tool moves them by a few percent). They scale only the visualisation, so every tool gets
# the same values. (MuJoCo 4 no longer lets meaninertia affect simulation and deprecates it: unset.)
STAT_EXTENT = 2.0
STAT_CENTER = (0.0, 0.3, 0.8)
STAT_MEANMASS = 1.2
STAT_MEANSIZE = 0.12


def _options(spec: mujoco.MjSpec) -> None:
    opt = spec.option
    opt.timestep = TIMESTEP
    opt.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    opt.solver = mujoco.mjtSolver.mjSOL_NEWTON
    opt.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
    # Native CCD is off: on mujoco_warp 4.0 it still finds fewer box-box contacts than MuJoCo C for
    # tools sunk into the table (all 600 tools x 12 resting poses, 5 mm deep: 100 poses short on
    # native CCD, 0 with libccd; tests/test_warp_engine.py keeps a canary), and the two backends use
    # the same collision code this way.
    opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_NATIVECCD)
    opt.impratio = IMPRATIO
    opt.gravity = list(GRAVITY)
    stat = spec.stat
    stat.extent, stat.center = STAT_EXTENT, list(STAT_CENTER)
    stat.meanmass, stat.meansize = STAT_MEANMASS, STAT_MEANSIZE


# A front-right view of the table, robot and goal region.
CAMERA_NAME = "overview"
CAMERA_POS = (1.0, -0.75, 1.15)
CAMERA_XYAXES = (0.7071, 0.7071, 0.0, -0.2481, 0.2481, 0.9364)


def _environment(spec: mujoco.MjSpec) -> None:
    world = spec.worldbody
    for geom in (
        world.add_geom(
            name=FLOOR_GEOM_NAME, type=mujoco.mjtGeom.mjGEOM_PLANE, size=[2.0, 2.0, 0.05], rgba=[0.5, 0.55, 0.6, 1.0]
        ),
        world.add_geom(
            name=TABLE_GEOM_NAME,
            type=mujoco.mjtGeom.mjGEOM_BOX,
            pos=list(TABLE_POS),
            size=list(TABLE_HALF_SIZE),
            rgba=[0.6, 0.45, 0.3, 1.0],
        ),
    ):
        geom.contype, geom.conaffinity = ENV_BIT, ENV_BIT
        geom.friction = [TABLE_FRICTION, 0.005, 0.0001]
    # The overview camera sits on its own static body: a world-body camera's COM-relative offset
    # (cam_poscom0) would differ per tool and break variant batching.
    mount = world.add_body(name="camera_mount", pos=list(CAMERA_POS))
    mount.add_camera(name=CAMERA_NAME, pos=[0.0, 0.0, 0.0], xyaxes=list(CAMERA_XYAXES), fovy=45.0)
    # No light element: a light's derived COM offset (light_poscom0) would differ per tool. The
    # headlight alone lights the scene.
    headlight = spec.visual.headlight
    headlight.ambient, headlight.diffuse = [0.4, 0.4, 0.4], [0.7, 0.7, 0.7]


@functools.lru_cache(maxsize=1)
def _base() -> mujoco.MjSpec:
    """The tool-independent part (options, environment, robot); callers get `.copy()`s of it."""
    spec = mujoco.MjSpec()
    spec.modelname = "simtoolreal"
    _options(spec)
    add_robot(spec)
    _environment(spec)
    return spec


# The tool pools SimToolReal-v0 can draw from (its ``tool_pool`` option): name -> tools per
# distribution of the seed-42 catalog (12 distributions).
TOOL_POOLS = {"mjvec": 50, "source": SOURCE_PER_DISTRIBUTION}


@functools.lru_cache(maxsize=1)
def default_catalog() -> ToolCatalog:
    """The 600-tool catalog (seed 42, 50 per distribution), built once per process."""
    return ToolCatalog()


@functools.lru_cache(maxsize=len(TOOL_POOLS))
def pool_catalog(pool: str) -> ToolCatalog:
    """The catalog of a tool pool, built once per process: "mjvec" is `default_catalog()` (600
    tools), "source" the authors' own 1,200-tool pool (seed 42, 100 per distribution, shuffled as
    theirs: its tool 0 is `catalog.tools.source_env0_tool()`). Raises ConfigError for another name."""
    if pool not in TOOL_POOLS:
        raise ConfigError(f"tool_pool {pool!r} is not allowed; allowed values are {allowed(TOOL_POOLS)}")
    return default_catalog() if pool == "mjvec" else ToolCatalog(42, TOOL_POOLS[pool])


def scene_spec(tool_id: int, tool_geometry: str = "primitive", catalog: ToolCatalog | None = None) -> mujoco.MjSpec:
    """A fresh, independently compilable MjSpec of the scene holding tool `tool_id` of `catalog`.

    catalog: defaults to `default_catalog()` (the 600-tool pool). See `tool_scene_spec` for the
    scene itself. Raises ConfigError for an unknown geometry or an out-of-range tool_id.
    """
    if tool_geometry not in TOOL_GEOMETRIES:
        raise ConfigError(f"tool_geometry {tool_geometry!r} is not allowed; allowed {allowed(TOOL_GEOMETRIES)}")
    return tool_scene_spec((catalog if catalog is not None else default_catalog())[tool_id], tool_geometry)


def tool_scene_spec(tool: Tool, tool_geometry: str = "primitive") -> mujoco.MjSpec:
    """A fresh, independently compilable MjSpec of the scene holding `tool` (any valid Tool).

    tool_geometry: "primitive" or "mesh" (the goal ghost is always primitives). The object body
    starts at OBJECT_SPAWN_POS with the identity orientation; its mass and inertia come from the
    tool's geom densities. qpos0 has every robot joint at 0; keyframe 0 (HOME_KEYFRAME) has the
    robot at DEFAULT_JOINT_POS. Raises ConfigError for an unknown geometry.
    """
    if tool_geometry not in TOOL_GEOMETRIES:
        raise ConfigError(f"tool_geometry {tool_geometry!r} is not allowed; allowed {allowed(TOOL_GEOMETRIES)}")
    spec = _base().copy()
    body = spec.worldbody.add_body(name=OBJECT_BODY_NAME, pos=list(OBJECT_SPAWN_POS))
    body.add_freejoint(name=OBJECT_JOINT_NAME)
    add_tool_geoms(spec, body, tool, geometry=tool_geometry, prefix="object")
    _set_tool_inertial(body, tool)
    goal = spec.worldbody.add_body(name=GOAL_BODY_NAME, pos=list(GOAL_INIT_POS), mocap=True)
    add_tool_geoms(spec, goal, tool, geometry="primitive", prefix="goal", ghost=True)
    identity = [1.0, 0.0, 0.0, 0.0]
    spec.add_key(
        name=HOME_KEYFRAME,
        qpos=[*DEFAULT_JOINT_POS.tolist(), *OBJECT_SPAWN_POS, *identity],
        ctrl=DEFAULT_JOINT_POS.tolist(),
        mpos=list(GOAL_INIT_POS),
        mquat=identity,
    )
    log.debug("scene spec for tool %d (%s, %s)", tool.tool_id, tool.topology, tool_geometry)
    return spec


def _set_tool_inertial(body: mujoco.MjsBody, tool: Tool) -> None:
    """The tool's analytic mass, COM and principal inertia (the source's formulas), in the object frame.

    Explicit, so that every tool's inertial frame has the object's orientation: a geom-derived one
    is whatever the compiler's eigen-decomposition returns, which flips axes from tool to tool and
    with them the order of the body's collision-BVH leaves (a structure no engine holds per env).
    Primitive tools get the mass MuJoCo would derive from their geoms (to rounding); mesh tools get
    the same analytic mass as their primitive twin instead of their hull's.
    """
    body.explicitinertial = True
    # Not "simple" (MuJoCo would cache the inertial frame of a headless tool as its body frame),
    # so that a per-env COM (EventTerm "body_com") works for every tool.
    body.simple = False
    body.mass = tool.mass
    body.ipos = [tool.com_x, 0.0, 0.0]
    body.iquat = [1.0, 0.0, 0.0, 0.0]
    body.inertia = [float(v) for v in tool.inertia]


def compile_scene(tool_id: int, tool_geometry: str = "primitive", catalog: ToolCatalog | None = None) -> mujoco.MjModel:
    """`scene_spec(...).compile()`."""
    return scene_spec(tool_id, tool_geometry, catalog).compile()
