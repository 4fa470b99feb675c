"""The Warp backend's per-group runtime (graphs, backups, recompute) and its global state views.

Imported only by `mjvec.backends.warp`, after its install guard.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from typing import Any

import mujoco
import mujoco_warp as mjw
import numpy as np
import torch
import warp as wp
from mujoco_warp._src import types as mjw_types

from mjvec.backends.warp import build as B
from mjvec.backends.warp.build import torch_to_warp, warp_to_torch
from mjvec.errors import ConfigError

INPUT_FIELDS = frozenset({"ctrl", "xfrc_applied", "qfrc_applied", "mocap_pos", "mocap_quat"})
# What a step advances; a failed world is put back to its copy from before the step.
BACKUP_FIELDS = ("qpos", "qvel", "act", "qacc_warmstart", "time")
# Never changed by forward or set_const: not outputs that need keeping for untouched worlds.
_STATE_FIELDS = INPUT_FIELDS | set(BACKUP_FIELDS)
# What mujoco_warp's kinematics, com_pos and com_vel compute from qpos, qvel and mocap: a masked
# reset that only these outputs are bound to needs no collision or constraint solve.
KINEMATIC_OUTPUTS = frozenset({
    "xpos", "xquat", "xmat", "xipos", "ximat", "xanchor", "xaxis", "geom_xpos", "geom_xmat",
    "site_xpos", "site_xmat", "subtree_com", "cinert", "cdof", "cvel", "cdof_dot",
})
# Data arrays with one row per world (contacts and a few counters are pooled over worlds).
_PER_WORLD_DATA = frozenset(
    f.name for f in dataclasses.fields(mjw_types.Data) if getattr(f.type, "shape", ())[:1] == ("nworld",)
)
_MAXVAL = 1.0e10  # MuJoCo's mjMAXVAL: larger magnitudes count as diverged, as in mj_checkPos


@wp.func
def _bad(x: float) -> int:
    if wp.isfinite(x) and wp.abs(x) <= _MAXVAL:
        return 0
    return 1


@wp.kernel
def _check_worlds(
    qpos: wp.array2d(dtype=float),
    qvel: wp.array2d(dtype=float),
    qacc: wp.array2d(dtype=float),
    overflow: wp.array(dtype=int),
    buffers: int,
    bad_out: wp.array(dtype=int),
):
    """bad_out[w]: bit 0 = non-finite/huge qpos, qvel or qacc; bit 1 = a buffer overflowed."""
    w = wp.tid()
    flag = int(0)  # noqa: UP018, RUF046  (warp: a loop-carried variable must be typed, not a literal)
    for i in range(qpos.shape[1]):
        flag = flag | _bad(qpos[w, i])
    for i in range(qvel.shape[1]):
        flag = flag | _bad(qvel[w, i]) | _bad(qacc[w, i])
    if (overflow[w] & buffers) != 0:
        flag = flag | 2
    bad_out[w] = flag


def _derived_names(groups: int) -> list[str]:
    """The per-world model fields a set_const of these groups writes (geom bounds aside)."""
    return [name for bit, names in B.SET_CONST_OUTPUTS.items() if groups & bit for name in names]


class GroupRuntime:
    """One group's launches: step/forward/reset graphs, the pre-step backup, recompute."""

    def __init__(self, group: B.WarpGroup, device: Any, use_graph: bool) -> None:
        self.buffers = B.buffer_overflows()
        self.group = group
        self.device = device
        self.use_graph = use_graph
        d = group.d
        self.backup = {name: wp.empty_like(getattr(d, name)) for name in BACKUP_FIELDS
                       if getattr(d, name).size}
        self.bad = wp.zeros(group.nworld, dtype=int)
        self.mask = wp.zeros(group.nworld, dtype=bool)
        self.graphs: dict[Any, Any] = {}

    def tensor(self, name: str) -> Any:
        return wp.to_torch(getattr(self.group.d, name))

    def rows(self, rows: np.ndarray) -> Any:
        return torch.as_tensor(rows, dtype=torch.long, device=self.tensor("qpos").device)

    def _step_body(self, nstep: int) -> None:
        m, d = self.group.m, self.group.d
        for name, array in self.backup.items():
            wp.copy(array, getattr(d, name))
        d.overflow.zero_()  # sticky solver-iteration bits from earlier steps are not this step's
        for _ in range(nstep):
            mjw.step(m, d)
        wp.launch(_check_worlds, dim=self.group.nworld, inputs=[d.qpos, d.qvel, d.qacc, d.overflow, self.buffers],
                  outputs=[self.bad])

    def _forward_body(self) -> None:
        mjw.forward(self.group.m, self.group.d)

    def _kinematics_body(self) -> None:
        m, d = self.group.m, self.group.d
        mjw.kinematics(m, d)
        mjw.com_pos(m, d)
        mjw.com_vel(m, d)

    def _reset_body(self) -> None:
        mjw.reset_data(self.group.m, self.group.d, reset=self.mask)

    def _launch(self, key: Any, body: Any, *args: Any) -> None:
        if not self.use_graph:
            body(*args)
            return
        graph = self.graphs.get(key)
        if graph is None:
            # Every kernel was loaded by warm_up, so capture only records launches.
            with wp.ScopedCapture(device=self.device, force_module_load=False) as capture:
                body(*args)
            graph = self.graphs[key] = capture.graph
        wp.capture_launch(graph)

    def warm_up(self) -> None:
        """Load every kernel once, eagerly (a capture must not compile); leaves the state as it was."""
        self._step_body(1)
        warp_to_torch(self.device)
        self.restore_where(torch.ones(self.group.nworld, dtype=torch.bool, device=self.tensor("qpos").device))
        wp.to_torch(self.mask).zero_()
        torch_to_warp(self.device)
        self.group.d.overflow.zero_()
        self._reset_body()  # no world selected: loads the masked-reset kernels, changes nothing
        self.recompute(B.ALL_SET_CONST_GROUPS, np.zeros(self.group.nworld, bool), eager=True)  # keeps all rows
        self._forward_body()
        self._kinematics_body()
        warp_to_torch(self.device)

    def launch_step(self, nstep: int) -> None:
        self._launch(("step", nstep), self._step_body, nstep)

    def launch_forward(self) -> None:
        self._launch("forward", self._forward_body)

    def launch_kinematics(self) -> None:
        """Position and velocity kinematics of every world (`KINEMATIC_OUTPUTS`), no collision."""
        self._launch("kinematics", self._kinematics_body)

    def launch_reset(self, rows: np.ndarray) -> None:
        """mj_resetData for the group's worlds `rows` (others untouched), no forward."""
        mask = torch.zeros(self.group.nworld, dtype=torch.bool, device=self.tensor("qpos").device)
        mask[self.rows(rows)] = True
        self.launch_reset_where(mask)

    def failed(self) -> Any:
        """(nworld,) bool on the device: worlds whose last step diverged or overflowed a buffer."""
        return wp.to_torch(self.bad) != 0

    def overflowed(self) -> Any:
        """(nworld,) bool on the device: worlds whose last step overflowed a buffer."""
        return (wp.to_torch(self.bad) & 2) != 0

    def restore_where(self, mask: Any) -> None:
        """Put the worlds of the device mask (nworld,) back to their state before the last step, as
        array ops (nothing is read back to the host)."""
        for name, array in self.backup.items():
            current = self.tensor(name)
            where = mask.reshape(-1, *([1] * (current.dim() - 1)))
            current.copy_(torch.where(where, wp.to_torch(array), current))

    def launch_reset_where(self, mask: Any) -> None:
        """mj_resetData for the worlds of the device mask (nworld,), no forward; others untouched."""
        wp.to_torch(self.mask).copy_(mask)
        torch_to_warp(self.device)
        self._launch("reset", self._reset_body)

    def set_state_where(self, mask: Any, qpos: Any, qvel: Any) -> None:
        """qpos/qvel (nworld, ...) of the worlds of the device mask."""
        for name, value in (("qpos", qpos), ("qvel", qvel)):
            current = self.tensor(name)
            current.copy_(torch.where(mask[:, None], value.to(current.dtype), current))

    def set_state(self, rows: np.ndarray, qpos: Any, qvel: Any) -> None:
        index = self.rows(rows)
        self.tensor("qpos")[index] = qpos
        self.tensor("qvel")[index] = qvel

    def _set_const_body(self, groups: int) -> None:
        mjw.set_const(self.group.m, self.group.d, groups=groups)

    def recompute(self, groups: int, touched: np.ndarray, *, eager: bool = False) -> None:
        """Run mujoco_warp's set_const for `groups` (SetConstGroup bits) and keep the derived rows of
        untouched worlds.

        mujoco_warp recomputes every world of the group (a captured graph: hundreds of launches);
        the untouched worlds get their previous rows back, so a write never nudges another env's
        constants. Geom bounds, which set_const's FIXED group recomputes in float32 (and differently
        from the compiler for planes), are put back in every world: the backend keeps them itself.
        """
        views = {name: B.model_view(self.group, name) for name in _derived_names(groups)}
        saved = {name: view.clone() for name, view in views.items()}
        bounds = {name: B.model_view(self.group, name) for name in B.GEOM_BOUNDS}
        saved_bounds = {name: view.clone() for name, view in bounds.items()}
        torch_to_warp(self.device)
        if eager:
            self._set_const_body(groups)
        else:
            self._launch(("set_const", groups), self._set_const_body, groups)
        warp_to_torch(self.device)
        keep = self.rows(np.flatnonzero(~touched))
        for name, view in views.items():
            view[keep] = saved[name][keep]
        for name, view in bounds.items():
            view.copy_(saved_bounds[name])

    def close(self) -> None:
        self.graphs.clear()
        self.backup.clear()


class StateViews:
    """The (num_envs, ...) torch views the backend hands out, and their gather/scatter."""

    def __init__(self, groups: list[B.WarpGroup], runtimes: list[GroupRuntime], model: mujoco.MjModel,
                 num_envs: int, device: Any) -> None:
        self.groups = groups
        self.runtimes = runtimes
        self.device = device
        self.num_envs = num_envs
        self.direct = len(groups) == 1
        self.torch_device = runtimes[0].tensor("qpos").device
        self.index = [torch.as_tensor(g.env_ids, device=self.torch_device) for g in groups]
        self._mjdata = mujoco.MjData(model)
        self.views: dict[str, Any] = {}
        self.group_views: dict[str, list[Any]] = {}

    def _group_view(self, rt: GroupRuntime, name: str) -> Any:
        t = rt.tensor(name)
        reference = getattr(self._mjdata, name, None)
        if reference is not None:
            tail = np.shape(reference)
            if int(np.prod(tail)) == int(np.prod(t.shape[1:])):
                return t.reshape(t.shape[0], *tail)
        return t

    def bind(self, name: str) -> Any:
        if name in self.views:
            return self.views[name]
        if name not in _PER_WORLD_DATA:
            raise ConfigError(
                f"cannot bind MjData field {name!r}: mujoco_warp's Data has no per-world array of that name "
                "(contact and efc arrays are pooled over worlds and cannot be bound)"
            )
        group_views = [self._group_view(rt, name) for rt in self.runtimes]
        tails = {tuple(v.shape[1:]) for v in group_views}
        if len(tails) > 1:
            raise ConfigError(
                f"MjData field {name!r} has a different shape in each variant group ({sorted(tails)}): its size "
                "depends on the variant (geoms, constraints), so it has no (num_envs, ...) view; bind a field "
                "sized by bodies, joints, dofs, actuators or sites"
            )
        if self.direct:
            view = group_views[0]
        else:
            view = torch.empty((self.num_envs, *group_views[0].shape[1:]), dtype=group_views[0].dtype,
                               device=self.torch_device)
            for index, gv in zip(self.index, group_views, strict=True):
                view[index] = gv
        self.views[name] = view
        self.group_views[name] = group_views
        return view

    def torch_to_warp(self) -> None:
        torch_to_warp(self.device)

    def warp_to_torch(self) -> None:
        warp_to_torch(self.device)

    def scatter_inputs(self) -> None:
        if self.direct:
            return
        for name, view in self.views.items():
            if name in INPUT_FIELDS:
                for index, gv in zip(self.index, self.group_views[name], strict=True):
                    torch.index_select(view, 0, index, out=gv)

    def gather(self, ids: np.ndarray | None = None) -> None:
        """Refresh the global views from the groups (only envs `ids` if given)."""
        if not self.direct:
            if ids is None:
                rows = [None] * len(self.groups)
            else:
                rows = [torch.as_tensor(np.flatnonzero(np.isin(g.env_ids, ids)), device=self.torch_device)
                        for g in self.groups]
            for name, view in self.views.items():
                for index, gv, local in zip(self.index, self.group_views[name], rows, strict=True):
                    if local is None:
                        view.index_copy_(0, index, gv)
                    elif local.numel():
                        view[index[local]] = gv[local]

    @contextlib.contextmanager
    def outputs_kept(self, keep: list[np.ndarray]) -> Iterator[None]:
        """Bound outputs of group g's worlds keep[g] are put back after the block.

        A forward or set_const runs on every world of a group; this keeps what the untouched envs
        see exactly as it was (e.g. one substep behind after a step), whoever else was reset.
        """
        saved = []
        for g, rows in enumerate(keep):
            if rows.size == 0:
                continue
            index = self.runtimes[g].rows(rows)
            for name, gvs in self.group_views.items():
                if name not in _STATE_FIELDS:
                    saved.append((gvs[g], index, gvs[g][index].clone()))
        torch_to_warp(self.device)
        yield
        warp_to_torch(self.device)
        for target, index, values in saved:
            target[index] = values

    def outputs(self) -> dict[str, list[Any]]:
        """The bound outputs (not state fields) of every group, by name."""
        return {name: gvs for name, gvs in self.group_views.items() if name not in _STATE_FIELDS}

    def to_global(self, per_group: list[Any]) -> Any:
        """(num_envs, ...) from per-group (nworld, ...) tensors, on the device."""
        if self.direct:
            return per_group[0]
        out = torch.empty((self.num_envs, *per_group[0].shape[1:]), dtype=per_group[0].dtype,
                          device=self.torch_device)
        for index, values in zip(self.index, per_group, strict=True):
            out.index_copy_(0, index, values)
        return out

    def to_groups(self, values: Any) -> list[Any]:
        """Per-group (nworld, ...) rows of a (num_envs, ...) device tensor."""
        if self.direct:
            return [values]
        return [values.index_select(0, index) for index in self.index]

    def close(self) -> None:
        self.views.clear()
        self.group_views.clear()
