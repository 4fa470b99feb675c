"""The CPU engine: one `mujoco.batch.Batch` per variant group, on MuJoCo's own thread pool.

Each group's Batch runs on the group's template model, its differing fields expanded so that every
simulation holds its env's own compiled rows (`mujoco.batch.MODEL_FIELDS` is what may differ per
env). This module holds only the `mujoco.batch` calls; everything else of the contract is
`GroupedBackend`'s (mjvec.backends.grouped).

Float64 throughout: every env steps bit-exactly like its own variant compiled alone and stepped
with plain `mujoco.mj_step` (tested over the whole tool catalog).
"""

from __future__ import annotations

import ctypes
import logging
from collections.abc import Mapping
from typing import Any

import mujoco
import mujoco.batch as mjb
import numpy as np

from mjvec.backends import fields as backend_fields
from mjvec.backends.base import Capabilities, FieldSpec
from mjvec.backends.cpu.reset_states import ResetStates, remembers_resets
from mjvec.backends.cpu.rne_post import RnePostConstraint
from mjvec.backends.cpu.setconst import PerEnvSetConst, batch_rows, exact_batch_set_const
from mjvec.backends.engine import Checked, Split
from mjvec.backends.groupviews import GroupViews
from mjvec.backends.variants import Routing, VariantGroup
from mjvec.errors import ConfigError, FieldWriteError

log = logging.getLogger(__name__)

# The warnings MuJoCo raises when it resets a diverging simulation. Adjacent in mjtWarning (then a
# basic slice of a Batch's (nsim, mjNWARNING, 2) counters: a view, not a fancy-index copy).
_DIVERGENCE_IDS = sorted(int(w) for w in (mujoco.mjtWarning.mjWARN_BADQPOS, mujoco.mjtWarning.mjWARN_BADQVEL,
                                          mujoco.mjtWarning.mjWARN_BADQACC))
_DIVERGENCE: slice | list[int] = (slice(_DIVERGENCE_IDS[0], _DIVERGENCE_IDS[-1] + 1)
                                  if _DIVERGENCE_IDS[-1] - _DIVERGENCE_IDS[0] == 2 else _DIVERGENCE_IDS)
_NO_SENSORS = int(mujoco.mjtDisableBit.mjDSBL_SENSOR)
_NO_STAGE = int(mujoco.mjtStage.mjSTAGE_NONE)
# Every expandable field and option of mujoco.batch: what may differ per env within one group.
PER_ENV_FIELDS = frozenset(mjb.MODEL_FIELDS)


def batch_field(name: str) -> str:
    """The `mujoco.batch` name of a capability field ('gravity' is the option 'opt.gravity')."""
    return f"opt.{name}" if name in backend_fields.OPTION_FIELDS else name


class CpuEngine:
    """The `Engine` (mjvec.backends.engine) over `mujoco.batch`.

    num_threads: threads per group's Batch, the caller's included.
    stage: the mjtStage each step computes up to after integrating (mjSTAGE_NONE: as mj_step).
    """

    per_env = PER_ENV_FIELDS
    field_dtype = np.dtype(np.float64)
    whole_groups = False  # a Batch runs, resets and recomputes exactly the simulations asked for
    geometry_triggers: frozenset[str] = frozenset()  # mj_setConst recomputes what geometry writes move
    start_views: tuple[str, ...] = ()

    def __init__(self, num_threads: int, stage: int, rne_post_constraint: bool = False) -> None:
        self.num_threads = num_threads
        self._stage = stage
        self._persistent = bool(rne_post_constraint)
        self.batches: list[mjb.Batch] = []
        self._rne: RnePostConstraint | None = None
        self._reset_states: list[ResetStates] = []
        self._state_views: list[dict[str, np.ndarray]] = []  # per group, the reset's bound state fields
        # The sensor cadence (`sense`): per group, the sims' expanded opt.disableflags, the
        # template's flags, and which sims compute sensors in the last substep of the next step.
        self._sensor_flags: list[np.ndarray] | None = None
        self._flags0: list[int] = []
        self._sensing: list[np.ndarray] = []

    def build(self, groups: list[VariantGroup], routing: Routing, model: mujoco.MjModel, views: GroupViews) -> None:
        self._groups = groups
        self._routing = routing
        self._model = model
        # Persistent batches (one MjData per simulation) keep each call's contacts for rnePostConstraint.
        self.batches = [mjb.Batch(g.template, g.num_envs, min(self.num_threads, g.num_envs),
                                  persistent=self._persistent)
                        for g in groups]
        if self._persistent:
            self._rne = RnePostConstraint([g.template for g in groups], self.batches)
        # Resets write each sim's remembered mj_resetData row where that is exact (reset_states.py).
        self._reset_states = [ResetStates(b, remembers_resets(g.template))
                              for g, b in zip(groups, self.batches, strict=True)]
        self._state_views = [{} for _ in groups]
        # Per group: None where Batch.set_const is exact, else the per-env recompute (see setconst.py).
        self._per_env_set_const: list[PerEnvSetConst | None] = []
        for group, batch in zip(groups, self.batches, strict=True):
            for name, rows in group.fields.items():
                batch.expand(name)[...] = rows[group.rows]
            exact = exact_batch_set_const(group, self.num_threads)
            self._per_env_set_const.append(None if exact else PerEnvSetConst(batch, group.env_ids))
            group.fields = {}  # the Batch holds every env's rows now; the per-variant copy is spare

    def capabilities(self, fields: Mapping[str, FieldSpec]) -> Capabilities:
        # mujoco.batch is bit-identical to a loop of mj_step at any thread count.
        return Capabilities(backend="cpu", fields=fields, array_namespace="numpy", device="cpu",
                            exact_variants=True, determinism="bit_exact", images=frozenset({"depth"}),
                            partial_step=True)

    def start(self) -> None:
        """Nothing to load: a Batch is ready once built."""

    # ---- model fields ---------------------------------------------------------------------
    def rows(self, g: int, name: str) -> np.ndarray:
        """Group g's current per-sim values of `name`, without expanding it (read only)."""
        return batch_rows(self.batches[g], batch_field(name))

    def check_writes(self, checked: Checked) -> None:
        for write, ids, _ in checked:
            if write.field == "body_ipos":
                self._check_not_simple(write.index, ids)

    def _check_not_simple(self, index: np.ndarray | None, ids: np.ndarray) -> None:
        """body_ipos writes: MuJoCo caches a "simple" body's inertial frame as its body frame, so
        its COM cannot move per env (mj_setConst refuses it); name such bodies and the fix."""
        bodies = np.arange(self._model.nbody) if index is None else index
        for g, _, rows in self._routing.split(ids):
            simple = np.asarray(self.rows(g, "body_simple"))[rows][:, bodies].astype(bool)
            if simple.any():
                model = self._groups[g].template
                names = sorted({model.body(int(bodies[c])).name for c in np.flatnonzero(simple.any(axis=0))})
                envs = self._groups[g].env_ids[rows[simple.any(axis=1)]]
                raise FieldWriteError(
                    f"body_ipos of bodies {names} cannot be written in envs {envs[:8].tolist()}: MuJoCo compiled them "
                    "as 'simple' (inertial frame = body frame), a cached structure a per-env COM would break. Compile "
                    "those bodies with MjsBody.simple = False (MJCF: <body simple=\"false\">) to randomize their COM"
                )

    def write(self, g: int, name: str, rows: np.ndarray, index: np.ndarray | None, values: np.ndarray) -> None:
        # Expanding on first write: an expanded field is copied into the worker's model for every sim.
        target = self.batches[g].expand(batch_field(name))
        self._reset_states[g].forget(rows)  # mj_resetData's row may depend on it (qpos0, a mocap body's pos)
        if index is None:
            target[rows] = values
        else:
            target[rows[:, None], index[None, :]] = values

    def refresh_geometry(self, moved: list[tuple[str, int, np.ndarray, np.ndarray]]) -> None:
        """Nothing: `geometry_triggers` is empty (mj_setConst recomputes bounds, BVHs, sameframe)."""

    def recompute(self, fields: frozenset[str], touched: list[np.ndarray]) -> None:
        # mj_setConst is the recompute mujoco.batch offers; it covers both levels at once, and with
        # them the geometry a write moves (bounds, body BVHs, geom_sameframe).
        for g, rows in enumerate(touched):
            if rows.size:
                per_env = self._per_env_set_const[g]
                if per_env is None:
                    self.batches[g].set_const(rows)
                else:
                    per_env(rows)

    # ---- state ----------------------------------------------------------------------------
    def bind(self, g: int, name: str) -> np.ndarray:
        if self._rne is not None and name == "cfrc_ext":
            return self._rne.cfrc_ext[g]
        try:
            return self.batches[g].bind(name)
        except ValueError as error:
            raise ConfigError(f"cannot bind MjData field {name!r}: {error}") from error

    def step(self, nstep: int, skip: np.ndarray | None = None) -> np.ndarray:
        """Every sim's step but those of the envs in `skip` ((num_envs,) bool, None: none), which
        keep their state; a failed sim (a MuJoCo error, or a divergence MuJoCo reset itself) is
        reported in the mask and keeps a finite state; the others are unaffected.

        With the sensor cadence on (`sense`), the substeps before the last run without MuJoCo's
        sensor stage and the last one with it only in the sims asked for: the same mj_step calls
        in the same order, so the same trajectory, without a camera's rays at every substep."""
        rows = [None] * len(self._groups) if skip is None else [_stepped_rows(~skip[g.env_ids]) for g in self._groups]
        # mj_rnePostConstraint fused into the step where that is the same calls (rne_post.py).
        fused = self._rne is not None and self._rne.fused and self._sensor_flags is None and self._stage == _NO_STAGE
        if fused:
            failed, messages = self._step_groups(nstep, self._stage, rows, fused=True)
        elif self._sensor_flags is None:
            failed, messages = self._step_groups(nstep, self._stage, rows)
        else:
            failed = np.zeros(self._routing.group_of_env.size, bool)
            messages = []
            if nstep > 1:
                self._set_sensing(None)
                failed, messages = self._step_groups(nstep - 1, int(mujoco.mjtStage.mjSTAGE_NONE), rows)
            self._set_sensing(self._sensing)
            last, more = self._step_groups(1, self._stage, rows)
            failed |= last
            messages += more
        if self._rne is not None and not fused:
            for g in range(len(self.batches)):
                if rows[g] is None or rows[g].size:
                    self._rne.update(g, rows[g])
        if failed.any():  # DEBUG: the caller reports failures (the env logs one WARNING with env and global ids)
            log.debug("simulation failed in envs %s: %s", np.flatnonzero(failed).tolist(), messages)
        return failed

    def _step_groups(self, nstep: int, stage: int, rows: list[np.ndarray | None],
                     fused: bool = False) -> tuple[np.ndarray, list[str]]:
        """Step rows[g] of each group g (None: all of them; empty: none); `fused`: with
        mj_rnePostConstraint after each simulation's last substep (`RnePostConstraint.run`)."""
        failed = np.zeros(self._routing.group_of_env.size, bool)
        messages = []
        for g, (group, batch, ids) in enumerate(zip(self._groups, self.batches, rows, strict=True)):
            if ids is not None and not ids.size:
                continue
            before = batch.warning[:, _DIVERGENCE, 1].copy()
            try:
                if fused:
                    self._rne.run(g, ids, nstep)
                else:
                    batch.step(ids, nstep=nstep, stage=stage)
            except mjb.SimulationError as error:  # those sims kept their state; the others ran
                failed[group.env_ids[error.ids]] = True
                messages.append(str(error))
            # MuJoCo resets a diverging simulation itself (and warns); count that as a failure.
            grew = batch.warning[:, _DIVERGENCE, 1] > before
            if grew.any():
                failed[group.env_ids[grew.any(axis=1)]] = True
        return failed, messages

    # ---- the sensor cadence -----------------------------------------------------------------
    def sense(self, rows: list[np.ndarray] | None) -> None:
        """Turn the sensor cadence on (see `GroupedBackend.sense`): rows[g] (bool per sim of group g,
        or None for all) compute MuJoCo's sensors in the last substep of the next step."""
        if self._sensor_flags is None:
            self._flags0 = [int(group.template.opt.disableflags) for group in self._groups]
            self._sensor_flags = [batch.expand("opt.disableflags") for batch in self.batches]
        self._sensing = [np.ones(g.num_envs, bool) for g in self._groups] if rows is None else rows

    def _set_sensing(self, rows: list[np.ndarray] | None) -> None:
        """Sensors on in the sims of rows[g] (None: in none), off in the others."""
        for g, flags in enumerate(self._sensor_flags or ()):
            flags[:] = self._flags0[g] | _NO_SENSORS
            if rows is not None:
                flags[rows[g]] = self._flags0[g]

    def _sense_rows(self, g: int, rows: np.ndarray) -> None:
        """A reset's or forward's sims compute their sensors (when the cadence is on)."""
        if self._sensor_flags is not None:
            self._sensor_flags[g][rows] = self._flags0[g]

    def reset(self, split: Split, state: Mapping[str, Any]) -> None:
        for g, pos, rows in split:
            batch = self.batches[g]
            self._reset_states[g].reset(rows)
            views = self._state_views[g]
            for name, values in state.items():
                view = views.get(name)
                if view is None:  # a view of the Batch's state rows: the same array for its life
                    view = views[name] = batch.bind(name)
                view[rows] = values[pos]
            self._sense_rows(g, rows)
            self._forward(g, rows)

    def forward(self, split: Split) -> None:
        for g, _, rows in split:
            self._sense_rows(g, rows)
            self._forward(g, rows)

    def _forward(self, g: int, rows: np.ndarray) -> None:
        """mj_forward of group g's simulations `rows`, then their mj_rnePostConstraint if the engine runs it."""
        if self._rne is not None and self._rne.fused:
            self._rne.run(g, rows, 0)
            return
        self.batches[g].forward(rows)
        if self._rne is not None:
            self._rne.update(g, rows)

    # ---- rendering and lifetime -----------------------------------------------------------
    def write_env_model(self, g: int, row: int, model: mujoco.MjModel) -> None:
        self.batches[g].get_model(row, model)

    def close(self) -> None:
        self.batches = []
        self._state_views = []

    def forked_away(self) -> None:
        # A Batch's destructor joins its worker threads, which do not exist in a forked child:
        # freeing one there would hang forever (even at interpreter exit). Keep them alive.
        for batch in self.batches:
            ctypes.pythonapi.Py_IncRef(ctypes.py_object(batch))


def _stepped_rows(keep: np.ndarray) -> np.ndarray | None:
    """A group's rows to step from its (E_g,) keep mask: None for all of them, else ascending ids."""
    return None if keep.all() else np.flatnonzero(keep)
