"""Validation of the numbers a locomotion config holds: each check names the owner, the field, the
value and what is allowed, and returns the value normalised (a float, a tuple of floats)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from mjvec.errors import ConfigError

__all__ = ["real", "real_range", "real_tuple"]


def real(owner: str, name: str, value: Any, *, low: float | None = None, high: float | None = None,
         positive: bool = False) -> float:
    """`value` as a finite float in [low, high] (> 0 when `positive`); ConfigError otherwise."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ConfigError(f"{owner}.{name} must be a real number, got {type(value).__name__} {value!r}")
    number = float(value)
    bounds = [f">= {low}" if low is not None else "", f"<= {high}" if high is not None else "",
              "> 0" if positive else ""]
    wanted = " and ".join(b for b in bounds if b) or "finite"
    if (not math.isfinite(number) or (low is not None and number < low) or (high is not None and number > high)
            or (positive and number <= 0)):
        raise ConfigError(f"{owner}.{name} must be finite and {wanted}, got {value!r}")
    return number


def real_tuple(owner: str, name: str, value: Any, size: int, **bounds: Any) -> tuple[float, ...]:
    """`value` as a tuple of `size` floats, each checked by `real` with `bounds`."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (tuple, list, np.ndarray)) or len(value) != size:
        raise ConfigError(f"{owner}.{name} must be a sequence of {size} numbers, got {value!r}")
    return tuple(real(owner, f"{name}[{i}]", v, **bounds) for i, v in enumerate(value))


def real_range(owner: str, name: str, value: Any, **bounds: Any) -> tuple[float, float]:
    """`value` as a (low, high) pair of floats with low <= high, each checked by `real` with `bounds`."""
    low, high = real_tuple(owner, name, value, 2, **bounds)
    if low > high:
        raise ConfigError(f"{owner}.{name} must be (low, high) with low <= high, got {value!r}")
    return low, high
