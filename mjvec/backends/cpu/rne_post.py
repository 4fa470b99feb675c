"""`RnePostConstraint`: the CPU backend's ``cfrc_ext`` after every call, as mj_rnePostConstraint gives it.

MuJoCo computes ``cacc``, ``cfrc_int`` and ``cfrc_ext`` only in mj_rnePostConstraint, which a
forward pass runs only for models with force-type sensors, and an RK4 step's inner stages never
(they skip sensors). Gymnasium's MuJoCo envs call it after every ``mj_step``, so their contact
forces come from the step's LAST forward pass (an RK4 step's fourth stage). No sensor reproduces
that, and `mujoco.batch` 4.0 has no per-simulation hook after a step, so this runs it on the host:
the batches are persistent (one MjData per simulation, which keeps the contacts and constraint
forces of its last call), and after each call every simulation concerned is copied into a scratch
MjData (`Batch.get_data`) and mj_rnePostConstraint runs there. About 20-30 us per env per call
on one core (the copy dominates), serial in Python: `benchmarks/gym_suite.py` reports the share.
mujoco.batch's C API has ``mjb_apply`` (run a function on each simulation in the pool); exposed
in Python it would do this in the batch's threads at about 1 us per env.

Only ``cfrc_ext`` is provided: it depends on the model's structure alone (body roots, geom
bodies, the friction cone), which every simulation of a group shares, so the group template is the
right model for every env; ``cacc`` and ``cfrc_int`` also read per-env options (gravity) and are
not offered.
"""

from __future__ import annotations

from collections.abc import Sequence

import mujoco
import numpy as np

FIELD = "cfrc_ext"


class RnePostConstraint:
    """Per group, a backend-owned (E_g, nbody, 6) ``cfrc_ext`` (row r: the group's simulation r),
    refreshed by `update` after each call; the backend binds it as that group's rows.

    templates / batches: per group, its template model and its persistent `mujoco.batch.Batch`.
    """

    def __init__(self, templates: Sequence[mujoco.MjModel], batches: Sequence) -> None:
        self._templates = list(templates)
        self._batches = list(batches)
        self._scratch = [mujoco.MjData(m) for m in self._templates]
        # get_data writes into the scratch data in place, so each view below stays valid.
        self._scratch_cfrc = [d.cfrc_ext for d in self._scratch]
        self.cfrc_ext = [np.zeros((b.nsim, m.nbody, 6)) for m, b in zip(self._templates, self._batches, strict=True)]
        for out in self.cfrc_ext:
            out.setflags(write=False)

    def update(self, group: int, rows: np.ndarray | None = None) -> None:
        """Recompute ``cfrc_ext`` of group `group`'s simulations `rows` (None: all of them)."""
        batch, model, data = self._batches[group], self._templates[group], self._scratch[group]
        scratch, out = self._scratch_cfrc[group], self.cfrc_ext[group]
        rows = np.arange(out.shape[0]) if rows is None else np.asarray(rows, np.int64)
        out.setflags(write=True)
        try:
            for row in rows.tolist():
                batch.get_data(row, data)
                mujoco.mj_rnePostConstraint(model, data)
                out[row] = scratch
        finally:
            out.setflags(write=False)
