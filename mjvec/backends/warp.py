"""Warp backend: thousands of MuJoCo simulations as worlds of mujoco_warp, on a GPU or warp's CPU.

Variants (tools) are grouped by everything mujoco_warp cannot hold per world (geom slots, types,
collision filters); each group is one mujoco_warp Model + Data whose variant-dependent, writable
and derived model fields have one row per world from construction on (`_warp_build`). Steps,
forwards, masked resets and set_const recomputes replay captured graphs; model writes land in
place, so a graph captured before a write sees it.

State views are torch tensors on the device. With one group (its worlds are envs 0..N-1 in order)
they are zero-copy `wp.to_torch` views of the Data; with several groups they are backend-owned
tensors, gathered from the groups after every call (outputs) and scattered into them before every
call (inputs: ctrl, xfrc_applied, qfrc_applied, mocap_pos, mocap_quat). Float32 throughout: each
world steps like its variant compiled alone with mujoco_warp, and like plain MuJoCo within float32
tolerance (tests/test_backend_warp.py states the measured bounds).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from mjvec.backends import fields as F
from mjvec.backends.base import (
    IDENTITY_FIELDS,
    Capabilities,
    FieldWrite,
    RecomputeLevel,
    Scene,
    SceneBackend,
    combine_levels,
    entity_of_field,
    frozen_mapping,
    validate_env_ids,
)
from mjvec.errors import ClosedError, ConfigError, InstallError


def _import_warp() -> tuple[Any, Any, Any]:
    """(warp, mujoco_warp, torch), or InstallError saying what to install."""
    try:
        import mujoco_warp
        import warp
    except ImportError as error:
        raise InstallError(
            f"the Warp backend needs warp-lang and mujoco-warp, which are not importable ({error}); "
            "fix: pip install mjvec[warp]"
        ) from error
    try:
        import torch
    except ImportError as error:
        raise InstallError(
            f"the Warp backend's state views are torch tensors, but torch is not importable ({error}); "
            "fix: pip install mjvec[warp] torch"
        ) from error
    return warp, mujoco_warp, torch


wp, mjw, torch = _import_warp()

# After the install guard: these import warp, mujoco_warp and torch at module level.
from mjvec.backends import _warp_build as B  # noqa: E402
from mjvec.backends._warp_views import GroupRuntime, StateViews  # noqa: E402

log = logging.getLogger(__name__)

_ZEROED_ON_RESET = ("ctrl", "xfrc_applied", "qfrc_applied")
_OVERFLOW = 2


class WarpBackend(SceneBackend):
    """The `Backend` contract over mujoco_warp (see mjvec.backends.base.Backend).

    device: a warp device ("cuda:0", "cpu"); None means "cuda:0". State views live there.
    nconmax: contacts per world (pooled over worlds, so an average); default mujoco_warp's guess.
    njmax: constraint rows per world (a hard bound); default covers nconmax contacts plus every
        limit, dof friction and equality row. A step that overflows either raises ConfigError.
    use_graph: replay captured graphs for step/forward/reset (False: launch eagerly, for debugging).
    """

    def __init__(
        self,
        scene: Scene,
        *,
        device: str | None = "cuda:0",
        nconmax: int | None = None,
        njmax: int | None = None,
        use_graph: bool = True,
        progress: bool = True,
    ) -> None:
        for label, value in (("nconmax", nconmax), ("njmax", njmax)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise ConfigError(f"{label} must be an int >= 1 or None, got {value!r}")
        if not isinstance(use_graph, bool):
            raise ConfigError(f"use_graph must be a bool, got {use_graph!r}")
        self._wp_device = B.resolve_device("cuda:0" if device is None else device)
        self._device = str(self._wp_device.alias)
        self._scene = scene
        self._use_graph = use_graph
        self._closed = False
        self._groups = B.plan_groups(scene, progress=progress)
        self._model = B.canonical_layout(self._groups)
        self._group_of_env = np.empty(scene.num_envs, np.int64)
        self._local_of_env = np.empty(scene.num_envs, np.int64)
        with wp.ScopedDevice(self._wp_device):
            for g, group in enumerate(self._groups):
                self._group_of_env[group.env_ids] = g
                self._local_of_env[group.env_ids] = np.arange(group.nworld)
                group.m = B.build_model(group)
                ncon, nj = B.default_sizes(group.pack.model, nconmax, njmax)
                group.d = mjw.make_data(group.pack.model, nworld=group.nworld, nconmax=ncon, njmax=nj)
                mjw.reset_data(group.m, group.d)
                mjw.forward(group.m, group.d)
            self._runtimes = [GroupRuntime(grp, self._wp_device, use_graph) for grp in self._groups]
        self._views = StateViews(self._groups, self._runtimes, self._model, scene.num_envs, self._wp_device)
        # geom_size / geom_pos need per-world geom_rbound/geom_aabb refreshes, not implemented here
        # yet: not declared, so a term naming them fails closed at wrapper construction.
        specs = F.field_specs(self._model, np.float32, exclude=frozenset({"geom_size", "geom_pos"}))
        self._capabilities = Capabilities(
            backend="warp", fields=frozen_mapping(specs), array_namespace="torch", device=self._device,
            exact_variants=False,
        )
        self._defaults = {name: self._gather_field(name) for name in specs}
        for value in self._defaults.values():
            value.setflags(write=False)
        for name in ("qpos", "qvel", "ctrl", "xfrc_applied", "time"):
            self.bind(name)
        with wp.ScopedDevice(self._wp_device):
            for rt in self._runtimes:
                rt.warm_up()

    # ---- identity -------------------------------------------------------------------------
    @property
    def device(self) -> str:
        return self._device

    @property
    def num_groups(self) -> int:
        return len(self._groups)

    @property
    def group_handles(self) -> tuple:
        """(mujoco_warp Model, Data, env_ids) per group (for tests and benchmarks; not a stable API)."""
        return tuple((g.m, g.d, g.env_ids) for g in self._groups)

    @property
    def geom_types(self) -> np.ndarray:
        """(num_envs, ngeom) int: the mjtGeom type of canonical slot j in env i's variant, -1 if absent."""
        out = np.full((self.num_envs, self._model.ngeom), -1, np.int64)
        for group in self._groups:
            have = np.flatnonzero(group.geom_map >= 0)
            out[np.ix_(group.env_ids, have)] = group.pack.model.geom_type[group.geom_map[have]]
        return out

    # ---- model fields ---------------------------------------------------------------------
    def _gather_field(self, name: str) -> np.ndarray:
        canonical = np.asarray(self._model.stat.meaninertia) if name == "meaninertia" else F.model_value(
            self._model, name)
        per_group = [B.model_view(self._groups[g], name).cpu().numpy() for g in range(len(self._groups))]
        return B.gather_rows(self._groups, self.num_envs, per_group, entity_of_field(name), canonical)

    def defaults(self, field_name: str) -> np.ndarray:
        self._check_open()
        self._capabilities.require(field_name)
        return self._defaults[field_name]

    def field_values(self, field_name: str, env_ids: np.ndarray | None = None) -> np.ndarray:
        self._check_open()
        self._capabilities.require(field_name)
        values = self._gather_field(field_name)
        return values if env_ids is None else values[validate_env_ids(env_ids, self.num_envs)]

    def model_values(self, name: str) -> np.ndarray:
        """(num_envs, ...) float copy of any per-world model field, derived ones included
        (body_subtreemass, body_invweight0, dof_invweight0, actuator_acc0, meaninertia, ...).
        For tests and diagnostics; geom fields use the canonical slot layout."""
        self._check_open()
        return self._gather_field(name)

    def check_writes(self, writes: Sequence[FieldWrite]) -> None:
        """Raise what `write_fields(writes)` would for each write; write nothing (no geometry fields here)."""
        self._check_open()
        self._checked_writes(writes)

    def write_fields(self, writes: Sequence[FieldWrite]) -> None:
        self._check_open()
        checked = self._checked_writes(writes)
        touched = [np.zeros(g.nworld, bool) for g in self._groups]
        for write, ids, values in checked:
            groups = self._group_of_env[ids]
            for g in np.unique(groups).tolist():
                sel = groups == g
                rows = self._local_of_env[ids[sel]]
                index, vals = write.index, values[sel]
                if self._capabilities.fields[write.field].entity == "geom":
                    # Canonical slot ids -> this group's geom ids; absent slots have no effect.
                    canon = np.arange(self._model.ngeom) if index is None else index
                    local = self._groups[g].geom_map[canon]
                    keep = local >= 0
                    index, vals = local[keep], vals[:, keep]
                target = B.model_view(self._groups[g], write.field)
                rows_t = torch.as_tensor(rows, device=target.device)
                vals_t = torch.as_tensor(vals, dtype=target.dtype, device=target.device)
                if index is None:
                    target[rows_t] = vals_t
                elif index.size:
                    target[rows_t[:, None], torch.as_tensor(index, device=target.device)[None, :]] = vals_t
                touched[g][rows] = True
        level = combine_levels(self._capabilities.fields[w.field].recompute for w, _, _ in checked)
        if level == RecomputeLevel.NONE:
            return
        self._views.torch_to_warp()
        # set_const recomputes kinematics of whole groups; what the envs see stays as it was.
        keep = [np.arange(g.nworld) if t.any() else np.zeros(0, np.int64) for g, t in zip(self._groups, touched,
                                                                                        strict=True)]
        with wp.ScopedDevice(self._wp_device), self._views.outputs_kept(keep):
            for rt, rows_touched in zip(self._runtimes, touched, strict=True):
                if rows_touched.any():
                    rt.recompute(level, rows_touched)

    # ---- state ----------------------------------------------------------------------------
    def bind(self, name: str) -> Any:
        """(num_envs, ...) torch view of MjData field `name` (see the module docstring for liveness).

        Tails follow MuJoCo's MjData shapes (xmat/site_xmat are (..., 9), quaternions wxyz)."""
        self._check_open()
        if name in IDENTITY_FIELDS:
            raise ConfigError(f"{name!r} is a model field, not an MjData field")
        return self._views.bind(name)

    @property
    def qpos(self) -> Any:
        return self._views.views["qpos"]

    @property
    def qvel(self) -> Any:
        return self._views.views["qvel"]

    @property
    def ctrl(self) -> Any:
        return self._views.views["ctrl"]

    @property
    def xfrc_applied(self) -> Any:
        return self._views.views["xfrc_applied"]

    def step(self, nstep: int = 1) -> np.ndarray:
        self._check_open()
        if isinstance(nstep, bool) or not isinstance(nstep, int) or nstep < 1:
            raise ConfigError(f"nstep must be an int >= 1, got {nstep!r}")
        self._views.scatter_inputs()
        self._views.torch_to_warp()
        with wp.ScopedDevice(self._wp_device):
            for rt in self._runtimes:
                rt.launch_step(nstep)
            flags = [rt.bad.numpy() for rt in self._runtimes]  # one host sync, after all launches
            self._views.warp_to_torch()
            if any((f & _OVERFLOW).any() for f in flags):
                self._undo_step_and_raise(flags)
            failed_rows = [np.flatnonzero(f) for f in flags]
            for rt, rows in zip(self._runtimes, failed_rows, strict=True):
                if rows.size:
                    rt.restore_backup(rows)
            if any(rows.size for rows in failed_rows):
                self._forward_rows(failed_rows)
        self._views.gather()
        failed = np.zeros(self.num_envs, bool)
        for group, rows in zip(self._groups, failed_rows, strict=True):
            failed[group.env_ids[rows]] = True
        if failed.any():
            log.warning("simulation failed (non-finite state) in envs %s; restored their pre-step state",
                        np.flatnonzero(failed).tolist())
        return failed

    def _undo_step_and_raise(self, flags: list[np.ndarray]) -> None:
        kinds = 0
        for rt in self._runtimes:
            kinds |= int(np.bitwise_or.reduce(rt.group.d.overflow.numpy(), initial=0))
            rt.restore_backup(np.arange(rt.group.nworld))
            rt.group.d.overflow.zero_()
        self._forward_rows([np.arange(g.nworld) for g in self._groups])
        self._views.gather()
        envs = np.concatenate([g.env_ids[np.flatnonzero(f & _OVERFLOW)] for g, f in zip(self._groups, flags,
                                                                                        strict=True)])
        names = [k.name for k in B.mjw_types.OverflowType if kinds & k]
        raise ConfigError(
            f"mujoco_warp's buffers overflowed ({names}; NEFC: raise njmax, BROADPHASE/NARROWPHASE: raise "
            f"nconmax) in envs {envs[:8].tolist()} ({envs.size} in all), so that step was wrong and was "
            "undone. Fix: build the backend with a larger nconmax and/or njmax (WarpBackend(..., nconmax=..., "
            "njmax=...))"
        )

    def _forward_rows(self, rows_per_group: list[np.ndarray]) -> None:
        """Forward the groups with rows listed; outputs of unlisted worlds are kept as they were."""
        keep = [np.setdiff1d(np.arange(g.nworld), rows) if rows.size else np.zeros(0, np.int64)
                for g, rows in zip(self._groups, rows_per_group, strict=True)]
        with self._views.outputs_kept(keep):
            for rt, rows in zip(self._runtimes, rows_per_group, strict=True):
                if rows.size:
                    rt.launch_forward()
            self._views.warp_to_torch()

    def reset(self, env_ids: np.ndarray, qpos: Any, qvel: Any) -> None:
        self._check_open()
        ids = validate_env_ids(env_ids, self.num_envs)
        nq, nv = self._model.nq, self._model.nv
        qpos = torch.as_tensor(qpos, dtype=torch.float32, device=self._views.torch_device)
        qvel = torch.as_tensor(qvel, dtype=torch.float32, device=self._views.torch_device)
        if tuple(qpos.shape) != (ids.size, nq) or tuple(qvel.shape) != (ids.size, nv):
            raise ConfigError(
                f"reset expects qpos ({ids.size}, {nq}) and qvel ({ids.size}, {nv}), "
                f"got {tuple(qpos.shape)} and {tuple(qvel.shape)}"
            )
        if not (bool(torch.isfinite(qpos).all()) and bool(torch.isfinite(qvel).all())):
            raise ConfigError("reset qpos/qvel must be finite")
        if ids.size == 0:
            return
        for name in _ZEROED_ON_RESET:
            if name in self._views.views:
                self._views.views[name][torch.as_tensor(ids, device=self._views.torch_device)] = 0.0
        pending = self._views.pending_mocap(ids)
        self._views.scatter_inputs()
        self._views.torch_to_warp()
        groups = self._group_of_env[ids]
        rows_per_group = [np.zeros(0, np.int64) for _ in self._groups]
        with wp.ScopedDevice(self._wp_device):
            for g in np.unique(groups).tolist():
                sel = groups == g
                rows = self._local_of_env[ids[sel]]
                rows_per_group[g] = rows
                self._runtimes[g].launch_reset(rows)
            self._views.warp_to_torch()
            for g in np.unique(groups).tolist():
                sel = torch.as_tensor(groups == g, device=self._views.torch_device)
                self._runtimes[g].set_state(rows_per_group[g], qpos[sel], qvel[sel])
            self._views.restore_pending_mocap(pending)
            self._forward_rows(rows_per_group)
        self._views.gather(ids)

    def forward(self, env_ids: np.ndarray | None = None) -> None:
        self._check_open()
        ids = np.arange(self.num_envs) if env_ids is None else validate_env_ids(env_ids, self.num_envs)
        self._views.scatter_inputs()
        self._views.torch_to_warp()
        rows_per_group = [np.sort(self._local_of_env[ids[self._group_of_env[ids] == g]])
                          for g in range(len(self._groups))]
        with wp.ScopedDevice(self._wp_device):
            self._forward_rows(rows_per_group)
        self._views.gather(ids)

    def close(self) -> None:
        """Release the worlds and graphs; idempotent. Any later call raises ClosedError."""
        if self._closed:
            return
        self._closed = True
        self._views.close()
        for rt in self._runtimes:
            rt.close()
        for group in self._groups:
            group.m = group.d = None
        self._runtimes = []

    def _check_open(self) -> None:
        if self._closed:
            raise ClosedError("this WarpBackend is closed; create a new one")

