"""Argument checks every backend shares: local env ids, model-field writes, state-input writes and
the state a reset sets.

Each raises `FieldWriteError` (or `CapabilityError` for an undeclared input, `ConfigError` for a
reset's state) naming the call, the bad value and the allowed range, before anything is written.
Depends on `mjvec.backends.base` for types only; base imports nothing from here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import mujoco
import numpy as np

from mjvec.backends.base import Capabilities, FieldSpec, FieldWrite
from mjvec.errors import CapabilityError, ConfigError, FieldWriteError, allowed

__all__ = ["check_input_write", "check_reset_fields", "check_reset_mask", "check_reset_shapes", "check_write",
           "reset_tails", "validate_env_ids"]


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
        if rows.ndim != 1 or rows.dtype.kind not in "iu" or not tail or \
                (rows.size and (int(rows.min()) < 0 or int(rows.max()) >= tail[0])):
            raise FieldWriteError(
                f"write_input({name!r}) index must be 1-D integer ids in [0, {tail[0] if tail else 0}), got {index!r}"
            )
        rows = rows.astype(np.int64, copy=False)
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


# The model size a reset input needs, and what the model lacks when that size is 0.
_RESET_SIZES = {
    "ctrl": ("nu", "actuators"),
    "mocap_pos": ("nmocap", "mocap bodies"),
    "mocap_quat": ("nmocap", "mocap bodies"),
    "act": ("na", "actuator activations (actuators with activation dynamics)"),
}


def reset_tails(model: mujoco.MjModel) -> dict[str, tuple[int, ...]]:
    """The per-env tail of every state array `Backend.reset` takes, in `model`'s sizes."""
    return {"qpos": (model.nq,), "qvel": (model.nv,), "ctrl": (model.nu,), "mocap_pos": (model.nmocap, 3),
            "mocap_quat": (model.nmocap, 4), "act": (model.na,)}


def check_reset_fields(model: mujoco.MjModel, given: Mapping[str, Any]) -> None:
    """ConfigError naming a reset input given for a model that has none of it (e.g. act with na = 0)."""
    for name in given:
        size, what = _RESET_SIZES.get(name, (None, ""))
        if size is not None and getattr(model, size) == 0:
            raise ConfigError(
                f"reset({name}=...) was given, but this model has no {what} ({size} = 0); drop {name}, or give "
                f"it for a model that has {what}"
            )


def check_reset_shapes(model: mujoco.MjModel, state: Mapping[str, Any], rows: int) -> None:
    """ConfigError unless every state array of a reset by host ids is (rows, *tail) and finite."""
    tails = reset_tails(model)
    qpos, qvel = state["qpos"], state["qvel"]
    if tuple(qpos.shape) != (rows, *tails["qpos"]) or tuple(qvel.shape) != (rows, *tails["qvel"]):
        raise ConfigError(
            f"reset expects qpos ({rows}, {model.nq}) and qvel ({rows}, {model.nv}), "
            f"got {tuple(qpos.shape)} and {tuple(qvel.shape)}"
        )
    for name, value in state.items():
        if tuple(value.shape) != (rows, *tails[name]):
            raise ConfigError(f"reset expects {name} {(rows, *tails[name])}, got {tuple(value.shape)}")
    for name, value in state.items():
        if not bool(value.isfinite().all() if hasattr(value, "isfinite") else np.isfinite(value).all()):
            label = "qpos/qvel" if name in ("qpos", "qvel") else name
            raise ConfigError(f"reset {label} must be finite")


def check_reset_mask(model: mujoco.MjModel, mask: Any, state: Mapping[str, Any], num_envs: int) -> None:
    """ConfigError unless a masked reset has a (num_envs,) bool mask and (num_envs, *tail) state arrays.
    Reads metadata only: nothing waits for the device."""
    tails = reset_tails(model)
    shapes = {name: tuple(value.shape) for name, value in state.items()}
    if str(mask.dtype) not in ("torch.bool", "bool") or tuple(mask.shape) != (num_envs,) or \
            any(shape != (num_envs, *tails[name]) for name, shape in shapes.items()):
        wanted = ", ".join(f"{name} {(num_envs, *tails[name])}" for name in shapes)
        got = ", ".join(str(shape) for shape in shapes.values())
        raise ConfigError(
            f"a masked reset takes a ({num_envs},) bool mask and {wanted}; got {mask.dtype} {tuple(mask.shape)}, {got}"
        )


def check_skip(skip: Any, capabilities: Capabilities, num_envs: int) -> np.ndarray:
    """`Backend.step`'s ``skip`` as a (num_envs,) bool host array: CapabilityError on a backend that
    steps every env, ConfigError for anything but such a mask."""
    if not capabilities.partial_step:
        raise CapabilityError(
            f"the {capabilities.backend!r} backend steps every env (capabilities.partial_step is False), so "
            "step() takes no skip mask; call step(nstep) and reset the envs to skip afterwards"
        )
    if not isinstance(skip, np.ndarray) or skip.dtype != np.bool_ or skip.shape != (num_envs,):
        got = f"{skip.dtype} {skip.shape}" if isinstance(skip, np.ndarray) else type(skip).__name__
        raise ConfigError(f"step(skip=...) takes a ({num_envs},) numpy bool mask of the envs not to step, got {got}")
    return skip
