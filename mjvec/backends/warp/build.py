"""Building the Warp backend: which fields mujoco_warp holds per world, and one Model per variant group.

`WARP_PER_ENV` is what may differ between the variants of one group (`variants.make_groups`):

- every mujoco_warp `Model` array whose spec is batchable (leading '*': one row per world);
- 'opt.<name>' of every per-world `Option` field (MuJoCo's `opt.impratio` is mujoco_warp's
  `impratio_invsqrt`, 1/sqrt(impratio));
- every MjModel array or option that mujoco_warp neither holds nor reads while building its
  Model and Data (`bvh_aabb`, `dof_M0`, `geom_sameframe`, ...): a difference there cannot reach
  its kernels; and `dof_length`, which only its sleep code reads (`READ_ONLY_WHEN`). The reads
  are listed in `BUILD_READS` / `READ_NOT_HELD`, taken from mujoco-warp 4.0.0's `io.py`
  (tests/test_warp_engine.py rescans that source).

`build_model` turns a group's template into a mujoco_warp Model whose differing, writable and
set_const-derived fields, and the geom bounds and poses, have one row per world BEFORE the first
step (mujoco_warp specializes broadphase kernels on which geom arrays are per world), each row
its env's own compiled value in float32.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import operator
from dataclasses import dataclass, field
from typing import Any

import mujoco
import mujoco_warp as mjw
import numpy as np
import torch
import warp as wp
from mujoco_warp._src import types as mjw_types
from mujoco_warp._src.io import _default_nconmax, _default_njmax_nnz

from mjvec.backends import fields as backend_fields
from mjvec.backends.base import RecomputeLevel
from mjvec.backends.variants import VariantGroup, model_arrays, option_fields
from mjvec.errors import ConfigError, allowed


def _batchable(spec: Any) -> bool:
    return getattr(spec, "shape", ())[:1] == ("*",)


_MODEL_SPECS = {f.name: f.type for f in dataclasses.fields(mjw_types.Model)}
_OPTION_SPECS = {f.name: f.type for f in dataclasses.fields(mjw_types.Option)}
BATCHABLE = frozenset(name for name, spec in _MODEL_SPECS.items() if _batchable(spec))
# MjOption name -> mujoco_warp's per-world Option field.
OPTION_NAMES = {name: name for name, spec in _OPTION_SPECS.items() if _batchable(spec)} | {
    "impratio": "impratio_invsqrt"}

# Per-world fields that mujoco_warp's put_model / make_data ALSO read on the host, and what for:
# "state": they seed the initial Data only, which reset_data rewrites per world (static geom poses
#   excepted: the backend sets those itself, see geometry.StaticGeoms);
# "warning": a friction check that only warns; "sizing": njmax_nnz, sized for every dof/tendon here;
# "fluid": which bodies get fluid forces, only with fluid options on;
# "actuator": the Model flags has_efm_actuator / has_actuator_wrap, "this model may need that code
#   path": every world's own values may need only what the template's flags switch on (checked
#   for the variants and for every write, `actuator_flags`);
# "flag": a flag or address derived once per Model: equal in every variant of a group (checked).
BUILD_READS = {
    "qpos0": "state", "body_pos": "state", "body_quat": "state",
    "geom_friction": "warning", "pair_friction": "warning",
    "dof_frictionloss": "sizing", "tendon_frictionloss": "sizing",
    "body_mass": "fluid",
    "actuator_gainprm": "actuator", "actuator_biasprm": "actuator", "actuator_gear": "actuator",
    "actuator_damping": "flag", "actuator_dampingpoly": "flag", "tendon_damping": "flag",
    "tendon_dampingpoly": "flag", "tendon_stiffness": "flag", "tendon_stiffnesspoly": "flag",
    "eq_data": "flag", "jnt_axis": "flag", "opt.wind": "flag", "opt.density": "flag",
    "opt.viscosity": "flag",
}
# Held by mujoco_warp but read only by code that this model may switch off: per env, and a group
# whose variants differ in one while that code is on is refused (`check_group`).
# dof_length: read only by sleep.py (velocity norm of sleeping trees), i.e. with mjENBL_SLEEP.
READ_ONLY_WHEN = {"dof_length": int(mujoco.mjtEnableBit.mjENBL_SLEEP)}
# MjModel arrays and options mujoco_warp does not hold but reads while building (not per env).
READ_NOT_HELD = frozenset({
    "actuator_plugin", "body_plugin", "geom_plugin", "numeric_adr", "numeric_data", "plugin_attradr",
    "sensor_needstage", "sensor_plugin", "flex_internal", "opt.jacobian",
})


def _per_env() -> frozenset[str]:
    probe = mujoco.MjModel.from_xml_string("<mujoco/>")
    arrays = {n for n in model_arrays(probe) if n in BATCHABLE or n in READ_ONLY_WHEN
              or (n not in _MODEL_SPECS and n not in READ_NOT_HELD)}
    options = {n for n in option_fields(probe)
               if n[4:] in OPTION_NAMES or (n[4:] not in _OPTION_SPECS and n not in READ_NOT_HELD)}
    return frozenset(arrays | options)


WARP_PER_ENV = _per_env()

# Model fields mujoco_warp's set_const writes, per SetConstGroup (all per world here).
SET_CONST_OUTPUTS = {
    mjw.SetConstGroup.FIXED: ("body_subtreemass",),  # and geom bounds: restored, see views.GroupRuntime
    mjw.SetConstGroup.KIN0: ("tendon_length0", "eq_data", "cam_pos0", "cam_poscom0", "cam_mat0", "light_pos0",
                             "light_poscom0", "light_dir0"),
    mjw.SetConstGroup.INERT0: ("dof_invweight0", "body_invweight0", "tendon_invweight0", "actuator_acc0"),
}
GEOM_BOUNDS = ("geom_aabb", "geom_rbound", "geom_size")
ALL_SET_CONST_GROUPS = int(mjw.SetConstGroup.FIXED | mjw.SetConstGroup.KIN0 | mjw.SetConstGroup.INERT0)


def recompute_groups(model: mujoco.MjModel) -> dict[str, int]:
    """Per writable field, the SetConstGroup bits of mujoco_warp's set_const that a write of it needs.

    A field's `RecomputeLevel` (MuJoCo's table, `fields.recompute_level`) names every constant
    mj_setConst derives from it, mujoco_warp's included or not (BVHs, dof_length, geom_sameframe:
    mujoco_warp holds none it reads here). Which of the constants mujoco_warp holds
    (`SET_CONST_OUTPUTS`) a field really moves is found on `model`: the field perturbed, plain
    mj_setConst, the held outputs compared. Geom bounds are not among them: the backend refreshes
    them itself (geometry.refresh_geometry), in float64 with the compiler's formulas, so a geometry
    write costs no float32 set_const that would nudge every other constant of the world.
    """
    outputs = {name: bit for bit, names in SET_CONST_OUTPUTS.items() for name in names}
    reference = {name: np.array(getattr(model, name)) for name in outputs}
    groups = dict.fromkeys(backend_fields.OPTION_FIELDS, 0)  # mj_setConst reads no option (fields.OPTION_FIELDS)
    for name in backend_fields.WRITABLE_FIELDS:
        if backend_fields.recompute_level(name) == RecomputeLevel.NONE:
            groups[name] = 0
            continue
        probe = copy.copy(model)
        value = getattr(probe, name)
        # Every entry a write may change moves (mj_setConst refuses to move a "simple" body's COM).
        movable = (probe.body_simple == 0) if name == "body_ipos" else np.ones(len(value), bool)
        value[movable] = value[movable] * 1.1 + 0.01
        try:
            mujoco.mj_setConst(probe, mujoco.MjData(probe))
        except mujoco.FatalError:  # a perturbation this model refuses: recompute everything it could touch
            groups[name] = ALL_SET_CONST_GROUPS
            continue
        groups[name] = functools.reduce(operator.or_, (int(bit) for out, bit in outputs.items()
                                                       if not np.array_equal(getattr(probe, out), reference[out])), 0)
    return groups
# Geometry the backend keeps per world for broadphase and for geometry writes.
GEOMETRY_FIELDS = ("geom_size", "geom_pos", "geom_quat", "geom_rbound", "geom_aabb")


@dataclass
class Worlds:
    """One variant group's worlds on the device: the group plus its mujoco_warp Model and Data.

    per_world: Model fields with one row per world; options: MjOption names made per world.
    """

    group: VariantGroup
    per_world: tuple[str, ...] = ()
    options: tuple[str, ...] = ()
    m: Any = None
    d: Any = None
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def nworld(self) -> int:
        return self.group.num_envs

    @property
    def env_ids(self) -> np.ndarray:
        return self.group.env_ids

    @property
    def template(self) -> mujoco.MjModel:
        return self.group.template


def _has_fluid(model: mujoco.MjModel) -> bool:
    opt = model.opt
    return bool(np.any(opt.wind) or opt.density > 0 or opt.viscosity > 0)


def actuator_flags(model: mujoco.MjModel, gainprm: np.ndarray, biasprm: np.ndarray, gear: np.ndarray) -> np.ndarray:
    """(K, 2) bool: put_model's has_efm_actuator and has_actuator_wrap for K worlds whose actuators
    have these (K, nu, ...) parameters and `model`'s actuator types (mujoco-warp 4.0.0's io.py)."""
    Gain, Bias, Dyn, Trn = mujoco.mjtGain, mujoco.mjtBias, mujoco.mjtDyn, mujoco.mjtTrn
    gt, bt = model.actuator_gaintype[None], model.actuator_biastype[None]
    special = [Gain.mjGAIN_MUSCLE, Gain.mjGAIN_DCMOTOR, Gain.mjGAIN_SO3]
    efm = ((gt == Gain.mjGAIN_AFFINE) & ((gainprm[..., 1] != 0) | (gainprm[..., 2] != 0)))
    efm |= (bt == Bias.mjBIAS_AFFINE) & ((biasprm[..., 1] != 0) | (biasprm[..., 2] != 0))
    efm |= np.isin(gt, special) | np.isin(bt, [Bias.mjBIAS_MUSCLE, Bias.mjBIAS_DCMOTOR, Bias.mjBIAS_SO3])
    trn, trnid = model.actuator_trntype[None], model.actuator_trnid
    ball = np.isin(trn, [Trn.mjTRN_JOINT, Trn.mjTRN_JOINTINPARENT]) & (
        model.jnt_type[np.maximum(trnid[:, 0], 0)] == mujoco.mjtJoint.mjJNT_BALL)[None]
    # Not in place: `ball` is (1, nu) and broadcasts against the (K, nu) rows of K worlds.
    ball = ball & (gear[..., :3] != 0).any(-1)
    site = (trn == Trn.mjTRN_SITE) & (trnid[None, :, 1] >= 0) & (gear[..., :3] == 0).all(-1)
    site &= (gear[..., 3:6] != 0).any(-1)
    dyn = np.isin(model.actuator_dyntype, [Dyn.mjDYN_INTEGRATOR, Dyn.mjDYN_FILTER, Dyn.mjDYN_FILTEREXACT])[None]
    wrap = dyn & (gt == Gain.mjGAIN_FIXED) & (bt == Bias.mjBIAS_AFFINE) & (gainprm[..., 0] == -biasprm[..., 1])
    wrap &= ball | site
    return np.stack([efm.any(-1), wrap.any(-1)], axis=-1)


def template_actuator_flags(model: mujoco.MjModel) -> np.ndarray:
    """(2,) the actuator flags mujoco_warp derived from `model` itself."""
    return actuator_flags(model, model.actuator_gainprm[None], model.actuator_biasprm[None],
                          model.actuator_gear[None])[0]


def check_group(group: VariantGroup) -> None:
    """Refuse a group whose variants differ in a field mujoco_warp derives a per-Model flag from, or
    select their own meshes or heightfields (a per-env geom_dataid) where mujoco_warp cannot hold
    geom_dataid per world (mujoco-warp 4.0.0 does, and reads it per world in its collision, ray and
    bound kernels: tests/test_hfield_warp.py rescans them)."""
    if "geom_dataid" in group.fields and "geom_dataid" not in BATCHABLE:
        raise ConfigError(
            f"variants {group.variants[:8]} use different meshes or heightfields, selected per env through "
            "geom_dataid, but this mujoco_warp holds geom_dataid once per Model; pin mujoco-warp==4.0.0, give "
            "every variant the same assets, or use backend='cpu'"
        )
    flags = sorted(n for n in group.fields if BUILD_READS.get(n) == "flag")
    flags += sorted(f"{n} (read by mujoco_warp with {mujoco.mjtEnableBit(bit).name} on)"
                    for n, bit in READ_ONLY_WHEN.items() if n in group.fields and group.template.opt.enableflags & bit)
    if _has_fluid(group.template) and "body_mass" in group.fields:
        heavy = group.fields["body_mass"] >= mujoco.mjMINVAL
        if (heavy != heavy[0]).any():
            flags.append("body_mass (which bodies are massless, with fluid forces on)")
    m = group.template
    rows = {n: group.fields.get(n, getattr(m, n)[None]) for n in ("actuator_gainprm", "actuator_biasprm",
                                                                  "actuator_gear")}
    if (actuator_flags(m, *rows.values()) > template_actuator_flags(m)).any():
        flags.append("actuator_gainprm/biasprm/gear (which actuators need mujoco_warp's coupled-actuator paths)")
    if flags:
        raise ConfigError(
            f"variants {group.variants[:8]} differ in {flags}, from which mujoco_warp derives flags once per Model "
            "(not per world); give those fields the same value in every variant, or use backend='cpu'"
        )


def per_world_fields(group: VariantGroup) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(Model fields, MjOption names) that get one row per world in this group's Model."""
    wanted = {n for n in group.fields if n in BATCHABLE}
    wanted |= set(backend_fields.MODEL_FIELDS) | set(GEOMETRY_FIELDS)
    wanted |= {name for names in SET_CONST_OUTPUTS.values() for name in names}
    missing = sorted(set(backend_fields.MODEL_FIELDS) - BATCHABLE)
    if missing:
        raise ConfigError(f"this mujoco_warp cannot hold {missing} per world; pin mujoco-warp==4.0.0")
    options = {n[4:] for n in group.fields if n.startswith("opt.")} | set(backend_fields.OPTION_FIELDS)
    return tuple(sorted(wanted)), tuple(sorted(options))


def torch_view(array: Any, tail: tuple[int, ...]) -> Any:
    """Zero-copy torch view (nworld, *tail) of a per-world warp array (vec/mat types flattened)."""
    t = wp.to_torch(array)
    return t.reshape(t.shape[0], *tail)


def option_value(name: str, value: Any) -> np.ndarray:
    """MjOption `name`'s `value` as mujoco_warp stores it (impratio as 1/sqrt, tolerance clamped as
    put_model does)."""
    value = np.asarray(value, np.float64)
    if name == "impratio":
        return 1.0 / np.sqrt(np.maximum(value, mujoco.mjMINVAL))
    if name == "tolerance":
        return np.maximum(value, 1e-6)
    return value


def model_view(worlds: Worlds, name: str) -> Any:
    """Zero-copy torch view (nworld, *MjModel tail) of the worlds' per-world field `name`.

    `name` is a Model field or an MjOption name ('gravity'; 'impratio' is 1/sqrt(impratio)).
    """
    if name in worlds.options:
        return torch_view(getattr(worlds.m.opt, OPTION_NAMES[name]), np.shape(getattr(worlds.template.opt, name)))
    if name not in worlds.per_world:
        raise ConfigError(
            f"model field {name!r} is not per world on the warp backend; per-world fields are "
            f"{allowed(worlds.per_world)} and the options {allowed(worlds.options)}"
        )
    return torch_view(getattr(worlds.m, name), np.shape(getattr(worlds.template, name)))


def build_model(worlds: Worlds, *, deterministic: bool = False) -> Any:
    """The group's mujoco_warp Model, every `per_world` field and option with each env's own row.

    deterministic: mujoco_warp's ``opt.deterministic`` (``DeterminismType.ALL`` or ``NONE``). It is a
    host-side flag mujoco_warp reads when it picks kernels (factories with a `deterministic`
    argument, compiled with warp's RUN_TO_RUN module option) and launches them, so it must be set
    here, before any kernel is loaded or graph captured: a graph replays what was launched at capture.
    Call inside `wp.ScopedDevice(device)`.
    """
    group, n = worlds.group, worlds.nworld
    try:
        m = mjw.put_model(group.template, batch_sizes=dict.fromkeys(worlds.per_world, n))
    except (NotImplementedError, ValueError) as error:
        raise ConfigError(
            f"variants {group.variants[:8]} use a feature mujoco_warp does not support: {error}") from error
    worlds.m = m
    rows = torch.as_tensor(group.rows, device=wp.device_to_torch(wp.get_device()))
    for name in worlds.per_world:
        values = group.fields.get(name)
        target = model_view(worlds, name)
        if values is not None:
            src = torch.as_tensor(np.ascontiguousarray(values).reshape(len(values), *target.shape[1:]))
            target[...] = src.to(device=target.device, dtype=target.dtype)[rows]
    for name in worlds.options:
        per_variant = group.fields.get(f"opt.{name}")
        if per_variant is not None:
            value = option_value(name, per_variant)[group.rows]
        else:
            value = option_value(name, getattr(group.template.opt, name))
            value = np.broadcast_to(value, (n, *value.shape))
        current = getattr(m.opt, OPTION_NAMES[name])
        setattr(m.opt, OPTION_NAMES[name], wp.array(np.ascontiguousarray(value, np.float32), dtype=current.dtype))
    # Overflow is detected per world by the backend and raised, not printf'd from kernels.
    m.opt.warn_overflow = 0
    m.opt.deterministic = int(mjw.DeterminismType.ALL if deterministic else mjw.DeterminismType.NONE)
    return m


def default_sizes(mjm: mujoco.MjModel, nconmax: int | None, njmax: int | None) -> tuple[int, int, int]:
    """(nconmax, njmax, njmax_nnz) per world: the given values, or defaults that fit a contact-rich grasp.

    nconmax defaults to mujoco_warp's heuristic (contacts are pooled across worlds, so it is an
    average). njmax is a hard per-world bound, so the default covers nconmax contacts at the largest
    condim plus every joint limit, dof friction and equality row. njmax_nnz (sparse Jacobians) is
    mujoco_warp's estimate with friction loss counted on every dof and tendon, so a variant or a
    write that turns friction loss on stays within it.
    """
    ncon = _default_nconmax(mjm) if nconmax is None else nconmax
    if njmax is None:
        condim = int(np.max(mjm.geom_condim, initial=1))
        per_contact = condim if mjm.opt.cone == mujoco.mjtCone.mjCONE_ELLIPTIC else max(1, 2 * (condim - 1))
        njmax = ncon * per_contact + int(mjm.jnt_limited.sum()) + mjm.nv + 6 * mjm.neq + mjm.ntendon
    friction = copy.copy(mjm)
    friction.dof_frictionloss[:] = 1.0
    friction.tendon_frictionloss[:] = 1.0
    return ncon, int(njmax), int(_default_njmax_nnz(friction, ncon, int(njmax)))


def torch_to_warp(device: Any) -> None:
    """Make warp's next launches see torch's pending work: on CUDA, warp's stream waits for torch's on
    the device (the host does not wait); on the CPU everything runs in order."""
    if device.is_cuda:
        torch_stream = torch.cuda.current_stream(torch.device(str(device)))
        wp.get_stream(device).wait_stream(wp.stream_from_torch(torch_stream))


def warp_to_torch(device: Any) -> None:
    """Make torch's next ops see warp's results: torch's stream waits for warp's on the device."""
    if device.is_cuda:
        torch.cuda.current_stream(torch.device(str(device))).wait_stream(wp.stream_to_torch(wp.get_stream(device)))


def resolve_device(device: Any) -> Any:
    """The warp device named `device`, or ConfigError naming the available ones."""
    if not isinstance(device, str):
        raise ConfigError(f"device must be a warp device name such as 'cuda:0' or 'cpu', got {device!r}")
    try:
        resolved = wp.get_device(device)
    except (ValueError, RuntimeError) as error:
        available = [str(d) for d in wp.get_devices()]
        raise ConfigError(
            f"device={device!r} is not available to warp ({error}); available devices are {available}. "
            "Use device='cpu' to run mujoco_warp without a GPU."
        ) from error
    check_torch_device(resolved)
    return resolved


def check_torch_device(device: Any) -> None:
    """The state views are torch tensors on `device`: a CUDA device needs a CUDA build of torch."""
    if device.is_cuda and not torch.cuda.is_available():
        raise ConfigError(
            f"device={device.alias!r} needs a CUDA build of torch (the state views are torch tensors "
            f"there), but torch {torch.__version__} has no CUDA. Fix: install a CUDA build of torch, "
            "or use device='cpu'."
        )


@functools.cache
def buffer_overflows() -> int:
    """The OverflowType bits that mean a buffer was too small (not a solver iteration limit)."""
    T = mjw.OverflowType
    return int(T.NEFC | T.NJMAX_NNZ | T.BROADPHASE | T.NARROWPHASE | T.CCD | T.HFIELD | T.CONTACT_MATCH | T.NVMAX
               | T.TACTILE)


def env_model_values(worlds: Worlds, row: int, model: mujoco.MjModel) -> None:
    """Write world `row`'s model into `model` (a copy of the group template): every per-world field
    and option from the device (float32 -> float64), every other differing field from the group."""
    group = worlds.group
    for name, values in group.fields.items():
        own = values[group.rows[row]]
        if name.startswith("opt."):
            if name[4:] not in worlds.options:
                setattr(model.opt, name[4:], own)
        elif name not in worlds.per_world:
            getattr(model, name)[: len(own)] = own  # BVH rows: the bodies' nodes come first
    for name in worlds.per_world:
        getattr(model, name)[...] = model_view(worlds, name)[row].detach().cpu().numpy().reshape(
            np.shape(getattr(model, name)))
    for name in worlds.options:
        if name == "tolerance":  # stored clamped as put_model does: the group has the compiled value
            if f"opt.{name}" in group.fields:
                setattr(model.opt, name, group.fields[f"opt.{name}"][group.rows[row]])
            continue
        value = model_view(worlds, name)[row].detach().cpu().numpy().astype(np.float64)
        setattr(model.opt, name, 1.0 / (value * value) if name == "impratio" else value)
