"""What the Warp backend allocates per env (world), estimated before it builds anything.

mujoco_warp allocates one Data per group and one Model with per-world rows; their per-world bytes
are MEASURED here, not modelled: the model's Data and Model (with the fields the backend holds per
world) are built for one and for two worlds on the target device, and the difference of their
arrays' sizes is one world's share (contacts and constraint rows included, at the sizes the backend
would use, `build.default_sizes`). On top of that the backend keeps, per world: the pre-step
backup of the state it restores failed worlds from, and three float32 copies of each bound field
(the group's rows, the env-order views of a multi-group scene, and the step's snapshot of the
outputs). What that leaves out (torch's and warp's allocator pools and rounding, the task layer's
tensors, host views of a numpy-only task, the copies a recompute keeps) is covered by
`ALLOCATOR_MARGIN`, set from measurements on warp's cpu device (RSS growth per env between 64 and
1,024 envs, reset and 3 steps, paper presets; tests/test_memory.py): with it the estimate is 1.37x
(SimToolReal-v0) and 1.17x (CubeRotate-v0) the measured growth; before it, CubeRotate-v0 grew
1.27x the itemised bytes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

import mujoco
import mujoco_warp as mjw
import numpy as np
import warp as wp

from mjvec.backends import fields as backend_fields
from mjvec.backends.memory import BACKEND_BOUND_FIELDS, BackendMemory, bound_field_bytes, writable_field_values
from mjvec.backends.warp import build as warp_build
from mjvec.backends.warp.cache import check_kernel_cache, kernel_cache_errors
from mjvec.errors import ConfigError

ALLOCATOR_MARGIN = 2.0
VIEW_COPIES = 3
_FLOAT = np.dtype(np.float32).itemsize
_BACKUP_FIELDS = ("qpos", "qvel", "act", "qacc_warmstart", "time")


def _array_bytes(obj: Any, seen: set[int] | None = None) -> int:
    """Bytes of every warp array reachable from a mujoco_warp Model or Data (its nested dataclasses)."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return 0
    seen.add(id(obj))
    if isinstance(obj, wp.array):
        return int(obj.capacity)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return sum(_array_bytes(getattr(obj, f.name), seen) for f in dataclasses.fields(obj))
    return 0


def _held_per_world(model: mujoco.MjModel) -> dict[str, int]:
    wanted = set(backend_fields.WRITABLE_FIELDS) | set(warp_build.GEOMETRY_FIELDS)
    wanted |= {name for names in warp_build.SET_CONST_OUTPUTS.values() for name in names}
    return {name: 0 for name in sorted(wanted) if name in warp_build.BATCHABLE}


def world_bytes(model: mujoco.MjModel, device: str, nconmax: int | None = None,
                njmax: int | None = None) -> tuple[int, int]:
    """(Data bytes, Model bytes) mujoco_warp allocates per world for `model` on `device`."""
    ncon, nj, nnz = warp_build.default_sizes(model, nconmax, njmax)
    sizes = []
    with wp.ScopedDevice(warp_build.resolve_device(device)):
        for nworld in (1, 2):
            try:
                warp_model = mjw.put_model(model, batch_sizes=dict.fromkeys(_held_per_world(model), nworld))
                data = mjw.make_data(model, nworld=nworld, nconmax=ncon, njmax=nj, njmax_nnz=nnz)
            except (NotImplementedError, ValueError) as error:
                raise ConfigError(f"this scene uses a feature mujoco_warp does not support: {error}") from error
            sizes.append((_array_bytes(data), _array_bytes(warp_model)))
            del data, warp_model
    (d1, m1), (d2, m2) = sizes
    return d2 - d1, m2 - m1


def warp_bytes_per_env(model: mujoco.MjModel, bound_fields: Iterable[str] = (), *, device: str = "cuda:0",
                       nconmax: int | None = None, njmax: int | None = None) -> BackendMemory:
    """The Warp backend's per-env bytes on `device` (see the module docstring), and on the host the
    compiled defaults it reports of every writable field (float32)."""
    check_kernel_cache()
    with kernel_cache_errors():
        data, warp_model = world_bytes(model, device, nconmax, njmax)
    views = VIEW_COPIES * bound_field_bytes(model, (*BACKEND_BOUND_FIELDS, *bound_fields), itemsize=_FLOAT)
    backup = bound_field_bytes(model, _BACKUP_FIELDS, itemsize=_FLOAT)
    parts = {"worlds": data + warp_model, "views_and_backups": views + backup}
    device_parts = {name: int(np.ceil(ALLOCATOR_MARGIN * value)) for name, value in parts.items()}
    host = {"model_defaults": writable_field_values(model) * _FLOAT}
    return BackendMemory(host=host, device=device_parts, device_name=device)
