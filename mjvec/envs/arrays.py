"""Array plumbing of `MjVecEnv`: the optional torch import, action checks, output conversion.

torch is optional (the ``train`` extra). It is imported only when an env is built with
``array_backend="torch"``; an action that is a torch tensor is recognised without importing torch
(a tensor can only exist if torch was already imported).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

import numpy as np

from mjvec._jit import kernel
from mjvec.errors import ActionError, ActionTypeError, ConfigError, InstallError, allowed, install_hint

ARRAY_BACKENDS = ("numpy", "torch")


def import_torch() -> Any:
    """The torch module, or InstallError (an ImportError) saying how to install it."""
    try:
        import torch
    except ImportError as error:
        raise InstallError(
            f"array_backend='torch' needs PyTorch, which is not importable ({error}); "
            f"fix: {install_hint('train')}"
        ) from error
    return torch


def resolve_output(array_backend: str, device: str | None, default_device: str) -> tuple[Any, Any]:
    """Validate (array_backend, device); return (torch module or None, torch.device or None).

    numpy output accepts device None or "cpu" only. torch output defaults to `default_device`
    (the backend's device).
    """
    if array_backend not in ARRAY_BACKENDS:
        raise ConfigError(
            f"array_backend={array_backend!r} is not supported; allowed values are {allowed(ARRAY_BACKENDS)}"
        )
    if array_backend == "numpy":
        if device not in (None, "cpu"):
            raise ConfigError(
                f"device={device!r} needs array_backend='torch'; numpy output lives on the CPU "
                "(pass device=None or array_backend='torch')"
            )
        return None, None
    torch = import_torch()
    try:
        torch_device = torch.device(default_device if device is None else device)
    except (RuntimeError, TypeError) as error:
        raise ConfigError(f"device={device!r} is not a valid torch device: {error}") from error
    _check_device_present(torch, torch_device, device)
    return torch, torch_device


def _check_device_present(torch: Any, torch_device: Any, device: str | None) -> None:
    """Refuse a CUDA device this machine lacks now, rather than at the first reset."""
    if torch_device.type != "cuda":
        return
    if not torch.cuda.is_available():
        raise ConfigError(
            f"device={device!r}: CUDA is not available to PyTorch on this machine (no GPU, or a CPU build of "
            "torch); use device='cpu' or install a CUDA build of torch"
        )
    count = torch.cuda.device_count()
    if torch_device.index is not None and torch_device.index >= count:
        raise ConfigError(
            f"device={device!r}: this machine has {count} CUDA device(s), allowed are cuda:0..cuda:{count - 1}"
        )


def _is_torch_tensor(value: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def check_actions(actions: Any, shape: tuple[int, int], low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Validate an action batch; return a fresh float64 copy clipped to [low, high].

    Accepts a numpy array (or anything np.asarray turns into a numeric array) or a torch tensor on
    any device. Raises ActionTypeError for a non-float dtype (int, bool, object, complex) or an
    unsupported type, ActionError for the wrong shape or non-finite values (naming the envs).
    """
    if _is_torch_tensor(actions):
        array = check_host_dtype_and_shape(_tensor_to_numpy(actions), shape)
    elif isinstance(actions, (np.ndarray, list, tuple)):
        array = check_host_dtype_and_shape(actions, shape)
    else:
        raise ActionTypeError(
            f"actions must be a numpy array or a torch tensor of shape {shape}, got {type(actions).__name__}"
        )
    if array.dtype in _KERNEL_DTYPES and low.dtype == np.float64 and high.dtype == np.float64:
        out = np.empty(shape)
        if _finite_clipped(array, low, high, out):  # one compiled pass: the check and np.clip's values
            return out
    _check_finite(array)
    return np.clip(array.astype(np.float64, copy=False), low, high)


_KERNEL_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


@kernel
def _finite_clipped(actions: np.ndarray, low: np.ndarray, high: np.ndarray, out: np.ndarray) -> bool:
    """False if an action is not finite (out then unspecified); else out = np.clip(actions as float64,
    low, high) with (A,) bound arrays: numpy's loop for array bounds returns the bound where a value
    equals it (so a signed zero takes the bound's sign)."""
    for e in range(actions.shape[0]):
        for a in range(actions.shape[1]):
            x = np.float64(actions[e, a])
            if not (x - x == 0.0):  # inf - inf and nan - nan are nan
                return False
            x = x if x > low[a] else low[a]
            out[e, a] = x if x < high[a] else high[a]
    return True


def _check_finite(array: np.ndarray) -> None:
    finite = np.isfinite(array).all(axis=1)
    if not finite.all():
        bad = np.flatnonzero(~finite)
        raise ActionError(
            f"actions are NaN or infinite for envs {bad[:16].tolist()}"
            f"{' ...' if bad.size > 16 else ''} ({bad.size} of {array.shape[0]}); every action must be finite"
        )


def check_device_actions(actions: Any, shape: tuple[int, int], low: Any, high: Any) -> tuple[Any, Any]:
    """Validate an action batch for an env whose state is on a device; return (actions, bad).

    actions: a tensor (any device, moved to `low`'s) or a numpy array (copied to the device).
    Type, dtype and shape are checked on the host (they are metadata: no waiting for the device)
    and raise as in `check_actions`; so do a host array's values (they are on the host already).
    A tensor's values are NOT inspected on the host: `bad` (N,) bool marks the rows with a
    non-finite value, whose actions are replaced by zeros; the env treats those envs as failed
    this step (reset, truncated, `info["sim_error"]`). Returns actions in `low`'s dtype, clipped
    to [low, high].
    """
    torch = sys.modules["torch"]
    if _is_torch_tensor(actions):
        _check_tensor_kind(actions, f"{low.device}")
        tensor = actions.detach()
    elif isinstance(actions, (np.ndarray, list, tuple)):
        array = check_host_dtype_and_shape(actions, shape)
        _check_finite(array)
        tensor = torch.as_tensor(array)
    else:
        raise ActionTypeError(
            f"actions must be a numpy array or a torch tensor of shape {shape}, got {type(actions).__name__}"
        )
    if tuple(tensor.shape) != shape:
        raise ActionError(
            f"actions have shape {tuple(tensor.shape)}; expected {shape} (num_envs, action_dim). "
            "Batch one action row per env."
        )
    tensor = tensor.to(device=low.device, dtype=low.dtype)
    bad = ~torch.isfinite(tensor).all(dim=1)
    tensor = torch.where(bad[:, None], torch.zeros((), dtype=low.dtype, device=low.device), tensor)
    return torch.clamp(tensor, low, high), bad


def check_host_dtype_and_shape(actions: Any, shape: tuple[int, int]) -> np.ndarray:
    """A numpy action batch of a float dtype and the expected shape, or the errors `check_actions` raises."""
    try:
        array = np.asarray(actions)
    except ValueError as error:  # numpy refuses nested lists of unequal lengths
        raise ActionError(
            f"actions are a ragged nested list (row lengths {_row_lengths(actions)}); expected {shape} "
            "(num_envs, action_dim), one equal-length row per env"
        ) from error
    if array.dtype.kind != "f":
        raise ActionTypeError(
            f"actions must have a floating-point dtype, got {array.dtype}; cast with .astype(np.float32)"
        )
    if array.shape != shape:
        raise ActionError(
            f"actions have shape {array.shape}; expected {shape} (num_envs, action_dim). "
            "Batch one action row per env."
        )
    return array


def _check_tensor_kind(actions: Any, where: str) -> None:
    """A floating-point tensor with values (not on the meta device), or ActionTypeError."""
    if not actions.dtype.is_floating_point:
        raise ActionTypeError(
            f"actions must be a floating-point tensor, got dtype {actions.dtype}; cast with .float()"
        )
    if actions.device.type == "meta":
        raise ActionTypeError(
            f"actions are a tensor on the meta device, which has shapes but no values; pass a tensor on {where}"
        )


def _tensor_to_numpy(actions: Any) -> np.ndarray:
    """A host numpy copy of a floating-point action tensor; bfloat16/float16 are widened to float32."""
    _check_tensor_kind(actions, "'cpu' or a CUDA device")
    tensor = actions.detach().to("cpu")
    if tensor.dtype.itemsize < 4:  # numpy has no bfloat16; float32 holds every bfloat16/float16 value exactly
        tensor = tensor.float()
    return tensor.numpy()


def _row_lengths(actions: Any) -> list[Any]:
    return [len(row) if hasattr(row, "__len__") else "scalar" for row in list(actions)[:8]]


def to_output(value: Any, torch: Any, device: Any) -> Any:
    """Convert an (N, ...) array, or a dict of them, to the env's output type.

    torch None: numpy (a torch tensor is copied to host). Otherwise ``torch.as_tensor`` on `device`
    (zero-copy for a numpy array when the device is the CPU, and for a tensor already there).
    """
    if isinstance(value, Mapping):
        return {key: to_output(item, torch, device) for key, item in value.items()}
    if torch is None:
        return value.detach().cpu().numpy() if _is_torch_tensor(value) else value
    return torch.as_tensor(value, device=device)


def to_numpy(value: Any) -> Any:
    """A numpy view of an (N, ...) array, a torch tensor or a dict of them."""
    if isinstance(value, Mapping):
        return {key: to_numpy(item) for key, item in value.items()}
    if _is_torch_tensor(value):
        return value.detach().cpu().numpy()
    return np.asarray(value)
