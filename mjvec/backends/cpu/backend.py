"""CPU backend: thousands of MuJoCo simulations on mjbatch-uni's C++ thread pool.

Variants (tools) are grouped by geom topology, one `mjbatch.VariantPack` per group and one
`mjbatch.Batch` per group, routed by `mjbatch.ModelAffineBatch`. The env sees global-order
`(num_envs, ...)` arrays: with one group whose envs are 0..N-1 they are mjbatch's live views; with
several groups they are backend-owned arrays, gathered from the groups after every call (outputs)
and scattered into them before every call (inputs: ctrl, xfrc_applied, qfrc_applied, mocap_*).

Float64 throughout: every env steps bit-exactly like its own variant compiled alone with plain
`mujoco` (tested), given the BVH work-around in `_cpu_build.widen_bvh`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from importlib import metadata
from typing import Any

import mujoco
import numpy as np

from mjvec.backends import fields as F
from mjvec.backends._cpu_geometry import GEOMETRY_FIELDS, GeometryWrites
from mjvec.backends.base import (
    IDENTITY_FIELDS,
    Capabilities,
    FieldWrite,
    RecomputeLevel,
    Scene,
    SceneBackend,
    combine_levels,
    frozen_mapping,
    validate_env_ids,
)
from mjvec.errors import ClosedError, ConfigError, FieldWriteError, InstallError


def _import_mjbatch() -> Any:
    """Import mjbatch-uni, refusing the look-alike `mjbatch` distribution (same import name)."""
    try:
        metadata.distribution("mjbatch")
    except metadata.PackageNotFoundError:
        pass
    else:
        raise InstallError(
            "the distribution 'mjbatch' is installed; it writes the same 'mjbatch' package as "
            "mjbatch-uni and silently corrupts it. Fix: pip uninstall -y mjbatch mjbatch-uni && "
            "pip install mjbatch-uni==0.2.5"
        )
    try:
        import mjbatch
    except ImportError as error:
        raise InstallError(f"mjbatch-uni is not importable ({error}); fix: pip install mjbatch-uni==0.2.5") from error
    if not hasattr(mjbatch, "VariantPack") or not hasattr(mjbatch, "ModelAffineBatch"):
        raise InstallError(
            "the installed 'mjbatch' package lacks VariantPack/ModelAffineBatch (not mjbatch-uni 0.2.5); "
            "fix: pip uninstall -y mjbatch mjbatch-uni && pip install mjbatch-uni==0.2.5"
        )
    return mjbatch


_mjbatch = _import_mjbatch()

from mjvec.backends._cpu_build import plan_groups  # noqa: E402  (after the install guard)
from mjvec.backends._groups import geom_layout  # noqa: E402

log = logging.getLogger(__name__)

INPUT_FIELDS = frozenset({"ctrl", "xfrc_applied", "qfrc_applied", "mocap_pos", "mocap_quat"})
_DIVERGENCE_WARNINGS = (
    int(mujoco.mjtWarning.mjWARN_BADQPOS),
    int(mujoco.mjtWarning.mjWARN_BADQVEL),
    int(mujoco.mjtWarning.mjWARN_BADQACC),
)


def default_num_threads() -> int:
    """The CPU affinity count of this process (what the OS lets it run on)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class CpuBackend(SceneBackend, GeometryWrites):
    """The `Backend` contract over mjbatch-uni (see mjvec.backends.base.Backend).

    num_threads: worker threads per group (default: the CPU affinity count).
    forward_after_step: end every step with mj_forward so derived fields (xpos, site_xpos, ...)
        are current with qpos; otherwise they are one substep behind, as after mj_step.
    widen_bvh: apply the pitfall-1 work-around (only tests turn it off, to prove it is needed).
    bvh_margin: grow every collision BVH box by this many metres, so per-env geom_size /
        geom_pos writes (e.g. table height) can move geoms that far; a write reaching farther
        raises FieldWriteError. It costs extra narrowphase checks, so it is 0 unless asked for.
    """

    def __init__(
        self,
        scene: Scene,
        *,
        num_threads: int | None = None,
        forward_after_step: bool = False,
        widen_bvh: bool = True,
        bvh_margin: float = 0.0,
        progress: bool = True,
    ) -> None:
        threads = default_num_threads() if num_threads is None else num_threads
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
            raise ConfigError(f"num_threads must be an int >= 1 or None, got {num_threads!r}")
        self._scene = scene
        self._num_threads = threads
        self._closed = False
        if not (isinstance(bvh_margin, (int, float)) and 0.0 <= bvh_margin < 1.0):
            raise ConfigError(f"bvh_margin must be a float in [0, 1) m, got {bvh_margin!r}")
        self._bvh_margin = float(bvh_margin)
        self._plans = plan_groups(scene, widen=widen_bvh, margin=self._bvh_margin, progress=progress)
        batches = [
            _mjbatch.Batch.from_variant_pack(
                p.pack, p.env_ids.size, p.rows, num_threads=min(threads, p.env_ids.size),
                forward=forward_after_step,
            )
            for p in self._plans
        ]
        self._affine = _mjbatch.ModelAffineBatch(batches, [p.env_ids.astype(np.int64) for p in self._plans])
        self._model, self._geom_local = geom_layout([p.pack.model for p in self._plans])
        self._timestep = float(self._model.opt.timestep)
        # Global env -> (group, row in the group), for routing writes.
        self._group_of_env = np.empty(scene.num_envs, np.int64)
        self._local_of_env = np.empty(scene.num_envs, np.int64)
        for g, plan in enumerate(self._plans):
            self._group_of_env[plan.env_ids] = g
            self._local_of_env[plan.env_ids] = np.arange(plan.env_ids.size)
        self._direct = len(self._plans) == 1
        self._views: dict[str, np.ndarray] = {}
        self._group_views: dict[str, list[np.ndarray]] = {}
        self._expanded: list[dict[str, np.ndarray]] = [{} for _ in self._plans]
        specs = F.field_specs(self._model, np.float64)
        self._capabilities = Capabilities(
            backend="cpu", fields=frozen_mapping(specs), array_namespace="numpy", device="cpu",
            exact_variants=True,
        )
        self._defaults = {name: self._gather_field(name) for name in specs}
        for value in self._defaults.values():
            value.setflags(write=False)
        for name in ("qpos", "qvel", "ctrl", "xfrc_applied", "time", "warning"):
            self.bind(name)

    # ---- identity -------------------------------------------------------------------------
    @property
    def num_threads(self) -> int:
        return self._num_threads

    @property
    def num_groups(self) -> int:
        return len(self._plans)

    @property
    def group_batches(self) -> tuple:
        """The per-topology mjbatch Batches (for tests and benchmarks; not a stable API)."""
        return tuple(g.batch for g in self._affine.groups)

    @property
    def group_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """(group (N,), row (N,)): where each global env lives in `group_batches` (same caveat)."""
        return self._group_of_env.copy(), self._local_of_env.copy()

    # ---- model fields ---------------------------------------------------------------------
    def _field_array(self, g: int, name: str) -> np.ndarray:
        """The group's live per-sim rows of `name`, expanding the field on first use (writes only)."""
        cached = self._expanded[g].get(name)
        if cached is None:
            cached = self._expanded[g][name] = self._affine.groups[g].batch.expand(name)
        return cached

    def _field_rows(self, g: int, name: str) -> np.ndarray:
        """The group's current per-sim values of `name`, without expanding it.

        Every expanded field is copied into the worker's model before each sim runs, so reading a
        field must not expand it: until it is written, its rows are the pack's per-variant rows
        (variant fields) or the canonical value that VariantPack verified all variants share.
        """
        if name in self._expanded[g]:
            return self._expanded[g][name]
        plan = self._plans[g]
        if name in plan.pack.fields:
            return plan.pack.fields[name][plan.rows]
        value = F.model_value(plan.pack.model, name)
        return np.broadcast_to(value, (plan.env_ids.size, *value.shape))

    def _gather_field(self, name: str, env_ids: np.ndarray | None = None) -> np.ndarray:
        spec = self._capabilities.fields[name]
        ids = np.arange(self.num_envs) if env_ids is None else env_ids
        out = np.empty((ids.size, *spec.shape), np.float64)
        groups = self._group_of_env[ids]
        for g in np.unique(groups):
            pos = np.flatnonzero(groups == g)
            local = self._field_rows(int(g), name)[self._local_of_env[ids[pos]]]
            if spec.entity == "geom":
                # Absent slots keep the canonical value: finite, and without effect in that env.
                out[pos] = F.model_value(self._model, name)
                present = np.flatnonzero(self._geom_local[g] >= 0)
                out[np.ix_(pos, present)] = local[:, self._geom_local[g][present]]
            else:
                out[pos] = local
        return out

    @property
    def geom_types(self) -> np.ndarray:
        """(num_envs, ngeom) int: the mjtGeom type of canonical slot j in env i's variant, -1 if absent.

        A slot's type may differ between the variants of one group (see `_cpu_build.topology_key`).
        """
        out = np.full((self.num_envs, self._model.ngeom), -1, np.int64)
        for g, plan in enumerate(self._plans):
            local = self._geom_local[g]
            types = np.asarray(self._field_rows(g, "geom_type"))
            out[np.ix_(plan.env_ids, np.flatnonzero(local >= 0))] = types[:, local[local >= 0]]
        return out

    def defaults(self, field_name: str) -> np.ndarray:
        self._capabilities.require(field_name)
        return self._defaults[field_name]

    def field_values(self, field_name: str, env_ids: np.ndarray | None = None) -> np.ndarray:
        self._check_open()
        self._capabilities.require(field_name)
        ids = None if env_ids is None else validate_env_ids(env_ids, self.num_envs)
        return self._gather_field(field_name, ids)

    def check_writes(self, writes: Sequence[FieldWrite]) -> None:
        """Raise exactly what `write_fields(writes)` would for each write on its own; write nothing."""
        self._check_open()
        for write, ids, values in self._validated(writes):
            if write.field not in GEOMETRY_FIELDS:
                continue
            groups = self._group_of_env[ids]
            for g in np.unique(groups):
                rows = self._local_of_env[ids[groups == g]]
                index, vals = self._local_index(int(g), write.field, write.index, values[groups == g])
                geoms = np.arange(vals.shape[1]) if index is None else index
                self._dry_check_geometry(write.field, int(g), rows, geoms, vals)

    def _validated(self, writes: Sequence[FieldWrite]) -> list[tuple[FieldWrite, np.ndarray, np.ndarray]]:
        checked = self._checked_writes(writes)
        for write, ids, values in checked:
            if write.field == "geom_size":
                self._check_sizes(write, ids, values)
        return checked

    def write_fields(self, writes: Sequence[FieldWrite]) -> None:
        self._check_open()
        checked = self._validated(writes)
        undo: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        touched = np.zeros(self.num_envs, bool)
        geometry: list[tuple[str, int, np.ndarray, np.ndarray]] = []
        for write, ids, values in checked:
            groups = self._group_of_env[ids]
            for g in np.unique(groups):
                sel = groups == g
                rows = self._local_of_env[ids[sel]]
                index, vals = self._local_index(int(g), write.field, write.index, values[sel])
                target = self._field_array(int(g), write.field)
                undo.append((target, rows, target[rows].copy()))
                if index is None:
                    target[rows] = vals
                elif index.size:
                    target[rows[:, None], index[None, :]] = vals
                if write.field in GEOMETRY_FIELDS:
                    geoms = np.arange(target.shape[1]) if index is None else index
                    geometry.append((write.field, int(g), rows, geoms))
            touched[ids] = True
        if geometry:
            try:
                self._refresh_geometry(geometry, undo)
            except FieldWriteError:
                for target, rows, saved in reversed(undo):
                    target[rows] = saved
                raise
        level = combine_levels(self._capabilities.fields[w.field].recompute for w, _, _ in checked)
        if level != RecomputeLevel.NONE and touched.any():
            # mj_setConst is the only recompute mjbatch offers; it covers both levels at once.
            self._affine.set_const(np.flatnonzero(touched).astype(np.int64))

    def _local_index(self, g: int, field: str, index: np.ndarray | None, vals: np.ndarray) -> tuple:
        """Canonical geom slots -> group g's geom ids; a slot absent there has no effect."""
        if self._capabilities.fields[field].entity != "geom":
            return index, vals
        canon = np.arange(self._model.ngeom) if index is None else index
        local = self._geom_local[g][canon]
        keep = local >= 0
        return local[keep], vals[:, keep]

    # ---- state ----------------------------------------------------------------------------
    def bind(self, name: str) -> np.ndarray:
        """(num_envs, ...) view of MjData field `name` (see the module docstring for liveness)."""
        self._check_open()
        if name in IDENTITY_FIELDS:
            raise ConfigError(f"{name!r} is a model field, not an MjData field")
        if name in self._views:
            return self._views[name]
        try:
            group_views = [g.batch.bind(name) for g in self._affine.groups]
        except (ValueError, KeyError, RuntimeError) as error:
            raise ConfigError(f"cannot bind MjData field {name!r}: {error}") from error
        if self._direct:
            view = group_views[0]
        else:
            view = np.empty((self.num_envs, *group_views[0].shape[1:]), group_views[0].dtype)
            for plan, gv in zip(self._plans, group_views, strict=True):
                view[plan.env_ids] = gv
        self._views[name] = view
        self._group_views[name] = group_views
        return view

    @property
    def qpos(self) -> np.ndarray:
        return self._views["qpos"]

    @property
    def qvel(self) -> np.ndarray:
        return self._views["qvel"]

    @property
    def ctrl(self) -> np.ndarray:
        return self._views["ctrl"]

    @property
    def xfrc_applied(self) -> np.ndarray:
        return self._views["xfrc_applied"]

    def _scatter_inputs(self, env_ids: np.ndarray | None = None) -> None:
        """Copy the global input views into the groups: every env, or only `env_ids` (unique)."""
        if self._direct:
            return
        for name, view in self._views.items():
            if name in INPUT_FIELDS:
                for g, (glob, rows) in enumerate(self._group_selection(env_ids)):
                    self._group_views[name][g][rows] = view[glob]

    def _gather_outputs(self, env_ids: np.ndarray | None = None, *, inputs: bool = True) -> None:
        """Copy the bound fields from the groups into the global views: every env, or only `env_ids`.

        inputs=False skips the input fields: a step reads them and leaves them as they were, so
        after a step the global views already hold them.
        """
        if self._direct:
            return
        for name, view in self._views.items():
            if not inputs and name in INPUT_FIELDS:
                continue
            for g, (glob, rows) in enumerate(self._group_selection(env_ids)):
                view[glob] = self._group_views[name][g][rows]

    def _group_selection(self, env_ids: np.ndarray | None) -> list[tuple[np.ndarray, Any]]:
        """Per group: (global env ids, their rows in the group) of `env_ids` (all envs if None)."""
        if env_ids is None:
            return [(plan.env_ids, slice(None)) for plan in self._plans]
        groups = self._group_of_env[env_ids]
        return [(env_ids[groups == g], self._local_of_env[env_ids[groups == g]]) for g in range(len(self._plans))]

    def step(self, nstep: int = 1) -> np.ndarray:
        self._check_open()
        if isinstance(nstep, bool) or not isinstance(nstep, int) or nstep < 1:
            raise ConfigError(f"nstep must be an int >= 1, got {nstep!r}")
        self._scatter_inputs()
        time_before = self._views["time"].copy()
        warn_before = self._views["warning"][:, _DIVERGENCE_WARNINGS, 0].copy()
        errors: list[str] = []
        for group in self._affine.groups:
            try:
                group.batch.step(nstep=nstep)
            except RuntimeError as error:  # one sim failed; the others in the group still ran
                errors.append(str(error))
        self._gather_outputs(inputs=False)
        expected = time_before + nstep * self._timestep
        failed = np.abs(self._views["time"] - expected) > 0.5 * self._timestep
        failed |= (self._views["warning"][:, _DIVERGENCE_WARNINGS, 0] > warn_before).any(axis=1)
        if errors or failed.any():
            log.warning("simulation failed in envs %s: %s", np.flatnonzero(failed).tolist(), errors)
        return failed

    def reset(self, env_ids: np.ndarray, qpos: np.ndarray, qvel: np.ndarray) -> None:
        self._check_open()
        ids = validate_env_ids(env_ids, self.num_envs)
        qpos = np.asarray(qpos, np.float64)
        qvel = np.asarray(qvel, np.float64)
        if qpos.shape != (ids.size, self._model.nq) or qvel.shape != (ids.size, self._model.nv):
            raise ConfigError(
                f"reset expects qpos ({ids.size}, {self._model.nq}) and qvel ({ids.size}, {self._model.nv}), "
                f"got {qpos.shape} and {qvel.shape}"
            )
        if not (np.isfinite(qpos).all() and np.isfinite(qvel).all()):
            raise ConfigError("reset qpos/qvel must be finite")
        for name in ("ctrl", "xfrc_applied", "qfrc_applied"):
            if name in self._views:
                self._views[name][ids] = 0.0
        self._scatter_inputs(ids)
        groups = self._group_of_env[ids]
        for g in np.unique(groups):
            sel = groups == g
            rows = np.sort(self._local_of_env[ids[sel]])
            order = np.argsort(self._local_of_env[ids[sel]])
            batch = self._affine.groups[int(g)].batch
            # mjbatch's reset re-applies only the state elements that changed since the last call,
            # so a qpos equal to the pre-reset one would be lost to mj_resetData. Write the new
            # state into the reset rows afterwards and run forward: a state row is the sim's
            # state at its next call, whole.
            batch.reset(rows.astype(np.int64))
            self._group_views["qpos"][g][rows] = qpos[sel][order]
            self._group_views["qvel"][g][rows] = qvel[sel][order]
            batch.forward(rows.astype(np.int64))
        self._gather_outputs(ids)

    def forward(self, env_ids: np.ndarray | None = None) -> None:
        self._check_open()
        ids = None if env_ids is None else np.unique(validate_env_ids(env_ids, self.num_envs))
        self._scatter_inputs(ids)
        self._affine.forward(ids)
        self._gather_outputs(ids)

    def close(self) -> None:
        """Release the batches; idempotent. Any later call raises ClosedError."""
        if self._closed:
            return
        self._closed = True
        self._views.clear()
        self._group_views.clear()
        self._expanded.clear()
        self._affine = None  # type: ignore[assignment]

    def _check_open(self) -> None:
        if self._closed:
            raise ClosedError("this CpuBackend is closed; create a new one")
