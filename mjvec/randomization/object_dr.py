"""Object-centric randomization for SimToolReal-style tasks: perceived-pose latency and noise,
grasp-box scale noise, random pushes through the backend's ``xfrc_applied`` input
(the paper's perception and push randomization).

Each wrapper acts only through the hooks the task declares (`mjvec.contract`) and
draws from the env's per-env streams for exactly the envs concerned (see
`mjvec.randomization.perception` for the stream rules).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from gymnasium.vector import VectorEnv, VectorWrapper

from mjvec._jit import host_arrays, kernel
from mjvec._portable_host import in_sincos_domain
from mjvec._rotations_host import rotate_row
from mjvec.contract import (
    EnvHooks,
    ObjectPoseHooks,
    ObjectScaleHooks,
    PushHooks,
    PushReferenceMassHooks,
    require_hooks,
)
from mjvec.errors import ConfigError, allowed
from mjvec.randomization.inputs import StateInput
from mjvec.randomization.queues import DelayQueue, ResetMarks, check_delay, segment_hooks, with_segment_starts
from mjvec.randomization.wrapper import HookWrapper, WrapperEffect
from mjvec.rotations import rotate_by_axis_angle
from mjvec.xp import Rows, namespace_of
from mjvec.xp import copy_array as _copy

MASS_SCALES = ("reference", "per_env")


class ObjectPoseLatency(HookWrapper, VectorWrapper):
    """The policy sees the object pose from 0..max_delay control steps ago (random per env per
    step), plus N(0, pos_std) position noise and a rotation of U(-rot_deg, rot_deg) about an axis
    drawn from the positive octant (U(0, 1)^3, normalised; the source's quirk, as for its goal
    deltas), applied in the object's own frame. The critic and the reward keep the true pose.

    Needs `EnvHooks` and `ObjectPoseHooks`. Each control step (the lifecycle's interval event)
    pushes the true pose and draws one age and one noise sample per env; an env's reset refills
    its queue with its initial pose and draws a fresh noise sample for it alone, on the streams'
    "/reset" twins. refill_on_goal=True (needs `GoalSegmentHooks`): the queue of an env whose goal
    segment starts with this step (its segment counter is still 0 before this step's evaluation:
    it was just reset or reached a goal last step) is refilled with this step's pose, as the
    source's queue refills whenever its progress counter is 1 (after every success too).
    """

    def __init__(self, env: VectorEnv, max_delay: int = 9, pos_std: float = 0.01, rot_deg: float = 5.0,
                 refill_on_goal: bool = False) -> None:
        super().__init__(env)
        base = require_hooks(env, EnvHooks, ObjectPoseHooks, who="ObjectPoseLatency")
        self._segments = segment_hooks(env, refill_on_goal, "ObjectPoseLatency")
        check_delay("ObjectPoseLatency", max_delay)
        for name, value in (("pos_std", pos_std), ("rot_deg", rot_deg)):
            if not (math.isfinite(value) and value >= 0):
                raise ConfigError(f"ObjectPoseLatency: {name} must be finite and >= 0, got {value}")
        self._base, self._max = base, max_delay
        self._pos_std, self._rot = pos_std, math.radians(rot_deg)
        self._settings = {"max_delay": max_delay, "pos_std": float(pos_std), "rot_deg": float(rot_deg),
                          "rot_axis": "positive_octant", "refill_on_goal": refill_on_goal}
        self._queue = DelayQueue(max_delay + 1)
        self._marks = ResetMarks(base)
        self._all = base.all_rows
        self._observed: tuple[Any, Any] | None = None
        self._register(lambda: base.set_object_pose_source(self._pose),
                       lambda: base.lifecycle.subscribe("reset", self._marks.mark),
                       lambda: base.lifecycle.subscribe("interval", self._advance))

    def describe(self) -> WrapperEffect:
        """Latency and noise on the perceived object pose."""
        return WrapperEffect("pose_latency", "object_pose", self._settings)

    def per_env_bytes(self) -> int:
        """The queue of max_delay + 1 float64 poses (7 values), the perceived pose, a reset mark."""
        return (self._max + 2) * 7 * 8 + 1

    def _draws(self, rows: Rows, suffix: str) -> tuple[Any, Any, Any]:
        """The selection's noise: N(0, 1) position noise (rows, 3), rotation axis (rows, 3), half angle (rows,)."""
        rng = self._base.rng
        return (rng.normal(rows, "dr/pose_noise" + suffix, (3,)),
                rng.uniform(rows, "dr/pose_rot_axis" + suffix, 0.0, 1.0, (3,)),
                rng.uniform(rows, "dr/pose_rot_angle" + suffix, -0.5 * self._rot, 0.5 * self._rot))

    def _noisy(self, pose: Any, draws: tuple[Any, Any, Any]) -> tuple[Any, Any]:
        """(pos, quat) of `pose` (rows, 7) with the drawn noise applied."""
        xp = namespace_of(pose)
        noise, axis, half = draws
        pos = pose[:, :3] + xp.astype(self._pos_std * noise, pose.dtype)
        return pos, rotate_by_axis_angle(pose[:, 3:], xp.astype(axis, pose.dtype), xp.astype(half, pose.dtype))

    def _sample(self, pose: Any, rows: Rows, suffix: str = "") -> tuple[Any, Any]:
        """(pos, quat) of the selection's rows of `pose`, with noise drawn for those envs."""
        return self._noisy(pose, self._draws(rows, suffix))

    def _advance(self, dt: float) -> None:
        """Once per control step, after physics: push the true pose, draw the delayed noisy one."""
        pos, quat = self._base.true_object_pose()
        refill = with_segment_starts(self._marks.take(), self._segments, 0)
        self._queue.push(namespace_of(pos).concat([pos, quat], axis=1), refill)
        ages = self._base.rng.integers(self._all, "dr/pose_delay", 0, self._max + 1)
        draws = self._draws(self._all, "")
        buf = self._queue.buf
        if host_arrays((buf, *draws), (np.float64,)) and buf.flags.c_contiguous:
            # The queue's read, the noise and the rotation in one compiled pass (the same bits).
            observed = np.empty((buf.shape[1], 3)), np.empty((buf.shape[1], 4))
            if _delayed_noisy_pose(buf, self._queue.head, ages, self._pos_std, *draws, *observed):
                self._observed = observed
                return
        self._observed = self._noisy(self._queue.read(ages), draws)

    def _pose(self) -> tuple[Any, Any]:
        """The pose the policy sees now; envs reset since the last call restart their queue."""
        refill = self._marks.take()
        if self._observed is None or refill.any():
            pos, quat = self._base.true_object_pose()
            self._queue.refill(namespace_of(pos).concat([pos, quat], axis=1), refill)
            if self._observed is None:
                self._observed = self._sample(self._queue.newest(), self._all, "/reset")
            else:
                fresh = self._sample(refill.take(self._queue.newest()), refill, "/reset")
                refill.put(self._observed[0], fresh[0])
                refill.put(self._observed[1], fresh[1])
        return _copy(self._observed[0]), _copy(self._observed[1])


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
        self._mult = base.zeros((3,), base.xp.float64) + 1.0
        self._register(lambda: base.set_object_scale_source(self._scales),
                       lambda: base.lifecycle.subscribe("reset", self._draw))

    def describe(self) -> WrapperEffect:
        """A per-axis factor U(low, high) on the perceived scales, drawn at every reset."""
        return WrapperEffect("scale_noise", "object_scales", {"low": float(self._low), "high": float(self._high)})

    def per_env_bytes(self) -> int:
        """The three float64 scale factors per env."""
        return 3 * 8

    def _draw(self, rows: Rows) -> None:
        rows.put(self._mult, self._base.rng.uniform(rows, "dr/scale_noise", self._low, self._high, (3,)))

    def _scales(self) -> Any:
        return self._base.object_scales * self._mult


class RandomPushes(HookWrapper, VectorWrapper):
    """One-control-step random force and torque pushes on the task's push body through the backend's
    declared ``xfrc_applied`` input (`mjvec.randomization.inputs.StateInput`), as the source's.

    Needs `EnvHooks` and `PushHooks`. Force and torque are independent: at every reset of an env it
    draws a force probability and a torque probability, each log-uniform in prob_range; each step,
    before its physics (as the source's pre-physics step), for each of the two separately, an env is
    pushed with its probability and only where the task allows a push (``push_allowed()``, e.g. the
    object is lifted, as evaluated at the end of the previous step), for that control step:
    force N(0, 1)^3 x mass x force_scale, torque N(0, 1)^3 x mass x torque_scale. A step refused
    before it runs (DISABLED mode with a done env) draws nothing, and neither does an env the step
    autoresets instead of stepping (NEXT_STEP: ``autoresetting()``): it is not pushed and its streams
    stay where they were.

    mass_scale: what "mass" is.
      "reference" (default, the paper's run): ONE mass for every env, the task's
        ``push_reference_mass`` (needs `PushReferenceMassHooks`). The source scales every env's push
        by the object mass of its env 0; for SimToolReal that is the paper run's env-0 tool, so
        every env gets the same force scale, whatever its tool, shard or env_id_offset.
      "per_env": each env's own pushed-body mass, ``push_mass`` (the Isaac Lab port's choice;
        heavy tools are pushed proportionally harder).

    Streams: ``dr/push_force_prob`` and ``dr/push_torque_prob`` per reset (reset envs only);
    ``dr/push_force_draw`` and ``dr/push_torque_draw`` every step for every env that steps; ``dr/push_force``
    and ``dr/push_torque`` normals only for the envs pushed. `force_pushed` / `torque_pushed` are
    the (N,) masks of the latest step's pushes and `pushed` their union.
    """

    def __init__(self, env: VectorEnv, prob_range: tuple[float, float] = (0.001, 0.1), force_scale: float = 20.0,
                 torque_scale: float = 2.0, mass_scale: str = "reference") -> None:
        super().__init__(env)
        if mass_scale not in MASS_SCALES:
            raise ConfigError(f"RandomPushes: mass_scale={mass_scale!r} is not allowed; allowed are "
                              f"{allowed(MASS_SCALES)}")
        needs = (EnvHooks, PushHooks, PushReferenceMassHooks) if mass_scale == "reference" else (EnvHooks, PushHooks)
        base = require_hooks(env, *needs, who=f"RandomPushes(mass_scale={mass_scale!r})")
        lo, hi = prob_range
        if not (0 < lo <= hi <= 1):
            raise ConfigError(f"RandomPushes: prob_range must satisfy 0 < low <= high <= 1, got {prob_range}")
        for name, value in (("force_scale", force_scale), ("torque_scale", torque_scale)):
            if not (math.isfinite(value) and value >= 0):
                raise ConfigError(f"RandomPushes: {name} must be finite and >= 0, got {value}")
        self._base, self._prob_range = base, (float(lo), float(hi))
        self._settings = {"prob_range": [float(lo), float(hi)], "force_scale": float(force_scale),
                          "torque_scale": float(torque_scale), "mass_scale": mass_scale}
        self._scales = (float(force_scale), float(torque_scale))
        self.mass_scale = mass_scale
        self._input = StateInput(base.backend, "xfrc_applied", who="RandomPushes")
        self._body = np.array([int(base.push_body_id)], np.int64)
        self._prob = [base.zeros((), base.xp.float64) for _ in range(2)]  # force, torque
        self._all = base.all_rows
        self.force_pushed = base.zeros((), base.xp.bool)
        self.torque_pushed = base.zeros((), base.xp.bool)
        self.pushed = base.zeros((), base.xp.bool)
        self._register(lambda: base.lifecycle.subscribe("reset", self._on_reset),
                       lambda: base.add_action_transform(self._before_physics))

    def describe(self) -> WrapperEffect:
        """Random force and torque pushes on the task's push body (physics, not perception)."""
        return WrapperEffect("pushes", "physics", self._settings)

    def per_env_bytes(self) -> int:
        """Two float64 probabilities and three push masks per env."""
        return 2 * 8 + 3

    def _mass(self, rows: Rows) -> Any:
        if self.mass_scale == "reference":
            return float(self._base.push_reference_mass)
        return self._base.xp.astype(rows.take(self._base.push_mass), self._base.xp.float64)[:, None]

    def _on_reset(self, rows: Rows) -> None:
        rng = self._base.rng
        for row, kind in enumerate(("force", "torque")):
            rows.put(self._prob[row], rng.log_uniform(rows, f"dr/push_{kind}_prob", *self._prob_range))

    def _before_physics(self, actions: Any) -> Any:
        """An action transform that leaves the actions as they are: it runs once per step that runs,
        after the previous step's evaluation and before this step's physics."""
        self._push()
        return actions

    def _push(self) -> None:
        base, xp = self._base, self._base.xp
        # Envs this step autoresets instead of stepping draw nothing: their physics is discarded.
        autoresetting = base.autoresetting()
        host_all = isinstance(autoresetting, np.ndarray) and not autoresetting.any()
        stepping = self._all if host_all else Rows.of_mask(~autoresetting)
        allowed_now = base.push_allowed()
        wrench = base.zeros((1, 6), xp.float64)
        masks, nobody = [], host_all
        for row, kind in enumerate(("force", "torque")):
            drawn = base.rng.uniform(stepping, f"dr/push_{kind}_draw") < stepping.take(self._prob[row])
            if stepping.everything:
                pushed = drawn & allowed_now
            else:
                pushed = base.zeros((), xp.bool)
                stepping.put(pushed, drawn)
                pushed = pushed & allowed_now
            if host_all and not pushed.any():  # most steps: nobody pushed, no selection to build
                masks.append(pushed)
                continue
            rows = Rows.of_mask(pushed)
            if rows.any():
                nobody = False
                draw = base.rng.normal(rows, f"dr/push_{kind}", (3,)) * self._mass(rows) * self._scales[row]
                rows.put(wrench[:, 0, 3 * row:3 * row + 3], draw)
            masks.append(pushed)
        self.force_pushed, self.torque_pushed = masks
        self.pushed = self.force_pushed | self.torque_pushed
        if nobody and self._input.is_zero(self._body):  # most steps: the zeros are already there
            return
        self._input.write(None, self._body, wrench)


@kernel
def _delayed_noisy_pose(buf: np.ndarray, head: int, ages: np.ndarray, pos_std: float, noise: np.ndarray,
                        axis: np.ndarray, half: np.ndarray, pos: np.ndarray, quat: np.ndarray) -> bool:
    """`ObjectPoseLatency._noisy(queue.read(ages), draws)` for float64 host arrays: each env's pose
    ages[env] pushes ago from the ring buf (depth, N, 7) whose newest slot is head, plus the noise;
    False (nothing meaningful written) where a half angle is outside the sincos kernel's domain."""
    if not in_sincos_domain(half):
        return False
    depth = buf.shape[0]
    for env in range(pos.shape[0]):
        pose = buf[(head + ages[env]) % depth, env]
        for i in range(3):
            pos[env, i] = pose[i] + pos_std * noise[env, i]
        rotate_row(pose[3:], axis[env], half[env], quat[env])
    return True
