"""How much memory a batch of envs needs, estimated before anything is allocated, and checked.

`MemoryEstimate` itemises one env's share in host memory and in device memory (a GPU's; the
memory of warp's "cpu" device is host memory and is checked as such):

- the backend's (`mjvec.backends.memory.BackendMemory`, from the backend's own estimator: its state
  rows, bound fields and model-field copies on the CPU; mujoco_warp's measured per-world Data and
  Model, views and backups on Warp);
- ``task``: the task's own per-env buffers, as its env class declares them (`MjVecEnv.memory_needs`),
  on the device where the task runs there;
- ``images``: camera observations' frame rings, gathered observations and renderer buffers
  (`mjvec.envs.cameras.CameraSetup.bytes_per_env`), beside the task's (their rangefinders'
  sensordata row is a bound field of the backend's);
- ``wrappers``: the randomization wrappers' per-env state, as each wrapper reports it
  (`HookWrapper.per_env_bytes`); once they are built, before their state is allocated (at the first
  reset), the whole estimate is checked again, wrappers included, against the memory that was
  available before the build (`Available`: the backend allocates part of its share lazily, at the
  first reset, so what is left after the build would over-state the room).

A scene's variants may differ in size (a tool with more geoms): the estimate is taken over every
`size_class` among the variants in use, item by item the largest (`largest`), so it bounds any mix.
`VariantMemoryCheck` does that while the backend compiles the variants (each is compiled once, and
the check runs before the backend allocates anything per env). What does not scale with num_envs
(compiled variants, thread-local MjData, captured graphs, Python objects) is not counted: this
estimate exists to refuse a configuration that cannot fit, before it starts allocating, not to
predict RSS to the byte.

`check_fits` compares an estimate with `available_bytes()` (the kernel's MemAvailable, capped by the
process's cgroup memory limit where one is set) and, for a GPU, with its free memory, and raises
`ConfigError` naming num_envs, the estimate and what is available.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import mujoco
import numpy as np

from mjvec.backends.memory import BackendMemory, bound_field_bytes, size_class  # noqa: F401  (bound_field_bytes: public here)
from mjvec.errors import ConfigError
from mjvec.validate import require_int


@dataclass(frozen=True)
class MemoryNeeds:
    """What an env class declares of its per-env memory (`MjVecEnv.memory_needs`): the MjData fields
    it binds besides the backend's own, and the bytes of its own per-env buffers."""

    bound_fields: tuple[str, ...] = ()
    bytes_per_env: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "bound_fields", tuple(self.bound_fields))
        object.__setattr__(self, "bytes_per_env", require_int(self.bytes_per_env, "MemoryNeeds.bytes_per_env", low=0))


@dataclass(frozen=True)
class MemoryEstimate:
    """Bytes a configuration of `num_envs` envs needs; `per_env` (host) and `device_per_env` (on
    `device`; empty without one) itemise one env's share."""

    num_envs: int
    per_env: Mapping[str, int]
    device_per_env: Mapping[str, int] = field(default_factory=dict)
    device: str | None = None

    @property
    def on_host(self) -> bool:
        """Whether the device items are host memory too (no device, or warp's cpu device)."""
        return self.device is None or not str(self.device).startswith("cuda")

    @property
    def per_env_bytes(self) -> int:
        """Host bytes per env (the device's too where they are host memory)."""
        return sum(self.per_env.values()) + (sum(self.device_per_env.values()) if self.on_host else 0)

    @property
    def device_per_env_bytes(self) -> int:
        """GPU bytes per env (0 where the device is the host)."""
        return 0 if self.on_host else sum(self.device_per_env.values())

    @property
    def total_bytes(self) -> int:
        return self.num_envs * self.per_env_bytes

    def with_host_item(self, name: str, per_env: int) -> MemoryEstimate:
        """This estimate plus a host item `name` of `per_env` bytes per env."""
        return MemoryEstimate(self.num_envs, {**self.per_env, name: int(per_env)}, self.device_per_env, self.device)


@dataclass(frozen=True)
class Available:
    """Memory available to a configuration, measured once (before its build): host bytes and the
    free bytes of its GPU (None where unknown or not checked)."""

    host: int | None
    device: int | None

    @classmethod
    def now(cls, estimate: MemoryEstimate) -> Available:
        """`available_bytes()`, and the free memory of `estimate`'s GPU where it has device items."""
        device = device_available_bytes(str(estimate.device)) if estimate.device_per_env_bytes else None
        return cls(available_bytes(), device)


def estimate_memory(num_envs: int, backend: BackendMemory, *, task_bytes_per_env: int = 0,
                    task_on_device: bool = False, extra: Mapping[str, int] | None = None) -> MemoryEstimate:
    """The `MemoryEstimate` of `num_envs` envs: the backend's per-env bytes, the task's, and `extra`
    items (e.g. "images") that live where the task does.

    Needs no memory proportional to num_envs itself, so it is safe to call for absurd sizes.
    """
    host, device = dict(backend.host), dict(backend.device)
    task_side = device if task_on_device and backend.device_name is not None else host
    task_side["task"] = int(task_bytes_per_env)
    task_side.update({name: int(value) for name, value in (extra or {}).items()})
    return MemoryEstimate(int(num_envs), host, device, backend.device_name)


def used_variants(num_envs: int, num_variants: int, env_id_offset: int = 0) -> np.ndarray:
    """Sorted ids of the variants that envs ``env_id_offset + i`` (i < num_envs) use under the default
    assignment ``(env_id_offset + i) % num_variants``, in memory of at most num_variants ids (an
    absurd num_envs costs nothing here)."""
    if num_envs >= num_variants:
        return np.arange(num_variants, dtype=np.int64)
    return np.unique((env_id_offset + np.arange(num_envs, dtype=np.int64)) % num_variants)


def largest(estimates: Sequence[MemoryEstimate]) -> MemoryEstimate:
    """Item by item the largest of `estimates` (of one num_envs and device, over different variants):
    a bound of the memory of any mix of those variants."""
    if not estimates:
        raise ConfigError("largest() needs at least one MemoryEstimate")
    host: dict[str, int] = {}
    device: dict[str, int] = {}
    for estimate in estimates:
        for merged, items in ((host, estimate.per_env), (device, estimate.device_per_env)):
            for name, value in items.items():
                merged[name] = max(merged.get(name, 0), int(value))
    return MemoryEstimate(estimates[0].num_envs, host, device, estimates[0].device)


class VariantMemoryCheck:
    """The memory check of a scene whose variants may differ in size, variant by variant.

    Called with each variant's compiled model (`Scene.check_variant`: the backend calls it as it
    compiles the variants, before it allocates anything per env; the caller once before that with
    the first, so an absurd num_envs is refused before even the scene's assignment exists). A model
    of a `size_class` not seen yet is estimated (`estimate(model)`), and the largest estimate so far
    (`largest`) is checked (`check_fits` against `available` / `device_available`, default: what is
    free now), unless refuse=False: a ConfigError then names num_envs, the estimate and what is
    available. `estimate` holds that largest estimate (None before the first call).
    """

    def __init__(self, estimate: Callable[[mujoco.MjModel], MemoryEstimate], *, refuse: bool = True,
                 available: int | None = None, device_available: int | None = None) -> None:
        self._estimate, self._refuse = estimate, refuse
        self._available, self._device_available = available, device_available
        self._classes: dict[bytes, MemoryEstimate] = {}
        self.estimate: MemoryEstimate | None = None

    def __call__(self, variant: int, model: mujoco.MjModel) -> None:
        key = size_class(model)
        if key in self._classes:
            return
        self._classes[key] = self._estimate(model)
        self.estimate = largest(list(self._classes.values()))
        if self._refuse:
            check_fits(self.estimate, self._available, self._device_available)

    @property
    def num_classes(self) -> int:
        """How many size classes were estimated so far."""
        return len(self._classes)


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


def device_available_bytes(device: str) -> int | None:
    """Free memory of a CUDA device (torch's view of it); None if unknown or no CUDA torch."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    free, _ = torch.cuda.mem_get_info(torch.device(device))
    return int(free)


def _refuse(estimate: MemoryEstimate, where: str, needs: int, per_env: int, parts: Mapping[str, int],
            available: int) -> None:
    fits = max(available // max(per_env, 1), 0)
    items = ", ".join(f"{k} {format_bytes(v)}" for k, v in parts.items() if v)
    raise ConfigError(
        f"num_envs={estimate.num_envs:,} needs about {format_bytes(needs)} of {where}memory "
        f"({format_bytes(per_env)} per env: {items}), but only {format_bytes(available)} is "
        f"available; use num_envs <= {fits:,} on this machine, or shard the envs over processes or machines "
        "with env_id_offset"
    )


def check_fits(estimate: MemoryEstimate, available: int | None = None, device_available: int | None = None) -> None:
    """Raise ConfigError when `estimate` needs more host memory than `available` bytes (default:
    `available_bytes()`), or more GPU memory than its device has free. A limit that cannot be
    determined is not checked."""
    available = available_bytes() if available is None else available
    if available is not None and estimate.total_bytes > available:
        parts = {**estimate.per_env, **(estimate.device_per_env if estimate.on_host else {})}
        _refuse(estimate, "", estimate.total_bytes, estimate.per_env_bytes, parts, available)
    if estimate.device_per_env_bytes:
        free = device_available_bytes(str(estimate.device)) if device_available is None else device_available
        needs = estimate.num_envs * estimate.device_per_env_bytes
        if free is not None and needs > free:
            _refuse(estimate, f"{estimate.device} ", needs, estimate.device_per_env_bytes, estimate.device_per_env,
                    free)
