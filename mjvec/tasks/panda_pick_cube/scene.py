"""The PandaPickCube scene: MuJoCo Playground's ``franka_emika_panda/xmls/mjx_single_cube.xml``
(Menagerie's Franka Panda as ``mjx_panda.xml``, a 4 x 4 x 6 cm box on a free joint, a mocap body
"mocap_target" with a visual box, the floor, and contact sensors between the finger pads or the
hand capsule and the floor), loaded from the ``mjvec[playground]`` assets, with the one model edit
Playground's ``PandaBase.__init__`` makes: timestep = sim_dt. The names below are Playground's
(``panda.py``, ``pick.py``).

Playground compiles the XML from a string with an in-memory asset map (``panda.get_assets``: its
XMLs, then Menagerie's Panda XMLs and meshes, by bare file name, a later file replacing an earlier
one), so its ``<include file="mjx_scene.xml">`` resolves to Menagerie's ``mjx_scene.xml``; the
asset wheel's copy of the XML names that file by its path in the tree, so loading it from its
folder compiles the same model (every numeric field, tested against Playground's).
"""

from __future__ import annotations

import mujoco

from mjvec.assets.mjcf import load_spec
from mjvec.assets.playground import playground_file
from mjvec.tasks.panda_pick_cube.config import PandaPickCubeConfig

__all__ = ["ARM_JOINTS", "BOX_BODY", "FINGER_JOINTS", "FLOOR_SENSORS", "SCENE_XML", "scene_spec"]

_XMLS = "mujoco_playground/_src/manipulation/franka_emika_panda/xmls"
SCENE_XML = f"{_XMLS}/mjx_single_cube.xml"
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
    spec = load_spec(playground_file(SCENE_XML))
    spec.option.timestep = config.sim_dt
    return spec
