"""`ResetStates`: each simulation's state right after mj_resetData, remembered, so that a reset of a
non-persistent `mujoco.batch.Batch` can write that row instead of running mj_resetData again.

Why: a Batch's reset runs mj_resetData on an MjData, which clears the whole data buffer (about
half a megabyte for Gymnasium's locomotion models), and right after a step's physics that memory is
out of cache: tens of microseconds per reset env, a third of the reset cost of an env at 64 envs.

Why it is exact: a non-persistent Batch keeps nothing of a simulation but its mjSTATE_INTEGRATION
row (its MjData serve every simulation in turn), so mj_resetData's effect on a simulation is that
row's value, which depends on the simulation's model alone. The row is recorded from a real
mj_resetData (`Batch.reset`) the first time a simulation resets, and forgotten whenever its model
changes (`forget`: every model write of the engine calls it), so the next reset records it anew. Not
used for persistent Batches (their MjData is per simulation and holds more than the row) or models
with plugins (whose reset may keep state outside the row).
"""

from __future__ import annotations

import mujoco
import mujoco.batch as mjb
import numpy as np

_NO_STAGE = int(mujoco.mjtStage.mjSTAGE_NONE)


class ResetStates:
    """The remembered mj_resetData rows of one non-persistent Batch (see the module docstring)."""

    def __init__(self, batch: mjb.Batch) -> None:
        self._batch = batch
        self._rows: np.ndarray | None = None  # (nsim, nstate), allocated at the first reset
        self._known = np.zeros(batch.nsim, bool)

    def reset(self, rows: np.ndarray) -> None:
        """mj_resetData's state in simulations `rows` (ascending, unique), computing no stage: the
        remembered rows where every one is known, else a real reset of them all (then remembered)."""
        state = self._batch.state
        if self._rows is not None and self._known[rows].all():
            state[rows] = self._rows[rows]
            return
        self._batch.reset(rows, stage=_NO_STAGE)
        if self._rows is None:
            self._rows = np.empty_like(state)
        self._rows[rows] = state[rows]
        self._known[rows] = True

    def forget(self, rows: np.ndarray) -> None:
        """The models of simulations `rows` changed: their next reset runs mj_resetData again."""
        self._known[rows] = False
