"""What a backend allocates per env, estimated before it allocates anything.

`BackendMemory` itemises one env's share, split into host memory and memory on the backend's
device (none for the CPU backend; for the Warp backend on warp's "cpu" device the "device" is host
memory too). Each backend's estimator lives with it (`cpu_bytes_per_env` here, the Warp one in
`mjvec.backends.warp.memory`, which measures mujoco_warp's own allocations); the registry picks it
by name (`mjvec.backends.registry.estimate_backend_memory`).

The model passed is a compiled variant of the scene; every part is computed from its sizes, so a
scene whose variants differ in size is estimated from the largest the caller passes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import mujoco
import numpy as np

from mjvec.backends.fields import field_specs
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
