"""Object-centric randomization for SimToolReal-style tasks: perceived-pose latency and noise,
grasp-box scale noise, random pushes through the backend's ``xfrc_applied`` input
(the paper's perception and push randomization).

Each wrapper acts only through the hooks the task declares (`mjvec.randomization.hooks`) and
draws from the env's per-env streams for exactly the envs concerned (see
`mjvec.randomization.perception` for the stream rules).
"""

from __future__ import annotations

import math

import numpy as np
from gymnasium.vector import VectorEnv, VectorWrapper

from mjvec.errors import ConfigError
from mjvec.randomization.hooks import (
    EnvHooks,
    HookWrapper,
    ObjectPoseHooks,
    ObjectScaleHooks,
    PushHooks,
    require_hooks,
)
from mjvec.randomization.inputs import StateInput
from mjvec.randomization.perception import _check_delay, _DelayQueue, _ResetMarks


def _rotate_by_axis_angle(axis: np.ndarray, half: np.ndarray, quat: np.ndarray) -> np.ndarray:
    """(K, 4) wxyz: the rotation by angle 2 * half (K,) about unnormalized axis (K, 3), times quat (K, 4).

    The Hamilton product (cos h, sin h * n) * q with n = axis / |axis|, written out on columns.
    """
    s = np.sin(half) / np.maximum(np.sqrt(np.einsum("ij,ij->i", axis, axis)), 1e-12)
    aw, ax, ay, az = np.cos(half), axis[:, 0] * s, axis[:, 1] * s, axis[:, 2] * s
    bw, bx, by, bz = quat[:, 0], quat[:, 1], quat[:, 2], quat[:, 3]
    out = np.empty_like(quat)
    out[:, 0] = aw * bw - ax * bx - ay * by - az * bz
    out[:, 1] = aw * bx + ax * bw + ay * bz - az * by
    out[:, 2] = aw * by - ax * bz + ay * bw + az * bx
    out[:, 3] = aw * bz + ax * by - ay * bx + az * bw
    return out


class ObjectPoseLatency(HookWrapper, VectorWrapper):
    """The policy sees the object pose from 0..max_delay control steps ago (random per env per
    step), plus N(0, pos_std) position noise and a rotation of U(-rot_deg, rot_deg) about a
    uniformly random axis. The critic and the reward keep the true pose.

    Needs `EnvHooks` and `ObjectPoseHooks`. Each control step (the lifecycle's interval event)
    pushes the true pose and draws one age and one noise sample per env; an env's reset refills
    its queue with its initial pose and draws a fresh noise sample for it alone, on the streams'
    "/reset" twins.
    """

    def __init__(self, env: VectorEnv, max_delay: int = 9, pos_std: float = 0.01, rot_deg: float = 5.0) -> None:
        super().__init__(env)
        base = require_hooks(env, EnvHooks, ObjectPoseHooks, who="ObjectPoseLatency")
        _check_delay("ObjectPoseLatency", max_delay)
        for name, value in (("pos_std", pos_std), ("rot_deg", rot_deg)):
            if not (math.isfinite(value) and value >= 0):
                raise ConfigError(f"ObjectPoseLatency: {name} must be finite and >= 0, got {value}")
        self._base, self._max = base, max_delay
        self._pos_std, self._rot = pos_std, math.radians(rot_deg)
        self._queue = _DelayQueue(max_delay + 1)
        self._marks = _ResetMarks(base.num_envs)
        self._ids = np.arange(base.num_envs)
        self._observed: tuple[np.ndarray, np.ndarray] | None = None
        self._register(lambda: base.set_object_pose_source(self._pose),
                       lambda: base.lifecycle.subscribe("reset", self._marks.mark),
                       lambda: base.lifecycle.subscribe("interval", self._advance))

    def _sample(self, pose: np.ndarray, ids: np.ndarray, suffix: str = "") -> tuple[np.ndarray, np.ndarray]:
        rng = self._base.rng
        # One draw of 6 normals: 3 for the position noise, 3 for a uniformly random axis.
        z = rng.normal(ids, "dr/pose_noise" + suffix, (6,))
        pos = pose[:, :3] + self._pos_std * z[:, :3]
        half = rng.uniform(ids, "dr/pose_rot_angle" + suffix, -0.5 * self._rot, 0.5 * self._rot)  # half the angle
        return pos, _rotate_by_axis_angle(z[:, 3:], half, pose[:, 3:])

    def _advance(self, dt: float) -> None:
        """Once per control step, after physics: push the true pose, draw the delayed noisy one."""
        pos, quat = self._base.true_object_pose()
        self._queue.push(np.concatenate([pos, quat], axis=1), self._marks.take())
        ages = self._base.rng.integers(self._ids, "dr/pose_delay", 0, self._max + 1)
        self._observed = self._sample(self._queue.read(ages), self._ids)

    def _pose(self) -> tuple[np.ndarray, np.ndarray]:
        """The pose the policy sees now; envs reset since the last call restart their queue."""
        refill = self._marks.take()
        if self._observed is None or refill.size:
            pos, quat = self._base.true_object_pose()
            self._queue.refill(np.concatenate([pos, quat], axis=1), refill)
            if self._observed is None:
                self._observed = self._sample(self._queue.newest(), self._ids, "/reset")
            else:
                fresh = self._sample(self._queue.newest()[refill], refill, "/reset")
                self._observed[0][refill], self._observed[1][refill] = fresh
        return self._observed[0].copy(), self._observed[1].copy()


class ObjectScaleNoise(HookWrapper, VectorWrapper):
    """Multiply the observed grasp-box scales (and so the observation keypoints) by U(low, high)
    per axis, drawn per env at every reset of that env (stream ``dr/scale_noise``).

    Needs `EnvHooks` and `ObjectScaleHooks`.
    """

    def __init__(self, env: VectorEnv, low: float = 0.9, high: float = 1.1) -> None:
        super().__init__(env)
        base = require_hooks(env, EnvHooks, ObjectScaleHooks, who="ObjectScaleNoise")
        if not (0 < low <= high and math.isfinite(high)):
            raise ConfigError(f"ObjectScaleNoise: need 0 < low <= high, got low={low}, high={high}")
        self._base, self._low, self._high = base, low, high
        self._mult = np.ones((base.num_envs, 3))
        self._register(lambda: base.set_object_scale_source(self._scales),
                       lambda: base.lifecycle.subscribe("reset", self._draw))

    def _draw(self, env_ids: np.ndarray) -> None:
        self._mult[env_ids] = self._base.rng.uniform(env_ids, "dr/scale_noise", self._low, self._high, (3,))

    def _scales(self) -> np.ndarray:
        return np.asarray(self._base.object_scales) * self._mult


class RandomPushes(HookWrapper, VectorWrapper):
    """One-control-step random force/torque pushes on the task's push body through the backend's
    declared ``xfrc_applied`` input (`mjvec.randomization.inputs.StateInput`).

    Needs `EnvHooks` and `PushHooks`. Each env draws a push probability p ~ log-uniform(prob_range)
    at every reset of that env; each step, with probability p and only where the task allows a push
    (``push_allowed()``, e.g. the object is lifted), the next control step gets a force
    N(0, 1)^3 x mass x force_scale and a torque N(0, 1)^3 x mass x torque_scale. The push draw is
    made every step for every env; force and torque draws only for the pushed envs.
    `pushed` is the (N,) mask of the latest step's pushes.
    """

    def __init__(self, env: VectorEnv, prob_range: tuple[float, float] = (0.001, 0.1), force_scale: float = 20.0,
                 torque_scale: float = 2.0) -> None:
        super().__init__(env)
        base = require_hooks(env, EnvHooks, PushHooks, who="RandomPushes")
        lo, hi = prob_range
        if not (0 < lo <= hi <= 1):
            raise ConfigError(f"RandomPushes: prob_range must satisfy 0 < low <= high <= 1, got {prob_range}")
        self._base, self._log_range = base, (math.log(lo), math.log(hi))
        self._scales = (force_scale, torque_scale)
        self._input = StateInput(base.backend, "xfrc_applied", who="RandomPushes")
        self._body = np.array([int(base.push_body_id)], np.int64)
        self._prob = np.zeros(base.num_envs)
        self._ids = np.arange(base.num_envs)
        self._wrench = np.zeros((base.num_envs, 1, 6))
        self.pushed = np.zeros(base.num_envs, bool)
        self._register(lambda: base.lifecycle.subscribe("reset", self._on_reset),
                       lambda: base.lifecycle.subscribe("interval", self._on_step))

    def _on_reset(self, env_ids: np.ndarray) -> None:
        self._prob[env_ids] = np.exp(self._base.rng.uniform(env_ids, "dr/push_prob", *self._log_range))

    def _on_step(self, dt: float) -> None:
        base = self._base
        u = base.rng.uniform(self._ids, "dr/push_draw")
        self.pushed = (u < self._prob) & np.asarray(base.push_allowed(), bool)
        self._wrench[:] = 0.0
        ids = np.flatnonzero(self.pushed)
        if ids.size:
            mass = np.asarray(base.push_mass)[ids, None]
            self._wrench[ids, 0, :3] = base.rng.normal(ids, "dr/push_force", (3,)) * mass * self._scales[0]
            self._wrench[ids, 0, 3:] = base.rng.normal(ids, "dr/push_torque", (3,)) * mass * self._scales[1]
        self._input.write(None, self._body, self._wrench)
