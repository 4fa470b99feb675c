"""KUKA LBR iiwa 14 + Sharpa HA4 left hand (29 DoF) built into an MjSpec from primitives.

Contract (other modules index the compiled model by these constants):
- `add_robot(spec)` must be the first thing added to `spec.worldbody`, so that the robot's 29
  hinge joints get joint ids and qpos/dof addresses 0..28 in `JOINT_NAMES` order, and its 29
  actuators (actuator i drives joint i) get actuator ids 0..28 in `ACTUATOR_NAMES` order.
- Limits, gains, masses follow reference/simtoolreal.md section 1 (URDF + Isaac Gym drive table).

Modelling choices (each is why something differs from a literal URDF port):
- Drives are MuJoCo `position` actuators with the Isaac Gym kp and kd; arm armature is not applied
  (the source does not apply it either). Hand actuators are force-limited to the URDF effort, as
  Isaac Gym does for DOF_MODE_POS.
- Every robot body has `gravcomp=1`, standing in for Isaac Gym's `disable_gravity` on the robot.
- Collisions: one primitive per link. Self-collision is on as in the source, which enables every
  robot pair and filters its adjacency table (LEFT_SHARPA_KUKA_LINK_TO_ADJACENT_LINKS): each arm
  link vs the next, link 7 (with the palm merged into it) vs the thumb metacarpal and the finger
  bases, each knuckle vs the next. Here the source's two-joint knuckles and their virtual links are
  one body with two hinges, so that table is exactly this model's parent-child pairs, which MuJoCo's
  filterparent skips (the palm is welded to link 7), except link 0 vs link 1: filterparent never
  filters a body whose parent is welded to the world, as the fixed base is, so that pair is an
  `<exclude>`. One more `<exclude>`, link 5 vs link 7, is not in the source's table: their capsules
  overlap at every joint-6 angle (they end 0.081 m apart with radii 0.065 and 0.06), a shape the
  real links do not have. No other robot pair overlaps at the default posture or in the reset
  distribution (tested). Environment bit: the table, floor and tool collide with every link.
- Friction: robot links 0.5; fingertips 1.0 with condim 4. MuJoCo combines a pair's friction
  with max() while PhysX averages it, so 1.0 reproduces the source's fingertip-vs-tool and
  fingertip-vs-table coefficient ((1.5 + 0.5) / 2) exactly; condim 4 adds the torsional friction
  a soft pad has.
"""

from __future__ import annotations

from collections.abc import Sequence

import mujoco
import numpy as np

from mjvec.assets._frames import Frame
from mjvec.assets._hand import PALM_BOX, PALM_INERTIAL, HandLink, hand_links

ROBOT_BASE_POS = (0.0, 0.8, 0.0)

ARM_JOINT_NAMES = tuple(f"iiwa14_joint_{i}" for i in range(1, 8))
_HAND_ORDER = (
    ("thumb", ("CMC_FE", "CMC_AA", "MCP_FE", "MCP_AA", "IP")),
    ("index", ("MCP_FE", "MCP_AA", "PIP", "DIP")),
    ("middle", ("MCP_FE", "MCP_AA", "PIP", "DIP")),
    ("ring", ("MCP_FE", "MCP_AA", "PIP", "DIP")),
    ("pinky", ("CMC", "MCP_FE", "MCP_AA", "PIP", "DIP")),
)
HAND_JOINT_NAMES = tuple(f"left_{finger}_{joint}" for finger, joints in _HAND_ORDER for joint in joints)
JOINT_NAMES = ARM_JOINT_NAMES + HAND_JOINT_NAMES
ACTUATOR_NAMES = tuple(f"{name}_act" for name in JOINT_NAMES)
HAND_ACTUATOR_NAMES = ACTUATOR_NAMES[len(ARM_JOINT_NAMES):]

FINGERTIP_BODY_NAMES = tuple(f"left_{f}_DP" for f in ("index", "middle", "ring", "thumb", "pinky"))
FINGERTIP_SITE_NAMES = tuple(f"left_{f}_fingertip" for f in ("index", "middle", "ring", "thumb", "pinky"))
FINGERTIP_OFFSET = (0.02, 0.002, 0.0)
PALM_BODY_NAME = "iiwa14_link_7"
PALM_SITE_NAME = "palm_center"
PALM_OFFSET = (0.0, -0.02, 0.16)
HAND_BODY_NAME = "left_hand_C_MC"

ROBOT_FRICTION = 0.5
FINGERTIP_FRICTION = 1.0

# Collision bits: 1 = environment (table, floor, tool), 2 = arm, 4 = hand.
ENV_BIT, ARM_BIT, HAND_BIT = 1, 2, 4

_ARM_LIMITS = (2.96705972839, 2.09439510239, 2.96705972839, 2.09439510239, 2.96705972839, 2.09439510239, 3.05432619099)
ARM_KP = (600.0, 600.0, 500.0, 400.0, 200.0, 200.0, 200.0)
ARM_KD = (
    27.027026473513512,
    27.027026473513512,
    24.672186769721083,
    22.067474708266914,
    9.752538131173853,
    9.147747263670984,
    9.147747263670984,
)
ARM_EFFORT = 300.0
ARM_DEFAULT = (-1.571, 1.571, 0.0, 1.376, 0.0, 1.485, 1.308)

# URDF joint origins (xyz, rpy) of joints 1..7, then link inertials: mass, COM, diagonal inertia.
_ARM_ORIGINS = (
    ((0.0, 0.0, 0.1575), (0.0, 0.0, 0.0)),
    ((0.0, 0.0, 0.2025), (np.pi / 2, 0.0, np.pi)),
    ((0.0, 0.2045, 0.0), (np.pi / 2, 0.0, np.pi)),
    ((0.0, 0.0, 0.2155), (np.pi / 2, 0.0, 0.0)),
    ((0.0, 0.1845, 0.0), (-np.pi / 2, np.pi, 0.0)),
    ((0.0, 0.0, 0.2155), (np.pi / 2, 0.0, 0.0)),
    ((0.0, 0.081, 0.0), (-np.pi / 2, np.pi, 0.0)),
)
_ARM_INERTIALS = (
    (5.0, (-0.1, 0.0, 0.07), (0.05, 0.06, 0.03)),
    (5.76, (0.0, -0.03, 0.12), (0.033, 0.0333, 0.0123)),
    (6.35, (0.0003, 0.059, 0.042), (0.0305, 0.011, 0.0304)),
    (3.5, (0.0, 0.03, 0.13), (0.025, 0.0238, 0.0076)),
    (3.5, (0.0, 0.067, 0.034), (0.017, 0.006, 0.0164)),
    (3.5, (0.0001, 0.021, 0.076), (0.01, 0.0087, 0.00449)),
    (1.8, (0.0, 0.0006, 0.0004), (0.0049, 0.0047, 0.0036)),
    (1.2, (0.0, 0.0, 0.02), (0.001, 0.001, 0.001)),
)
# Capsule radius per link 0..7; each capsule spans its link from the joint to the next joint origin.
_ARM_RADII = (0.09, 0.07, 0.07, 0.065, 0.065, 0.06, 0.06, 0.045)
_FLANGE_Z, _MOUNT_Z, _MOUNT_YAW, _HAND_YAW = 0.045, 0.05, 0.261799, -np.pi / 2


_DRIVE_OF = {j.name: j.drive for link in hand_links(HAND_BODY_NAME) for j in link.joints}
_HAND_DRIVES = tuple(_DRIVE_OF[name] for name in HAND_JOINT_NAMES)

# Per joint, in JOINT_NAMES order (read-only float64 arrays of shape (29,)).
JOINT_LOWER = np.array([-lim for lim in _ARM_LIMITS] + [d.lower for d in _HAND_DRIVES], dtype=np.float64)
JOINT_UPPER = np.array(list(_ARM_LIMITS) + [d.upper for d in _HAND_DRIVES], dtype=np.float64)
JOINT_KP = np.array(ARM_KP + tuple(d.kp for d in _HAND_DRIVES), dtype=np.float64)
JOINT_KD = np.array(ARM_KD + tuple(d.kd for d in _HAND_DRIVES), dtype=np.float64)
JOINT_EFFORT = np.array((ARM_EFFORT,) * len(ARM_KP) + tuple(d.effort for d in _HAND_DRIVES), dtype=np.float64)
DEFAULT_JOINT_POS = np.clip(np.array(ARM_DEFAULT + (0.0,) * len(HAND_JOINT_NAMES)), JOINT_LOWER, JOINT_UPPER)
for _array in (JOINT_LOWER, JOINT_UPPER, JOINT_KP, JOINT_KD, JOINT_EFFORT, DEFAULT_JOINT_POS):
    _array.flags.writeable = False


# Link pairs excluded beyond MuJoCo's parent-child filter (module docstring): the source's adjacent
# pair that filterparent misses (a child of the world-welded base), and the capsules' own overlap.
SELF_COLLISION_EXCLUDES = (("iiwa14_link_0", "iiwa14_link_1"), ("iiwa14_link_5", "iiwa14_link_7"))
NOT_IN_SOURCE_EXCLUDES = (("iiwa14_link_5", "iiwa14_link_7"),)


def _collision(geom: mujoco.MjsGeom, bit: int, friction: float) -> None:
    geom.contype = bit
    # Every robot geom accepts the environment and every other robot geom (self-collision).
    geom.conaffinity = ENV_BIT | ARM_BIT | HAND_BIT
    geom.friction = [friction, 0.005, 0.0001]
    geom.group = 0


def _arm(spec: mujoco.MjSpec) -> mujoco.MjsBody:
    base = spec.worldbody.add_body(name="iiwa14_link_0", pos=list(ROBOT_BASE_POS))
    bodies = [base]
    for i, (xyz, rpy) in enumerate(_ARM_ORIGINS):
        frame = Frame.urdf(xyz, rpy)
        body = bodies[-1].add_body(name=f"iiwa14_link_{i + 1}", pos=frame.pos.tolist(), quat=frame.quat.tolist())
        body.add_joint(
            name=ARM_JOINT_NAMES[i],
            type=mujoco.mjtJoint.mjJNT_HINGE,
            axis=[0, 0, 1],
            range=[-_ARM_LIMITS[i], _ARM_LIMITS[i]],
            limited=mujoco.mjtLimited.mjLIMITED_TRUE,
        )
        bodies.append(body)
    # Link 7's capsule stops at the flange; the hand mount above it is part of the palm's box.
    ends = [np.asarray(xyz) for xyz, _ in _ARM_ORIGINS] + [np.array([0.0, 0.0, _FLANGE_Z])]
    for i, body in enumerate(bodies):
        mass, com, inertia = _ARM_INERTIALS[i]
        body.mass, body.ipos, body.inertia = mass, list(com), list(inertia)
        body.explicitinertial = True
        body.gravcomp = 1.0
        geom = body.add_geom(
            name=f"iiwa14_link_{i}_collision",
            type=mujoco.mjtGeom.mjGEOM_CAPSULE,
            fromto=[0, 0, 0, *ends[i].tolist()],
            size=[_ARM_RADII[i], 0, 0],
            rgba=[1.0, 0.42, 0.04, 1.0] if 0 < i < 7 else [0.4, 0.4, 0.4, 1.0],
        )
        _collision(geom, ARM_BIT, ROBOT_FRICTION)
    return bodies[-1]


def _hand_body(parent: mujoco.MjsBody, link: HandLink) -> mujoco.MjsBody:
    body = parent.add_body(name=link.name, pos=link.frame.pos.tolist(), quat=link.frame.quat.tolist())
    mass, com, full = link.inertial
    body.mass, body.ipos, body.fullinertia = mass, list(com), list(full)
    body.explicitinertial = True
    body.gravcomp = 1.0
    for joint in link.joints:
        d = joint.drive
        body.add_joint(
            name=joint.name,
            type=mujoco.mjtJoint.mjJNT_HINGE,
            pos=joint.anchor.tolist(),
            axis=joint.axis.tolist(),
            range=[d.lower, d.upper],
            limited=mujoco.mjtLimited.mjLIMITED_TRUE,
            armature=d.armature,
            frictionloss=d.frictionloss,
        )
    rgba = [0.79, 0.82, 0.93, 1.0]
    if link.capsule is not None:
        start, end, radius = link.capsule
        geom = body.add_geom(
            name=f"{link.name}_collision",
            type=mujoco.mjtGeom.mjGEOM_CAPSULE,
            fromto=[*start, *end],
            size=[radius, 0, 0],
            rgba=rgba,
        )
    else:
        centre, half = link.box
        geom = body.add_geom(
            name=f"{link.name}_collision", type=mujoco.mjtGeom.mjGEOM_BOX, pos=list(centre), size=list(half), rgba=rgba
        )
    _collision(geom, HAND_BIT, FINGERTIP_FRICTION if link.fingertip else ROBOT_FRICTION)
    if link.fingertip:
        geom.condim = 4
        geom.rgba = [0.2, 0.8, 0.2, 1.0]
        body.add_site(name=link.name.replace("_DP", "_fingertip"), pos=list(FINGERTIP_OFFSET), size=[0.004, 0, 0])
    return body


def _hand(link7: mujoco.MjsBody) -> None:
    mount = Frame.urdf((0.0, 0.0, _FLANGE_Z), (0.0, 0.0, _MOUNT_YAW)) @ Frame.urdf(
        (0.0, 0.0, _MOUNT_Z), (0.0, 0.0, _HAND_YAW)
    )
    add_hand(link7, mount.pos, mount.quat)


def add_hand(parent: mujoco.MjsBody, pos: Sequence[float], quat: Sequence[float]) -> mujoco.MjsBody:
    """Add the 22-DoF hand under `parent`: its palm body `HAND_BODY_NAME` at (pos, quat wxyz) in
    `parent`'s frame, and every finger body below it; returns the palm body.

    Palm frame: the fingers extend along +z, flex towards +x (the palm's inner face is the +x face of
    its box), and the thumb sits on the -y side. The hand's 22 hinges come out in `HAND_JOINT_NAMES`
    order. Collision bits, friction and gravity compensation are the robot's (module docstring).
    Actuators are added separately (`add_hand_actuators`).
    """
    palm = parent.add_body(name=HAND_BODY_NAME, pos=[float(v) for v in pos], quat=[float(v) for v in quat])
    mass, com, full = PALM_INERTIAL
    palm.mass, palm.ipos, palm.fullinertia = mass, list(com), list(full)
    palm.explicitinertial = True
    palm.gravcomp = 1.0
    centre, half = PALM_BOX
    geom = palm.add_geom(
        name="left_palm_collision",
        type=mujoco.mjtGeom.mjGEOM_BOX,
        pos=list(centre),
        size=list(half),
        rgba=[0.79, 0.82, 0.93, 1.0],
    )
    _collision(geom, HAND_BIT, ROBOT_FRICTION)
    bodies = {HAND_BODY_NAME: palm}
    for link in hand_links(HAND_BODY_NAME):
        bodies[link.name] = _hand_body(bodies[link.parent], link)
    return palm


def _actuators(spec: mujoco.MjSpec, joints: Sequence[str] = JOINT_NAMES) -> None:
    for joint in joints:
        i = JOINT_NAMES.index(joint)
        act = spec.add_actuator(name=ACTUATOR_NAMES[i], target=joint, trntype=mujoco.mjtTrn.mjTRN_JOINT)
        act.set_to_position(kp=float(JOINT_KP[i]), kv=float(JOINT_KD[i]))
        act.ctrlrange = [float(JOINT_LOWER[i]), float(JOINT_UPPER[i])]
        act.ctrllimited = mujoco.mjtLimited.mjLIMITED_TRUE
        act.forcerange = [-float(JOINT_EFFORT[i]), float(JOINT_EFFORT[i])]
        act.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE


def add_hand_actuators(spec: mujoco.MjSpec) -> None:
    """Add the hand's 22 position actuators (`HAND_ACTUATOR_NAMES`, actuator i drives hand joint i),
    with the same gains, control ranges and force limits as in the full robot."""
    _actuators(spec, HAND_JOINT_NAMES)


def add_robot(spec: mujoco.MjSpec) -> None:
    """Add the arm + hand under `spec.worldbody`, with its actuators and reference sites.

    Call it before adding any other jointed body or actuator to `spec` (see the module contract).
    Sets `spec.compiler.degree = False`: every angle here (joint ranges, ctrlrange) is in radians.
    """
    spec.compiler.degree = False
    link7 = _arm(spec)
    link7.add_site(name=PALM_SITE_NAME, pos=list(PALM_OFFSET), size=[0.005, 0, 0])
    _hand(link7)
    _actuators(spec)
    for first, second in SELF_COLLISION_EXCLUDES:
        spec.add_exclude(name=f"{first}_{second}", bodyname1=first, bodyname2=second)
