"""`TaskOptions`: the keyword options every task accepts, validated once, here.

A task's own options class subclasses it (a frozen dataclass) and validates its own fields after
calling this one's `__post_init__`; `mjvec.envs.registry.register_task` takes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np

from mjvec.backends.determinism import check_deterministic
from mjvec.backends.registry import backend_entry, check_backend_options, native_namespace
from mjvec.envs.arguments import parse_autoreset_mode
from mjvec.envs.arrays import ARRAY_BACKENDS
from mjvec.envs.base import MAX_GLOBAL_ID, RENDER_MODES
from mjvec.envs.cameras import CameraObs, parse_camera_options
from mjvec.errors import ConfigError, allowed, is_int
from mjvec.randomization import EventTerm, check_randomization
from mjvec.validate import require_int


@dataclass(frozen=True)
class TaskOptions:
    """The keyword options every task accepts (besides num_envs), validated in `__post_init__`.

    backend: a name in `mjvec.backends.registry.BACKENDS` ("cpu": MuJoCo's `mujoco.batch` thread
        pool; "warp": mujoco-warp, when installed).
    num_threads: CPU worker threads (None: the CPU affinity count); threaded backends only.
    device: where a device backend keeps its state and where torch outputs live (None: the
        backend's default).
    array_backend: "numpy" or "torch"; None picks the backend's native kind.
    autoreset_mode: "next_step" (default), "same_step", "disabled", or an `AutoresetMode`.
    render_mode: None or "rgb_array". render_size: (height, width) of each env's frame.
    env_id_offset: global id of local env 0 (shards of one run keep variants and random streams).
    randomization: None or "none" (the bare task), the name of one of the task's presets
        (case-insensitive), or a sequence of `EventTerm`s (model-field DR).
    record_episode_statistics: add ``info["episode"]`` at episode ends.
    max_episode_steps: the episode limit in control steps (None: the task's own).
    deterministic: ask the backend for run-to-run bit-identical results (True or False; on Warp
        it turns on mujoco-warp's deterministic mode). What the built backend keeps is
        ``env.unwrapped.backend.capabilities.determinism`` (`mjvec.backends.determinism`).
    nconmax, njmax: contacts and constraint rows per world of a backend with fixed-size buffers
        (Warp: mujoco_warp's ``nconmax``/``njmax``; None: the backend's default); raise them when a
        step reports a buffer overflow. A backend whose buffers grow (cpu) refuses them.
    task_namespace: where the task layer runs. None: where the backend keeps its state if the task
        runs in that namespace (`register_task`'s ``namespaces``), else numpy over host views;
        "numpy": on the host whatever the backend, through per-step host copies of a device's
        state (slower on a device; the reference the device path is tested against).
    cameras: None (no images), an image mode ("depth", "rgb", "rgbd", "segmentation") over the
        task's own cameras, or a `mjvec.envs.cameras.CameraObs`; observations become a Dict of the
        task's observation and the images (`mjvec.envs.cameras`). A mode the backend cannot make
        is refused here. frame_stack: frames per image (the k most recent); render_every: a new
        frame every n control steps of each env (the last one repeated between). Both need cameras.

    A task subclasses this (a frozen dataclass) to add its own options, may change a default by
    redefining the field (SimToolReal-v0 defaults to randomization="paper"), and validates its own
    fields in its `__post_init__` after calling this one. `HINTS` maps a commonly mistaken option
    name to advice appended to the unknown-option error.
    """

    HINTS: ClassVar[Mapping[str, str]] = MappingProxyType({})

    backend: str = "cpu"
    num_threads: int | None = None
    device: str | None = None
    array_backend: str | None = None
    autoreset_mode: Any = "next_step"
    render_mode: str | None = None
    render_size: tuple[int, int] = (240, 320)
    env_id_offset: int = 0
    randomization: str | tuple[EventTerm, ...] | None = None
    record_episode_statistics: bool = False
    max_episode_steps: int | None = None
    task_namespace: str | None = None
    deterministic: bool = False
    nconmax: int | None = None
    njmax: int | None = None
    cameras: str | CameraObs | None = None
    frame_stack: int = 1
    render_every: int = 1

    def __post_init__(self) -> None:
        randomization = self.randomization
        if isinstance(randomization, str):
            randomization = None if randomization.lower() == "none" else randomization.lower()
        elif randomization is not None:
            check_randomization(randomization, presets=None)  # a sequence of EventTerm, or a clear error
            randomization = tuple(randomization)
        object.__setattr__(self, "randomization", randomization)
        backend_entry(self.backend)
        require_int(self.num_threads, "num_threads", low=1, optional=True)
        require_int(self.max_episode_steps, "max_episode_steps", low=1, optional=True)
        if not is_int(self.env_id_offset) or not 0 <= self.env_id_offset <= MAX_GLOBAL_ID:
            raise ConfigError(
                f"env_id_offset must be an int >= 0 and at most 2**63 - 1 (global env ids are int64), "
                f"got {self.env_id_offset!r}"
            )
        if not isinstance(self.record_episode_statistics, (bool, np.bool_)):
            raise ConfigError(
                f"record_episode_statistics must be True or False, got {self.record_episode_statistics!r}"
            )
        check_deterministic(self.deterministic)
        for label in ("nconmax", "njmax"):
            value = getattr(self, label)
            object.__setattr__(self, label, require_int(value, label, low=1, optional=True))
        if self.nconmax is not None or self.njmax is not None:
            check_backend_options(self.backend, nconmax=self.nconmax, njmax=self.njmax)
        parse_autoreset_mode(self.autoreset_mode)
        camera_request = parse_camera_options(self.cameras, self.frame_stack, self.render_every,
                                              backend_entry(self.backend).images, self.backend)
        object.__setattr__(self, "cameras", camera_request)
        if self.render_mode is not None and self.render_mode not in RENDER_MODES:
            raise ConfigError(
                f"render_mode={self.render_mode!r} is not supported; allowed values are None or {RENDER_MODES}"
            )
        if self.array_backend is not None and self.array_backend not in ARRAY_BACKENDS:
            raise ConfigError(
                f"array_backend={self.array_backend!r} is not supported; allowed values are None or "
                f"{allowed(ARRAY_BACKENDS)}"
            )
        if self.task_namespace not in (None, "numpy"):
            raise ConfigError(
                f"task_namespace must be None (where the backend keeps its state) or 'numpy' (on the host), "
                f"got {self.task_namespace!r}"
            )

    def effective_values(self) -> dict[str, Any]:
        """Every option's value as the task runs with it (the policy contract records these). Default:
        the fields as set; a task whose None means "the task's default" fills that in (a config)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def env_options(self, backend: Any) -> dict[str, Any]:
        """The `MjVecEnv` keyword arguments these options set, for an env over `backend`."""
        return {
            "autoreset_mode": self.autoreset_mode,
            "render_mode": self.render_mode,
            "array_backend": self.array_backend or native_namespace(backend),
            "device": self.device,
            "record_episode_statistics": self.record_episode_statistics,
            "render_size": self.render_size,
        }
