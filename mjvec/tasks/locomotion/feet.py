"""Feet: contact, air time, swing height and the feet reward terms, as MuJoCo Playground's
locomotion tasks compute them (F feet, (N, F) arrays).

One evaluated step (`FeetState.touch_down`, then `FeetState.commit`), in Playground's order:

- contact: this step's foot-floor contact (e.g. a contact sensor's "found" > 0);
- first_contact = (air_time > 0) & (contact | last_contact): a foot that was airborne lands
  (the previous step's contact filters one-step flickers);
- air_time += control_dt and swing_peak = max(swing_peak, foot height), both before the rewards
  read them; after them (`commit`) a foot in contact has its air time and swing peak zeroed and
  last_contact becomes this step's contact.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mjvec.xp import Rows, assign_where, namespace_of

__all__ = [
    "FeetState",
    "FeetStep",
    "feet_air_time",
    "feet_clearance",
    "feet_height",
    "feet_slip",
    "moving",
]

Array = Any


def moving(command: Array, threshold: float = 0.01) -> Array:
    """(N,) bool: the command's norm exceeds `threshold` (Playground's ``cmd_norm > 0.01``)."""
    xp = namespace_of(command)
    return xp.linalg.vector_norm(command, axis=-1) > threshold


def feet_slip(feet_vel: Array, contact: Array, command: Array) -> Array:
    """Sum over feet in contact of |v_xy|^2 (feet_vel (N, F, 3) world), 0 for a standing command."""
    xp = namespace_of(feet_vel)
    speed_sq = xp.sum(feet_vel[..., :2] ** 2, axis=-1)
    return xp.sum(speed_sq * xp.astype(contact, speed_sq.dtype), axis=-1) * xp.astype(moving(command), speed_sq.dtype)


def feet_clearance(feet_vel: Array, foot_z: Array, max_foot_height: float) -> Array:
    """Sum over feet of |z - max_foot_height| sqrt(|v_xy|) (feet_vel (N, F, 3), foot_z (N, F))."""
    xp = namespace_of(feet_vel)
    speed = xp.sqrt(xp.linalg.vector_norm(feet_vel[..., :2], axis=-1))
    return xp.sum(xp.abs(foot_z - max_foot_height) * speed, axis=-1)


def feet_height(swing_peak: Array, first_contact: Array, command: Array, max_foot_height: float) -> Array:
    """Sum over landing feet of (swing_peak / max_foot_height - 1)^2, 0 for a standing command."""
    xp = namespace_of(swing_peak)
    error = (swing_peak / max_foot_height - 1.0) ** 2
    return xp.sum(error * xp.astype(first_contact, error.dtype), axis=-1) * xp.astype(moving(command), error.dtype)


def feet_air_time(air_time: Array, first_contact: Array, command: Array, threshold: float = 0.1) -> Array:
    """Sum over landing feet of (air_time - threshold), 0 for a standing command."""
    xp = namespace_of(air_time)
    total = xp.sum((air_time - threshold) * xp.astype(first_contact, air_time.dtype), axis=-1)
    return total * xp.astype(moving(command), air_time.dtype)


@dataclass(frozen=True, eq=False)
class FeetStep:
    """One step's feet quantities, before `FeetState.commit`: contact, first_contact (N, F) bool,
    air_time and swing_peak (N, F) as the rewards read them."""

    contact: Array
    first_contact: Array
    air_time: Array
    swing_peak: Array


@dataclass(eq=False)
class FeetState:
    """(N, F) per-foot state kept between steps: air_time (s), last_contact (bool), swing_peak (m)."""

    air_time: Array
    last_contact: Array
    swing_peak: Array

    @classmethod
    def create(cls, zeros: Any, num_feet: int, dtype: Any, bool_dtype: Any) -> FeetState:
        """All zero (every foot grounded, no history); zeros(tail, dtype) makes (N, *tail) arrays."""
        return cls(zeros((num_feet,), dtype), zeros((num_feet,), bool_dtype), zeros((num_feet,), dtype))

    def reset(self, rows: Rows) -> None:
        """The feet of `rows` back to zero air time, no contact, zero swing peak."""
        rows.put(self.air_time, 0.0)
        rows.put(self.last_contact, False)
        rows.put(self.swing_peak, 0.0)

    def touch_down(self, contact: Array, foot_z: Array, dt: float) -> FeetStep:
        """This step's values from its contacts (N, F) and foot heights (N, F); nothing is written."""
        xp = namespace_of(foot_z)
        first = (self.air_time > 0.0) & (contact | self.last_contact)
        peak = xp.maximum(self.swing_peak, xp.astype(foot_z, self.swing_peak.dtype))
        return FeetStep(contact, first, self.air_time + dt, peak)

    def commit(self, active: Array, step: FeetStep) -> None:
        """Keep the step's values for the `active` (N,) envs, zeroed where a foot is in contact."""
        xp = namespace_of(self.air_time)
        grounded = step.contact
        mask = active[:, None]
        assign_where(self.air_time, mask, xp.where(grounded, 0.0, step.air_time))
        assign_where(self.swing_peak, mask, xp.where(grounded, 0.0, step.swing_peak))
        assign_where(self.last_contact, mask, grounded)
