"""How much memory a batch of envs needs, estimated before anything is allocated.

Contract. `estimate_memory` returns the host bytes that scale with num_envs, itemised per env:

- ``state``: one integration state row per env, ``mj_stateSize(model, mjSTATE_INTEGRATION)``
  float64 values (what a backend keeps for each simulation between calls);
- ``bound_fields``: the MjData fields bound as (num_envs, ...) views (the backend's own plus the
  ones the task reads), counted twice: the backend's per-group rows and the env-order copy it
  gathers them into when the variants span several groups;
- ``model_fields``: every writable model field's per-env values, float64, counted twice: the
  compiled defaults the backend reports (`Backend.defaults`) and the per-simulation rows an engine
  keeps of the fields that differ between variants (sizes, masses, inertias, ...; about as large);
- ``task``: the task's own per-env buffers, observations and infos, as the task declares them;
- ``wrappers``: the randomization wrappers' per-env state (delay queues), as declared.

The model passed is the canonical one (the largest layout over the variants in use), so each
part is an upper bound for every env. What does not scale with num_envs (compiled variants,
thread-local MjData, Python objects) is not counted: this estimate exists to refuse a
configuration that cannot fit, before it starts allocating, not to predict RSS to the byte.

`check_fits` compares an estimate with `available_bytes()` (the kernel's MemAvailable, capped by
the process's cgroup memory limit where one is set) and raises `ConfigError` naming num_envs,
the estimate and what is available.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np

from mjvec.backends.fields import field_specs
from mjvec.errors import ConfigError

# Fields every backend binds for the env base (state and inputs), besides what a task binds.
BACKEND_BOUND_FIELDS = ("qpos", "qvel", "ctrl", "xfrc_applied", "time", "warning")
# The backend's per-group rows plus the env-order copy (see the module docstring).
BOUND_COPIES = 2
# Defaults plus the engine's per-simulation variant rows (see the module docstring).
MODEL_FIELD_COPIES = 2
_STATE_BYTES = np.dtype(np.float64).itemsize


@dataclass(frozen=True)
class MemoryEstimate:
    """Bytes a configuration of `num_envs` envs needs; `per_env` itemises one env's share."""

    num_envs: int
    per_env: Mapping[str, int]

    @property
    def per_env_bytes(self) -> int:
        return sum(self.per_env.values())

    @property
    def total_bytes(self) -> int:
        return self.num_envs * self.per_env_bytes


def bound_field_bytes(model: mujoco.MjModel, names: Iterable[str]) -> int:
    """Bytes of one env's row of each MjData field in `names` (its dtype and per-env shape)."""
    data = mujoco.MjData(model)
    total = 0
    for name in dict.fromkeys(names):
        try:
            total += np.asarray(getattr(data, name)).nbytes
        except AttributeError as error:
            raise ConfigError(f"{name!r} is not an MjData field; it cannot be bound") from error
    return total


def estimate_memory(
    model: mujoco.MjModel,
    num_envs: int,
    *,
    bound_fields: Iterable[str] = (),
    task_bytes_per_env: int = 0,
    wrapper_bytes_per_env: int = 0,
) -> MemoryEstimate:
    """The `MemoryEstimate` of `num_envs` envs of canonical model `model` (see the module docstring).

    bound_fields: MjData fields the task binds, besides `BACKEND_BOUND_FIELDS`.
    task_bytes_per_env / wrapper_bytes_per_env: what the task and its wrappers declare per env.
    Needs no memory proportional to num_envs itself, so it is safe to call for absurd sizes.
    """
    state = mujoco.mj_stateSize(model, mujoco.mjtState.mjSTATE_INTEGRATION) * _STATE_BYTES
    bound = BOUND_COPIES * bound_field_bytes(model, (*BACKEND_BOUND_FIELDS, *bound_fields))
    defaults = sum(int(np.prod(spec.shape, dtype=np.int64)) for spec in field_specs(model, np.float64).values())
    per_env = {
        "state": int(state),
        "bound_fields": int(bound),
        "model_fields": MODEL_FIELD_COPIES * int(defaults) * _STATE_BYTES,
        "task": int(task_bytes_per_env),
        "wrappers": int(wrapper_bytes_per_env),
    }
    return MemoryEstimate(int(num_envs), per_env)


def available_bytes() -> int | None:
    """Memory this process may still allocate: MemAvailable, capped by a cgroup limit; None if unknown."""
    candidates = [v for v in (_meminfo_available(), _cgroup_headroom()) if v is not None]
    return min(candidates) if candidates else None


def _meminfo_available() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:  # not Linux: free physical pages
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _cgroup_headroom() -> int | None:
    """limit - usage of this process's memory cgroup (v2, then v1); None when there is no limit."""
    pairs = (
        ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
        ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"),
    )
    for limit_path, usage_path in pairs:
        try:
            limit_text = Path(limit_path).read_text().strip()
            usage = int(Path(usage_path).read_text().strip())
        except (OSError, ValueError):
            continue
        if limit_text == "max" or int(limit_text) >= 2**60:  # "no limit" (v1 reports a huge number)
            return None
        return max(int(limit_text) - usage, 0)
    return None


def format_bytes(n: float) -> str:
    """1234567 -> '1.2 MB' (decimal units, as `free -h --si` prints)."""
    for unit in ("B", "kB", "MB", "GB", "TB", "PB"):
        if abs(n) < 1000 or unit == "PB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    raise AssertionError("unreachable")


def check_fits(estimate: MemoryEstimate, available: int | None = None) -> None:
    """Raise ConfigError when `estimate` needs more than `available` bytes (default: `available_bytes()`).

    Does nothing when the available memory cannot be determined.
    """
    available = available_bytes() if available is None else available
    if available is None or estimate.total_bytes <= available:
        return
    fits = max(available // max(estimate.per_env_bytes, 1), 0)
    parts = ", ".join(f"{k} {format_bytes(v)}" for k, v in estimate.per_env.items() if v)
    raise ConfigError(
        f"num_envs={estimate.num_envs:,} needs about {format_bytes(estimate.total_bytes)} of memory "
        f"({format_bytes(estimate.per_env_bytes)} per env: {parts}), but only {format_bytes(available)} is "
        f"available; use num_envs <= {fits:,} on this machine, or shard the envs over processes or machines "
        "with env_id_offset"
    )
