"""`RnePostConstraint`: the CPU backend's ``cfrc_ext`` after every call, as mj_rnePostConstraint gives it.

MuJoCo computes ``cacc``, ``cfrc_int`` and ``cfrc_ext`` only in mj_rnePostConstraint, which a
forward pass runs only for models with force-type sensors, and an RK4 step's inner stages never
(they skip sensors). Gymnasium's MuJoCo envs call it after every ``mj_step``, so their contact
forces come from the step's LAST forward pass (an RK4 step's fourth stage). No sensor reproduces
that, so the batches are persistent (one MjData per simulation, which keeps the contacts and
constraint forces of its last call) and after each call mj_rnePostConstraint runs on every
simulation concerned. Two ways, the same bits (tested):

- the pool (default): `mujoco.batch`'s C function ``mjb_apply`` runs mj_rnePostConstraint on each
  simulation in the batch's own threads, on that simulation's own model, with the GIL released;
  a stage-NONE ``mjb_forward`` of the same simulations then copies each MjData's ``cfrc_ext``
  into the batch's bound output. The Python binding of `mujoco.batch` 4.0 exposes neither
  ``mjb_apply`` nor the ``mjBatch*``, so `_PoolApply` takes them from libmujoco through ctypes and
  validates the pointer against the binding (nsim, nstate, the state rows' address, threads,
  persistence) before the first use; any mismatch selects the serial way, logged at INFO.
- serial (the fallback, and the tests' oracle): each simulation's whole MjData copied into a
  scratch MjData (`Batch.get_data`) and mj_rnePostConstraint run there on the group's template,
  on the calling thread.

In the pool, the pass is fused with the call before it where that is exact: a step whose stage is
mjSTAGE_NONE (mj_step's own outputs) runs as ONE ``mjb_apply`` of a compiled callback that calls
mj_step ``nstep`` times and then mj_rnePostConstraint on each simulation (saving its state), and a
reset's or forward's mj_forward likewise; the stage-NONE ``mjb_forward`` then copies the outputs.
The same MuJoCo calls on the same MjData in the same order, so the same bits (tested against
``Batch.step`` + the pass), with the pass run while that simulation's data is still in its
thread's cache and one dispatch of the pool fewer. The callback is compiled by numba (mjvec's
host kernels' compiler) for each process; where it cannot be, the pass runs unfused (logged).

Only ``cfrc_ext`` is provided: it depends on the model's structure (body roots, geom bodies, the
friction cone, equality anchors), which the serial way takes from the group template; ``cacc`` and
``cfrc_int`` also read per-env options (gravity) and are not offered. Writing cacc and cfrc_int
into the simulations' MjData changes nothing that a step reads (force sensors recompute them).
"""

from __future__ import annotations

import ctypes
import logging
import sys
import sysconfig
from collections.abc import Sequence
from pathlib import Path

import mujoco
import mujoco.batch as mjb
import numpy as np

from mjvec.errors import ConfigError

log = logging.getLogger(__name__)

FIELD = "cfrc_ext"
_STAGE_NONE = int(mujoco.mjtStage.mjSTAGE_NONE)
# mujoco.batch's pybind11 object: after CPython's object header, a pointer to the C++ Batch, whose
# first member is the mjBatch*. Only read for the pinned release, and validated before use.
_LAYOUT_VERSION = "4.0.0"


def _libmujoco() -> ctypes.CDLL | str:
    """The libmujoco the bindings load (same file, so dlopen returns the loaded image), or why not."""
    folder = Path(mujoco.__file__).parent
    names = ("libmujoco.so*", "libmujoco*.dylib", "mujoco.dll")
    found = sorted(p for pattern in names for p in folder.glob(pattern))
    if not found:
        return f"no libmujoco in {folder}"
    lib = ctypes.CDLL(str(found[0]))
    for name, res, args in (("mjb_nsim", ctypes.c_int, [ctypes.c_void_p]),
                            ("mjb_nstate", ctypes.c_int, [ctypes.c_void_p]),
                            ("mjb_nthread", ctypes.c_int, [ctypes.c_void_p]),
                            ("mjb_persistent", ctypes.c_int, [ctypes.c_void_p]),
                            ("mjb_state", ctypes.c_void_p, [ctypes.c_void_p]),
                            ("mjb_apply", ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int,
                                                         ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int])):
        function = getattr(lib, name)
        function.restype, function.argtypes = res, args
    return lib


def _batch_pointer(batch, lib: ctypes.CDLL) -> int | str:
    """The ``mjBatch*`` of `batch` (a `mujoco.batch.Batch`), or why it cannot be taken."""
    if mujoco.__version__ != _LAYOUT_VERSION:
        return f"mujoco {mujoco.__version__} is not {_LAYOUT_VERSION}, the release whose binding layout is known"
    if sys.implementation.name != "cpython" or sysconfig.get_config_var("Py_GIL_DISABLED"):
        return "not a standard CPython build (its object header differs)"
    word = ctypes.sizeof(ctypes.c_void_p)
    inner = batch._b
    if type(inner).__basicsize__ < 3 * word:
        return f"{type(inner).__name__} is smaller than a pybind11 instance"
    holder = ctypes.c_void_p.from_address(id(inner) + 2 * word).value
    if not holder:
        return "the binding holds no C++ object"
    pointer = ctypes.c_void_p.from_address(holder).value
    if not pointer:
        return "the C++ Batch holds no mjBatch"
    state = inner.state()
    checks = {"nsim": (lib.mjb_nsim(pointer), batch.nsim), "nstate": (lib.mjb_nstate(pointer), batch.nstate),
              "nthread": (lib.mjb_nthread(pointer), batch.nthread),
              "persistent": (lib.mjb_persistent(pointer), 1),
              "state rows": (lib.mjb_state(pointer), state.ctypes.data)}
    wrong = [f"{name} {got} != {want}" for name, (got, want) in checks.items() if got != want]
    return f"the pointer does not describe the batch ({', '.join(wrong)})" if wrong else pointer


_FUSED: list = []  # the fused callback (a numba cfunc, kept alive here), or why there is none


def _fused_callback(lib: ctypes.CDLL) -> int | str:
    """The address of the fused callback for ``mjb_apply`` (see the module docstring), or why there
    is none. Its arg is an int32 ``nstep``: 0 runs mj_forward, n > 0 runs mj_step n times; either
    is followed by mj_rnePostConstraint. Compiled once per process (the libmujoco addresses it
    calls are constants of its code, so it is not cached on disk)."""
    if not _FUSED:
        try:
            import numba
            from numba.core import types

            calls = []
            for name in ("mj_step", "mj_forward", "mj_rnePostConstraint"):
                function = getattr(lib, name)
                function.argtypes, function.restype = [ctypes.c_void_p, ctypes.c_void_p], None
                calls.append(function)
            step, forward, rne = calls

            def fused(model, data, sim, arg):  # mjb_apply passes sim; the pass needs no more
                nstep = arg[0]
                if nstep == 0:
                    forward(model, data)
                for _ in range(nstep):
                    step(model, data)
                rne(model, data)

            signature = types.void(types.voidptr, types.voidptr, types.int32, types.CPointer(types.int32))
            _FUSED.append(numba.cfunc(signature, nopython=True, cache=False)(fused))
        except Exception as error:  # any failure to compile leaves the unfused pass, the same bits
            _FUSED.append(f"the fused callback did not compile ({type(error).__name__}: {error})")
    callback = _FUSED[0]
    return callback if isinstance(callback, str) else callback.address


class _PoolApply:
    """mj_rnePostConstraint on a batch's simulations in its thread pool, alone (`__call__`) or fused
    with the step or forward before it (`run`; see the module docstring)."""

    def __init__(self, lib: ctypes.CDLL, batch, pointer: int, fused: int | None) -> None:
        self._lib, self._batch, self._pointer, self._fused = lib, batch, pointer, fused
        # mjb_apply calls func(m, d, sim, arg); mj_rnePostConstraint(m, d) takes the first two and
        # ignores the rest, which every C calling convention MuJoCo ships for (x86-64 SysV and
        # Windows, AArch64) allows: the caller passes and cleans up the arguments.
        self._func = ctypes.cast(lib.mj_rnePostConstraint, ctypes.c_void_p).value
        self._nstep: dict[int, np.ndarray] = {}  # the fused callback's arg per nstep

    @property
    def fused(self) -> bool:
        return self._fused is not None

    def __call__(self, rows: np.ndarray | None) -> None:
        ids = _ids(rows)
        if ids is not None and not ids.size:
            return
        failed = self._apply(ids, self._func, None, 0)
        if failed:  # mj_rnePostConstraint raises no MuJoCo error; a failure means a broken batch
            raise RuntimeError(f"mjb_apply(mj_rnePostConstraint) failed in {failed} simulations")
        # Copies every bound output, cfrc_ext among them, from each simulation's MjData.
        self._batch.forward(ids, stage=_STAGE_NONE)

    def run(self, rows: np.ndarray | None, nstep: int) -> None:
        """The fused call on simulations `rows` (None: all): `nstep` mj_steps (0: one mj_forward),
        then mj_rnePostConstraint, the state saved, the outputs copied. As `Batch.step` does, a
        simulation where MuJoCo raised keeps its state and a `mujoco.batch.SimulationError` names
        them all, after the others' outputs are copied."""
        ids = _ids(rows)
        if ids is not None and not ids.size:
            return
        arg = self._nstep.get(nstep)
        if arg is None:
            arg = self._nstep[nstep] = np.array([nstep], np.int32)
        failed = self._apply(ids, self._fused, arg.ctypes.data, 1)
        error = None
        # Batch.step's own failure check (private; the pool runs only on the pinned release), read
        # before the copy below, a call of its own, clears the status it reads.
        try:
            self._batch._check(ids, failed)
        except mjb.SimulationError as raised:
            error = raised
        self._batch.forward(ids, stage=_STAGE_NONE)
        if error is not None:
            raise error

    def _apply(self, ids: np.ndarray | None, func: int, arg: int | None, save: int) -> int:
        address = None if ids is None else ids.ctypes.data  # mjb_apply's NULL ids: every simulation
        return self._lib.mjb_apply(self._pointer, address, 0 if ids is None else ids.size, func, arg, save)


def _ids(rows: np.ndarray | None) -> np.ndarray | None:
    return None if rows is None else np.ascontiguousarray(rows, np.int32)


def _pools(batches: Sequence, pool: bool, fuse: bool) -> list[_PoolApply] | str:
    """One `_PoolApply` per batch, or why the serial pass runs instead."""
    if not pool:
        return "pool=False"
    lib = _libmujoco()
    if isinstance(lib, str):
        return lib
    pointers = [_batch_pointer(b, lib) for b in batches]
    reason = next((p for p in pointers if isinstance(p, str)), None)
    if reason is not None:
        return reason
    fused = _fused_callback(lib) if fuse else "fuse=False"
    if isinstance(fused, str):
        log.info("mj_rnePostConstraint runs in the pool, unfused (%s)", fused)
    return [_PoolApply(lib, b, p, None if isinstance(fused, str) else fused)
            for b, p in zip(batches, pointers, strict=True)]


class RnePostConstraint:
    """Per group, ``cfrc_ext`` (E_g, nbody, 6) of its simulations (row r: the group's simulation r),
    recomputed by `update` after each call; read only, and live: `update` refreshes it in place.

    templates / batches: per group, its template model and its persistent `mujoco.batch.Batch`.
    pool: run in the batches' thread pools where the pointer validates (else serially).
    fuse: in the pool, offer `run` (the pass fused with the step or forward before it) where the
        callback compiles; `fused` says whether it is offered.
    """

    def __init__(self, templates: Sequence[mujoco.MjModel], batches: Sequence, pool: bool = True,
                 fuse: bool = True) -> None:
        self._templates, self._batches = list(templates), list(batches)
        flat = [i for i, b in enumerate(self._batches) if not b.persistent]
        if flat:
            raise ConfigError(f"RnePostConstraint needs persistent batches (one MjData per simulation); groups {flat} "
                              "are not: build them with mujoco.batch.Batch(..., persistent=True)")
        pools = _pools(self._batches, pool, fuse)
        self._pools = None if isinstance(pools, str) else pools
        if self._pools is not None:
            self.cfrc_ext = [b.bind(FIELD) for b in self._batches]
            return
        log.info("mj_rnePostConstraint runs serially on the host (%s)", pools)
        self._scratch = [mujoco.MjData(m) for m in self._templates]
        self.cfrc_ext = [np.zeros((b.nsim, m.nbody, 6)) for m, b in zip(self._templates, self._batches, strict=True)]
        for out in self.cfrc_ext:
            out.setflags(write=False)

    @property
    def pooled(self) -> bool:
        """Whether `update` runs in the batches' thread pools."""
        return self._pools is not None

    @property
    def fused(self) -> bool:
        """Whether `run` is offered (the pool's pass fused with the call before it)."""
        return self._pools is not None and self._pools[0].fused

    def run(self, group: int, rows: np.ndarray | None, nstep: int) -> None:
        """Instead of the batch's call and then `update`: `nstep` mj_steps (0: one mj_forward) of
        group `group`'s simulations `rows` (None: all), each followed at once by its
        mj_rnePostConstraint (only where `fused`). Raises `mujoco.batch.SimulationError` as
        `Batch.step` does (see `_PoolApply.run`)."""
        if not self.fused:
            raise RuntimeError("RnePostConstraint.run needs the fused callback (see `fused`)")
        self._pools[group].run(rows, nstep)

    def update(self, group: int, rows: np.ndarray | None = None) -> None:
        """Recompute ``cfrc_ext`` of group `group`'s simulations `rows` (None: all of them)."""
        if self._pools is not None:
            self._pools[group](rows)
            return
        batch, model, data = self._batches[group], self._templates[group], self._scratch[group]
        out = self.cfrc_ext[group]
        rows = np.arange(out.shape[0]) if rows is None else np.asarray(rows, np.int64)
        out.setflags(write=True)
        try:
            for row in rows.tolist():
                batch.get_data(row, data)
                mujoco.mj_rnePostConstraint(model, data)
                out[row] = data.cfrc_ext
        finally:
            out.setflags(write=False)
