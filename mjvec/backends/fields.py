"""The table of model fields a backend may declare writable, with their recompute levels.

Both backends derive their `Capabilities.fields` from this table (minus what their engine cannot
do), so a randomization term means the same thing on either. The recompute level says which
derived constants MuJoCo's `mj_setConst` must refresh after a write:

- mass distribution (`body_subtreemass`) -> SET_CONST_FIXED
- quantities computed at qpos0 (`body_invweight0`, `dof_invweight0`, `dof_M0`,
  `actuator_acc0`, `actuator_length0`) -> SET_CONST_0
"""

from __future__ import annotations

import mujoco
import numpy as np

from mjvec.backends.base import FieldSpec, RecomputeLevel, entity_of_field

_R = RecomputeLevel

# Model arrays: name -> recompute level.
MODEL_FIELDS: dict[str, RecomputeLevel] = {
    "body_mass": _R.SET_CONST,
    "body_inertia": _R.SET_CONST_0,
    "body_ipos": _R.SET_CONST_0,
    "body_pos": _R.SET_CONST_0,
    "geom_friction": _R.NONE,
    # Moving or resizing a geom changes no mj_setConst constant (mass stays as compiled); the
    # backend refreshes geom_rbound/geom_aabb itself and checks the collision BVH.
    "geom_size": _R.NONE,
    "geom_pos": _R.NONE,
    "geom_solref": _R.NONE,
    "geom_solimp": _R.NONE,
    "dof_damping": _R.NONE,
    "dof_armature": _R.SET_CONST_0,
    "dof_frictionloss": _R.NONE,
    "jnt_stiffness": _R.NONE,
    "actuator_gainprm": _R.NONE,
    "actuator_biasprm": _R.NONE,
    "actuator_gear": _R.SET_CONST_0,
    "actuator_forcerange": _R.NONE,
    "actuator_ctrlrange": _R.NONE,
}

# mjOption fields, per env.
OPTION_FIELDS: dict[str, RecomputeLevel] = {
    "gravity": _R.NONE,
}


def field_specs(model: mujoco.MjModel, dtype: np.dtype, exclude: frozenset[str] = frozenset()) -> dict:
    """FieldSpecs of every table field present in `model`, stored as `dtype`."""
    specs: dict[str, FieldSpec] = {}
    for name, level in MODEL_FIELDS.items():
        if name in exclude:
            continue
        shape = tuple(np.asarray(getattr(model, name)).shape)
        specs[name] = FieldSpec(name, shape, np.dtype(dtype), level, entity_of_field(name))
    for name, level in OPTION_FIELDS.items():
        if name in exclude:
            continue
        shape = tuple(np.asarray(getattr(model.opt, name)).shape)
        specs[name] = FieldSpec(name, shape, np.dtype(dtype), level, "option")
    return specs


def model_value(model: mujoco.MjModel, name: str) -> np.ndarray:
    """The template value of a table field (model array or option)."""
    if name in OPTION_FIELDS:
        return np.asarray(getattr(model.opt, name))
    return np.asarray(getattr(model, name))
