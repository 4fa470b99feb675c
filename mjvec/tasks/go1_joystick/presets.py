"""The Go1 joystick's randomization preset "paper": MuJoCo Playground's ``go1/randomize.py``
(``domain_randomize``) as `EventTerm`s, drawn once per env at the first reset (Playground draws its
per-env models once, before training):

- floor friction (sliding) U(0.4, 1.0);
- leg joints' friction loss x U(0.9, 1.1) and armature x U(1.0, 1.05);
- the torso's centre of mass + U(-0.05, 0.05) m per axis;
- every body's mass x U(0.9, 1.1) (inertia left as compiled, as Playground's), then the torso's
  + U(-1, 1) kg on top (`EventTerm.relative_to` "previous");
- the leg joints' qpos0 (their reference angles, where MuJoCo places each hinge at q - qpos0)
  + U(-0.05, 0.05) rad.

Every field is written (none is refused). One difference: mjvec's backends recompute the derived
constants a write makes stale (subtree masses, the qpos0-dependent invweight0, dof_M0, ...) as
MuJoCo's compiler would (the oracle is a direct MjModel edit + mj_setConst); Playground's vmapped
model edit keeps the template's (docs/go1_joystick.md).
"""

from __future__ import annotations

from gymnasium.vector import VectorEnv

from mjvec.randomization import DomainRandomization, EventTerm
from mjvec.tasks.go1_joystick.scene import FLOOR_GEOM, ROOT_BODY

__all__ = ["PAPER_TERMS", "paper"]

LEG_JOINTS = (r"(FR|FL|RR|RL)_(hip|thigh|calf)_joint",)
BODIES = (ROOT_BODY, r"(FR|FL|RR|RL)_(hip|thigh|calf)")  # every body with mass (the world has none)

PAPER_TERMS = (
    EventTerm("geom_friction", 0.4, 1.0, targets=(FLOOR_GEOM,), operation="abs", mode="startup",
              name="floor_friction"),
    EventTerm("dof_frictionloss", 0.9, 1.1, targets=LEG_JOINTS, mode="startup", name="frictionloss"),
    EventTerm("dof_armature", 1.0, 1.05, targets=LEG_JOINTS, mode="startup", name="armature"),
    EventTerm("body_com", -0.05, 0.05, targets=(ROOT_BODY,), operation="add", mode="startup", name="torso_com"),
    EventTerm("body_mass", 0.9, 1.1, targets=BODIES, mode="startup", recompute_inertia=False, name="link_masses"),
    EventTerm("body_mass", -1.0, 1.0, targets=(ROOT_BODY,), operation="add", mode="startup", recompute_inertia=False,
              relative_to="previous", name="torso_mass"),
    EventTerm("qpos0", -0.05, 0.05, targets=LEG_JOINTS, operation="add", mode="startup", name="qpos0"),
)


def paper(env: VectorEnv) -> VectorEnv:
    """Wrap `env` with Playground's Go1 randomization (see the module docstring)."""
    return DomainRandomization(env, PAPER_TERMS)
