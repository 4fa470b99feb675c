"""Writes to a backend's state inputs (``xfrc_applied``, ...) through the backend contract.

Wrappers never write a backend array behind its back: they declare the input they need at
construction (`StateInput` fails closed when `backend.capabilities.inputs` lacks it) and write
through `Backend.write_input`, which validates everything before anything is written and applies
the input at the next step.
"""

from __future__ import annotations

import numpy as np

from mjvec.backends.base import Backend
from mjvec.errors import CapabilityError, allowed


class StateInput:
    """One declared, writable state input of a backend.

    Raises CapabilityError at construction when the backend does not declare `name`.
    """

    def __init__(self, backend: Backend, name: str, *, who: str) -> None:
        inputs = frozenset(backend.capabilities.inputs)
        if name not in inputs:
            raise CapabilityError(
                f"{who} writes the state input {name!r}, which the {backend.capabilities.backend!r} backend does "
                f"not declare; its writable inputs are {allowed(inputs)}"
            )
        self._backend, self.name = backend, name

    def is_zero(self, index: np.ndarray) -> bool:
        """True where the input of every env at rows `index` is host numpy holding +0.0 in every bit
        (writing zeros there would change nothing); False on a device (nothing is read back)."""
        view = self._backend.bind(self.name)
        if not isinstance(view, np.ndarray):
            return False
        return not view[:, index].view(np.uint64).any()

    def write(self, env_ids: np.ndarray | None, index: np.ndarray | None, values: np.ndarray) -> None:
        """Set the input of envs `env_ids` (None: all) at rows `index` (None: whole tail) to `values`."""
        self._backend.write_input(self.name, env_ids, index, values)
