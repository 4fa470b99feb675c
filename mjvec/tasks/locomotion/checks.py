"""Validation of the numbers a task config holds (the Playground tasks': locomotion and
manipulation): each check names the owner, the field, the value and what is allowed, and returns
the value normalised (a float, a tuple of floats); `TermWeights` and `NoiseScalesBase` are the
frozen bases of their weight and noise tables."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from mjvec.errors import ConfigError, is_int

__all__ = ["NoiseScalesBase", "TermWeights", "episode_timing", "real", "real_range", "real_tuple"]


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


@dataclass(frozen=True)
class TermWeights:
    """Base of a frozen table of reward-term weights (subclasses declare one float field per term):
    every field a finite real number (ConfigError naming the class and the field otherwise)."""

    def __post_init__(self) -> None:
        for f in fields(self):
            object.__setattr__(self, f.name, real(type(self).__name__, f.name, getattr(self, f.name)))

    def as_dict(self) -> dict[str, float]:
        """term name -> weight, in the order the fields are declared."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class NoiseScalesBase:
    """Base of a frozen table of observation-noise scales (one float field per block): every field
    a finite real number >= 0 (ConfigError naming the class and the field otherwise)."""

    def __post_init__(self) -> None:
        for f in fields(self):
            object.__setattr__(self, f.name, real(type(self).__name__, f.name, getattr(self, f.name), low=0.0))


def episode_timing(owner: str, episode_length: Any, ctrl_dt: float, sim_dt: float) -> int:
    """`episode_length` as an int >= 1, checked with the timing: ctrl_dt / sim_dt must be a whole
    number of substeps >= 1. ConfigError naming `owner` otherwise."""
    if not is_int(episode_length) or episode_length < 1:
        raise ConfigError(f"{owner}.episode_length must be an int >= 1, got {episode_length!r}")
    ratio = ctrl_dt / sim_dt
    if abs(ratio - round(ratio)) > 1e-9 or round(ratio) < 1:
        raise ConfigError(
            f"{owner}: ctrl_dt / sim_dt must be a whole number of substeps >= 1, got {ctrl_dt} / "
            f"{sim_dt} = {ratio:.6g}"
        )
    return int(episode_length)
