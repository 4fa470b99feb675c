"""CubeRotate-v0's randomization preset: MuJoCo Playground's LeapCubeRotateZAxis randomization."""

from __future__ import annotations

from gymnasium.vector import VectorEnv

from mjvec.randomization import DomainRandomization, EventTerm, ObservationNoise

# MuJoCo Playground's LeapCubeRotateZAxis randomization, mapped onto this hand and drawn at every
# reset: fingertip friction U(0.5, 1.0); cube mass x U(0.8, 1.2) (inertia scaled with it) and its
# centre of mass moved by U(-5, 5) mm per axis; hand joint friction loss x U(0.5, 2.0), armature
# x U(1.0, 1.05), link masses x U(0.9, 1.1); drive stiffness and damping x U(0.8, 1.2) (this hand's
# damping is its position actuators' kv). Playground's qpos0 jitter is left out (the "qpos0" EventTerm
# kind came later; adding it here would change this preset's trajectories).
PAPER_TERMS = (
    EventTerm("geom_friction", 0.5, 1.0, targets=("left_.*_DP_collision",), operation="abs",
              name="fingertip_friction"),
    EventTerm("body_mass", 0.8, 1.2, targets=("cube",), name="cube_mass"),
    EventTerm("body_com", -0.005, 0.005, targets=("cube",), operation="add", name="cube_com"),
    EventTerm("dof_frictionloss", 0.5, 2.0, targets=("left_.*",), name="hand_frictionloss"),
    EventTerm("dof_armature", 1.0, 1.05, targets=("left_.*",), name="hand_armature"),
    EventTerm("body_mass", 0.9, 1.1, targets=("left_.*",), name="hand_mass"),
    EventTerm("actuator_kp", 0.8, 1.2, targets=(".*_act",), name="hand_kp"),
    EventTerm("actuator_kd", 0.8, 1.2, targets=(".*_act",), name="hand_kd"),
)
# Playground adds U(-0.05, 0.05) rad to the observed joint angles; this is the Gaussian of the same spread.
JOINT_POS_NOISE_STD = 0.03


def paper(env: VectorEnv) -> VectorEnv:
    """CubeRotate-v0's preset: Playground's model randomization (`PAPER_TERMS`) and joint-angle noise."""
    return DomainRandomization(ObservationNoise(env, "joint_pos", JOINT_POS_NOISE_STD), PAPER_TERMS)
