"""LeapCubeReorient's randomization preset "paper": MuJoCo Playground's ``domain_randomize`` of
``leap_hand/reorient.py`` as `EventTerm`s, drawn once per env at the first reset (Playground draws
its per-env models once, before training):

- the fingertip geoms' friction (sliding) U(0.5, 1.0);
- the cube's centre of mass + U(-5e-3, 5e-3) m per axis;
- the hand joints' qpos0 + U(-0.05, 0.05) rad;
- the hand joints' friction loss x U(0.5, 2.0), armature x U(1.0, 1.05), damping x U(0.8, 1.2);
- the hand links' masses x U(0.9, 1.1) (inertia left as compiled, as Playground's);
- the actuators' kp x U(0.8, 1.2) (gainprm[0] and biasprm[1] = -kp together);
- the cube's principal inertia x U(0.8, 1.2), its mass left as compiled (Playground's "Scale cube
  mass" scales body_inertia alone; the `EventTerm` kind "body_inertia").

Every field is written (none is refused). One difference, stated in docs/leap_cube_reorient.md:
Playground draws ONE friction for the four fingertips, mjvec one per fingertip (the same marginal
distribution, no correlation). Like the Go1 preset, mjvec's backends recompute the derived
constants a write makes stale, where Playground's vmapped model edit keeps the template's.
"""

from __future__ import annotations

from gymnasium.vector import VectorEnv

from mjvec.errors import ConfigError
from mjvec.randomization import DomainRandomization, EventTerm
from mjvec.tasks.leap_cube_reorient.scene import CUBE_BODY, FINGERTIPS, HAND_BODIES, HAND_JOINTS

__all__ = ["PAPER_TERMS", "paper"]

PAPER_TERMS = (
    EventTerm("geom_friction", 0.5, 1.0, targets=FINGERTIPS, operation="abs", mode="startup",
              name="fingertip_friction"),
    EventTerm("body_inertia", 0.8, 1.2, targets=(CUBE_BODY,), mode="startup", name="cube_inertia"),
    EventTerm("body_com", -5e-3, 5e-3, targets=(CUBE_BODY,), operation="add", mode="startup", name="cube_com"),
    EventTerm("qpos0", -0.05, 0.05, targets=HAND_JOINTS, operation="add", mode="startup", name="qpos0"),
    EventTerm("dof_frictionloss", 0.5, 2.0, targets=HAND_JOINTS, mode="startup", name="frictionloss"),
    EventTerm("dof_armature", 1.0, 1.05, targets=HAND_JOINTS, mode="startup", name="armature"),
    EventTerm("body_mass", 0.9, 1.1, targets=HAND_BODIES, mode="startup", recompute_inertia=False,
              name="link_masses"),
    EventTerm("actuator_kp", 0.8, 1.2, targets=(r".*_act",), mode="startup", name="kp"),
    EventTerm("dof_damping", 0.8, 1.2, targets=HAND_JOINTS, mode="startup", name="damping"),
)


def paper(env: VectorEnv) -> VectorEnv:
    """Wrap `env` with Playground's LeapCubeReorient randomization (see the module docstring).
    Raises ConfigError when the env's scene compiled the cube as a "simple" body, whose centre of
    mass MuJoCo does not let move (``randomization="paper"`` builds the scene that allows it)."""
    model = env.unwrapped.backend.model
    if model.body_simple[model.body(CUBE_BODY).id]:
        raise ConfigError(
            "the paper preset moves the cube's centre of mass, but this env's scene compiled the cube as a 'simple' "
            "body (Playground's scene as it is); make the env with randomization='paper', which compiles it "
            "non-simple, or build the scene with scene_spec(config, cube_com_writable=True)"
        )
    return DomainRandomization(env, PAPER_TERMS)
