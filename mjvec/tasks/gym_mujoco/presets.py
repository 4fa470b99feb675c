"""``randomization="locomotion"``: the dynamics randomization locomotion papers use, for each task.

Drawn per env at every reset (model-field `EventTerm`s through `DomainRandomization`, one batch of
writes and one mj_setConst per reset), relative to each env's compiled values:

- every body's mass (inertia scaled with it) x U(0.8, 1.2): Tan et al. 2018, "Sim-to-Real:
  Learning Agile Locomotion For Quadruped Robots" (mass 80-120%), and Peng et al. 2020, "Learning
  Agile Robotic Locomotion Skills by Imitating Animals" (the same);
- every geom's sliding friction x U(0.5, 1.25): Tan et al. 2018 (contact friction 0.5-1.25, there
  absolute; here a scale of each model's own coefficient, since the five models' differ);
- joint damping x U(0.4, 1.6): Rajeswaran et al. 2017, "EPOpt" (Hopper: damping in [1, 4] around 2.5);
- joint armature x U(0.5, 1.5): Rajeswaran et al. 2017 (Hopper: armature in [0.5, 1.5] around 1);
- motor gains x U(0.8, 1.2): Tan et al. 2018 and Peng et al. 2020 (motor strength 80-120%);
- gravity + U(-0.3, 0.3) m/s^2 per axis: no paper standard; a small tilt of the gravity vector
  (at most about 2.5 degrees).

MuJoCo takes a contact's friction as the larger of its two geoms', so every geom (the floor
included) is scaled by the same per-env factor: the contact friction scales with it.
"""

from __future__ import annotations

import re

from gymnasium.vector import VectorEnv

from mjvec.randomization import DomainRandomization, EventTerm

__all__ = ["LOCOMOTION_RANGES", "locomotion", "locomotion_terms"]

# kind -> (low, high, operation); see the module docstring for the sources.
LOCOMOTION_RANGES = {
    "body_mass": (0.8, 1.2, "scale"),
    "geom_friction": (0.5, 1.25, "scale"),
    "dof_damping": (0.4, 1.6, "scale"),
    "dof_armature": (0.5, 1.5, "scale"),
    "actuator_kp": (0.8, 1.2, "scale"),
    "gravity": (-0.3, 0.3, "add"),
}


def _names(model: object, kind: str, count: int, first: int = 0) -> tuple[str, ...]:
    names = [getattr(model, kind)(i).name for i in range(first, count)]
    return tuple(re.escape(n) for n in names if n)


def locomotion_terms(model: object) -> tuple[EventTerm, ...]:
    """The preset's terms for `model` (the env's canonical compiled model): every massive body,
    geom, joint and actuator by name."""
    targets = {
        "body_mass": _names(model, "body", model.nbody, first=1),  # the world body has no mass
        "geom_friction": _names(model, "geom", model.ngeom),
        "dof_damping": _names(model, "joint", model.njnt),
        "dof_armature": _names(model, "joint", model.njnt),
        "actuator_kp": _names(model, "actuator", model.nu),
        "gravity": (),
    }
    return tuple(EventTerm(kind, low, high, targets=targets[kind], operation=op, name=f"locomotion_{kind}")
                 for kind, (low, high, op) in LOCOMOTION_RANGES.items())


def locomotion(env: VectorEnv) -> VectorEnv:
    """The ``"locomotion"`` preset of every task of the suite (see the module docstring)."""
    return DomainRandomization(env, locomotion_terms(env.unwrapped.backend.model))
