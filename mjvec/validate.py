"""The checks every config and constructor makes of its counts, numbers and flags, written once.

Each returns the value in its plain Python type or raises `ConfigError` in one form, naming the
argument, the allowed values and what was given: ``"<name> must be an int >= 1 or None, got 0"``.
An int is a Python or numpy integer, never a bool; a number is an int or a float (numpy's too),
never a bool; a flag is True or False (numpy's bools too), never 0 or 1.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from mjvec.errors import ConfigError, is_int

__all__ = ["require_bool", "require_int", "require_number"]


def _bounds(kind: str, low: Any, high: Any, low_open: bool = False) -> str:
    if low is not None and high is not None:
        return f"{kind} in {'(' if low_open else '['}{low}, {high}]"
    if low is not None:
        return f"{kind} {'>' if low_open else '>='} {low}"
    if high is not None:
        return f"{kind} <= {high}"
    return kind


def require_int(value: Any, name: str, *, low: int | None = None, high: int | None = None,
                optional: bool = False) -> Any:
    """`value` as an int in [low, high] (either bound may be None), or None when `optional` allows it."""
    if value is None and optional:
        return None
    if not is_int(value) or (low is not None and value < low) or (high is not None and value > high):
        raise ConfigError(f"{name} must be {_bounds('an int', low, high)}{' or None' if optional else ''}, "
                          f"got {value!r}")
    return int(value)


def require_number(value: Any, name: str, *, low: float | None = None, high: float | None = None,
                   low_open: bool = False, optional: bool = False) -> Any:
    """`value` as a finite float in [low, high] ((low, high] with `low_open`), or None when `optional`."""
    if value is None and optional:
        return None
    ok = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))
    if ok:
        number = float(value)
        ok = math.isfinite(number) and (low is None or (number > low if low_open else number >= low)) and (
            high is None or number <= high)
    if not ok:
        raise ConfigError(f"{name} must be {_bounds('a finite number', low, high, low_open)}"
                          f"{' or None' if optional else ''}, got {value!r}")
    return number


def require_bool(value: Any, name: str) -> bool:
    """`value` as a bool: True or False (Python's or numpy's), not a number."""
    if not isinstance(value, (bool, np.bool_)):
        raise ConfigError(f"{name} must be True or False, got {value!r}")
    return bool(value)
