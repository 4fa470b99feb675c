"""The scene layer: what two or more tasks share, generated or loaded as MjSpec (no downloads).

- `robot`: the iiwa14 + 22-DoF hand (`add_robot`) and its name/limit/gain constants (SimToolReal-v0
  and CubeRotate-v0; `_hand` and `_frames` build it).
- `terrain` / `subterrains`: heightfield terrain grids with per-env origins (the locomotion tasks).

A task's own catalog lives in its package (`mjvec.tasks.simtoolreal.catalog`: the tools;
`mjvec.tasks.cube_rotate.catalog`: the cubes), and so do the scenes that hold them. The names this
package used to export from there still resolve, with a DeprecationWarning naming the new path and
the release that removes them.
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

__all__ = [
    "ACTUATOR_NAMES",
    "ARM_JOINT_NAMES",
    "DEFAULT_JOINT_POS",
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
    "PALM_BODY_NAME",
    "PALM_OFFSET",
    "PALM_SITE_NAME",
    "ROBOT_BASE_POS",
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
_MOVED.update(dict.fromkeys(("DISTRIBUTIONS", "OBJECT_BASE_SIZE", "TOOL_GEOMETRIES", "TOPOLOGY_CLASSES", "Tool",
                             "ToolCatalog", "ToolDistribution"), "mjvec.tasks.simtoolreal.catalog.tools"))


def __getattr__(name: str) -> Any:
    return moved_attribute(__name__, name, _MOVED)
