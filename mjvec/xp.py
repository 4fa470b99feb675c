"""Array namespaces and env selections: one task layer over numpy or over torch on a device.

A backend declares the array namespace of its state (`Capabilities.array_namespace`): numpy for
the CPU backend, torch on the backend's device for Warp. The task layer, the randomization
wrappers and the random streams are written once against the array API standard and run where
the state lives: on the host the namespace is numpy itself (numpy >= 2.1 has the standard's names,
so the host path pays no wrapper), on a device it is `array_api_compat.torch`.

`Rows` is the one new idea: WHICH envs an operation touches (a reset, a new goal, a draw).

- numpy (host): the env ids themselves (K,), so work scales with K, as a plain loop would.
- torch (device): a (N,) bool mask; every operation runs on all N rows and commits only the
  masked ones. Nothing ever asks the device which envs are selected, so a step never waits for
  the device (no host round trip): the cost of a dense row is what a GPU is for.

Code written against `Rows` (`take`, `put`, draws from `EnvRandom` for `rows`) is the same for
both; "the rows of a selection" means K rows on the host and N rows on the device.
"""

from __future__ import annotations

from typing import Any

import array_api_compat
import numpy as np

__all__ = ["Rows", "copy_array", "is_numpy", "namespace_of", "to_host"]


def namespace_of(*arrays: Any) -> Any:
    """The array namespace of `arrays`: numpy for numpy arrays, array_api_compat's torch otherwise."""
    if all(isinstance(a, (np.ndarray, np.generic)) for a in arrays):
        return np
    return array_api_compat.array_namespace(*arrays)


def is_numpy(xp: Any) -> bool:
    """Whether `xp` (a namespace) is numpy's: host arrays, where selections are id lists."""
    return xp is np or array_api_compat.is_numpy_namespace(xp)


def copy_array(value: Any) -> Any:
    """A copy of `value` in its own namespace and on its own device (numpy copy or torch clone)."""
    return value.copy() if isinstance(value, np.ndarray) else value.clone()


def assign_where(target: Any, mask: Any, values: Any) -> None:
    """target[...] = where(mask, values, target), in place (mask and values broadcast against target;
    values cast to target's dtype, as an assignment casts): on numpy one masked copy (no temporary
    of target's size), elsewhere the namespace's where."""
    if isinstance(target, np.ndarray):
        np.copyto(target, values, where=mask, casting="unsafe")
    else:
        target[...] = namespace_of(target).where(mask, values, target)


def to_host(value: Any) -> np.ndarray:
    """A numpy array of `value` (a device array is copied to the host: a synchronisation)."""
    if isinstance(value, np.ndarray):
        return value
    if hasattr(value, "detach"):
        return value.detach().cpu().numpy()
    return np.asarray(value)


class Rows:
    """Which local envs an operation touches (see the module docstring).

    Build with `Rows.of_ids` (host), `Rows.of_mask` (either namespace) or `Rows.all`. Host rows
    hold sorted unique int64 `ids`; device rows hold a bool `mask` of num_envs.
    """

    __slots__ = ("_mask", "everything", "ids", "num_envs")

    def __init__(self, num_envs: int, ids: np.ndarray | None = None, mask: Any = None,
                 everything: bool = False) -> None:
        if (ids is None) == (mask is None):
            raise ValueError("Rows needs exactly one of ids (host) or mask (device)")
        self.num_envs = int(num_envs)
        self.ids = ids
        self._mask = mask
        self.everything = everything  # every env, in order: take/put need no indexing

    @classmethod
    def of_ids(cls, ids: Any, num_envs: int) -> Rows:
        """Host rows of these local env ids (sorted unique int64, as the backends take them)."""
        ids = np.asarray(ids, np.int64).reshape(-1)
        return cls(num_envs, ids=ids)

    @classmethod
    def of(cls, rows: Any, num_envs: int) -> Rows:
        """`rows` itself if it is Rows, else host rows of these ids (a convenience for host code)."""
        return rows if isinstance(rows, Rows) else cls.of_ids(rows, num_envs)

    @classmethod
    def of_mask(cls, mask: Any) -> Rows:
        """Rows where `mask` (N,) is True: ids for a numpy mask (every env when it is all True: the
        same selection as `Rows.all`), the mask itself on a device."""
        if isinstance(mask, np.ndarray):
            ids = mask.reshape(-1).nonzero()[0].astype(np.int64, copy=False)  # flatnonzero, minus its overhead
            return cls(mask.shape[0], ids=ids, everything=ids.size == mask.shape[0])
        return cls(int(mask.shape[0]), mask=mask)

    @classmethod
    def all(cls, num_envs: int, like: Any = None) -> Rows:
        """Every env: host ids, or an all-True mask on the device of the array `like`."""
        if like is None or isinstance(like, np.ndarray):
            return cls(num_envs, ids=np.arange(num_envs, dtype=np.int64), everything=True)
        xp = namespace_of(like)
        return cls(num_envs, mask=xp.ones(num_envs, dtype=xp.bool, device=array_api_compat.device(like)),
                   everything=True)

    @property
    def dense(self) -> bool:
        """True on a device: operations run on all num_envs rows and commit the masked ones."""
        return self.ids is None

    @property
    def size(self) -> int:
        """The number of rows an operation on this selection produces (K on the host, N on a device)."""
        return self.num_envs if self.ids is None else int(self.ids.size)

    def any(self) -> bool:
        """Whether there may be work: False only when a host selection is empty (a device one is
        never inspected)."""
        return self.ids is None or self.ids.size > 0

    @property
    def mask(self) -> Any:
        """(N,) bool: the selection as a mask (numpy on the host, the device mask otherwise)."""
        if self._mask is None:
            mask = np.zeros(self.num_envs, bool)
            mask[self.ids] = True
            self._mask = mask
        return self._mask

    def selector(self) -> Any:
        """What a backend's reset takes: the host ids (rows of K) or the device mask (rows of N)."""
        return self.mask if self.ids is None else self.ids

    def take(self, array: Any) -> Any:
        """The selection's rows of `array` (N, ...): `array[ids]` on the host, `array` on a device."""
        return array if self.ids is None or self.everything else array[self.ids]

    def put(self, target: Any, values: Any) -> None:
        """Write the selection's rows `values` into `target` (N, ...) in place; other rows stay."""
        if self.everything:
            target[...] = values
            return
        if self.ids is not None:
            target[self.ids] = values
            return
        xp = namespace_of(target)
        mask = xp.reshape(self._mask, (self.num_envs, *([1] * (target.ndim - 1))))
        target[...] = xp.where(mask, xp.asarray(values, dtype=target.dtype, device=target.device), target)

    def union(self, mask: Any) -> Rows:
        """These rows plus the envs where `mask` (N,) is True, in this selection's form."""
        if self.everything:
            return self
        if self.ids is None:
            return Rows(self.num_envs, mask=self._mask | mask)
        extra = np.flatnonzero(mask)
        if not extra.size:
            return self
        return Rows(self.num_envs, ids=np.union1d(self.ids, extra).astype(np.int64))

    def put_columns(self, target: Any, columns: Any, values: Any) -> None:
        """Write `values` (rows of the selection, len(columns)) into `target[:, columns]` in place."""
        if self.everything:
            target[:, columns] = values
            return
        if self.ids is not None:
            target[self.ids[:, None], columns[None, :]] = values
            return
        xp = namespace_of(target)
        current = target[:, columns]
        values = xp.asarray(values, dtype=target.dtype, device=target.device)  # host values go to the target's device
        target[:, columns] = xp.where(self._mask[:, None], values, current)

    def host_ids(self) -> np.ndarray:
        """The selected ids on the host. On a device this copies the mask back: a synchronisation,
        for host-only consumers only (model-field writes, which say so)."""
        if self.ids is not None:
            return self.ids
        return np.flatnonzero(to_host(self._mask)).astype(np.int64)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """Host rows convert to their ids, so code written for an id array keeps working on the
        host; a device selection refuses (it has no host ids without waiting for the device)."""
        if self.ids is None:
            raise TypeError(
                "a device Rows has no host ids without a synchronisation; use rows.take / rows.put, or "
                "rows.host_ids() where waiting for the device is acceptable"
            )
        return self.ids if dtype is None else self.ids.astype(dtype)

    def __len__(self) -> int:
        return self.size

    def __repr__(self) -> str:
        what = f"ids={self.ids.tolist()[:8]}" if self.ids is not None else "device mask"
        return f"Rows(num_envs={self.num_envs}, {what})"
