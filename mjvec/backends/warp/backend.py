"""Warp backend: thousands of MuJoCo simulations as worlds of mujoco_warp, on a GPU or warp's CPU.

`variants.plan_groups` (the merge layer the CPU backend uses too) splits the scene's variants into
groups by everything mujoco_warp cannot hold per world (`build.WARP_PER_ENV`: e.g. geom types, so
box-headed and capsule-handled tools are separate groups); each group is one mujoco_warp Model +
Data whose differing, writable and set_const-derived fields have one row per world from
construction on (`build.build_model`). Steps, forwards, masked resets and set_const recomputes
replay captured graphs; model writes land in place, so a graph captured before a write sees it.

State views are torch tensors on the device. With one group (its worlds are envs 0..N-1 in order)
they are zero-copy `wp.to_torch` views of the Data; with several groups they are backend-owned
tensors, gathered from the groups after every call (outputs) and scattered into them before every
call (inputs: ctrl, xfrc_applied, qfrc_applied, mocap_pos, mocap_quat). Float32 throughout: each
world steps like its variant compiled alone with mujoco_warp, and like plain MuJoCo within float32
tolerance (tests/test_backend_warp.py and tests/test_warp_engine.py state the measured bounds).
"""

from __future__ import annotations

import functools
import logging
import operator
from collections.abc import Sequence
from typing import Any

import mujoco
import mujoco_warp as mjw
import numpy as np
import torch
import warp as wp

from mjvec.backends import fields as F
from mjvec.backends.base import (
    IDENTITY_FIELDS,
    Capabilities,
    FieldWrite,
    Scene,
    SceneBackend,
    frozen_mapping,
)
from mjvec.backends.checks import validate_env_ids
from mjvec.backends.determinism import check_deterministic
from mjvec.backends.variants import Routing, canonical_model, plan_groups
from mjvec.backends.warp import build as B
from mjvec.backends.warp.device_path import overflow_error, reset_where, step_groups
from mjvec.backends.warp.geometry import GEOMETRY_TRIGGERS, GeometryWrites, StaticGeoms
from mjvec.backends.warp.views import GroupRuntime, StateViews
from mjvec.errors import ConfigError, FieldWriteError

log = logging.getLogger(__name__)

_OVERFLOW = 2
_ACTUATOR_FLAG_FIELDS = ("actuator_gainprm", "actuator_biasprm", "actuator_gear")


class WarpBackend(GeometryWrites, SceneBackend):
    """The `Backend` contract over mujoco_warp (see mjvec.backends.base.Backend).

    device: a warp device ("cuda:0", "cpu"); None means "cuda:0". State views live there.
    nconmax: contacts per world (pooled over worlds, so an average); default mujoco_warp's guess.
    njmax: constraint rows per world (a hard bound); default covers nconmax contacts plus every
        limit, dof friction and equality row. A step that overflows either raises ConfigError.
    use_graph: replay captured graphs for step/forward/reset (False: launch eagerly, for debugging).
    overflow_check_interval: steps between host checks of the device's buffer-overflow flags (1:
        every step, which reads a mask back each step and so waits for the device).
    deterministic: set mujoco_warp's deterministic mode (``opt.deterministic = DeterminismType.ALL``)
        on every group's Model before any kernel is loaded or graph captured. What that buys on this
        device is `capabilities.determinism` (see mjvec.backends.determinism: on a GPU, mujoco-warp
        4.0.0 fixes the order of float atomics but not of contacts and constraint rows).
    """

    def __init__(
        self,
        scene: Scene,
        *,
        device: str | None = "cuda:0",
        nconmax: int | None = None,
        njmax: int | None = None,
        use_graph: bool = True,
        overflow_check_interval: int = 1000,
        progress: bool = True,
        deterministic: bool = False,
    ) -> None:
        self._deterministic = check_deterministic(deterministic)
        if isinstance(overflow_check_interval, bool) or not isinstance(overflow_check_interval, int) or \
                overflow_check_interval < 1:
            raise ConfigError(f"overflow_check_interval must be an int >= 1, got {overflow_check_interval!r}")
        for label, value in (("nconmax", nconmax), ("njmax", njmax)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise ConfigError(f"{label} must be an int >= 1 or None, got {value!r}")
        if not isinstance(use_graph, bool):
            raise ConfigError(f"use_graph must be a bool, got {use_graph!r}")
        self._wp_device = B.resolve_device("cuda:0" if device is None else device)
        self._device = str(self._wp_device.alias)
        self._scene = scene
        self._use_graph = use_graph
        plans = plan_groups(scene, B.WARP_PER_ENV, progress=progress)
        for plan in plans:
            B.check_group(plan)
        self._routing = Routing(plans, scene.num_envs)
        self._model = canonical_model(plans)
        self._groups = [B.WarpGroup(plan, *B.per_world_fields(plan)) for plan in plans]
        self._statics = [StaticGeoms(plan.template) for plan in plans]
        with wp.ScopedDevice(self._wp_device):
            for group, statics in zip(self._groups, self._statics, strict=True):
                group.m = B.build_model(group, deterministic=self._deterministic)
                # mujoco_warp's own switch: mj_rnePostConstraint at the end of every forward pass,
                # RK4 stages included, so cfrc_ext is that of each call's last forward.
                group.m.opt.run_rne_postconstraint = bool(scene.rne_post_constraint)
                ncon, nj, nnz = B.default_sizes(group.template, nconmax, njmax)
                group.d = mjw.make_data(group.template, nworld=group.nworld, nconmax=ncon, njmax=nj, njmax_nnz=nnz)
                statics.write(group, np.arange(group.nworld), {
                    name: group.plan.env_values(name) for name in ("body_pos", "body_quat", "geom_pos", "geom_quat")})
                mjw.reset_data(group.m, group.d)
                mjw.forward(group.m, group.d)
            self._runtimes = [GroupRuntime(grp, self._wp_device, use_graph) for grp in self._groups]
        self._views = StateViews(self._groups, self._runtimes, self._model, scene.num_envs, self._wp_device)
        specs = F.field_specs(self._model, np.float32)
        # What of mujoco_warp's set_const each field's writes need (geometry: the backend's own refresh).
        self._recompute_groups = B.recompute_groups(self._model)
        self._capabilities = Capabilities(
            backend="warp", fields=frozen_mapping(specs), array_namespace="torch", device=self._device,
            exact_variants=False, determinism="none" if self._wp_device.is_cuda else "run_to_run",
        )
        self._defaults = {name: self._gather_field(name) for name in specs}
        for value in self._defaults.values():
            value.setflags(write=False)
        for name in ("qpos", "qvel", "ctrl", "xfrc_applied", "time"):
            self._views.bind(name)
        with wp.ScopedDevice(self._wp_device):
            for rt in self._runtimes:
                rt.warm_up()
        self._steps = 0
        self._overflowed = torch.zeros(self.num_envs, dtype=torch.bool, device=self._views.torch_device)
        self.overflow_check_interval = overflow_check_interval
        self._start_lifetime()

    # ---- identity -------------------------------------------------------------------------
    @property
    def device(self) -> str:
        return self._device

    @property
    def deterministic(self) -> bool:
        """Whether mujoco_warp's deterministic mode is on in every group (the constructor's option)."""
        return self._deterministic

    @property
    def num_groups(self) -> int:
        return len(self._groups)

    @property
    def routing(self) -> Routing:
        """Where each env lives: `routing.group_of_env`, `routing.row_of_env` (world ids)."""
        return self._routing

    @property
    def group_handles(self) -> tuple:
        """(mujoco_warp Model, Data, env_ids) per group (for tests and benchmarks; not a stable API)."""
        return tuple((g.m, g.d, g.env_ids) for g in self._groups)

    @property
    def geom_types(self) -> np.ndarray:
        """(num_envs, ngeom) int: the mjtGeom type of canonical slot j in env i's variant, -1 if absent."""
        return self._routing.geom_types([g.plan.env_values("geom_type") for g in self._groups])

    # ---- model fields ---------------------------------------------------------------------
    def _gather_field(self, name: str, env_ids: np.ndarray | None = None) -> np.ndarray:
        canonical = F.model_value(self._model, name) if name in F.OPTION_FIELDS else np.asarray(
            getattr(self._model, name))
        per_group = [B.model_view(g, name).cpu().numpy() for g in self._groups]
        geom = name.startswith("geom_")
        out = self._routing.gather(per_group, canonical.astype(per_group[0].dtype), geom=geom)
        return out if env_ids is None else out[env_ids]

    def defaults(self, field_name: str) -> np.ndarray:
        self._capabilities.require(field_name)
        return self._defaults[field_name]

    def field_values(self, field_name: str, env_ids: np.ndarray | None = None) -> np.ndarray:
        self._check_open()
        self._capabilities.require(field_name)
        ids = None if env_ids is None else validate_env_ids(env_ids, self.num_envs)
        return self._gather_field(field_name, ids)

    def model_values(self, name: str) -> np.ndarray:
        """(num_envs, ...) float copy of any per-world model field, derived ones included
        (body_subtreemass, body_invweight0, dof_invweight0, actuator_acc0, geom_rbound, ...).
        For tests and diagnostics; geom fields use the canonical slot layout."""
        self._check_open()
        for group in self._groups:
            B.model_view(group, name)  # ConfigError for a field that is not per world
        return self._gather_field(name)

    def check_writes(self, writes: Sequence[FieldWrite]) -> None:
        """Raise exactly what `write_fields(writes)` would for these writes; write nothing."""
        self._check_open()
        self._validated(writes)

    def _validated(self, writes: Sequence[FieldWrite]) -> list[tuple[FieldWrite, np.ndarray, np.ndarray]]:
        checked = self._checked_writes(writes)
        for write, ids, values in checked:
            if write.field == "geom_size":
                self._check_sizes(write, ids, values)
        if any(w.field in _ACTUATOR_FLAG_FIELDS for w, _, _ in checked):
            self._check_actuator_flags(checked)
        return checked

    def _check_actuator_flags(self, checked: list[tuple[FieldWrite, np.ndarray, np.ndarray]]) -> None:
        """Actuator writes must not need a coupled-actuator code path mujoco_warp left out of the
        group's Model (its flags come from the template once, see build.actuator_flags)."""
        for g, group in enumerate(self._groups):
            touched = np.unique(np.concatenate(
                [rows for w, ids, _ in checked if w.field in _ACTUATOR_FLAG_FIELDS
                 for gg, _, rows in self._routing.split(ids) if gg == g] or [np.zeros(0, np.int64)]))
            if not touched.size:
                continue
            device = B.model_view(group, _ACTUATOR_FLAG_FIELDS[0]).device
            new = {n: B.model_view(group, n)[torch.as_tensor(touched, device=device)].cpu().numpy().astype(np.float64)
                   for n in _ACTUATOR_FLAG_FIELDS}
            for write, ids, values in checked:
                if write.field not in _ACTUATOR_FLAG_FIELDS:
                    continue
                for gg, pos, rows in self._routing.split(ids):
                    if gg == g:
                        at = np.searchsorted(touched, rows)
                        if write.index is None:
                            new[write.field][at] = values[pos]
                        else:
                            new[write.field][at[:, None], write.index[None, :]] = values[pos]
            need = B.actuator_flags(group.template, *(new[n] for n in _ACTUATOR_FLAG_FIELDS))
            bad = (need > B.template_actuator_flags(group.template)).any(axis=1)
            if bad.any():
                raise FieldWriteError(
                    f"actuator writes in envs {group.env_ids[touched[bad]][:8].tolist()} would need mujoco_warp's "
                    "coupled-actuator code (an affine gain/bias term, or a wrapped rotational actuator) that it "
                    "switches on per Model from the compiled values, and this model's compile did not; write values "
                    "that keep those terms zero, or compile the scene with them non-zero, or use backend='cpu'"
                )

    def write_fields(self, writes: Sequence[FieldWrite]) -> None:
        self._check_open()
        checked = self._validated(writes)
        self._count_writes(writes)
        touched = [np.zeros(g.nworld, bool) for g in self._groups]
        moved: list[tuple[str, int, np.ndarray, np.ndarray]] = []
        for write, ids, values in checked:
            for g, pos, rows in self._routing.split(ids):
                index, vals = self._local_index(g, write.field, write.index, values[pos])
                target = B.model_view(self._groups[g], write.field)
                rows_t = torch.as_tensor(rows, device=target.device)
                vals_t = torch.as_tensor(vals, dtype=target.dtype, device=target.device)
                if index is None:
                    target[rows_t] = vals_t
                elif index.size:
                    target[rows_t[:, None], torch.as_tensor(index, device=target.device)[None, :]] = vals_t
                if write.field in GEOMETRY_TRIGGERS:
                    moved.append((write.field, g, rows, np.arange(target.shape[1]) if index is None else index))
                touched[g][rows] = True
        if moved:
            self._refresh_geometry(moved)
        groups = functools.reduce(operator.or_, (self._recompute_groups[w.field] for w, _, _ in checked), 0)
        if not groups:
            return
        self._views.torch_to_warp()
        # set_const recomputes kinematics of whole groups; what the envs see stays as it was.
        keep = [np.arange(g.nworld) if t.any() else np.zeros(0, np.int64) for g, t in zip(self._groups, touched,
                                                                                        strict=True)]
        with wp.ScopedDevice(self._wp_device), self._views.outputs_kept(keep):
            for rt, rows_touched in zip(self._runtimes, touched, strict=True):
                if rows_touched.any():
                    rt.recompute(groups, rows_touched)

    def _local_index(self, g: int, field: str, index: np.ndarray | None, vals: np.ndarray) -> tuple:
        """Canonical geom slots -> group g's geom ids; a slot absent there has no effect."""
        if self._capabilities.fields[field].entity != "geom":
            return index, vals
        canon = np.arange(self._model.ngeom) if index is None else index
        local = self._groups[g].geom_map[canon]
        keep = local >= 0
        return local[keep], vals[:, keep]

    # ---- state ----------------------------------------------------------------------------
    def bind(self, name: str) -> Any:
        """(num_envs, ...) torch view of MjData field `name` (see the module docstring for liveness).

        Tails follow MuJoCo's MjData shapes (xmat/site_xmat are (..., 9), quaternions wxyz)."""
        self._check_open()
        if name in IDENTITY_FIELDS or name in B.BATCHABLE:
            raise ConfigError(f"{name!r} is a model field, not an MjData field; read it with field_values()")
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

    def step(self, nstep: int = 1) -> Any:
        """Advance every env by `nstep` physics steps; returns the (num_envs,) bool DEVICE mask of
        envs whose step failed (a non-finite or huge state, or a buffer overflow).

        Nothing is read back to the host: a failed world's state and bound outputs are put back to
        their values before the step as array ops, and the caller resets it. Buffer overflows are
        counted on the device and checked every `overflow_check_interval` steps (1: every step),
        where a ConfigError names the envs and the fix (raise nconmax / njmax).
        """
        self._check_open()
        if isinstance(nstep, bool) or not isinstance(nstep, int) or nstep < 1:
            raise ConfigError(f"nstep must be an int >= 1, got {nstep!r}")
        failed, overflowed = step_groups(self._views, self._runtimes, self._wp_device, nstep)
        self._overflowed = self._overflowed | overflowed
        self._steps += 1
        if self._steps % self.overflow_check_interval == 0:
            self.check_overflow()
        return failed

    def check_overflow(self) -> None:
        """Raise ConfigError if any world overflowed a buffer since the last check (reads one device
        mask back to the host). Those worlds' steps were undone and reported failed."""
        overflowed = self._overflowed.cpu().numpy().copy()
        if not overflowed.any():
            return
        self._overflowed.zero_()
        kinds = 0
        for rt in self._runtimes:
            kinds |= int(np.bitwise_or.reduce(rt.group.d.overflow.numpy(), initial=0)) & B.buffer_overflows()
            rt.group.d.overflow.zero_()
        raise overflow_error(kinds, np.flatnonzero(overflowed))

    def _forward_rows(self, rows_per_group: list[np.ndarray]) -> None:
        """Forward the groups with rows listed; outputs of unlisted worlds are kept as they were."""
        keep = [np.setdiff1d(np.arange(g.nworld), rows) if rows.size else np.zeros(0, np.int64)
                for g, rows in zip(self._groups, rows_per_group, strict=True)]
        with self._views.outputs_kept(keep):
            for rt, rows in zip(self._runtimes, rows_per_group, strict=True):
                if rows.size:
                    rt.launch_forward()
            self._views.warp_to_torch()

    def reset(self, env_ids: Any, qpos: Any, qvel: Any) -> None:
        """mj_resetData for these envs (every state field, inputs and mocap included, goes back to
        the model's defaults), then qpos/qvel, then forward. Other envs are untouched.

        env_ids: host ids (K,) with qpos/qvel (K, nq)/(K, nv); or a (num_envs,) bool DEVICE mask with
        qpos/qvel (num_envs, ...) whose masked rows are used: then nothing is read back to the host
        (the reset, the state writes and the forward run for every world; the others keep their
        state and outputs). When every bound output is kinematic (`KINEMATIC_OUTPUTS`: body, geom
        and site poses, COM quantities, cvel), the masked reset runs only the kinematics stages
        instead of the whole forward; the reset worlds' other derived fields (contacts, qacc, ...)
        are then stale until their next step, which recomputes them.
        """
        self._check_open()
        if isinstance(env_ids, torch.Tensor):
            reset_where(self._views, self._runtimes, self._wp_device, self._model, env_ids, qpos, qvel)
            return
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
        # Pending inputs of the other envs must reach their worlds before the groups' forward.
        self._views.scatter_inputs()
        self._views.torch_to_warp()
        rows_per_group = [np.zeros(0, np.int64) for _ in self._groups]
        with wp.ScopedDevice(self._wp_device):
            for g, _, rows in self._routing.split(ids):
                rows_per_group[g] = rows
                self._runtimes[g].launch_reset(rows)
            self._views.warp_to_torch()
            for g, pos, rows in self._routing.split(ids):
                index = torch.as_tensor(pos, device=self._views.torch_device)
                self._runtimes[g].set_state(rows, qpos[index], qvel[index])
            self._forward_rows(rows_per_group)
        self._views.gather(ids)

    def _assign_input(self, view: Any, ids: Any, rows: Any, values: Any) -> None:
        """Write validated input values (host or device) into a torch view."""
        values = torch.as_tensor(values, dtype=view.dtype, device=view.device)
        if isinstance(ids, np.ndarray):
            ids = torch.as_tensor(ids, device=view.device)
        if rows is not None:
            rows = torch.as_tensor(rows, device=view.device)
        super()._assign_input(view, ids, rows, values)

    def forward(self, env_ids: np.ndarray | None = None) -> None:
        self._check_open()
        ids = np.arange(self.num_envs) if env_ids is None else validate_env_ids(env_ids, self.num_envs)
        self._views.scatter_inputs()
        self._views.torch_to_warp()
        rows_per_group = [np.zeros(0, np.int64) for _ in self._groups]
        for g, _, rows in self._routing.split(ids):
            rows_per_group[g] = np.sort(rows)
        with wp.ScopedDevice(self._wp_device):
            self._forward_rows(rows_per_group)
        self._views.gather(ids)

    # ---- rendering and lifetime -----------------------------------------------------------
    def env_template(self, env_id: int) -> mujoco.MjModel:
        """The template model of env `env_id`'s group (shared: copy it before writing into it)."""
        return self._groups[int(self._routing.group_of_env[env_id])].template

    def write_env_model(self, env_id: int, model: mujoco.MjModel) -> None:
        """Write env `env_id`'s model (its group template with its own per-world values, float32 ->
        float64) into `model`, a copy of `env_template(env_id)` (e.g. to render the env as simulated)."""
        self._check_open()
        g, row = int(self._routing.group_of_env[env_id]), int(self._routing.row_of_env[env_id])
        B.env_model_values(self._groups[g], row, model)

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
