"""Velocity commands (lin x, lin y, yaw rate) and their resampling timers, as MuJoCo Playground's
joystick tasks draw them.

- At a reset each component is uniform in [-a, a] (`CommandConfig.amplitude`), and the steps
  until the next resample are round(E / control_dt), E exponential with mean
  `CommandConfig.mean_resample_s` seconds (rounded half to even, as ``jnp.round``).
- Each evaluated step the timer counts down by one; where it reaches <= 0 the command is resampled
  (`resample_command`): each component independently keeps its value with probability 1/2, else
  becomes y z with y uniform in [-a, a] and z a Bernoulli(b) draw (`CommandConfig.keep_probability`:
  b is the probability a new component is not zeroed). The timer is redrawn where it ran out or
  the episode ended.

Streams (per env, `mjvec.rng.EnvRandom`): ``command/reset`` (the reset command), ``command/timer``
(every timer draw), ``command/resample`` (9 uniforms per resample: y, then z's and w's uniforms).
Only the envs concerned draw.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mjvec import portable
from mjvec.errors import ConfigError
from mjvec.tasks.locomotion.checks import real, real_tuple
from mjvec.xp import Rows, namespace_of

if TYPE_CHECKING:
    from mjvec.rng import EnvRandom

__all__ = ["CommandConfig", "CommandState", "resample_command", "timer_steps"]

Array = Any


@dataclass(frozen=True)
class CommandConfig:
    """How commands are drawn (defaults: Playground's Go1 joystick ``command_config``).

    amplitude: a, the half-width of each component's uniform range (m/s, m/s, rad/s), >= 0.
    keep_probability: b, the probability that a resampled component is not zeroed, in [0, 1].
    mean_resample_s: the mean of the exponential time between resamples, seconds, > 0.
    """

    amplitude: tuple[float, float, float] = (1.5, 0.8, 1.2)
    keep_probability: tuple[float, float, float] = (0.9, 0.25, 0.5)
    mean_resample_s: float = 5.0

    def __post_init__(self) -> None:
        owner = type(self).__name__
        object.__setattr__(self, "amplitude", real_tuple(owner, "amplitude", self.amplitude, 3, low=0.0))
        object.__setattr__(self, "keep_probability",
                           real_tuple(owner, "keep_probability", self.keep_probability, 3, low=0.0, high=1.0))
        object.__setattr__(self, "mean_resample_s", real(owner, "mean_resample_s", self.mean_resample_s,
                                                         positive=True))


def resample_command(x: Array, y: Array, z: Array, w: Array) -> Array:
    """Playground's ``sample_command``: x - w (x - y z), for the current command x (K, 3), new
    uniform components y (K, 3), keep-nonzero flags z (K, 3) and replace flags w (K, 3) (bool or 0/1)."""
    xp = namespace_of(x)
    return x - xp.astype(w, x.dtype) * (x - y * xp.astype(z, x.dtype))


def timer_steps(u: Array, mean_s: float, dt: float) -> Array:
    """Steps until the next resample from uniforms u in [0, 1): round(-log(1 - u) mean_s / dt), int64."""
    xp = namespace_of(u)
    return xp.astype(xp.round(-portable.log(1.0 - u) * mean_s / dt), xp.int64)


@dataclass(eq=False)
class CommandState:
    """Each env's command and resampling timer, (N, ...) arrays in the state's namespace.

    command (N, 3): the command in force (what rewards read); steps_left (N,) int64: control steps
    until the next resample. `reset` draws both for the reset envs; `advance` runs one step's
    countdown and resampling for the evaluated envs.
    """

    cfg: CommandConfig
    dt: float
    command: Array
    steps_left: Array

    @classmethod
    def create(cls, cfg: CommandConfig, dt: float, zeros: Callable[[tuple[int, ...], Any], Array],
               dtype: Any, int_dtype: Any) -> CommandState:
        """Zero commands and timers (before the first reset); zeros(tail, dtype) makes (N, *tail) arrays."""
        if not isinstance(cfg, CommandConfig):
            raise ConfigError(f"commands must be a CommandConfig, got {type(cfg).__name__}")
        return cls(cfg, float(dt), zeros((3,), dtype), zeros((), int_dtype))

    def _amplitude(self, like: Array) -> Array:
        xp = namespace_of(like)
        return xp.asarray(self.cfg.amplitude, dtype=xp.float64, device=getattr(like, "device", None))

    def reset(self, rng: EnvRandom, rows: Rows) -> None:
        """Draw a uniform command and a timer for the envs of `rows`."""
        u = rng.uniform(rows, "command/reset", 0.0, 1.0, (3,))
        a = self._amplitude(u)
        xp = namespace_of(u)
        rows.put(self.command, xp.astype(-a + 2.0 * a * u, self.command.dtype))
        rows.put(self.steps_left, self._timer(rng, rows))

    def _timer(self, rng: EnvRandom, rows: Rows) -> Array:
        return timer_steps(rng.uniform(rows, "command/timer"), self.cfg.mean_resample_s, self.dt)

    def advance(self, rng: EnvRandom, active: Array, done: Array) -> Array:
        """One step for the `active` (N,) envs: count down, resample where the timer ran out, redraw
        the timer there and where `done` (N,). Returns the (N,) bool mask of envs resampled."""
        xp = namespace_of(self.steps_left)
        left = self.steps_left - xp.astype(active, self.steps_left.dtype)
        due = active & (left <= 0)
        rows = Rows.of_mask(due)
        if rows.any():
            u = rng.uniform(rows, "command/resample", 0.0, 1.0, (3, 3))
            a, b = self._amplitude(u), xp.asarray(self.cfg.keep_probability, dtype=u.dtype, device=u.device)
            y = -a + 2.0 * a * u[:, 0]
            new = resample_command(xp.astype(rows.take(self.command), u.dtype), y, u[:, 1] < b, u[:, 2] < 0.5)
            rows.put(self.command, xp.astype(new, self.command.dtype))
        redraw = Rows.of_mask(due | (active & done))
        self.steps_left[...] = left
        if redraw.any():
            redraw.put(self.steps_left, self._timer(rng, redraw))
        return due
