"""The Go1 joystick scenes: MuJoCo Playground's ``scene_mjx_feetonly_<terrain>.xml`` (Menagerie's
Unitree Go1 with collisions on the feet only, foot-floor contact sensors, and a floor geom named
"floor": a plane on "flat_terrain", a 256 x 256 MuJoCo hfield of 20 m x 20 m read from Playground's
``hfield.png`` on "rough_terrain"), loaded from the ``mjvec[playground]`` assets, with the model
edits Playground's ``Go1Env.__init__`` makes:
timestep = sim_dt, ``ccd_iterations`` = 20, the leg joints' damping = Kd, the position actuators'
gain = Kp (gainprm[0] = Kp, biasprm[1] = -Kp). The names below are Playground's (``go1_constants``).
"""

from __future__ import annotations

import mujoco

from mjvec.assets.mjcf import load_spec
from mjvec.assets.playground import playground_file
from mjvec.errors import ConfigError, allowed
from mjvec.tasks.go1_joystick.config import Go1JoystickConfig

__all__ = ["FEET", "FLAT_TERRAIN_XML", "ROOT_BODY", "ROUGH_TERRAIN_XML", "SENSORS", "TERRAINS", "scene_spec"]

_XMLS = "mujoco_playground/_src/locomotion/go1/xmls"
FLAT_TERRAIN_XML = f"{_XMLS}/scene_mjx_feetonly_flat_terrain.xml"
ROUGH_TERRAIN_XML = f"{_XMLS}/scene_mjx_feetonly_rough_terrain.xml"
# Playground's task names -> their scenes (go1_constants.task_to_xml).
TERRAINS = {"flat_terrain": FLAT_TERRAIN_XML, "rough_terrain": ROUGH_TERRAIN_XML}
ROOT_BODY = "trunk"
IMU_SITE = "imu"
FLOOR_GEOM = "floor"
HOME_KEYFRAME = "home"
CCD_ITERATIONS = 20  # Playground's Go1Env sets it on the model
# Feet: site and geom names (one per leg, Playground's order), their velocity and contact sensors.
FEET = ("FR", "FL", "RR", "RL")
FOOT_LINVEL_SENSORS = tuple(f"{foot}_global_linvel" for foot in FEET)
FOOT_CONTACT_SENSORS = tuple(f"{foot}_floor_found" for foot in FEET)
# The base's sensors, at the IMU site (Playground's go1_constants names).
SENSORS = ("gyro", "local_linvel", "accelerometer", "upvector", "global_linvel", "global_angvel")


def scene_spec(config: Go1JoystickConfig, terrain: str = "flat_terrain") -> mujoco.MjSpec:
    """A fresh MjSpec of the `terrain` scene (a key of `TERRAINS`) with Playground's model edits for
    `config` (see the module docstring)."""
    if terrain not in TERRAINS:
        raise ConfigError(f"terrain={terrain!r} is not a Go1 joystick scene; allowed values are {allowed(TERRAINS)}")
    spec = load_spec(playground_file(TERRAINS[terrain]))
    spec.option.timestep = config.sim_dt
    spec.option.ccd_iterations = CCD_ITERATIONS
    for joint in spec.joints:
        if joint.type != mujoco.mjtJoint.mjJNT_FREE:
            damping = list(joint.damping)  # MuJoCo 4: the damping polynomial's coefficients, linear first
            damping[0] = config.Kd
            joint.damping = damping
    for actuator in spec.actuators:
        gain = list(actuator.gainprm)
        bias = list(actuator.biasprm)
        gain[0], bias[1] = config.Kp, -config.Kp
        actuator.gainprm, actuator.biasprm = gain, bias
    return spec
