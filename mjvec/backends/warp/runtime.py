"""The Warp engine's per-group runtime: the step/forward/reset/set_const launches (captured graphs),
the pre-step backup and the recompute that keeps untouched worlds' constants.

Imported only by `mjvec.backends.warp`, after its install guard.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import mujoco_warp as mjw
import numpy as np
import torch
import warp as wp

from mjvec.backends.warp import build as warp_build
from mjvec.backends.warp.build import torch_to_warp, warp_to_torch

# What a step advances; a failed world is put back to its copy from before the step.
BACKUP_FIELDS = ("qpos", "qvel", "act", "qacc_warmstart", "time")
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
    return [name for bit, names in warp_build.SET_CONST_OUTPUTS.items() if groups & bit for name in names]


class GroupRuntime:
    """One group's launches: step/forward/reset graphs, the pre-step backup, recompute."""

    def __init__(self, worlds: warp_build.Worlds, device: Any, use_graph: bool) -> None:
        self.buffers = warp_build.buffer_overflows()
        self.worlds = worlds
        self.device = device
        self.use_graph = use_graph
        d = worlds.d
        self.backup = {name: wp.empty_like(getattr(d, name)) for name in BACKUP_FIELDS
                       if getattr(d, name).size}
        self.bad = wp.zeros(worlds.nworld, dtype=int)
        self.mask = wp.zeros(worlds.nworld, dtype=bool)
        self.graphs: dict[Any, Any] = {}
        # The sensor cadence (`WarpEngine.sense`): MuJoCo's sensor stage only at a step's last substep.
        self.sense_last_substep = False

    def tensor(self, name: str) -> Any:
        return wp.to_torch(getattr(self.worlds.d, name))

    def rows(self, rows: np.ndarray) -> Any:
        return torch.as_tensor(rows, dtype=torch.long, device=self.tensor("qpos").device)

    def _step_body(self, nstep: int) -> None:
        m, d = self.worlds.m, self.worlds.d
        for name, array in self.backup.items():
            wp.copy(array, getattr(d, name))
        d.overflow.zero_()  # sticky solver-iteration bits from earlier steps are not this step's
        flags = m.opt.disableflags
        try:
            for i in range(nstep):
                # mujoco_warp reads the flag on the host when it launches (so when a graph is captured).
                if self.sense_last_substep and i < nstep - 1:
                    m.opt.disableflags = flags | int(mjw.DisableBit.SENSOR)
                else:
                    m.opt.disableflags = flags
                mjw.step(m, d)
        finally:
            m.opt.disableflags = flags
        wp.launch(_check_worlds, dim=self.worlds.nworld, inputs=[d.qpos, d.qvel, d.qacc, d.overflow, self.buffers],
                  outputs=[self.bad])

    def _forward_body(self) -> None:
        mjw.forward(self.worlds.m, self.worlds.d)

    def _kinematics_body(self) -> None:
        m, d = self.worlds.m, self.worlds.d
        mjw.kinematics(m, d)
        mjw.com_pos(m, d)
        mjw.com_vel(m, d)

    def _reset_body(self) -> None:
        mjw.reset_data(self.worlds.m, self.worlds.d, reset=self.mask)

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
        self.restore_where(torch.ones(self.worlds.nworld, dtype=torch.bool, device=self.tensor("qpos").device))
        wp.to_torch(self.mask).zero_()
        torch_to_warp(self.device)
        self.worlds.d.overflow.zero_()
        self._reset_body()  # no world selected: loads the masked-reset kernels, changes nothing
        # keeps all rows
        self.recompute(warp_build.ALL_SET_CONST_GROUPS, np.zeros(self.worlds.nworld, bool), eager=True)
        self._forward_body()
        self._kinematics_body()
        warp_to_torch(self.device)

    def launch_step(self, nstep: int) -> None:
        self._launch(("step", nstep, self.sense_last_substep), self._step_body, nstep)

    def launch_forward(self) -> None:
        self._launch("forward", self._forward_body)

    def launch_kinematics(self) -> None:
        """Position and velocity kinematics of every world (`KINEMATIC_OUTPUTS`), no collision."""
        self._launch("kinematics", self._kinematics_body)

    def launch_reset(self, rows: np.ndarray) -> None:
        """mj_resetData for the group's worlds `rows` (others untouched), no forward."""
        mask = torch.zeros(self.worlds.nworld, dtype=torch.bool, device=self.tensor("qpos").device)
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

    def set_state_where(self, mask: Any, state: Mapping[str, Any]) -> None:
        """Data arrays `state` (name -> (nworld, ...)) in the worlds of the device mask."""
        for name, value in state.items():
            current = self.tensor(name)
            where = mask.reshape(-1, *([1] * (current.dim() - 1)))
            current.copy_(torch.where(where, value.to(current.dtype), current))

    def set_state(self, rows: np.ndarray, state: Mapping[str, Any]) -> None:
        """Data arrays `state` (name -> (len(rows), ...)) in worlds `rows`."""
        index = self.rows(rows)
        for name, value in state.items():
            self.tensor(name)[index] = value

    def _set_const_body(self, groups: int) -> None:
        mjw.set_const(self.worlds.m, self.worlds.d, groups=groups)

    def recompute(self, groups: int, touched: np.ndarray, *, eager: bool = False) -> None:
        """Run mujoco_warp's set_const for `groups` (SetConstGroup bits) and keep the derived rows of
        untouched worlds.

        mujoco_warp recomputes every world of the group (a captured graph: hundreds of launches);
        the untouched worlds get their previous rows back, so a write never nudges another env's
        constants. Geom bounds, which set_const's FIXED group recomputes in float32 (and differently
        from the compiler for planes), are put back in every world: the backend keeps them itself.
        """
        views = {name: warp_build.model_view(self.worlds, name) for name in _derived_names(groups)}
        saved = {name: view.clone() for name, view in views.items()}
        bounds = {name: warp_build.model_view(self.worlds, name) for name in warp_build.GEOM_BOUNDS}
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
