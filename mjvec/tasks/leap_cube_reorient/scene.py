"""The LeapCubeReorient scene: MuJoCo Playground's ``leap_hand/xmls/scene_mjx_cube.xml`` (its LEAP
right hand, 16 position-actuated joints, with Menagerie's meshes; the textured reorientation cube on
a free joint; a non-colliding mocap "goal" cube; the floor; the cube, palm, fingertip and goal
sensors), loaded from the ``mjvec[playground]`` assets, with the model edits Playground's
``LeapHandEnv.__init__`` makes: timestep = sim_dt, ``ccd_iterations`` = 10, the offscreen buffer
3840 x 2160. The names below are Playground's (``leap_hand_constants``, ``base.py``).
"""

from __future__ import annotations

import mujoco

from mjvec.assets.mjcf import load_spec
from mjvec.assets.playground import playground_file
from mjvec.tasks.leap_cube_reorient.config import LeapCubeReorientConfig

__all__ = ["CUBE_BODY", "CUBE_XML", "FINGERTIPS", "GOAL_BODY", "HAND_BODIES", "HAND_JOINTS", "SENSORS", "scene_spec"]

CUBE_XML = "mujoco_playground/_src/manipulation/leap_hand/xmls/scene_mjx_cube.xml"
CCD_ITERATIONS = 10  # Playground's LeapHandEnv sets it on the model
OFFSCREEN = (3840, 2160)  # and this offscreen buffer
HOME_KEYFRAME = "home"
CUBE_BODY = "cube"
GOAL_BODY = "goal"
FLOOR_GEOM = "floor"
HAND_JOINTS = ("if_mcp", "if_rot", "if_pip", "if_dip", "mf_mcp", "mf_rot", "mf_pip", "mf_dip",
               "rf_mcp", "rf_rot", "rf_pip", "rf_dip", "th_cmc", "th_axl", "th_mcp", "th_ipl")
FINGERTIPS = ("th_tip", "if_tip", "mf_tip", "rf_tip")  # sites and geoms, Playground's order
# The bodies Playground's domain_randomize scales the masses of (every hand link, the palm first).
HAND_BODIES = ("palm", "if_bs", "if_px", "if_md", "if_ds", "mf_bs", "mf_px", "mf_md", "mf_ds",
               "rf_bs", "rf_px", "rf_md", "rf_ds", "th_mp", "th_bs", "th_px", "th_ds")
SENSORS = ("cube_position", "cube_orientation", "cube_linvel", "cube_angvel", "palm_position",
           "cube_goal_orientation", *(f"{tip}_position" for tip in FINGERTIPS))


def scene_spec(config: LeapCubeReorientConfig, cube_com_writable: bool = False) -> mujoco.MjSpec:
    """A fresh MjSpec of Playground's cube scene with its model edits for `config`.

    cube_com_writable: compile the cube as a non-"simple" body (MuJoCo caches that a simple body's
    inertial frame is its body frame, which a per-env centre of mass would break; mjvec's backends
    refuse to write its body_ipos otherwise). The "paper" preset, which moves the cube's centre of
    mass, needs it; it changes body_simple (and dof_simplenum) only, not the physics."""
    spec = load_spec(playground_file(CUBE_XML))
    if cube_com_writable:
        spec.body(CUBE_BODY).simple = False
    spec.option.timestep = config.sim_dt
    spec.option.ccd_iterations = CCD_ITERATIONS
    spec.visual.global_.offwidth, spec.visual.global_.offheight = OFFSCREEN
    return spec
