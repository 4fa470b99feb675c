"""The Sharpa HA4 left hand (22 DoF) as MjSpec primitives: kinematics, inertias, drive gains.

Numbers come from the authors' URDF (`iiwa14_left_sharpa_adjusted_restricted.urdf`) and drive table
(`simtoolreal/utils.py`), see reference/simtoolreal.md section 1. Two simplifications, both invisible
to the joint-space dynamics that matter here:

- The URDF's massless "virtual" links (`*_CMC_VL`, `*_MCP_VL`, mass 1e-6) between the two joints of a
  2-DoF knuckle are folded away: both joints live in the child body, with anchors and axes
  re-expressed in its frame. MuJoCo applies several joints of one body in order, each about the
  frame left by the previous one, which is exactly the URDF chain, and a 1e-6 kg body would
  only make the mass matrix ill-conditioned.
- The elastomer pad of each distal link is lumped into the distal body's mass (same COM and
  inertia shape); the drives' armature dominates the phalanx inertia by orders of magnitude.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mjvec.assets._frames import Frame, quat_rotate
from mjvec.errors import ConfigError

HALF_PI = 0.5 * np.pi
FINGERS = ("index", "middle", "ring")

# Position of each MCP (knuckle) joint in the palm frame; URDF joint origins.
_MCP_ORIGIN = {"index": (0.001, -0.0303, 0.0957), "middle": (0.0, -0.01, 0.0987), "ring": (0.0015, 0.0103, 0.0927)}
_MCP_RPY = (0.0, -HALF_PI, -HALF_PI)
_AA_RPY = (HALF_PI, 0.0, 0.0)  # MCP_FE frame -> MCP_AA frame, shared by all five fingers
_PIP_ORIGIN, _PIP_RPY = (0.047, 0.0, 0.0), (-HALF_PI, 0.0, 0.0)
_DIP_ORIGIN = (0.0315, 0.0, 0.0)

# URDF inertials: mass (kg), COM (m), full inertia (ixx, iyy, izz, ixy, ixz, iyz).
_PP = (
    0.04138,
    (0.0243772, -1.00263e-06, 0.000755901),
    (2.19643e-06, 6.82371e-06, 6.51207e-06, -5.66e-11, -3.54371e-07, 4.73e-11),
)
_MP = (
    0.02509,
    (0.015316, -0.00138561, 6.28e-08),
    (1.00375e-06, 2.2637e-06, 2.28516e-06, -7.00446e-08, 7.4e-12, -2.3e-12),
)


def _with_pad(inertial: tuple, pad_mass: float) -> tuple:
    """Lump an elastomer pad into a distal link: same COM, inertia scaled with the mass."""
    mass, com, full = inertial
    scale = (mass + pad_mass) / mass
    return (mass + pad_mass, com, tuple(v * scale for v in full))


_DP = _with_pad(
    (
        0.003002,
        (0.0127205, -0.00380991, -9.53e-07),
        (7.65598e-08, 9.99792e-08, 9.38245e-08, 2.47622e-08, 1.2e-11, -4.2e-12),
    ),
    0.0011,
)
_THUMB_MC = (
    0.116,
    (0.0385056, -0.0105846, -0.00991873),
    (1.65891e-05, 3.45657e-05, 3.70102e-05, -1.79455e-06, -4.03315e-07, 2.16989e-06),
)
_THUMB_PP = (
    0.04955,
    (0.0219483, -0.00015581, 0.00149446),
    (2.59665e-06, 4.6e-06, 4.33744e-06, 3.65e-09, -1.84385e-07, -3.3e-10),
)
_THUMB_DP = _with_pad(
    (
        0.003886,
        (0.0151804, -0.00463639, 8.35e-07),
        (1.32801e-07, 1.5797e-07, 1.50341e-07, 4.59297e-08, -3.8e-13, 3.5e-13),
    ),
    0.0021,
)
_PINKY_MC = (
    0.12541,
    (0.0107985, 0.00598801, 0.0335125),
    (2.44379e-05, 3.57429e-05, 2.16786e-05, 3.62784e-07, -8.00221e-07, 4.68085e-07),
)
PALM_INERTIAL = (
    0.72045,
    (-0.00162819, -0.00610534, 0.0404193),
    (0.000674245, 0.000526298, 0.000354144, -9.22298e-06, 5.25317e-06, 9.94281e-05),
)

# Collision primitives (m). Capsule radii follow spec section 8; lengths span each link's joint offsets.
_PP_RADIUS, _MP_RADIUS, _DP_RADIUS = 0.0095, 0.009, 0.0085
# The URDF fingertip frame lies this far along the distal link's x axis; the capsule ends there.
_FINGER_TIP_X, _THUMB_TIP_X = 0.0260, 0.0276
PALM_BOX = ((-0.002, -0.011, 0.046), (0.0125, 0.0315, 0.046))  # (centre, half-size) in the palm frame
_PINKY_MC_BOX = ((-0.001, 0.031, 0.050), (0.0115, 0.0105, 0.036))  # in the palm frame at CMC = 0


@dataclass(frozen=True)
class JointDrive:
    """One hand joint: URDF limits and effort, and the Isaac Gym drive (kp, kd, armature, friction)."""

    lower: float
    upper: float
    effort: float
    kp: float
    kd: float
    armature: float
    frictionloss: float

    def __post_init__(self) -> None:
        if not self.lower < self.upper:
            raise ConfigError(f"joint range [{self.lower}, {self.upper}] is empty")
        if min(self.effort, self.kp, self.kd, self.armature, self.frictionloss) < 0:
            raise ConfigError(f"drive gains must be >= 0: {self}")


# Per joint kind, from the URDF (limits, effort) and utils.populate_dof_properties (the rest).
_MCP_FE = JointDrive(-0.17453293, 1.5708, 1.864, 4.76, 0.20859232, 0.00265, 0.07456)
_MCP_AA = JointDrive(-0.03491, 0.03491, 1.864, 6.62, 0.24595532, 0.00265, 0.07456)
_PIP = JointDrive(0.0, 1.7453, 0.638, 0.9, 0.04243185, 0.0006, 0.01276)
_DIP = JointDrive(0.0, 1.3963, 0.189369, 0.9, 0.03504461, 0.00042, 0.00378738)
_THUMB = (
    JointDrive(-0.1745, 1.9199, 3.3, 6.95, 0.28676845, 0.0032, 0.132),  # CMC_FE
    JointDrive(-0.3491, 0.1309, 3.3, 13.2, 0.40845109, 0.0032, 0.132),  # CMC_AA ("restricted")
    JointDrive(-0.5236, 1.3963, 1.864, 4.76, 0.20394083, 0.00265, 0.07456),  # MCP_FE
    JointDrive(-0.3491, 0.3491, 1.864, 6.62, 0.24044435, 0.00265, 0.07456),  # MCP_AA
    JointDrive(0.0, 1.7453, 0.638, 0.9, 0.04190723, 0.0006, 0.01276),  # IP
)
_PINKY_CMC = JointDrive(0.0, 0.2618, 0.5285, 1.38, 0.02782345, 0.00012, 0.012)


@dataclass(frozen=True)
class HandJoint:
    """A hinge in a hand body: anchor and axis in that body's frame."""

    name: str
    anchor: np.ndarray
    axis: np.ndarray
    drive: JointDrive


@dataclass(frozen=True)
class HandLink:
    """One hand body below the palm, in kinematic-tree order.

    capsule: (from, to, radius) in the body frame, or None when `box` is given instead.
    """

    name: str
    parent: str
    frame: Frame
    joints: tuple[HandJoint, ...]
    inertial: tuple
    capsule: tuple | None = None
    box: tuple | None = None
    fingertip: bool = False

    def __post_init__(self) -> None:
        if (self.capsule is None) == (self.box is None):
            raise ConfigError(f"hand link {self.name} needs exactly one of capsule and box")


_Z = np.array([0.0, 0.0, 1.0])


def _one_joint(name: str, drive: JointDrive) -> tuple[HandJoint, ...]:
    return (HandJoint(name, np.zeros(3), _Z, drive),)


def _two_joints(first: str, d1: JointDrive, second: str, d2: JointDrive, inner: Frame) -> tuple[HandJoint, ...]:
    """Joints of a folded virtual link: `inner` is the virtual link -> body transform.

    The first hinge turns about the virtual link's z axis at its origin; seen from the body frame
    that is the axis R^T z through the point -R^T t of the inverse transform.
    """
    back = inner.inverse()
    return (
        HandJoint(first, back.pos, quat_rotate(back.quat, _Z), d1),
        HandJoint(second, np.zeros(3), _Z, d2),
    )


def _capsule(tip_x: float, radius: float) -> tuple:
    """A phalanx along +x from the joint to tip_x (the capsule's outer end)."""
    return ((0.0, 0.0, 0.0), (tip_x - radius, 0.0, 0.0), radius)


def _finger(finger: str, parent: str, mcp: Frame, *, joint_prefix: str) -> list[HandLink]:
    aa = Frame.urdf((0.0, 0.0, 0.0), _AA_RPY)
    pp_joints = _two_joints(f"{joint_prefix}_MCP_FE", _MCP_FE, f"{joint_prefix}_MCP_AA", _MCP_AA, aa)
    return [
        HandLink(f"left_{finger}_PP", parent, mcp @ aa, pp_joints, _PP, _capsule(_PIP_ORIGIN[0], _PP_RADIUS)),
        HandLink(
            f"left_{finger}_MP",
            f"left_{finger}_PP",
            Frame.urdf(_PIP_ORIGIN, _PIP_RPY),
            _one_joint(f"{joint_prefix}_PIP", _PIP),
            _MP,
            _capsule(_DIP_ORIGIN[0], _MP_RADIUS),
        ),
        HandLink(
            f"left_{finger}_DP",
            f"left_{finger}_MP",
            Frame.urdf(_DIP_ORIGIN),
            _one_joint(f"{joint_prefix}_DIP", _DIP),
            _DP,
            _capsule(_FINGER_TIP_X, _DP_RADIUS),
            fingertip=True,
        ),
    ]


def _thumb(palm: str) -> list[HandLink]:
    cmc = Frame.urdf((0.01, -0.026, 0.0212), (0.0, 0.0, -HALF_PI))
    cmc_aa = Frame.urdf((0.0, -0.005, 0.0), (HALF_PI, -0.25 * np.pi, 0.0))
    mcp = Frame.urdf((0.065, -0.006, -0.010392), (-0.5236, 0.0, 0.0))
    mcp_aa = Frame.urdf((0.0, 0.0, 0.0), _AA_RPY)
    ip = Frame.urdf((0.039, 0.0, 0.0), (-HALF_PI, 0.0, 0.0))
    names = [f"left_thumb_{j}" for j in ("CMC_FE", "CMC_AA", "MCP_FE", "MCP_AA", "IP")]
    # The metacarpal capsule runs from near the CMC joint towards the MCP joint origin.
    mc_capsule = ((0.012, -0.002, -0.002), tuple(mcp.pos - np.array([0.008, 0.0, 0.0])), 0.0105)
    return [
        HandLink(
            "left_thumb_MC",
            palm,
            cmc @ cmc_aa,
            _two_joints(names[0], _THUMB[0], names[1], _THUMB[1], cmc_aa),
            _THUMB_MC,
            mc_capsule,
        ),
        HandLink(
            "left_thumb_PP",
            "left_thumb_MC",
            mcp @ mcp_aa,
            _two_joints(names[2], _THUMB[2], names[3], _THUMB[3], mcp_aa),
            _THUMB_PP,
            _capsule(ip.pos[0], _PP_RADIUS),
        ),
        HandLink(
            "left_thumb_DP",
            "left_thumb_PP",
            ip,
            _one_joint(names[4], _THUMB[4]),
            _THUMB_DP,
            _capsule(_THUMB_TIP_X, _DP_RADIUS),
            fingertip=True,
        ),
    ]


def _pinky(palm: str) -> list[HandLink]:
    mc = Frame.urdf((0.01136, 0.0263, 0.0867), (-np.pi, 0.0, np.pi))
    mc_inv = mc.inverse()
    centre, half = _PINKY_MC_BOX
    # The box is axis-aligned in the palm; the MC frame is the palm frame with two axes flipped.
    box = (tuple(mc_inv.apply(centre)), half)
    mcp = Frame.urdf((0.00836, 0.0048, 0.0), (-HALF_PI, HALF_PI, 0.0))
    links = [HandLink("left_pinky_MC", palm, mc, _one_joint("left_pinky_CMC", _PINKY_CMC), _PINKY_MC, box=box)]
    return links + _finger("pinky", "left_pinky_MC", mcp, joint_prefix="left_pinky")


def hand_links(palm: str) -> list[HandLink]:
    """All hand bodies below `palm`, ordered so that joints come out in the canonical order."""
    links = _thumb(palm)
    for finger in FINGERS:
        mcp = Frame.urdf(_MCP_ORIGIN[finger], _MCP_RPY)
        links += _finger(finger, palm, mcp, joint_prefix=f"left_{finger}")
    return links + _pinky(palm)
