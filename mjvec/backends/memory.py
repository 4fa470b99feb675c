"""What a backend allocates per env, estimated before it allocates anything.

`BackendMemory` itemises one env's share, split into host memory and memory on the backend's
device (none for the CPU backend; for the Warp backend on warp's "cpu" device the "device" is host
memory too). Each backend's estimator lives with it (`cpu_bytes_per_env` here, the Warp one in
`mjvec.backends.warp.memory`, which measures mujoco_warp's own allocations); the registry picks it
by name (`mjvec.backends.registry.estimate_backend_memory`).

The model passed is a compiled variant of the scene; every part is computed from its sizes. A scene
whose variants differ in size is estimated once per `size_class` among its variants, and the largest
taken item by item (`mjvec.envs.memory.VariantMemoryCheck`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import mujoco
import numpy as np

from mjvec.backends.fields import field_specs
from mjvec.backends.variants import layout_sizes
from mjvec.errors import ConfigError

# MjData fields every backend binds for the env base (state and inputs), besides what a task binds.
BACKEND_BOUND_FIELDS = ("qpos", "qvel", "ctrl", "xfrc_applied", "time", "warning")
# The backend's per-group rows plus the env-order copy it gathers them into (several groups).
BOUND_COPIES = 2
# The compiled defaults it reports plus the engine's per-simulation rows of differing fields.
MODEL_FIELD_COPIES = 2
_DOUBLE = np.dtype(np.float64).itemsize


@dataclass(frozen=True)
class BackendMemory:
    """Per-env bytes a backend allocates: `host` and `device` items; `device_name` where the device
    items live (None: no device; a warp "cpu" device is host memory)."""

    host: Mapping[str, int]
    device: Mapping[str, int] = field(default_factory=dict)
    device_name: str | None = None


def bound_field_bytes(model: mujoco.MjModel, names: Iterable[str], itemsize: int | None = None) -> int:
    """Bytes of one env's row of each MjData field in `names` (its dtype, or `itemsize` bytes per value)."""
    data = mujoco.MjData(model)
    total = 0
    for name in dict.fromkeys(names):
        try:
            value = np.asarray(getattr(data, name))
        except AttributeError as error:
            raise ConfigError(f"{name!r} is not an MjData field; it cannot be bound") from error
        total += value.nbytes if itemsize is None else value.size * itemsize
    return total


def state_bytes(model: mujoco.MjModel) -> int:
    """One integration state row (what a backend keeps of each simulation between calls)."""
    return int(mujoco.mj_stateSize(model, mujoco.mjtState.mjSTATE_INTEGRATION)) * _DOUBLE


def writable_field_values(model: mujoco.MjModel) -> int:
    """How many values one env holds of every writable model field."""
    return sum(int(np.prod(spec.shape, dtype=np.int64)) for spec in field_specs(model, np.float64).values())


def cpu_bytes_per_env(model: mujoco.MjModel, bound_fields: Iterable[str] = ()) -> BackendMemory:
    """The CPU backend's per-env host bytes: its state row, the bound fields (the group's rows and
    the env-order copy), and the writable model fields (defaults and the engine's per-sim rows)."""
    return BackendMemory(host={
        "state": state_bytes(model),
        "bound_fields": BOUND_COPIES * bound_field_bytes(model, (*BACKEND_BOUND_FIELDS, *bound_fields)),
        "model_fields": MODEL_FIELD_COPIES * writable_field_values(model) * _DOUBLE,
    })


def size_class(model: mujoco.MjModel) -> bytes:
    """A digest of what a backend's per-env estimate reads from a compiled variant: every size of
    its layout (`variants.layout_sizes`: the assets' sizes left out, they are shared by a group, not
    per env) and the model values mujoco_warp's default buffer sizes follow (geom types and
    condims, joint limits, the friction cone). Variants of one class have one per-env estimate;
    what an asset's size adds to mujoco_warp's contact scratch is left to its ALLOCATOR_MARGIN."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(str(layout_sizes(model)).encode())
    for values in (model.geom_type, model.geom_condim, model.jnt_limited, np.array([int(model.opt.cone)])):
        digest.update(np.ascontiguousarray(values, np.int64).tobytes())
    return digest.digest()

