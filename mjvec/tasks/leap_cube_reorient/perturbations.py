"""Playground's cube perturbations of LeapCubeReorient (``reorient.py``'s
``_maybe_apply_perturbation``, off by default): per episode a wait W and a duration D (steps) and a
velocity change v (6: linear x3, angular x3) are drawn; at every step s > 0 with s mod W = 0 a new
unit direction d (6) is drawn and a push starts; for the D steps from its start the cube gets the
wrench 0.5 sin(pi k / D) x mass x v / (D x control_dt) x d (k: steps since the push began).

`LeapPerturbations` holds the (N, ...) schedule (live, the state's namespace)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from mjvec import portable
from mjvec.tasks.leap_cube_reorient.config import LeapCubeReorientConfig
from mjvec.xp import Rows, namespace_of

__all__ = ["LeapPerturbations"]

Array = Any
NEVER = -1e9  # "no push yet" (Playground's -inf start): no step is within a duration of it


@dataclass(eq=False)
class LeapPerturbations:
    """step (N,) int: control steps since the reset; wait, duration (N,) int; velocity (N, 6);
    direction (N, 6); last_start (N,) float: the step the last push started at."""

    cfg: LeapCubeReorientConfig
    step: Array
    wait: Array
    duration: Array
    velocity: Array
    direction: Array
    last_start: Array

    @classmethod
    def create(cls, cfg: LeapCubeReorientConfig, zeros: Any, dtype: Any, int_dtype: Any) -> LeapPerturbations:
        return cls(cfg, zeros((), int_dtype), zeros((), int_dtype), zeros((), int_dtype), zeros((6,), dtype),
                   zeros((6,), dtype), zeros((), dtype))

    def reset(self, rng: Any, rows: Rows) -> None:
        """Draw the episode's schedule for `rows` (streams ``reset/pert_*``)."""
        cfg, xp = self.cfg, namespace_of(self.velocity)
        rows.put(self.step, 0)
        rows.put(self.direction, 0.0)
        rows.put(self.last_start, NEVER)
        rows.put(self.wait, rng.integers(rows, "reset/pert_wait", *cfg.pert_wait_steps))
        rows.put(self.duration, rng.integers(rows, "reset/pert_duration", *cfg.pert_duration_steps))
        u = xp.astype(rng.uniform(rows, "reset/pert_velocity", 0.0, 1.0), self.velocity.dtype)[:, None]
        (lin_lo, lin_hi), (ang_lo, ang_hi) = cfg.pert_linear_velocity, cfg.pert_angular_velocity
        lin, ang = lin_lo + (lin_hi - lin_lo) * u, ang_lo + (ang_hi - ang_lo) * u
        rows.put(self.velocity, xp.concat([lin, lin, lin, ang, ang, ang], axis=1))

    def wrench(self, rng: Any, mass: float, control_dt: float) -> Array:
        """(N, 6) this step's wrench on the cube (force, torque), the schedule advanced to it (a new
        direction where a push starts, stream ``pert/direction``)."""
        xp = namespace_of(self.velocity)
        start = (self.step % self.wait == 0) & (self.step != 0)
        self.last_start[...] = xp.where(start, xp.astype(self.step, self.last_start.dtype), self.last_start)
        elapsed = xp.clip(xp.astype(self.step, self.last_start.dtype) - self.last_start, 0.0, 1e5)
        active = elapsed < xp.astype(self.duration, elapsed.dtype)
        rows = Rows.of_mask(start)
        if rows.any():
            d = xp.astype(rng.normal(rows, "pert/direction", (6,)), self.direction.dtype)
            rows.put(self.direction, d / xp.linalg.vector_norm(d, axis=1, keepdims=True))
        duration = xp.astype(self.duration, elapsed.dtype)
        shape = 0.5 * portable.sin(math.pi * elapsed / duration)
        scale = shape * mass / (duration * control_dt) * xp.astype(active, elapsed.dtype)
        return scale[:, None] * self.velocity * self.direction

    def advance(self, active: Array) -> None:
        """End of a step: the step counter of `active` envs moves on."""
        self.step[...] = self.step + namespace_of(self.velocity).astype(active, self.step.dtype)
