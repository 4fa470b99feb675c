"""The CubeRotate scene: the 22-DoF hand fixed palm-up (no arm, no table) and one cube in its palm.

- the cubes come from the seeded catalog `mjvec.tasks.cube_rotate.catalog.CubeCatalog` (re-exported here);
- `cube_scene_spec(cube)`: a fresh MjSpec of the scene holding that cube, compilable on its own:
  the oracle every batched env of that cube is checked against.

World frame: the palm body sits at the origin, turned so that the palm's inner face looks up (+z),
the fingers point along +x and the thumb sits on the +y side. `PALM_SITE_NAME` marks the centre
of the palm's inner face. The cube starts resting on the palm, a face down.

Batching contract: the scenes of two cubes compile to models with identical names, counts and
order of every element; they differ only in the cube geom's size (and the rbound/aabb derived from
it), its friction, the size and place of its visual face markers, and the cube body's mass and
inertia. So one engine group holds every cube, and
nothing cube-dependent goes into a name, a keyframe or the model statistics (fixed below).
"""

from __future__ import annotations

import functools
import math

import mujoco
import numpy as np

from mjvec.assets._hand import PALM_BOX
from mjvec.assets.robot import (
    ENV_BIT,
    HAND_JOINT_NAMES,
    JOINT_LOWER,
    JOINT_NAMES,
    JOINT_UPPER,
    add_hand,
    add_hand_actuators,
)
from mjvec.tasks.cube_rotate.catalog import (  # noqa: F401  (the catalog is part of this scene's public names)
    CUBE_FRICTION_RANGE,
    CUBE_HALF_SIZE_RANGE,
    CUBE_MASS_RANGE,
    MAX_CUBES,
    Cube,
    CubeCatalog,
    default_cube_catalog,
)

TIMESTEP = 0.01
# Palm frame -> world: the half turn about (x + z) / sqrt(2) maps palm +x (its inner face's normal)
# to world +z, palm +z (along the fingers) to world +x and palm -y (the thumb side) to world +y.
HAND_MOUNT_QUAT = (0.0, math.sqrt(0.5), 0.0, math.sqrt(0.5))
PALM_SITE_NAME = "palm_center"
# The centre of the palm box's +x face, in the palm frame.
_PALM_FACE = (PALM_BOX[0][0] + PALM_BOX[1][0], PALM_BOX[0][1], PALM_BOX[0][2])
# ...and in the world frame (the mount maps palm (x, y, z) to world (z, -y, x)).
PALM_CENTER = (_PALM_FACE[2], -_PALM_FACE[1], _PALM_FACE[0])

CUBE_BODY_NAME = "cube"
CUBE_JOINT_NAME = "cube_freejoint"
CUBE_GEOM_NAME = "cube"
# Where the cube's centre starts in x and y (world): over the palm's centre, shifted off the thumb,
# where every cube of the catalog rests in the cage of the rest pose. Its height is the palm face
# plus its half size.
CUBE_SPAWN_XY = (PALM_CENTER[0], PALM_CENTER[1] - 0.01)

# The palm is smooth in this scene, so fingertips that press on the cube can turn it on the palm.
PALM_FRICTION = 0.2
CUBE_RGBA = (0.85, 0.35, 0.2, 1.0)
# Visual-only plates on three faces (+x, +y, +z of the cube's frame) so that its turning is visible.
_MARKERS = ((0, (0.1, 0.1, 0.1, 1.0)), (1, (0.95, 0.95, 0.95, 1.0)), (2, (0.2, 0.45, 0.9, 1.0)))

# The hand's rest pose (radians, `HAND_JOINT_NAMES` order): the fingers curled up and back over the
# palm so that their tips rest on the cube's top, the thumb turned beside it.
_REST = {"MCP_FE": 1.3, "PIP": 1.3, "DIP": 0.6, "CMC": 0.0, "MCP_AA": 0.0}
_THUMB_REST = {"CMC_FE": 0.9, "CMC_AA": -0.35, "MCP_FE": 0.3, "MCP_AA": 0.0, "IP": 0.3}
_HAND_LOWER = np.asarray(JOINT_LOWER[len(JOINT_NAMES) - len(HAND_JOINT_NAMES):])
_HAND_UPPER = np.asarray(JOINT_UPPER[len(JOINT_NAMES) - len(HAND_JOINT_NAMES):])
DEFAULT_HAND_POSE = np.clip(
    np.array([(_THUMB_REST if "_thumb_" in n else _REST)[n.split("_", 2)[2]] for n in HAND_JOINT_NAMES]),
    _HAND_LOWER, _HAND_UPPER,
)
DEFAULT_HAND_POSE.flags.writeable = False

HOME_KEYFRAME = "home"
CAMERA_NAME = "cube_view"
# Above the wrist, on the pinky side, looking down at the palm.
CAMERA_POS = (-0.06, -0.16, 0.26)
CAMERA_XYAXES = (0.776, -0.631, 0.0, 0.47, 0.578, 0.667)
FLOOR_Z = -0.25
# Fixed model statistics (see the module docstring); they scale only the visualisation.
STAT_EXTENT = 0.4
STAT_CENTER = (0.08, 0.0, 0.03)
STAT_MEANMASS = 0.05
STAT_MEANSIZE = 0.02


def _options(spec: mujoco.MjSpec) -> None:
    opt = spec.option
    opt.timestep = TIMESTEP
    opt.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    opt.solver = mujoco.mjtSolver.mjSOL_NEWTON
    opt.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
    opt.impratio = 10.0
    # As in the SimToolReal scene: both backends then run libccd for box contacts.
    opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_NATIVECCD)
    stat = spec.stat
    stat.extent, stat.center = STAT_EXTENT, list(STAT_CENTER)
    stat.meanmass, stat.meansize = STAT_MEANMASS, STAT_MEANSIZE


@functools.lru_cache(maxsize=1)
def _base() -> mujoco.MjSpec:
    """The cube-independent part (options, hand, floor, camera); callers get `.copy()`s of it."""
    spec = mujoco.MjSpec()
    spec.modelname = "cube_rotate"
    spec.compiler.degree = False
    _options(spec)
    # The hand first: its joints and actuators get ids 0..21 in HAND_JOINT_NAMES order.
    palm = add_hand(spec.worldbody, (0.0, 0.0, 0.0), HAND_MOUNT_QUAT)
    palm.add_site(name=PALM_SITE_NAME, pos=list(_PALM_FACE), size=[0.005, 0, 0])
    spec.geom("left_palm_collision").friction[0] = PALM_FRICTION
    add_hand_actuators(spec)
    floor = spec.worldbody.add_geom(name="floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[1.0, 1.0, 0.05],
                                    pos=[0.0, 0.0, FLOOR_Z], rgba=[0.5, 0.55, 0.6, 1.0])
    floor.contype, floor.conaffinity = ENV_BIT, ENV_BIT
    # On a static body: a world-body camera's COM-relative offset would differ per cube.
    mount = spec.worldbody.add_body(name="camera_mount", pos=list(CAMERA_POS))
    mount.add_camera(name=CAMERA_NAME, pos=[0.0, 0.0, 0.0], xyaxes=list(CAMERA_XYAXES), fovy=45.0)
    headlight = spec.visual.headlight
    headlight.ambient, headlight.diffuse = [0.4, 0.4, 0.4], [0.7, 0.7, 0.7]
    return spec


def spawn_height(half_size: float | np.ndarray) -> float | np.ndarray:
    """World z of the cube's centre when it rests on the palm face (plus 1 mm of clearance)."""
    return PALM_CENTER[2] + half_size + 0.001


def cube_scene_spec(cube: Cube) -> mujoco.MjSpec:
    """A fresh, independently compilable MjSpec of the scene holding `cube`.

    qpos0 has the hand at 0 and the cube above the palm at the largest cube's resting height (the
    same for every cube); keyframe `HOME_KEYFRAME` has the hand at `DEFAULT_HAND_POSE` too.
    """
    spec = _base().copy()
    start = [*CUBE_SPAWN_XY, float(spawn_height(CUBE_HALF_SIZE_RANGE[1]))]
    body = spec.worldbody.add_body(name=CUBE_BODY_NAME, pos=start)
    body.add_freejoint(name=CUBE_JOINT_NAME)
    geom = body.add_geom(name=CUBE_GEOM_NAME, type=mujoco.mjtGeom.mjGEOM_BOX, size=[cube.half_size] * 3,
                         rgba=list(CUBE_RGBA))
    geom.contype, geom.conaffinity = ENV_BIT, ENV_BIT
    geom.friction = [cube.friction, 0.005, 0.0001]
    for axis, rgba in _MARKERS:
        pos, size = [0.0] * 3, [0.6 * cube.half_size] * 3
        pos[axis], size[axis] = cube.half_size, 0.002
        body.add_geom(name=f"cube_marker_{axis}", type=mujoco.mjtGeom.mjGEOM_BOX, pos=pos, size=size,
                      rgba=list(rgba), contype=0, conaffinity=0, group=2)
    # Explicit and not "simple" (as the SimToolReal tools): the same body structure for every cube,
    # and a per-env centre of mass (EventTerm "body_com") works.
    body.explicitinertial = True
    body.simple = False
    body.mass = cube.mass
    body.ipos = [0.0, 0.0, 0.0]
    body.iquat = [1.0, 0.0, 0.0, 0.0]
    body.inertia = list(cube.inertia)
    spec.add_key(name=HOME_KEYFRAME, qpos=[*DEFAULT_HAND_POSE.tolist(), *start, 1.0, 0.0, 0.0, 0.0],
                 ctrl=DEFAULT_HAND_POSE.tolist())
    return spec


def cube_variant_spec(cube_id: int, catalog: CubeCatalog | None = None) -> mujoco.MjSpec:
    """`cube_scene_spec` of cube `cube_id` of `catalog` (default: `default_cube_catalog()`)."""
    return cube_scene_spec((catalog if catalog is not None else default_cube_catalog())[cube_id])
