"""Writes to a backend's state inputs (``xfrc_applied``, ...) through one declared entry point.

Wrappers never write a backend array behind its back: they declare the input they need at
construction (`StateInput`, which fails closed when the backend does not accept it) and write
through `StateInput.write`, which validates before anything is written.

The backend contract this targets (proposed; not yet in `mjvec.backends.base`):

- ``Capabilities.inputs: frozenset[str]``: the state inputs the backend accepts writes to
  (``{"ctrl", "xfrc_applied"}`` for both backends). Key presence is the capability.
- ``Backend.write_input(name: str, env_ids: np.ndarray | None, index: np.ndarray | None,
  values: np.ndarray) -> None``: set input `name` of the local envs `env_ids` (K,) (None: all) at rows
  `index` (M,) of its per-env first axis (body ids for ``xfrc_applied``; None: the whole tail) to
  `values` ((K, M, *tail[1:]) or (K, *tail)); applied at the next ``step``; ``reset`` zeroes the
  inputs of the envs it resets. Validates name, ids, shapes and finiteness before writing anything.

BACKEND-CONTRACT ADAPTER: until the backends declare ``inputs`` and implement ``write_input``,
`StateInput` falls back to the inputs every `Backend` already exposes as views (the Protocol's
``ctrl`` and ``xfrc_applied``) and writes into the view. When a backend has ``write_input`` it is
used instead; delete `_FALLBACK_INPUTS` and the view branch once both backends have it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mjvec.errors import CapabilityError, ConfigError, allowed

# The Backend Protocol's input views (mjvec.backends.base.Backend.ctrl / .xfrc_applied).
_FALLBACK_INPUTS = frozenset({"ctrl", "xfrc_applied"})


def declared_inputs(backend: Any) -> frozenset[str]:
    """The state inputs `backend` accepts writes to."""
    declared = getattr(backend.capabilities, "inputs", None)
    return frozenset(declared) if declared is not None else _FALLBACK_INPUTS


class StateInput:
    """One declared, writable state input of a backend (see the module docstring).

    Raises CapabilityError at construction when the backend does not declare `name`.
    """

    def __init__(self, backend: Any, name: str, *, who: str) -> None:
        inputs = declared_inputs(backend)
        if name not in inputs:
            raise CapabilityError(
                f"{who} writes the state input {name!r}, which the {backend.capabilities.backend!r} backend does "
                f"not declare; its writable inputs are {allowed(inputs)}"
            )
        self._backend, self.name = backend, name
        self._write = getattr(backend, "write_input", None)
        self._tail = tuple(np.shape(getattr(backend, name))[1:]) if self._write is None else None

    def write(self, env_ids: np.ndarray | None, index: np.ndarray | None, values: np.ndarray) -> None:
        """Set the input of envs `env_ids` (None: all) at rows `index` (None: whole tail) to `values`."""
        if self._write is not None:
            self._write(self.name, env_ids, index, values)
            return
        view = getattr(self._backend, self.name)
        ids = slice(None) if env_ids is None else np.asarray(env_ids, np.int64).reshape(-1)
        count = view.shape[0] if env_ids is None else ids.size  # type: ignore[union-attr]
        values = np.asarray(values, np.float64)
        rows = () if index is None else (np.asarray(index, np.int64).reshape(-1).size,)
        tail = self._tail[len(rows):] if index is not None else self._tail
        expected = (count, *rows, *tail)
        if values.shape != expected or not np.isfinite(values).all():
            raise ConfigError(
                f"write to input {self.name!r}: values must be finite with shape {expected}, got shape "
                f"{values.shape}"
            )
        if index is None:
            view[ids] = values
        elif env_ids is None:
            view[:, np.asarray(index, np.int64).reshape(-1)] = values
        else:
            view[ids[:, None], np.asarray(index, np.int64).reshape(1, -1)] = values  # type: ignore[index]
