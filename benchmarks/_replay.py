"""r1 on the very physics an env stepped: record the sampled envs' states, replay them in plain mujoco.

`StepRecorder` wraps a CPU backend's `step` (benchmark instrumentation only): it times every call
and, on the calls it is asked to record, snapshots the sampled envs' integration state (qpos, qvel,
warm start, ctrl, mocap, applied forces, ...) just before the step and their qpos just after.
`replay_seconds` then loads each snapshot into a plain `MjData` of that env's tool compiled alone and
times `mujoco.mj_step(m, d, nstep)` only: a plain single-thread loop over exactly the substeps the
batch ran (same states, same controls, same pushes). It also counts the replays that land
bit-exactly on the batch's own next qpos, which proves the two did the same work.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import mujoco
import numpy as np

_INTEGRATION = mujoco.mjtState.mjSTATE_INTEGRATION
_INPUTS = ("ctrl", "xfrc_applied", "mocap_pos", "mocap_quat")


@dataclass
class _Record:
    state: np.ndarray  # (S, nstate) rows as the group batches hold them before the step
    inputs: dict[str, np.ndarray]  # (S, ...) the env's inputs, applied by the backend at the step
    stepped: np.ndarray  # (S,) bool: the backend stepped the env (not skipped as a NEXT_STEP autoreset)
    qpos_after: np.ndarray | None = None


@dataclass
class StepRecorder:
    """Times `backend.step` and snapshots `sample` (global env ids) on the calls flagged by `arm()`."""

    backend: object
    sample: np.ndarray
    records: list[_Record] = field(default_factory=list)
    step_seconds: float = 0.0

    def __post_init__(self) -> None:
        be = self.backend
        groups, rows = be.routing.group_of_env, be.routing.row_of_env  # type: ignore[attr-defined]
        self._state_views = [b.state for b in be.group_batches]  # type: ignore[attr-defined]
        self._where = [(int(g), np.flatnonzero(groups[self.sample] == g), rows[self.sample][groups[self.sample] == g])
                       for g in np.unique(groups[self.sample])]
        self._inner = be.step  # type: ignore[attr-defined]
        self._armed = False
        be.step = self._step  # type: ignore[attr-defined]

    def arm(self) -> None:
        """Record the next step call."""
        self._armed = True

    def _step(self, nstep: int = 1, **kwargs: object) -> np.ndarray:
        be = self.backend
        record = None
        if self._armed:
            self._armed = False
            state = np.empty((self.sample.size, self._state_views[0].shape[1]))
            for g, pos, rows in self._where:
                state[pos] = self._state_views[g][rows]
            skip = kwargs.get("skip")
            stepped = np.ones(self.sample.size, bool) if skip is None else ~np.asarray(skip)[self.sample]
            record = _Record(state, {n: be.bind(n)[self.sample].copy() for n in _INPUTS},  # type: ignore[attr-defined]
                             stepped)
        t0 = time.perf_counter()
        failed = self._inner(nstep, **kwargs)
        self.step_seconds += time.perf_counter() - t0
        if record is not None:
            record.qpos_after = be.qpos[self.sample].copy()  # type: ignore[attr-defined]
            self.records.append(record)
        return failed


def replay_seconds(records: list[_Record], models: list[mujoco.MjModel], datas: list[mujoco.MjData],
                   nstep: int) -> tuple[float, int]:
    """(seconds inside plain mj_step, replays bit-exact with the batch) over every record x sample.

    Sample-major order: each model and MjData stays hot in cache across its records (the
    strictest r1 for the batch to be compared with). Every record is timed; a sampled env the
    batch skipped (a NEXT_STEP autoreset, `_Record.stepped`) is timed on its state too but has no
    next state to match, so only stepped ones count as exact (`stepped_count` is their number).
    """
    total, exact = 0.0, 0
    for s, (m, d) in enumerate(zip(models, datas, strict=True)):
        for rec in records:
            mujoco.mj_setState(m, d, rec.state[s], _INTEGRATION)
            for name, value in rec.inputs.items():
                getattr(d, name)[...] = value[s]
            t0 = time.perf_counter()
            mujoco.mj_step(m, d, nstep)
            total += time.perf_counter() - t0
            exact += bool(rec.stepped[s] and rec.qpos_after is not None and np.array_equal(d.qpos, rec.qpos_after[s]))
    return total, exact


def replay_passes(records: list[_Record], models: list[mujoco.MjModel], datas: list[mujoco.MjData], nstep: int,
                  min_seconds: float) -> tuple[float, int, int]:
    """(seconds, passes, bit-exact replays of one pass): `replay_seconds` over the same records
    again and again until the timed seconds reach `min_seconds`.

    A block's replays of a small model are a few milliseconds of work, too short a window to time
    on a shared machine; each pass loads every state afresh, so every pass does the same work.
    """
    seconds, passes, exact = 0.0, 0, 0
    while passes == 0 or seconds < min_seconds:
        timed, exact = replay_seconds(records, models, datas, nstep)
        seconds += timed
        passes += 1
    return seconds, passes, exact


def stepped_count(records: list[_Record]) -> int:
    """How many record x sample pairs the batch stepped (what `replay_seconds`' exact count is out of)."""
    return int(sum(int(rec.stepped.sum()) for rec in records))
