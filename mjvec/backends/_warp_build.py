"""Building the Warp backend: topology groups, one per-world mujoco_warp Model per group.

Only `mjvec.backends.warp` imports this module, after its install guard. Each USED variant is
compiled exactly once (streaming, as in `_cpu_build`); per group an `mjbatch.VariantPack` gives the
compiler-derived rows of every variant, and `build_model` turns the group's canonical model into a
mujoco_warp Model whose variant-dependent, writable and derived fields all have one row per world
BEFORE the first step (so no write ever meets a stale graph or forces a broadphase recompile).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from dataclasses import dataclass, field
from typing import Any

import mujoco
import mujoco_warp as mjw
import numpy as np
import torch
import warp as wp
from mujoco_warp._src import types as mjw_types
from mujoco_warp._src.io import _default_nconmax

from mjvec.backends import fields as F
from mjvec.backends._groups import compile_groups, geom_layout
from mjvec.backends.base import Scene
from mjvec.errors import ConfigError, allowed

log = logging.getLogger(__name__)

# Written by mujoco_warp's set_const_fixed / set_const_0 / set_const_spring. Each is per world, so
# a recompute writes every world's own row instead of broadcasting world 0's (backends.md).
DERIVED_FIELDS = (
    "body_subtreemass", "body_invweight0", "dof_invweight0", "actuator_acc0", "actuator_biasprm",
    "tendon_length0", "tendon_invweight0", "tendon_lengthspring", "eq_data", "cam_pos0",
    "cam_poscom0", "cam_mat0", "light_pos0", "light_poscom0", "light_dir0",
)
# Per-variant rows the VariantPack does not carry but each variant's compile derives on its own.
EXTRA_FIELDS = ("actuator_acc0", "tendon_length0", "tendon_invweight0")
# VariantPack rows that mujoco_warp cannot (geom_type/contype/conaffinity: equal within a group by
# `topology_key`) or need not (dof_M0, dof_length: unused by mujoco_warp) hold per world.
_SKIPPED_PACK_FIELDS = frozenset({"geom_type", "geom_contype", "geom_conaffinity", "dof_M0", "dof_length"})


@dataclass
class WarpGroup:
    """One topology group: its variants, its envs, and (once built) its mujoco_warp Model/Data.

    variants: sorted scene variant ids; pack row r is variants[r].
    env_ids: sorted local env ids in this group; world w of the group is env env_ids[w].
    rows: (len(env_ids),) pack row of each world.
    extras: per-variant rows (num variants, ...) of EXTRA_FIELDS and "meaninertia".
    geom_map: canonical geom slot -> this group's geom id, or -1 where the slot is absent.
    """

    key: tuple
    variants: list[int]
    env_ids: np.ndarray
    rows: np.ndarray
    pack: Any = None
    extras: dict[str, np.ndarray] = field(default_factory=dict)
    geom_map: np.ndarray | None = None
    m: Any = None
    d: Any = None

    @property
    def nworld(self) -> int:
        return int(self.env_ids.size)


def topology_key(model: mujoco.MjModel) -> tuple:
    """Variants share a mujoco_warp Model iff they agree on everything it cannot hold per world.

    That is the geom slots (count, names, types) and their collision filters and condim; the rest
    of the layout must agree anyway (VariantPack checks it).
    """
    names = tuple(model.geom(i).name for i in range(model.ngeom))
    per_slot = (model.geom_type, model.geom_contype, model.geom_conaffinity, model.geom_condim)
    return (model.ngeom, model.nbody, model.nq, names, *(a.tobytes() for a in per_slot))


def _snapshot_extras(model: mujoco.MjModel) -> dict[str, np.ndarray]:
    out = {name: np.array(getattr(model, name), copy=True) for name in EXTRA_FIELDS}
    out["meaninertia"] = np.array(model.stat.meaninertia)
    return out


def plan_groups(scene: Scene, *, progress: bool = True) -> list[WarpGroup]:
    """Compile each used variant once, group by `topology_key`, build one VariantPack per group."""
    out = []
    for group in compile_groups(scene, topology_key, _snapshot_extras, progress=progress):
        extras = {name: np.stack([e[name] for e in group.snapshots]) for name in group.snapshots[0]}
        out.append(WarpGroup(group.key, group.variants, group.env_ids, group.rows, group.pack, extras))
    return out


def canonical_layout(groups: list[WarpGroup]) -> mujoco.MjModel:
    """The canonical model (most geoms); sets each group's `geom_map` into its slots."""
    canonical, maps = geom_layout([g.pack.model for g in groups])
    for group, geom_map in zip(groups, maps, strict=True):
        group.geom_map = geom_map
    return canonical


@functools.cache
def per_world_fields() -> tuple[str, ...]:
    """Every mujoco_warp Model field this backend makes per world (present and batchable)."""
    batchable = {
        f.name for f in dataclasses.fields(mjw_types.Model)
        if getattr(f.type, "shape", ())[:1] == ("*",)
    }
    wanted = set(F.MODEL_FIELDS) | set(DERIVED_FIELDS) | {"geom_dataid"}
    wanted |= {"geom_size", "geom_rbound", "geom_aabb", "geom_pos", "geom_quat", "geom_rgba", "geom_matid"}
    wanted |= {"body_mass", "body_subtreemass", "body_inertia", "body_invweight0", "body_ipos", "body_iquat"}
    missing = sorted(set(F.MODEL_FIELDS) - batchable)
    if missing:
        raise ConfigError(f"this mujoco_warp cannot hold {missing} per world; pin mujoco-warp==3.11.0")
    return tuple(sorted(wanted & batchable))


def torch_view(array: Any, tail: tuple[int, ...]) -> Any:
    """Zero-copy torch view (nworld, *tail) of a per-world warp array (vec/mat types flattened)."""
    t = wp.to_torch(array)
    return t.reshape(t.shape[0], *tail)


def model_view(group: WarpGroup, name: str) -> Any:
    """Zero-copy torch view (nworld, *MjModel tail) of the group's per-world model field `name`.

    "gravity" is opt.gravity and "meaninertia" stat.meaninertia.
    """
    m = group.m
    if name == "gravity":
        return torch_view(m.opt.gravity, (3,))
    if name == "meaninertia":
        return torch_view(m.stat.meaninertia, ())
    array = getattr(m, name, None)
    if array is None or array.shape[0] != group.nworld or name not in per_world_fields():
        raise ConfigError(
            f"model field {name!r} is not per world on the warp backend; per-world fields are "
            f"{allowed(per_world_fields())} plus gravity and meaninertia"
        )
    return torch_view(array, np.asarray(getattr(group.pack.model, name)).shape)


def build_model(group: WarpGroup) -> Any:
    """The group's mujoco_warp Model with one row per world of every `per_world_fields` field.

    Rows are the pack's variant rows (world w gets variant row `group.rows[w]`), the per-variant
    extras (actuator_acc0, ..., stat.meaninertia), and gravity as an (nworld, 3) option array.
    Call inside `wp.ScopedDevice(device)`.
    """
    mjm = group.pack.model
    n = group.nworld
    try:
        m = mjw.put_model(mjm, batch_sizes={name: n for name in per_world_fields()})
    except (NotImplementedError, ValueError) as error:
        raise ConfigError(
            f"variants {group.variants[:8]} use a feature mujoco_warp does not support: {error}"
        ) from error
    rows = torch.as_tensor(group.rows, device=torch_view(m.body_mass, (mjm.nbody,)).device)
    for name, values in list(group.pack.fields.items()) + list(group.extras.items()):
        if name in _SKIPPED_PACK_FIELDS or name == "meaninertia":
            continue
        tail = np.asarray(getattr(mjm, name)).shape
        target = torch_view(getattr(m, name), tail)
        src = torch.as_tensor(np.array(values).reshape(len(values), *tail), dtype=target.dtype)  # a copy
        target[...] = src.to(target.device)[rows]
    m.stat.meaninertia = wp.array(group.extras["meaninertia"][group.rows].astype(np.float32), dtype=float)
    m.opt.gravity = wp.array(np.tile(np.asarray(mjm.opt.gravity, np.float32), (n, 1)), dtype=wp.vec3)
    # Overflow is detected per world by the backend and raised, not printf'd from kernels.
    m.opt.warn_overflow = False
    torch_to_warp(wp.get_device())
    return m


def torch_to_warp(device: Any) -> None:
    """Make warp's next launches see torch's pending writes (CUDA streams differ; CPU is in order)."""
    if device.is_cuda:
        torch.cuda.current_stream(torch.device(str(device))).synchronize()


def warp_to_torch(device: Any) -> None:
    """Make torch's next ops see warp's results."""
    if device.is_cuda:
        wp.synchronize_device(device)


def default_sizes(mjm: mujoco.MjModel, nconmax: int | None, njmax: int | None) -> tuple[int, int]:
    """(nconmax, njmax) per world: the given values, or defaults that fit a contact-rich grasp.

    nconmax defaults to mujoco_warp's heuristic (contacts are pooled across worlds, so it is an
    average). njmax is a hard per-world bound, so the default covers nconmax contacts at the largest
    condim plus every joint limit, dof friction and equality row.
    """
    ncon = _default_nconmax(mjm) if nconmax is None else nconmax
    if njmax is not None:
        return ncon, njmax
    condim = int(np.max(mjm.geom_condim, initial=1))
    rows_per_contact = condim if mjm.opt.cone == mujoco.mjtCone.mjCONE_ELLIPTIC else max(1, 2 * (condim - 1))
    bound = ncon * rows_per_contact + int(mjm.jnt_limited.sum()) + mjm.nv + 6 * mjm.neq + mjm.ntendon
    return ncon, int(bound)


def gather_rows(groups: list[WarpGroup], num_envs: int, per_group: list[np.ndarray], entity: str,
                canonical_value: np.ndarray) -> np.ndarray:
    """Assemble (num_envs, *tail) from per-group (nworld, *group_tail) arrays.

    Geom-indexed fields use the canonical slot layout; a slot absent from an env's variant keeps the
    canonical value (finite, and without effect in that env).
    """
    tail = canonical_value.shape
    out = np.empty((num_envs, *tail), per_group[0].dtype)
    for g, values in zip(groups, per_group, strict=True):
        if entity == "geom":
            out[g.env_ids] = canonical_value
            present = np.flatnonzero(g.geom_map >= 0)
            out[np.ix_(g.env_ids, present)] = values[:, g.geom_map[present]]
        else:
            out[g.env_ids] = values.reshape(values.shape[0], *tail)
    return out


def resolve_device(device: str) -> Any:
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
