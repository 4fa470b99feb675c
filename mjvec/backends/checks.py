"""Argument checks every backend shares: local env ids, model-field writes and state-input writes.

Each raises `FieldWriteError` (or `CapabilityError` for an undeclared input) naming the call, the
bad value and the allowed range, before anything is written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from mjvec.errors import CapabilityError, FieldWriteError, allowed

if TYPE_CHECKING:
    from mjvec.backends.base import Capabilities, FieldSpec, FieldWrite

__all__ = ["check_input_write", "check_write", "validate_env_ids"]


def validate_env_ids(env_ids: Any, num_envs: int, *, what: str = "env_ids") -> np.ndarray:
    """(K,) int64 local ids, unique and in range, or a FieldWriteError naming the bad ones."""
    ids = np.asarray(env_ids)
    if ids.dtype == bool:
        if ids.shape != (num_envs,):
            raise FieldWriteError(f"{what} mask must have shape ({num_envs},), got {ids.shape}")
        return np.flatnonzero(ids).astype(np.int64)
    if ids.ndim != 1 or not np.issubdtype(ids.dtype, np.integer):
        raise FieldWriteError(
            f"{what} must be a 1-D integer array or a bool mask, got dtype {ids.dtype} shape {ids.shape}"
        )
    ids = ids.astype(np.int64)
    out = (ids < 0) | (ids >= num_envs)
    if out.any():
        raise FieldWriteError(
            f"{what} {ids[out][:8].tolist()} out of range; allowed is [0, {num_envs}). Use local ids."
        )
    # Strictly increasing ids (the common case) are unique without a sort.
    if ids.size > 1 and not (ids[1:] > ids[:-1]).all():
        ordered = np.sort(ids)
        repeated = ordered[1:][ordered[1:] == ordered[:-1]]
        if repeated.size:
            raise FieldWriteError(
                f"{what} has duplicates {np.unique(repeated)[:8].tolist()}; each env may appear once per write"
            )
    return ids


def check_write(write: FieldWrite, spec: FieldSpec, num_envs: int) -> tuple[np.ndarray, np.ndarray]:
    """Validate one write against its spec; return (env_ids, values cast to the spec's dtype)."""
    ids = validate_env_ids(write.env_ids, num_envs, what=f"FieldWrite({write.field!r}).env_ids")
    if write.index is None:
        expected = (ids.size, *spec.shape)
    else:
        if not spec.shape:
            raise FieldWriteError(f"field {write.field!r} is a scalar per env; index must be None")
        index = write.index
        if not np.issubdtype(index.dtype, np.integer) or ((index < 0) | (index >= spec.shape[0])).any():
            raise FieldWriteError(
                f"FieldWrite({write.field!r}).index {index.tolist()[:8]} must be integer {spec.entity} "
                f"ids in [0, {spec.shape[0]})"
            )
        expected = (ids.size, index.size, *spec.shape[1:])
    values = write.values
    if values.shape != expected:
        raise FieldWriteError(
            f"FieldWrite({write.field!r}).values has shape {values.shape}; expected {expected} "
            f"(env_ids x {'tail' if write.index is None else 'index x tail[1:]'})"
        )
    if not np.issubdtype(values.dtype, np.number) or not np.isfinite(values).all():
        raise FieldWriteError(f"FieldWrite({write.field!r}).values must be finite numbers")
    return ids, values.astype(spec.dtype, copy=False)


def check_input_write(name: str, capabilities: Capabilities, shape: tuple[int, ...] | None, num_envs: int,
                      env_ids: Any, index: Any, values: Any) -> tuple[Any, np.ndarray | None, np.ndarray]:
    """Validate a `write_input` call against the input view's `shape` (N, *tail); return
    (env ids or slice(None), row ids or None, float64 values). Raises CapabilityError for an
    undeclared input, FieldWriteError for bad ids, rows, shapes or non-finite values."""
    if name not in capabilities.inputs or shape is None:
        raise CapabilityError(
            f"state input {name!r} is not writable on the {capabilities.backend!r} backend; its writable inputs "
            f"are {allowed(capabilities.inputs)}"
        )
    ids = slice(None) if env_ids is None else validate_env_ids(env_ids, num_envs, what=f"write_input({name!r}) env_ids")
    count = num_envs if env_ids is None else ids.size  # type: ignore[union-attr]
    tail = tuple(shape[1:])
    rows = None
    if index is not None:
        rows = np.asarray(index)
        if rows.ndim != 1 or not np.issubdtype(rows.dtype, np.integer) or not tail or \
                ((rows < 0) | (rows >= tail[0])).any():
            raise FieldWriteError(
                f"write_input({name!r}) index must be 1-D integer ids in [0, {tail[0] if tail else 0}), got {index!r}"
            )
        rows = rows.astype(np.int64)
        tail = (rows.size, *tail[1:])
    if not isinstance(values, np.ndarray) and hasattr(values, "is_floating_point"):
        # A device tensor: its metadata is checked here; its values are not read back (that would
        # wait for the device), so a non-finite value surfaces as that env's failed step instead.
        if tuple(values.shape) != (count, *tail) or not values.is_floating_point():
            raise FieldWriteError(
                f"write_input({name!r}) values must be a float tensor of shape {(count, *tail)}, got "
                f"{values.dtype} {tuple(values.shape)}"
            )
        return ids, rows, values
    values = np.asarray(values)
    if values.shape != (count, *tail) or values.dtype.kind not in "fiu" or not np.isfinite(values).all():
        raise FieldWriteError(
            f"write_input({name!r}) values must be finite numbers of shape {(count, *tail)}, got "
            f"{values.dtype} {values.shape}"
        )
    return ids, rows, values.astype(np.float64, copy=False)
