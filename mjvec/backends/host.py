"""`HostViews`: any backend seen through numpy state views on the host.

An explicit opt-in (`make_backend(..., state_namespace="numpy")`, SimToolReal's
`task_namespace="numpy"`), never the default path: the task layer runs in whatever namespace
the backend keeps its state in. This adapter serves numpy-only task code, and is the host
reference the device path is tested against. A backend whose state lives in torch tensors (Warp:
on its device) is wrapped so that `bind`, `qpos`, `qvel`, `ctrl` and `xfrc_applied` are numpy
arrays:

- on a CPU device the numpy arrays ARE the backend's tensors (`Tensor.numpy()` shares memory), so
  nothing is copied;
- on a GPU they are host mirrors: inputs (ctrl, xfrc_applied, qfrc_applied, mocap_*) are copied
  to the device before every step/forward/reset, outputs copied back after.

Everything else (capabilities, field writes, defaults) is the wrapped backend's, except that
`capabilities.array_namespace` says "numpy". Only backends/ and the registration factory use it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import mujoco
import numpy as np

from mjvec.backends.base import RESET_INPUTS, STATE_INPUTS, Capabilities, FieldWrite
from mjvec.backends.checks import check_input_write
from mjvec.backends.groupviews import put_input
from mjvec.xp import to_host


class HostViews:
    """The `Backend` contract of `backend`, with numpy state views (see the module docstring)."""

    def __init__(self, backend: Any) -> None:
        self._backend = backend
        self._capabilities = dataclasses.replace(backend.capabilities, array_namespace="numpy")
        self._tensors: dict[str, Any] = {}
        self._host: dict[str, np.ndarray] = {}
        self._shared = str(backend.capabilities.device).startswith("cpu")
        for name in ("qpos", "qvel", "ctrl", "xfrc_applied"):
            self.bind(name)

    @property
    def inner(self) -> Any:
        """The wrapped backend."""
        return self._backend

    num_envs = property(lambda self: self._backend.num_envs)
    env_id_offset = property(lambda self: self._backend.env_id_offset)
    variant_of_env = property(lambda self: self._backend.variant_of_env)
    qpos = property(lambda self: self._host["qpos"])
    qvel = property(lambda self: self._host["qvel"])
    ctrl = property(lambda self: self._host["ctrl"])
    xfrc_applied = property(lambda self: self._host["xfrc_applied"])

    @property
    def model(self) -> mujoco.MjModel:
        return self._backend.model

    @property
    def capabilities(self) -> Capabilities:
        return self._capabilities

    def __getattr__(self, name: str) -> Any:
        # Backend-specific extras (num_groups, geom_present, num_threads, ...) pass through.
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._backend, name)

    def bind(self, name: str) -> np.ndarray:
        """(num_envs, ...) numpy view of MjData field `name` (live; see the module docstring)."""
        if name not in self._host:
            tensor = self._backend.bind(name)
            self._tensors[name] = tensor
            self._host[name] = tensor.numpy() if self._shared else tensor.detach().cpu().numpy().copy()
        return self._host[name]

    def _push(self) -> None:
        if self._shared:
            return
        import torch

        for name in STATE_INPUTS & self._host.keys():
            self._tensors[name].copy_(torch.from_numpy(self._host[name]))

    def _pull(self) -> None:
        if self._shared:
            return
        for name, tensor in self._tensors.items():
            self._host[name][...] = tensor.detach().cpu().numpy()

    def step(self, nstep: int = 1, *, skip: np.ndarray | None = None) -> np.ndarray:
        self._push()
        failed = self._backend.step(nstep) if skip is None else self._backend.step(nstep, skip=skip)
        self._pull()
        # The host waits for every step anyway: check the device's overflow flags each step too.
        check = getattr(self._backend, "check_overflow", None)
        if check is not None:
            check()
        return np.asarray(to_host(failed), bool)

    def reset(self, env_ids: np.ndarray, qpos: np.ndarray, qvel: np.ndarray, *, ctrl: Any = None,
              mocap_pos: Any = None, mocap_quat: Any = None, act: Any = None) -> None:
        """As `Backend.reset`, from host arrays."""
        values = (ctrl, mocap_pos, mocap_quat, act)
        given = {name: np.asarray(v, np.float32) for name, v in zip(RESET_INPUTS, values, strict=True) if v is not None}
        self._push()
        self._backend.reset(env_ids, np.asarray(qpos, np.float32), np.asarray(qvel, np.float32), **given)
        self._pull()

    def forward(self, env_ids: np.ndarray | None = None) -> None:
        self._push()
        self._backend.forward(env_ids)
        self._pull()

    def write_input(self, name: str, env_ids: Any, index: Any, values: Any) -> None:
        """As `Backend.write_input`, into the host view (sent to the device at the next call)."""
        view = self.bind(name) if name in self._capabilities.inputs else None
        ids, rows, values = check_input_write(name, self._capabilities, None if view is None else view.shape,
                                              self.num_envs, env_ids, index, values)
        put_input(view, ids, rows, values)

    def image_renderer(self, cameras: Sequence[str], kinds: frozenset[str]) -> Any:
        """The wrapped backend's batch renderer, its images as host numpy arrays."""
        return _HostImages(self._backend.image_renderer(cameras, kinds))

    def defaults(self, field_name: str) -> np.ndarray:
        return self._backend.defaults(field_name)

    def field_values(self, field_name: str, env_ids: np.ndarray | None = None) -> np.ndarray:
        return self._backend.field_values(field_name, env_ids)

    def write_fields(self, writes: Sequence[FieldWrite]) -> None:
        self._backend.write_fields(writes)

    def close(self) -> None:
        self._tensors.clear()
        self._host.clear()
        self._backend.close()


class _HostImages:
    """An `ImageRenderer` whose images are host numpy copies of a device renderer's."""

    def __init__(self, renderer: Any) -> None:
        self._renderer = renderer
        self.kinds = renderer.kinds

    def render(self) -> dict[str, tuple[np.ndarray, ...]]:
        return {kind: tuple(np.asarray(to_host(a)) for a in arrays) for kind, arrays in self._renderer.render().items()}

    def close(self) -> None:
        self._renderer.close()
