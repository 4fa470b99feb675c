"""The policy's action applied as its contract says (docs/deploy.md, "Action"): per dimension,

    a      = clip(action, action.low, action.high)                 (float64)
    raw    = offset + scale * a          map "affine", mode "absolute" or "torque"
           = previous + scale * a        map "affine", mode "delta"
           = lo + 0.5 * (a + 1) * (hi - lo)   map "limits", (lo, hi) = map_range
    raw    = clip(raw, clip_target)      where given
    target = smoothing * raw + (1 - smoothing) * previous   where given
    target = clip(target, limit)         where given
    ctrl[actuator] = target; previous = target

On a robot the targets go to the joint controllers instead of ``MjData.ctrl``, with the contract's
gains (``model.actuators[i].kp`` / ``kd``) and force limits.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import mujoco
import numpy as np

from .observation import DeployError, _id


def _bounds(dims: list[Mapping[str, Any]], key: str, missing: float = np.inf) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi) arrays of each dimension's range `key`; a dimension without one gets (-missing, missing)."""
    lo = np.array([-missing if d[key] is None else d[key][0] for d in dims], np.float64)
    hi = np.array([missing if d[key] is None else d[key][1] for d in dims], np.float64)
    return lo, hi


class ActionMapper:
    """The contract's action pipeline over `model`'s actuators (see the module docstring).

    Raises DeployError for an undeclared action dimension or an actuator the model lacks.
    """

    def __init__(self, contract: Mapping[str, Any], model: mujoco.MjModel) -> None:
        action = contract["action"]
        dims = action["dims"]
        undeclared = [d["actuator"] for d in dims if d["mode"] == "undeclared" or d["map"] == "undeclared"]
        if undeclared:
            raise DeployError(f"action dimensions {undeclared[:4]} have no declared semantics (the task declares no "
                              "MjVecEnv.deployment_spec): the loop cannot apply them")
        self.size = int(action["size"])
        self.low = np.asarray(action["low"], np.float64)
        self.high = np.asarray(action["high"], np.float64)
        self.actuators = np.array([_id(model, "actuator", d["actuator"]) for d in dims], np.int64)
        joints = [d["joint"] for d in dims]
        self.initial = action["initial_targets"]
        if self.initial == "joint_pos":
            if None in joints:
                raise DeployError("initial_targets 'joint_pos' needs a joint for every action dimension")
            self.joint_qpos = np.array([model.jnt_qposadr[_id(model, "joint", j)] for j in joints], np.int64)
        self.delta = np.array([d["mode"] == "delta" for d in dims])
        self.limits = np.array([d["map"] == "limits" for d in dims])
        self.scale = np.array([d["scale"] for d in dims], np.float64)
        self.offset = np.array([0.0 if d["offset"] is None else d["offset"] for d in dims], np.float64)
        self.map_lo, self.map_hi = _bounds(dims, "map_range", 0.0)  # 0: the unused branch stays finite
        self.clip_lo, self.clip_hi = _bounds(dims, "clip_target")
        self.limit_lo, self.limit_hi = _bounds(dims, "limit")
        self.smoothed = np.array([d["smoothing"] is not None for d in dims])
        self.alpha = np.array([1.0 if d["smoothing"] is None else d["smoothing"] for d in dims], np.float64)

    def initial_targets(self, data: mujoco.MjData) -> np.ndarray | None:
        """The targets at an episode's start: the driven joints' positions, or None (torque actions)."""
        return data.qpos[self.joint_qpos].copy() if self.initial == "joint_pos" else None

    def targets(self, action: Any, previous: np.ndarray | None) -> np.ndarray:
        """The new (A,) targets (ctrl values) for `action` after `previous` (None: torque actions)."""
        a = np.asarray(action, np.float64).reshape(-1)
        if a.shape != (self.size,) or not np.isfinite(a).all():
            raise DeployError(f"the action must be {self.size} finite values, got shape {a.shape}")
        a = np.clip(a, self.low, self.high)
        prev = np.zeros(self.size) if previous is None else previous
        raw = np.where(self.delta, prev + self.scale * a, self.offset + self.scale * a)
        raw = np.where(self.limits, self.map_lo + 0.5 * (a + 1.0) * (self.map_hi - self.map_lo), raw)
        raw = np.clip(raw, self.clip_lo, self.clip_hi)
        raw = np.where(self.smoothed, self.alpha * raw + (1.0 - self.alpha) * prev, raw)
        return np.clip(raw, self.limit_lo, self.limit_hi)

    def write(self, data: mujoco.MjData, targets: np.ndarray) -> None:
        """Write the targets into the actuators' ctrl (the other actuators keep theirs)."""
        data.ctrl[self.actuators] = targets
