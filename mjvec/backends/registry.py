"""Choosing a backend by name: the one place that maps names to backend classes.

Everything above `mjvec.backends` (envs, randomization) asks for a backend with `make_backend`
and learns what it can do from its `Capabilities`; nothing else branches on a backend's name.

- "cpu": `CpuBackend` on `mujoco.batch` (numpy state, float64, bit-exact variants).
- "warp": `WarpBackend` on mujoco_warp (torch state on a warp device, float32); needs the
  `warp` extra. Imported only when asked for.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from mjvec.backends.base import Scene
from mjvec.backends.determinism import check_deterministic
from mjvec.errors import ConfigError, allowed, install_hint, is_int


@dataclass(frozen=True)
class BackendEntry:
    """A registered backend: where its class lives and which options it takes.

    threads: whether `num_threads` applies (a CPU thread pool).
    default_device: where state lives when no device is given; None if the backend takes no
        device (its state is always on the host).
    buffer_sizes: whether it takes ``nconmax``/``njmax`` (fixed-size contact and constraint buffers).
    images: the image kinds it makes for camera observations, as its `Capabilities.images` declares
        them (here so that a request for others is refused before anything is built).
    """

    name: str
    module: str
    cls: str
    threads: bool
    default_device: str | None
    memory: str  # "module:function" of its per-env memory estimator (`mjvec.backends.memory`)
    buffer_sizes: bool = False
    images: frozenset[str] = frozenset()


BACKENDS: dict[str, BackendEntry] = {
    "cpu": BackendEntry("cpu", "mjvec.backends.cpu", "CpuBackend", threads=True, default_device=None,
                        memory="mjvec.backends.memory:cpu_bytes_per_env", images=frozenset({"depth"})),
    "warp": BackendEntry("warp", "mjvec.backends.warp", "WarpBackend", threads=False, default_device="cuda:0",
                         memory="mjvec.backends.warp.memory:warp_bytes_per_env", buffer_sizes=True,
                         images=frozenset({"depth", "rgb", "segmentation"})),
}


def backend_entry(name: Any) -> BackendEntry:
    """The registry entry of `name`, or ConfigError naming the registered backends."""
    entry = BACKENDS.get(name) if isinstance(name, str) else None
    if entry is None:
        raise ConfigError(f"backend={name!r} is not supported; allowed values are {allowed(BACKENDS)}")
    return entry


def check_backend_options(name: str, *, num_threads: int | None = None, device: str | None = None,
                          state_namespace: str | None = None, nconmax: int | None = None,
                          njmax: int | None = None) -> BackendEntry:
    """The entry of backend `name` after checking that it takes these options and ships with this
    build (what `make_backend` checks first; a caller that estimates memory checks it before that)."""
    entry = backend_entry(name)
    if num_threads is not None and not entry.threads:
        raise ConfigError(f"num_threads applies to threaded backends ({_threaded()}); drop it for backend={name!r}")
    if device is not None and entry.default_device is None:
        raise ConfigError(
            f"backend={name!r} keeps its state on the host and takes no device (got device={device!r}); "
            f"device backends are {_with_device()}"
        )
    if (nconmax is not None or njmax is not None) and not entry.buffer_sizes:
        raise ConfigError(
            f"nconmax/njmax (got nconmax={nconmax!r}, njmax={njmax!r}) size the fixed contact and constraint "
            f"buffers of {_buffered()}; backend={name!r} grows its buffers as needed: drop them"
        )
    if state_namespace not in (None, "numpy"):
        raise ConfigError(f"state_namespace must be None or 'numpy', got {state_namespace!r}")
    if importlib.util.find_spec(entry.module) is None:
        raise ConfigError(f"backend={name!r} is not available in this build of mjvec; use backend='cpu'")
    return entry


@dataclass(frozen=True)
class BackendRequest:
    """A backend by name with its options, checked once, at construction (`check_backend_options`,
    the determinism flag, the int options): the one value `make_vec` hands to the memory estimate
    and then to the build, so both see the same backend, device and buffer sizes.

    num_threads: thread-pool size of a threaded backend (None: its default); refused elsewhere.
    device: where state lives (None: the backend's default device); refused by host-only backends.
    nconmax, njmax: buffer sizes per world of a backend with fixed buffers (`BackendEntry.buffer_sizes`);
        None: its default. Refused elsewhere.
    deterministic: ask the engine for run-to-run bit-identical results (every backend takes it;
        `capabilities.determinism` says what the built backend keeps).
    state_namespace: "numpy" to get numpy state views whatever the backend keeps (`HostViews`:
        shared memory on a CPU device, host mirrors on a GPU); None for the backend's own arrays.
    """

    name: str
    num_threads: int | None = None
    device: str | None = None
    nconmax: int | None = None
    njmax: int | None = None
    deterministic: bool = False
    state_namespace: str | None = None

    def __post_init__(self) -> None:
        check_backend_options(self.name, num_threads=self.num_threads, device=self.device,
                              state_namespace=self.state_namespace, nconmax=self.nconmax, njmax=self.njmax)
        for label in ("num_threads", "nconmax", "njmax"):
            value = getattr(self, label)
            if value is not None and not (is_int(value) and value >= 1):
                raise ConfigError(f"{label} must be an int >= 1 or None, got {value!r}")
        object.__setattr__(self, "deterministic", check_deterministic(self.deterministic))

    @property
    def entry(self) -> BackendEntry:
        return BACKENDS[self.name]

    @property
    def resolved_device(self) -> str | None:
        """The device the backend will keep its state on (None for a host-only backend)."""
        entry = self.entry
        return None if entry.default_device is None else (self.device or entry.default_device)

    def estimate_memory(self, model: Any, bound_fields: tuple[str, ...] = ()) -> Any:
        """The `mjvec.backends.memory.BackendMemory` per env of this backend over compiled `model`,
        before anything is allocated (the Warp estimator builds one- and two-world probes on the device)."""
        entry = self.entry
        module, function = entry.memory.split(":")
        estimator = getattr(importlib.import_module(module), function)
        if entry.default_device is None:
            return estimator(model, bound_fields)
        sizes = {"nconmax": self.nconmax, "njmax": self.njmax} if entry.buffer_sizes else {}
        return estimator(model, bound_fields, device=self.resolved_device, **sizes)

    def build(self, scene: Scene, *, progress: bool = True) -> Any:
        """The backend over `scene` (raises ConfigError where its extra is not installed)."""
        entry = self.entry
        cls = getattr(importlib.import_module(entry.module), entry.cls)
        kwargs: dict[str, Any] = {"progress": progress, "deterministic": self.deterministic}
        if entry.threads:
            kwargs["num_threads"] = self.num_threads
        if entry.default_device is not None:
            kwargs["device"] = self.resolved_device
        if entry.buffer_sizes:
            kwargs.update(nconmax=self.nconmax, njmax=self.njmax)
        backend = cls(scene, **kwargs)
        if self.state_namespace == "numpy" and backend.capabilities.array_namespace != "numpy":
            from mjvec.backends.host import HostViews

            return HostViews(backend)
        return backend


def estimate_backend_memory(name: str, model: Any, bound_fields: tuple[str, ...] = (), *,
                            device: str | None = None, nconmax: int | None = None,
                            njmax: int | None = None) -> Any:
    """`BackendRequest(name, device=..., nconmax=..., njmax=...).estimate_memory(model, bound_fields)`."""
    return BackendRequest(name, device=device, nconmax=nconmax, njmax=njmax).estimate_memory(model, bound_fields)


def make_backend(
    name: str,
    scene: Scene,
    *,
    num_threads: int | None = None,
    device: str | None = None,
    state_namespace: str | None = None,
    progress: bool = True,
    deterministic: bool = False,
    nconmax: int | None = None,
    njmax: int | None = None,
) -> Any:
    """The backend `name` over `scene`, with the options of `BackendRequest` (which see). Raises
    ConfigError for an unknown name, an option the backend does not take, or a backend whose extra
    is not installed."""
    return BackendRequest(name, num_threads=num_threads, device=device, nconmax=nconmax, njmax=njmax,
                          deterministic=deterministic, state_namespace=state_namespace).build(scene, progress=progress)


def backend_status() -> dict[str, str]:
    """'available', or what is missing, for every registered backend, WITHOUT importing any.

    A backend is available when its module ships with this mjvec and the packages of mjvec's
    install extra of the same name (if any; e.g. ``warp``) are installed. Importing the modules
    would take seconds (the warp backend imports torch and warp); `make_backend` does that.
    """
    try:
        requires = metadata.requires("mjvec") or []
    except metadata.PackageNotFoundError:
        requires = None
    status = {}
    for name, entry in BACKENDS.items():
        if importlib.util.find_spec(entry.module) is None:
            status[name] = "not in this build of mjvec"
        elif requires is None:
            status[name] = "present (its dependencies are unchecked: mjvec is not installed as a package)"
        else:
            missing = [dist for dist in _extra_packages(requires, name) if not _installed(dist)]
            status[name] = "available" if not missing else (
                f"missing {', '.join(missing)} (fix: {install_hint(name)})"
            )
    return status


def _extra_packages(requires: list[str], extra: str) -> list[str]:
    """Distribution names that mjvec's install extra `extra` requires."""
    marker = re.compile(rf"""extra\s*==\s*["']{re.escape(extra)}["']""")
    return [re.match(r"[A-Za-z0-9._-]+", req).group(0) for req in requires if marker.search(req)]  # type: ignore[union-attr]


def _installed(dist: str) -> bool:
    try:
        metadata.version(dist)
    except metadata.PackageNotFoundError:
        return False
    return True


def native_namespace(backend: Any) -> str:
    """The array namespace a backend keeps its state in (seen through any `HostViews`)."""
    return str(getattr(backend, "inner", backend).capabilities.array_namespace)


def _with_device() -> str:
    return ", ".join(repr(n) for n, e in BACKENDS.items() if e.default_device is not None)


def _threaded() -> str:
    return ", ".join(repr(n) for n, e in BACKENDS.items() if e.threads)


def _buffered() -> str:
    return allowed(name for name, entry in BACKENDS.items() if entry.buffer_sizes)
