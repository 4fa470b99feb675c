"""The `(num_envs, ...)` state views of a grouped backend, over its groups' own engine views.

A grouped backend runs its envs as variant groups, one engine object each, whose MjData arrays are
`(E_g, ...)` in the group's row order (group g's row k is local env `groups[g].env_ids[k]`). The env
sees `(num_envs, ...)` arrays in local env order:

- one group (its rows are envs 0..N-1 in order): the engine's own arrays, zero-copy and live;
- several groups: arrays owned here, gathered from the groups after every call that moves them
  (`gather`) and, for the state inputs (`STATE_INPUTS`: what a caller writes between calls),
  scattered into the groups before every call that reads them (`scatter_inputs`).

The arrays are numpy arrays or torch tensors, whatever the engine's are; one implementation serves
both (`_NumpyRows` / `_TorchRows`). Nothing here reads a device value back to the host.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mjvec.backends.base import STATE_INPUTS
from mjvec.backends.variants import Routing
from mjvec.errors import ConfigError

__all__ = ["GroupViews", "put_input"]


def put_input(view: Any, ids: Any, rows: Any, values: Any) -> None:
    """Write validated `write_input` values into `view`: env ids (or slice(None)) x rows (or all)."""
    if rows is None:
        view[ids] = values
    elif isinstance(ids, slice) and isinstance(rows, np.ndarray) and rows.size == 1:
        view[:, rows[0]:rows[0] + 1] = values  # one row (a push's body): a basic slice, not a fancy index
    elif isinstance(ids, slice):
        view[:, rows] = values
    else:
        view[ids[:, None], rows[None, :]] = values


class _NumpyRows:
    """Row selection and copies between numpy arrays (host ids are the index)."""

    def index(self, ids: np.ndarray) -> np.ndarray:
        return ids

    def empty(self, count: int, like: np.ndarray) -> np.ndarray:
        return np.empty((count, *like.shape[1:]), like.dtype)

    def take_into(self, out: np.ndarray, src: np.ndarray, index: np.ndarray) -> None:
        out[...] = src[index]

    def put(self, dst: np.ndarray, index: np.ndarray, src: np.ndarray) -> None:
        dst[index] = src

    def asarray(self, values: Any, like: np.ndarray) -> np.ndarray:
        return np.asarray(values, like.dtype)


class _TorchRows:
    """Row selection and copies between torch tensors on one device (device index tensors)."""

    def __init__(self, like: Any) -> None:
        import torch

        self.torch = torch
        self.device = like.device

    def index(self, ids: np.ndarray) -> Any:
        return self.torch.as_tensor(ids, dtype=self.torch.long, device=self.device)

    def empty(self, count: int, like: Any) -> Any:
        return self.torch.empty((count, *like.shape[1:]), dtype=like.dtype, device=like.device)

    def take_into(self, out: Any, src: Any, index: Any) -> None:
        self.torch.index_select(src, 0, index, out=out)

    def put(self, dst: Any, index: Any, src: Any) -> None:
        dst.index_copy_(0, index, src)

    def asarray(self, values: Any, like: Any) -> Any:
        return self.torch.as_tensor(values, dtype=like.dtype, device=like.device)


class GroupViews:
    """The bound `(num_envs, ...)` views and their per-group engine views (see the module docstring).

    views: name -> the (num_envs, ...) array handed out; group_views: name -> per-group arrays.
    """

    def __init__(self, routing: Routing) -> None:
        self._routing = routing
        self.num_envs = int(routing.group_of_env.size)
        self.direct = routing.single
        self.views: dict[str, Any] = {}
        self.group_views: dict[str, list[Any]] = {}
        self._rows: Any = None
        self._index: list[Any] = []

    def bind(self, name: str, group_views: list[Any]) -> Any:
        """The (num_envs, ...) view of MjData field `name` over these per-group views (kept)."""
        tails = {tuple(v.shape[1:]) for v in group_views}
        if len(tails) > 1:
            raise ConfigError(
                f"MjData field {name!r} has a different shape in each variant group ({sorted(tails)}): its size "
                "depends on the variant (its geoms, its constraints, or the sparsity its bodies compile to), so it "
                "has no (num_envs, ...) view; bind a field sized by bodies, joints, dofs, actuators or sites"
            )
        if self._rows is None:
            first = group_views[0]
            self._rows = _NumpyRows() if isinstance(first, np.ndarray) else _TorchRows(first)
            self._index = [self._rows.index(group.env_ids) for group in self._routing.groups]
        if self.direct:
            view = group_views[0]
        else:
            view = self._rows.empty(self.num_envs, group_views[0])
            for index, gv in zip(self._index, group_views, strict=True):
                self._rows.put(view, index, gv)
        self.views[name] = view
        self.group_views[name] = group_views
        return view

    def _selection(self, env_ids: np.ndarray) -> list[tuple[int, Any, Any]]:
        """Per group env_ids touches: (group, its env ids, their rows), as indices of the views."""
        index = self._rows.index
        return [(g, index(env_ids[pos]), index(rows)) for g, pos, rows in self._routing.split(env_ids)]

    def scatter_inputs(self, env_ids: np.ndarray | None = None) -> None:
        """Copy the bound inputs' (num_envs, ...) views into the groups: every env, or only `env_ids`."""
        if self.direct:
            return
        names = [name for name in self.views if name in STATE_INPUTS]
        if env_ids is None:
            for name in names:
                for index, gv in zip(self._index, self.group_views[name], strict=True):
                    self._rows.take_into(gv, self.views[name], index)
            return
        for g, glob, rows in self._selection(env_ids):
            for name in names:
                self.group_views[name][g][rows] = self.views[name][glob]

    def gather(self, env_ids: np.ndarray | None = None, *, inputs: bool = True) -> None:
        """Copy every bound field from the groups into the (num_envs, ...) views (every env, or `env_ids`).

        inputs=False skips the inputs: after a step they are as scattered, so the views hold them.
        """
        if self.direct:
            return
        names = [name for name in self.views if inputs or name not in STATE_INPUTS]
        if env_ids is None:
            for name in names:
                for index, gv in zip(self._index, self.group_views[name], strict=True):
                    self._rows.put(self.views[name], index, gv)
            return
        for g, glob, rows in self._selection(env_ids):
            for name in names:
                self.views[name][glob] = self.group_views[name][g][rows]

    def to_global(self, per_group: list[Any]) -> Any:
        """(num_envs, ...) from per-group (E_g, ...) arrays (on their device)."""
        if self.direct:
            return per_group[0]
        out = self._rows.empty(self.num_envs, per_group[0])
        for index, values in zip(self._index, per_group, strict=True):
            self._rows.put(out, index, values)
        return out

    def to_groups(self, values: Any) -> list[Any]:
        """Per-group (E_g, ...) rows of a (num_envs, ...) array (on its device)."""
        if self.direct:
            return [values]
        return [values[index] for index in self._index]

    def asarray(self, values: Any) -> Any:
        """`values` as the views' arrays are (dtype and device of the qpos view): a reset's state."""
        return self._rows.asarray(values, self.views["qpos"])

    def assign_input(self, name: str, ids: Any, rows: Any, values: Any) -> None:
        """Write validated `write_input` values (host or device) into the view of input `name`."""
        view = self.views[name]
        rows_ = self._rows
        put_input(view, rows_.index(ids) if isinstance(ids, np.ndarray) else ids,
                  None if rows is None else rows_.index(rows), rows_.asarray(values, view))

    def close(self) -> None:
        self.views.clear()
        self.group_views.clear()
