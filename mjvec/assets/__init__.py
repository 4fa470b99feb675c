"""Robot, table and tool catalog of SimToolReal, generated as MjSpec from primitives (no downloads).

- `robot`: the iiwa14 + 22-DoF hand (`add_robot`) and its name/limit/gain constants.
- `tools`: the seeded 600-tool catalog (`ToolCatalog`, `Tool`, `DISTRIBUTIONS`).
- `cubes`: CubeRotate-v0's seeded cube catalog (`CubeCatalog`, `Cube`).
- `mjcf`: MJCF files with their asset folders (`load_spec`, `resolve_xml`, `package_dir`), for the
  tasks built from a robot's XML (Gymnasium's suite, MuJoCo Playground's tasks).

The scenes that hold them are each task's own (`mjvec.tasks.simtoolreal.scene`,
`mjvec.tasks.cube_rotate.scene`); the scene names this package used to export still resolve, with a
DeprecationWarning naming the new path.
"""

from typing import Any

from mjvec._moved import moved_attribute
from mjvec.assets.robot import (
    ACTUATOR_NAMES,
    ARM_JOINT_NAMES,
    DEFAULT_JOINT_POS,
    FINGERTIP_BODY_NAMES,
    FINGERTIP_OFFSET,
    FINGERTIP_SITE_NAMES,
    HAND_BODY_NAME,
    HAND_JOINT_NAMES,
    JOINT_EFFORT,
    JOINT_KD,
    JOINT_KP,
    JOINT_LOWER,
    JOINT_NAMES,
    JOINT_UPPER,
    PALM_BODY_NAME,
    PALM_OFFSET,
    PALM_SITE_NAME,
    ROBOT_BASE_POS,
    add_robot,
)
from mjvec.assets.tools import (
    DISTRIBUTIONS,
    OBJECT_BASE_SIZE,
    TOOL_GEOMETRIES,
    TOPOLOGY_CLASSES,
    Tool,
    ToolCatalog,
    ToolDistribution,
)

__all__ = [
    "ACTUATOR_NAMES",
    "ARM_JOINT_NAMES",
    "DEFAULT_JOINT_POS",
    "DISTRIBUTIONS",
    "FINGERTIP_BODY_NAMES",
    "FINGERTIP_OFFSET",
    "FINGERTIP_SITE_NAMES",
    "HAND_BODY_NAME",
    "HAND_JOINT_NAMES",
    "JOINT_EFFORT",
    "JOINT_KD",
    "JOINT_KP",
    "JOINT_LOWER",
    "JOINT_NAMES",
    "JOINT_UPPER",
    "OBJECT_BASE_SIZE",
    "PALM_BODY_NAME",
    "PALM_OFFSET",
    "PALM_SITE_NAME",
    "ROBOT_BASE_POS",
    "TOOL_GEOMETRIES",
    "TOPOLOGY_CLASSES",
    "Tool",
    "ToolCatalog",
    "ToolDistribution",
    "add_robot",
]

# Names of SimToolReal's scene, which moved to the task's package.
_MOVED = dict.fromkeys((
    "FLOOR_GEOM_NAME",
    "GOAL_BODY_NAME",
    "HOME_KEYFRAME",
    "OBJECT_BODY_NAME",
    "OBJECT_JOINT_NAME",
    "OBJECT_SPAWN_POS",
    "TABLE_GEOM_NAME",
    "TABLE_HALF_SIZE",
    "TABLE_POS",
    "TABLE_TOP_Z",
    "compile_scene",
    "default_catalog",
    "scene_spec",
    "tool_scene_spec",
), "mjvec.tasks.simtoolreal.scene")


def __getattr__(name: str) -> Any:
    return moved_attribute(__name__, name, _MOVED)
