"""The PandaPickCube scene: MuJoCo Playground's ``franka_emika_panda/xmls/mjx_single_cube.xml``
(Menagerie's Franka Panda as ``mjx_panda.xml``, a 4 x 4 x 6 cm box on a free joint, a mocap body
"mocap_target" with a visual box, the floor, and contact sensors between the finger pads or the
hand capsule and the floor), loaded from the ``mjvec[playground]`` assets the way Playground's
``panda.get_assets`` gathers them (the scene names Menagerie's files by their bare names), with
the one model edit Playground's ``PandaBase.__init__`` makes: timestep = sim_dt. The names below
are Playground's (``panda.py``, ``pick.py``).
"""

from __future__ import annotations

import mujoco

from mjvec.assets.mjcf import load_spec
from mjvec.assets.playground import playground_assets, playground_file
from mjvec.tasks.panda_pick_cube.config import PandaPickCubeConfig

__all__ = ["ARM_JOINTS", "BOX_BODY", "FINGER_JOINTS", "FLOOR_SENSORS", "SCENE_XML", "scene_spec"]

_XMLS = "mujoco_playground/_src/manipulation/franka_emika_panda/xmls"
_MENAGERIE = "mujoco_menagerie/franka_emika_panda"
SCENE_XML = f"{_XMLS}/mjx_single_cube.xml"
# Playground's get_assets: its XMLs, Menagerie's Panda XMLs and meshes, by file name.
ASSET_SOURCES = ((_XMLS, "*.xml"), (_MENAGERIE, "*.xml"), (f"{_MENAGERIE}/assets", "*"))
ARM_JOINTS = tuple(f"joint{i}" for i in range(1, 8))
FINGER_JOINTS = ("finger_joint1", "finger_joint2")
GRIPPER_SITE = "gripper"
BOX_BODY = "box"
TARGET_BODY = "mocap_target"
HOME_KEYFRAME = "home"
# The contact sensors whose contact with the floor the no_floor_collision term penalises.
FLOOR_SENSORS = tuple(f"{geom}_floor_found" for geom in ("left_finger_pad", "right_finger_pad", "hand_capsule"))


def scene_spec(config: PandaPickCubeConfig) -> mujoco.MjSpec:
    """A fresh MjSpec of the scene with Playground's model edit for `config` (timestep = sim_dt)."""
    spec = load_spec(playground_file(SCENE_XML), playground_assets(ASSET_SOURCES))
    spec.option.timestep = config.sim_dt
    return spec
