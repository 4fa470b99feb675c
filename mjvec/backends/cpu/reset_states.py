"""`ResetStates`: each simulation's state right after mj_resetData, remembered, so that a reset of a
`mujoco.batch.Batch` simulation can write that row instead of running mj_resetData again.

Why: a Batch's reset runs mj_resetData on an MjData, which clears the whole data buffer (about
half a megabyte for Gymnasium's locomotion models), and right after a step's physics that memory is
out of cache: tens of microseconds per reset env, a third of the reset cost of an env at 64 envs.

Why it is exact: mj_resetData's effect on what a simulation computes next is its
mjSTATE_INTEGRATION row, which depends on the simulation's model alone. A non-persistent Batch keeps
nothing else of a simulation (its MjData serve every simulation in turn). A persistent Batch keeps
one MjData per simulation, but every reset is followed by a forward of those simulations, which
recomputes from the row everything a step or an output reads (positions, contacts, constraints,
forces); only sleeping and IPC keep state of their own there, so models that enable either (or have
plugins, whose reset may keep state outside the row) do not use this (`remembers_resets`). The row
is recorded from a real mj_resetData (`Batch.reset`) the first time a simulation resets, and
forgotten whenever its model changes (`forget`: every model write of the engine calls it), so the
next reset records it anew. tests/test_reset_states.py checks both kinds of Batch against plain
mj_resetData + state + mj_forward (+ mj_rnePostConstraint).
"""

from __future__ import annotations

import mujoco
import mujoco.batch as mjb
import numpy as np

_NO_STAGE = int(mujoco.mjtStage.mjSTAGE_NONE)
_OWN_STATE = int(mujoco.mjtEnableBit.mjENBL_SLEEP) | int(mujoco.mjtEnableBit.mjENBL_IPC)


def remembers_resets(model: mujoco.MjModel) -> bool:
    """Whether resets of `model`'s simulations may write remembered rows (see the module docstring)."""
    return not model.nplugin and not int(model.opt.enableflags) & _OWN_STATE


class ResetStates:
    """The resets of one Batch: remembered mj_resetData rows where `remember` (see the module
    docstring), else always a real mj_resetData."""

    def __init__(self, batch: mjb.Batch, remember: bool) -> None:
        self._batch, self._remember = batch, remember
        self._rows: np.ndarray | None = None  # (nsim, nstate), allocated at the first remembered reset
        self._known = np.zeros(batch.nsim, bool)

    def reset(self, rows: np.ndarray) -> None:
        """mj_resetData's state in simulations `rows` (ascending, unique), computing no stage: the
        remembered rows where every one is known, else a real reset of them all (then remembered)."""
        state = self._batch.state
        if self._rows is not None and self._known[rows].all():
            state[rows] = self._rows[rows]
            return
        self._batch.reset(rows, stage=_NO_STAGE)
        if not self._remember:
            return
        if self._rows is None:
            self._rows = np.empty_like(state)
        self._rows[rows] = state[rows]
        self._known[rows] = True

    def forget(self, rows: np.ndarray) -> None:
        """The models of simulations `rows` changed: their next reset runs mj_resetData again."""
        self._known[rows] = False
