"""The Warp engine: each variant group's worlds as one mujoco_warp Model + Data, on a GPU or warp's CPU.

Each group's differing, writable and set_const-derived fields have one row per world from
construction on (`build.build_model`). Steps, forwards, masked resets and set_const recomputes
replay captured graphs (`runtime.GroupRuntime`); model writes land in place, so a graph captured
before a write sees it. This module holds only the mujoco_warp side of the contract; everything
else is `GroupedBackend`'s (mjvec.backends.grouped).
"""

from __future__ import annotations

import dataclasses
import functools
import operator
from collections.abc import Mapping
from typing import Any

import mujoco
import mujoco_warp as mjw
import numpy as np
import torch
import warp as wp
from mujoco_warp._src import types as mjw_types

from mjvec.backends.base import Capabilities, FieldSpec
from mjvec.backends.engine import Checked, Split
from mjvec.backends.groupviews import GroupViews
from mjvec.backends.variants import Routing, VariantGroup
from mjvec.backends.warp import build as warp_build
from mjvec.backends.warp.device_path import outputs_kept, overflow_error, reset_where, step_groups
from mjvec.backends.warp.geometry import GEOMETRY_TRIGGERS, StaticGeoms, refresh_geometry
from mjvec.backends.warp.runtime import GroupRuntime
from mjvec.errors import ConfigError, FieldWriteError

_ACTUATOR_FLAG_FIELDS = ("actuator_gainprm", "actuator_biasprm", "actuator_gear")
# Data arrays with one row per world (contacts and a few counters are pooled over worlds).
_PER_WORLD_DATA = frozenset(
    f.name for f in dataclasses.fields(mjw_types.Data) if getattr(f.type, "shape", ())[:1] == ("nworld",)
)


class WarpEngine:
    """The `Engine` (mjvec.backends.engine) over mujoco_warp; options as `WarpBackend`'s."""

    per_env = warp_build.WARP_PER_ENV
    field_dtype = np.dtype(np.float32)
    whole_groups = True  # mujoco_warp launches over every world of a Model
    geometry_triggers = GEOMETRY_TRIGGERS
    start_views = ("time",)

    def __init__(self, wp_device: Any, *, nconmax: int | None, njmax: int | None, use_graph: bool,
                 deterministic: bool, overflow_check_interval: int, rne_post_constraint: bool = False) -> None:
        self.wp_device = wp_device
        self._rne_post_constraint = bool(rne_post_constraint)
        self.deterministic = deterministic
        self.overflow_check_interval = overflow_check_interval
        self._sizes = (nconmax, njmax)
        self._use_graph = use_graph
        self.worlds: list[warp_build.Worlds] = []
        self.runtimes: list[GroupRuntime] = []

    def build(self, groups: list[VariantGroup], routing: Routing, model: mujoco.MjModel, views: GroupViews) -> None:
        for group in groups:
            warp_build.check_group(group)
        self._routing, self._views = routing, views
        self.worlds = [warp_build.Worlds(group, *warp_build.per_world_fields(group)) for group in groups]
        self._statics = [StaticGeoms(group.template) for group in groups]
        with wp.ScopedDevice(self.wp_device):
            for worlds, statics in zip(self.worlds, self._statics, strict=True):
                worlds.m = warp_build.build_model(worlds, deterministic=self.deterministic)
                # mujoco_warp's own switch: mj_rnePostConstraint at the end of every forward pass,
                # RK4 stages included, so cfrc_ext is that of each call's last forward.
                worlds.m.opt.run_rne_postconstraint = self._rne_post_constraint
                ncon, nj, nnz = warp_build.default_sizes(worlds.template, *self._sizes)
                worlds.d = mjw.make_data(worlds.template, nworld=worlds.nworld, nconmax=ncon, njmax=nj, njmax_nnz=nnz)
                statics.write(worlds, np.arange(worlds.nworld), {
                    name: worlds.group.env_values(name) for name in ("body_pos", "body_quat", "geom_pos", "geom_quat")})
                mjw.reset_data(worlds.m, worlds.d)
                mjw.forward(worlds.m, worlds.d)
            self.runtimes = [GroupRuntime(w, self.wp_device, self._use_graph) for w in self.worlds]
        # What of mujoco_warp's set_const each field's writes need (geometry: the engine's own refresh).
        self._recompute_groups = warp_build.recompute_groups(model)
        self._mjdata = mujoco.MjData(model)  # MuJoCo's tails of the Data arrays, for the views

    def capabilities(self, fields: Mapping[str, FieldSpec]) -> Capabilities:
        return Capabilities(
            backend="warp", fields=fields, array_namespace="torch", device=str(self.wp_device.alias),
            exact_variants=False, determinism="none" if self.wp_device.is_cuda else "run_to_run",
            images=frozenset({"depth", "rgb", "segmentation"}),
        )

    def start(self) -> None:
        with wp.ScopedDevice(self.wp_device):
            for rt in self.runtimes:
                rt.warm_up()
        self.steps = 0
        self.overflowed = torch.zeros(self._routing.group_of_env.size, dtype=torch.bool,
                                      device=self.runtimes[0].tensor("qpos").device)

    # ---- model fields ---------------------------------------------------------------------
    def rows(self, g: int, name: str) -> np.ndarray:
        worlds = self.worlds[g]
        if name in worlds.per_world or name in worlds.options:
            return warp_build.model_view(worlds, name).cpu().numpy()
        return worlds.group.env_values(name)  # the same in every world since it was compiled

    def check_writes(self, checked: Checked) -> None:
        if any(w.field in _ACTUATOR_FLAG_FIELDS for w, _, _ in checked):
            for g in range(len(self.worlds)):
                self._check_actuator_flags(g, checked)

    def _check_actuator_flags(self, g: int, checked: Checked) -> None:
        """Actuator writes must not need a coupled-actuator code path mujoco_warp left out of the
        group's Model (its flags come from the template once, see build.actuator_flags)."""
        worlds = self.worlds[g]
        parts = [(w, v[pos], rows) for w, ids, v in checked if w.field in _ACTUATOR_FLAG_FIELDS
                 for gg, pos, rows in self._routing.split(ids) if gg == g]
        touched = np.unique(np.concatenate([rows for _, _, rows in parts] or [np.zeros(0, np.int64)]))
        if not touched.size:
            return
        index = torch.as_tensor(touched, device=warp_build.model_view(worlds, _ACTUATOR_FLAG_FIELDS[0]).device)
        new = {n: warp_build.model_view(worlds, n)[index].cpu().numpy().astype(np.float64)
               for n in _ACTUATOR_FLAG_FIELDS}
        for write, values, rows in parts:
            at = np.searchsorted(touched, rows)
            if write.index is None:
                new[write.field][at] = values
            else:
                new[write.field][at[:, None], write.index[None, :]] = values
        need = warp_build.actuator_flags(worlds.template, *(new[n] for n in _ACTUATOR_FLAG_FIELDS))
        bad = (need > warp_build.template_actuator_flags(worlds.template)).any(axis=1)
        if bad.any():
            raise FieldWriteError(
                f"actuator writes in envs {worlds.env_ids[touched[bad]][:8].tolist()} would need mujoco_warp's "
                "coupled-actuator code (an affine gain/bias term, or a wrapped rotational actuator) that it "
                "switches on per Model from the compiled values, and this model's compile did not; write values "
                "that keep those terms zero, or compile the scene with them non-zero, or use backend='cpu'"
            )

    def write(self, g: int, name: str, rows: np.ndarray, index: np.ndarray | None, values: np.ndarray) -> None:
        target = warp_build.model_view(self.worlds[g], name)
        rows_t = torch.as_tensor(rows, device=target.device)
        values_t = torch.as_tensor(values, dtype=target.dtype, device=target.device)
        if index is None:
            target[rows_t] = values_t
        else:
            target[rows_t[:, None], torch.as_tensor(index, device=target.device)[None, :]] = values_t

    def refresh_geometry(self, moved: list[tuple[str, int, np.ndarray, np.ndarray]]) -> None:
        refresh_geometry(self.worlds, self._statics, moved)

    def recompute(self, fields: frozenset[str], touched: list[np.ndarray]) -> None:
        groups = functools.reduce(operator.or_, (self._recompute_groups[f] for f in fields), 0)
        if not groups:
            return
        masks = [np.isin(np.arange(w.nworld), rows) for w, rows in zip(self.worlds, touched, strict=True)]
        # set_const recomputes kinematics of whole groups; what the envs see stays as it was.
        keep = [np.arange(w.nworld) if rows.size else np.zeros(0, np.int64)
                for w, rows in zip(self.worlds, touched, strict=True)]
        with wp.ScopedDevice(self.wp_device), outputs_kept(self._views, self.runtimes, keep, self.wp_device):
            for rt, mask in zip(self.runtimes, masks, strict=True):
                if mask.any():
                    rt.recompute(groups, mask)

    # ---- state ----------------------------------------------------------------------------
    def bind(self, g: int, name: str) -> Any:
        """Group g's torch view of Data field `name`, in MjData's tail (xmat as (..., 9), ...)."""
        if name not in _PER_WORLD_DATA:
            raise ConfigError(
                f"cannot bind MjData field {name!r}: mujoco_warp's Data has no per-world array of that name "
                "(contact and efc arrays are pooled over worlds and cannot be bound)"
            )
        t = self.runtimes[g].tensor(name)
        reference = getattr(self._mjdata, name, None)
        if reference is not None:
            tail = np.shape(reference)
            if int(np.prod(tail)) == int(np.prod(t.shape[1:])):
                return t.reshape(t.shape[0], *tail)
        return t

    def step(self, nstep: int) -> Any:
        failed, overflowed = step_groups(self._views, self.runtimes, self.wp_device, nstep)
        self.overflowed = self.overflowed | overflowed
        self.steps += 1
        if self.steps % self.overflow_check_interval == 0:
            self.check_overflow()
        return failed

    def check_overflow(self) -> None:
        """Raise ConfigError if any world overflowed a buffer since the last check (reads one device
        mask back to the host). Those worlds' steps were undone and reported failed."""
        overflowed = self.overflowed.cpu().numpy().copy()
        if not overflowed.any():
            return
        self.overflowed.zero_()
        kinds = 0
        for rt in self.runtimes:
            kinds |= int(np.bitwise_or.reduce(rt.worlds.d.overflow.numpy(), initial=0)) & warp_build.buffer_overflows()
            rt.worlds.d.overflow.zero_()
        raise overflow_error(kinds, np.flatnonzero(overflowed))

    def _forward_rows(self, rows_per_group: list[np.ndarray]) -> None:
        """Forward the groups with rows listed; outputs of unlisted worlds are kept as they were."""
        keep = [np.setdiff1d(np.arange(w.nworld), rows) if rows.size else np.zeros(0, np.int64)
                for w, rows in zip(self.worlds, rows_per_group, strict=True)]
        with outputs_kept(self._views, self.runtimes, keep, self.wp_device):
            for rt, rows in zip(self.runtimes, rows_per_group, strict=True):
                if rows.size:
                    rt.launch_forward()
            warp_build.warp_to_torch(self.wp_device)

    def reset(self, split: Split, state: Mapping[str, Any]) -> None:
        warp_build.torch_to_warp(self.wp_device)
        rows_per_group = [np.zeros(0, np.int64) for _ in self.worlds]
        with wp.ScopedDevice(self.wp_device):
            for g, _, rows in split:
                rows_per_group[g] = rows
                self.runtimes[g].launch_reset(rows)
            warp_build.warp_to_torch(self.wp_device)
            for g, pos, rows in split:
                index = torch.as_tensor(pos, device=state["qpos"].device)
                self.runtimes[g].set_state(rows, {name: value[index] for name, value in state.items()})
            self._forward_rows(rows_per_group)

    def reset_where(self, mask: Any, state: Mapping[str, Any]) -> None:
        reset_where(self._views, self.runtimes, self.wp_device, mask, state)

    def forward(self, split: Split) -> None:
        warp_build.torch_to_warp(self.wp_device)
        rows_per_group = [np.zeros(0, np.int64) for _ in self.worlds]
        for g, _, rows in split:
            rows_per_group[g] = rows
        with wp.ScopedDevice(self.wp_device):
            self._forward_rows(rows_per_group)

    # ---- camera images ---------------------------------------------------------------------
    def sense(self, rows: list[np.ndarray] | None) -> None:
        """The sensor cadence: every world computes its sensors at a step's last substep only (a
        launch covers all worlds, so `rows` is not read); resets and forwards compute them."""
        for rt in self.runtimes:
            rt.sense_last_substep = True

    def image_renderer(self, cameras: tuple[int, ...], kinds: frozenset[str]) -> Any:
        from mjvec.backends.warp.render import BatchRenderer

        return BatchRenderer(self.worlds, self._routing, self.wp_device, cameras, kinds)

    # ---- rendering and lifetime -----------------------------------------------------------
    def write_env_model(self, g: int, row: int, model: mujoco.MjModel) -> None:
        warp_build.env_model_values(self.worlds[g], row, model)

    def close(self) -> None:
        for rt in self.runtimes:
            rt.close()
        for worlds in self.worlds:
            worlds.m = worlds.d = None
        self.runtimes = []

    def forked_away(self) -> None:
        """Nothing: warp frees nothing of a forked child's copy at exit."""
