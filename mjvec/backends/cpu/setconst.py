"""Per-env `mj_setConst` on `mujoco.batch`, exact for every group.

`Batch.set_const` rebuilds a simulation's derived constants from the simulation's own values of
mj_setConst's inputs (`MjModel._setconst_inputs`) and the TEMPLATE's values of everything else. But
mj_setConst leaves some entries of its outputs as it finds them (a mesh geom's `geom_rbound`, which
only the compiler computes, from the mesh): where those entries differ between the variants of one
group, `Batch.set_const` hands every simulation the template's (its first variant's) and derives
more constants from them (`dof_length` from `geom_rbound`). A write that needs a recompute would
then silently change such an env's physics.

`exact_batch_set_const` finds out, per group, at construction: a scratch Batch holding one
simulation per variant, each with its variant's compiled rows, runs `Batch.set_const`, and every
output must come back as its variant compiled it (compiling ends with mj_setConst, so a compiled
model is its fixed point). Where one does not, `set_const_per_env` recomputes each touched env with
plain `mj_setConst` on the env's own model (`Batch.get_model`), which is the oracle itself.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import mujoco
import mujoco.batch as mjb
import numpy as np

from mjvec.backends.fields import setconst_outputs
from mjvec.backends.variants import VariantGroup, field_value
from mjvec.errors import ConfigError

# The outputs of mj_setConst that mujoco.batch can hold per simulation.
EXPANDABLE_OUTPUTS = tuple(n for n in setconst_outputs() if n in mjb.MODEL_FIELDS)
# The others (tree and sparsity structure): equal in every env of a group, or the group is refused.
SHARED_OUTPUTS = tuple(n for n in setconst_outputs() if n not in mjb.MODEL_FIELDS)


def batch_rows(batch: mjb.Batch, name: str) -> np.ndarray:
    """A Batch's current per-sim values of `name` without expanding it (read only)."""
    values = batch.expanded(name)
    if values is None:
        template = field_value(batch.model, name)
        values = np.broadcast_to(template, (batch.nsim, *template.shape))
    return values


def exact_batch_set_const(group: VariantGroup, num_threads: int) -> bool:
    """Whether `Batch.set_const` gives each of `group`'s variants the constants it compiled to.

    Call while `group.fields` still holds the per-variant rows (before the backend frees them).
    """
    count = len(group.variants)
    if count == 1:
        return True  # the template is the only variant: Batch.set_const is mj_setConst on it
    scratch = mjb.Batch(group.template, count, max(1, min(num_threads, count)))
    rows = np.arange(count)
    for name, values in group.fields.items():
        scratch.expand(name)[...] = values[rows]
    scratch.set_const()
    for name in EXPANDABLE_OUTPUTS:
        compiled = group.fields.get(name)
        if compiled is None:
            template = field_value(group.template, name)
            compiled = np.broadcast_to(template, (count, *template.shape))
        if not np.array_equal(batch_rows(scratch, name), compiled):
            return False
    return True


class PerEnvSetConst:
    """mj_setConst on each touched env's own model, for a group whose Batch.set_const is inexact."""

    def __init__(self, batch: mjb.Batch, env_ids: np.ndarray) -> None:
        self._batch = batch
        self._env_ids = env_ids  # for error messages: global-order env ids of the group's sims
        self._model = copy.copy(batch.model)
        self._data = mujoco.MjData(self._model)
        self._shared = {n: np.array(field_value(batch.model, n)) for n in SHARED_OUTPUTS}

    def __call__(self, rows: Sequence[int]) -> None:
        """Recompute the derived constants of simulations `rows` and write back the ones that changed."""
        rows = np.asarray(rows, np.int64)
        new = {name: [] for name in EXPANDABLE_OUTPUTS}
        for row in rows:
            self._batch.get_model(int(row), self._model)
            mujoco.mj_setConst(self._model, self._data)
            for name, values in new.items():
                values.append(np.array(field_value(self._model, name)))
            for name, shared in self._shared.items():
                if not np.array_equal(field_value(self._model, name), shared):
                    raise ConfigError(
                        f"a model write in env {int(self._env_ids[row])} changed {name!r}, which mj_setConst derives "
                        "and mujoco.batch cannot hold per env; randomize fields that keep the model's structure"
                    )
        for name, values in new.items():
            stacked = np.stack(values)
            if not np.array_equal(batch_rows(self._batch, name)[rows], stacked):
                self._batch.expand(name)[rows] = stacked
