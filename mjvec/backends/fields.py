"""The model fields a backend may declare writable, and the recompute each write needs.

Both backends derive their `Capabilities.fields` from this table (minus what their engine cannot
do), so a randomization term means the same thing on either. Which derived constants a write makes
stale is not written here by hand: it is read from MuJoCo's own description of `mj_setConst`
(`MjModel._setconst_fields`: for each model array and each of mj_setConst's computation groups,
fixed / kin0 / inert0 / spring, whether the group reads or writes it). A write of a field makes
stale every group that reads it, and then every later group that reads what a stale group writes:

- a stale "fixed" group (mass distribution, geom bounds and frames, body BVHs) -> SET_CONST_FIXED
- a stale kin0 / inert0 / spring group (constants computed at qpos0: invweight0s, dof_M0,
  dof_length, actuator_acc0, ...) -> SET_CONST_0

So moving or resizing a geom recomputes its bounds, its body's BVH and its `geom_sameframe` as the
compiler does, and a field mj_setConst never reads (friction, damping, gains) needs nothing.
"""

from __future__ import annotations

import functools

import mujoco
import numpy as np

from mjvec.backends.base import FieldSpec, RecomputeLevel, entity_of_field

_R = RecomputeLevel
_READS, _WRITES = 1, 2  # the flags of MjModel._setconst_fields

# Model arrays a backend may declare writable per env: the physics...
PHYSICS_FIELDS = (
    "body_mass", "body_inertia", "body_ipos", "body_pos",
    "geom_friction", "geom_size", "geom_pos", "geom_solref", "geom_solimp",
    "dof_damping", "dof_armature", "dof_frictionloss", "jnt_stiffness",
    "actuator_gainprm", "actuator_biasprm", "actuator_gear", "actuator_forcerange", "actuator_ctrlrange",
    # The joints' reference configuration: hinges and slides are placed at qpos - qpos0 (so moving it
    # moves each joint's zero, a calibration offset); the constants computed at qpos0 follow it.
    "qpos0",
)
# ...and what cameras see: camera poses and fields of view (a camera rangefinder's depth reads
# them) and the visual fields mujoco-warp's batch renderer reads per world (colours, materials,
# lights). mj_setConst derives the cameras' and lights' reference frames (cam_pos0, light_dir0,
# ...) from their poses, so those writes recompute as any other. Material reflectance and light
# attenuation are left out: neither engine's image path reads them per env.
VISUAL_FIELDS = (
    "cam_pos", "cam_quat", "cam_fovy",
    "geom_rgba", "mat_rgba", "mat_specular", "mat_shininess", "mat_emission",
    "light_pos", "light_dir", "light_diffuse", "light_ambient", "light_specular",
)
WRITABLE_FIELDS = PHYSICS_FIELDS + VISUAL_FIELDS
# mjOption fields, per env. mj_setConst reads none of them (tests/test_fields.py checks each).
OPTION_FIELDS = ("gravity",)


def stale_groups(name: str) -> tuple[bool, ...]:
    """Per mj_setConst group (`MjModel._setconst_groups`), whether a write of model array `name`
    makes its outputs stale: it reads `name`, or reads an output of an earlier stale group."""
    table = mujoco.MjModel._setconst_fields
    ngroup = len(mujoco.MjModel._setconst_groups)
    stale = [bool(table.get(name, (0,) * ngroup)[k] & _READS) for k in range(ngroup)]
    for k in range(ngroup):
        if not stale[k]:
            continue
        written = [f for f, flags in table.items() if flags[k] & _WRITES]
        for later in range(k + 1, ngroup):
            stale[later] = stale[later] or any(table[f][later] & _READS for f in written)
    return tuple(stale)


@functools.cache
def recompute_level(name: str) -> RecomputeLevel:
    """The `RecomputeLevel` a write of `name` needs (NONE for an option or a field mj_setConst never reads)."""
    if name in OPTION_FIELDS:
        return _R.NONE
    fixed, *at_qpos0 = stale_groups(name)
    return (_R.SET_CONST_FIXED if fixed else _R.NONE) | (_R.SET_CONST_0 if any(at_qpos0) else _R.NONE)


def setconst_outputs() -> tuple[str, ...]:
    """Every model array mj_setConst writes (in any group)."""
    return tuple(mujoco.MjModel._setconst_outputs)


# name -> recompute level, for every writable model array and option.
MODEL_FIELDS: dict[str, RecomputeLevel] = {name: recompute_level(name) for name in WRITABLE_FIELDS}


def field_specs(model: mujoco.MjModel, dtype: np.dtype, exclude: frozenset[str] = frozenset()) -> dict:
    """FieldSpecs of every table field present in `model`, stored as `dtype`."""
    specs: dict[str, FieldSpec] = {}
    for name in WRITABLE_FIELDS:
        if name in exclude:
            continue
        shape = tuple(np.asarray(getattr(model, name)).shape)
        specs[name] = FieldSpec(name, shape, np.dtype(dtype), recompute_level(name), entity_of_field(name))
    for name in OPTION_FIELDS:
        if name in exclude:
            continue
        shape = tuple(np.asarray(getattr(model.opt, name)).shape)
        specs[name] = FieldSpec(name, shape, np.dtype(dtype), recompute_level(name), "option")
    return specs


def model_value(model: mujoco.MjModel, name: str) -> np.ndarray:
    """The template value of a table field (model array or option)."""
    if name in OPTION_FIELDS:
        return np.asarray(getattr(model.opt, name))
    return np.asarray(getattr(model, name))
