"""Timed velocity kicks, as MuJoCo Playground's locomotion tasks push the base (``pert_config``).

Per episode (drawn at the reset, uniform in the config's ranges): the wait between kicks
(``kick_wait_times`` s -> round(t / dt) steps), the kick's duration (``kick_durations`` s, and
round(duration / dt) steps) and its velocity magnitude (``velocity_kick`` m/s). Each control step,
before the physics:

- waiting (steps_since_last < steps_until_next): no force; steps_since_last += 1, and when the wait
  is over a new horizontal direction (cos, sin, 0) of a uniform angle is drawn and the kick's step
  counter restarts;
- kicking: the force on the body for this step is
  ``0.5 sin(pi t / duration) x mass x magnitude / duration x direction``, t = kick steps so far
  x dt (a half sine whose impulse is about mass x magnitude / 2), then the kick's step counter
  advances; once it has reached the kick's step count the wait starts over (the force of that step
  is still applied, as Playground's).

Streams: ``push/reset`` (3 uniforms per reset), ``push/direction`` (one uniform per new kick).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from mjvec import portable
from mjvec.errors import ConfigError
from mjvec.tasks.locomotion.checks import real_range
from mjvec.xp import Rows, namespace_of

if TYPE_CHECKING:
    from mjvec.rng import EnvRandom

__all__ = ["PushConfig", "PushState"]

Array = Any


@dataclass(frozen=True)
class PushConfig:
    """Playground's ``pert_config`` (defaults: its Go1 joystick's; kicks are off there).

    enable: whether kicks are applied (the schedule is drawn either way, so the privileged state's
    "kick due" flag reads the same). velocity_kick (m/s), kick_durations (s), kick_wait_times (s):
    (low, high) uniform ranges, >= 0 (durations and waits > 0).
    """

    enable: bool = False
    velocity_kick: tuple[float, float] = (0.0, 3.0)
    kick_durations: tuple[float, float] = (0.05, 0.2)
    kick_wait_times: tuple[float, float] = (1.0, 3.0)

    def __post_init__(self) -> None:
        owner = type(self).__name__
        if not isinstance(self.enable, (bool, np.bool_)):
            raise ConfigError(f"{owner}.enable must be True or False, got {self.enable!r}")
        object.__setattr__(self, "velocity_kick", real_range(owner, "velocity_kick", self.velocity_kick, low=0.0))
        for name in ("kick_durations", "kick_wait_times"):
            low, high = real_range(owner, name, getattr(self, name), low=0.0)
            if low <= 0:
                raise ConfigError(f"{owner}.{name} must be (low, high) seconds with 0 < low <= high, got "
                                  f"{getattr(self, name)!r}")
            object.__setattr__(self, name, (low, high))


@dataclass(eq=False)
class PushState:
    """Each env's kick schedule, (N,) arrays (direction (N, 3)) in the state's namespace.

    steps_until_next / duration_steps / steps_since_last / kick_steps: int64 step counts;
    duration_s, magnitude: float; direction: the current kick's unit vector.
    """

    cfg: PushConfig
    dt: float
    steps_until_next: Array
    duration_s: Array
    duration_steps: Array
    magnitude: Array
    steps_since_last: Array
    kick_steps: Array
    direction: Array

    @classmethod
    def create(cls, cfg: PushConfig, dt: float, zeros: Callable[[tuple[int, ...], Any], Array], dtype: Any,
               int_dtype: Any) -> PushState:
        """An empty schedule (before the first reset); zeros(tail, dtype) makes (N, *tail) arrays."""
        if not isinstance(cfg, PushConfig):
            raise ConfigError(f"pushes must be a PushConfig, got {type(cfg).__name__}")
        # A duration of 1 (never 0) keeps the force's division finite in rows never reset.
        return cls(cfg, float(dt), zeros((), int_dtype), zeros((), dtype) + 1.0, zeros((), int_dtype),
                   zeros((), dtype), zeros((), int_dtype), zeros((), int_dtype), zeros((3,), dtype))

    def reset(self, rng: EnvRandom, rows: Rows) -> None:
        """Draw the episode's wait, duration and magnitude for `rows`; no kick under way."""
        u = rng.uniform(rows, "push/reset", 0.0, 1.0, (3,))
        xp = namespace_of(u)
        (w0, w1), (d0, d1), (m0, m1) = self.cfg.kick_wait_times, self.cfg.kick_durations, self.cfg.velocity_kick
        wait, duration = w0 + (w1 - w0) * u[:, 0], d0 + (d1 - d0) * u[:, 1]
        rows.put(self.steps_until_next, xp.astype(xp.round(wait / self.dt), xp.int64))
        rows.put(self.duration_s, xp.astype(duration, self.duration_s.dtype))
        rows.put(self.duration_steps, xp.astype(xp.round(duration / self.dt), xp.int64))
        rows.put(self.magnitude, xp.astype(m0 + (m1 - m0) * u[:, 2], self.magnitude.dtype))
        rows.put(self.steps_since_last, 0)
        rows.put(self.kick_steps, 0)
        rows.put(self.direction, 0.0)

    def due(self) -> Array:
        """(N,) bool: a kick is under way (or starts this step): the wait is over."""
        return self.steps_since_last >= self.steps_until_next

    def step(self, rng: EnvRandom, mass: float) -> Array:
        """Advance every env's schedule by one step; returns the (N, 3) force on the pushed body for
        this step (zero where waiting). `mass`: the pushed mass (kg), e.g. the base's subtree mass."""
        xp = namespace_of(self.direction)
        kicking = self.due()
        t = xp.astype(self.kick_steps, self.duration_s.dtype) * self.dt
        profile = 0.5 * portable.sin(np.pi * t / self.duration_s)
        force = (profile * mass * self.magnitude / self.duration_s)[:, None] * self.direction
        force = xp.where(kicking[:, None], force, 0.0)
        ended = kicking & (self.kick_steps >= self.duration_steps)
        since = xp.where(ended, 0, xp.where(kicking, self.steps_since_last, self.steps_since_last + 1))
        kicks = xp.where(kicking, self.kick_steps + 1, self.kick_steps)
        starting = ~kicking & (since >= self.steps_until_next)
        self.steps_since_last[...] = since
        self.kick_steps[...] = xp.where(starting, 0, kicks)
        rows = Rows.of_mask(starting)
        if rows.any():
            angle = rng.uniform(rows, "push/direction", 0.0, 2.0 * np.pi)
            sin, cos = portable.sincos(angle)
            unit = xp.stack([cos, sin, xp.zeros_like(cos)], axis=1)
            rows.put(self.direction, xp.astype(unit, self.direction.dtype))
        return force
