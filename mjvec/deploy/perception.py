"""The train-time perception randomization a policy contract lists, reproduced in distribution by the
deployment loop (for sim-to-sim checks of how a policy copes with the noise and latency it was
trained under; on a robot, reality supplies them and this stays off).

What it reproduces (docs/deploy.md, "Perception"), with a ``numpy.random.Generator`` of its own:

- ``scale_noise`` on a perceived command: a per-axis factor U(low, high), drawn at every reset.
- ``pose_latency`` on a perceived free-joint pose: a queue of the last max_delay + 1 true poses
  (refilled with the pose at a reset, and with ``refill_on_goal`` at the first step of a goal
  segment), each step one age U{0..max_delay}, then N(0, pos_std) per axis on the position and a
  rotation by U(-rot_deg, rot_deg) about an axis U(0, 1)^3 (normalized) in the object's frame; a
  reset perceives the initial pose with fresh noise.
- ``obs_noise`` on a block: N(0, 1) (float32) x scale, or U(-scale, scale), at every step and reset.
- ``obs_delay``: the observation from U{0..max_delay} steps ago (queue refilled at a reset and,
  with ``refill_on_goal``, at a segment's first step).
- ``action_delay``: the action from U{0..max_delay} steps ago (queue refilled with the first action
  of an episode and, with ``refill_on_goal``, with the action of a segment's second step).

Observation stages run in the contract's order (its ``observation.perception``: the wrappers'
order). ``pushes`` and ``model`` randomization act on the physics, not on perception: not
reproduced. An ``undescribed`` wrapper cannot be reproduced and is refused.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from . import _math as rotation_math
from .observation import DeployError


class _Queue:
    """The last `depth` values; `read(age)` gives the one from `age` pushes ago (0: the newest)."""

    def __init__(self, depth: int) -> None:
        self.depth, self.items = depth, []

    def refill(self, value: np.ndarray) -> None:
        self.items = [np.array(value)] * self.depth

    def push(self, value: np.ndarray) -> None:
        self.items = [np.array(value), *self.items[:self.depth - 1]]

    def read(self, age: int) -> np.ndarray:
        return self.items[age]


class Perception:
    """The contract's perception randomization (see the module docstring).

    contract: the policy contract. rng: the generator every draw comes from.
    Raises DeployError for a wrapper the contract could not describe.
    """

    def __init__(self, contract: Mapping[str, Any], rng: np.random.Generator) -> None:
        obs = contract["observation"]
        undescribed = [e["wrapper"] for e in contract["randomization"]["wrappers"] if e["kind"] == "undescribed"]
        if undescribed:
            raise DeployError(f"the contract lists randomization wrappers it could not describe ({undescribed}); "
                              "their effect cannot be reproduced: run the loop with perception off")
        self.rng = rng
        self.slices = {(b["key"], b["name"]): slice(b["start"], b["start"] + b["size"]) for b in obs["blocks"]}
        self.stages = [e for e in obs["perception"] if e["kind"] in ("obs_noise", "obs_delay")]
        self.queues = {id(e): _Queue(e["parameters"]["max_delay"] + 1) for e in self.stages if e["kind"] == "obs_delay"}
        by_kind = {e["kind"]: e for e in obs["perception"]}
        perceived = {p["name"]: p for p in contract["perceived"]}
        self.pose = by_kind.get("pose_latency")
        self.pose_name = None if self.pose is None else self.pose["applies_to"]
        self.scale = by_kind.get("scale_noise")
        self.scale_command = None if self.scale is None else perceived[self.scale["applies_to"]]["command"]
        self.action_delay = contract["action"]["delay"]
        self.pose_queue = None if self.pose is None else _Queue(self.pose["parameters"]["max_delay"] + 1)
        self.action_queue = None if self.action_delay is None else _Queue(
            self.action_delay["parameters"]["max_delay"] + 1)
        self._scale_factor = np.ones(3)
        self._perceived: dict[str, Any] = {}
        self._first_action = True

    # ---- perceived inputs ------------------------------------------------------------------------
    def _noisy_pose(self, pose: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        p = self.pose["parameters"]
        pos = pose[:3] + p["pos_std"] * self.rng.standard_normal(3)
        axis = self.rng.uniform(0.0, 1.0, 3)
        half = self.rng.uniform(-0.5 * math.radians(p["rot_deg"]), 0.5 * math.radians(p["rot_deg"]))
        return pos, rotation_math.rotate_by_axis_angle(pose[3:], axis, np.asarray(half))

    def reset(self, true_pose: tuple[np.ndarray, np.ndarray] | None, commands: Mapping[str, Any]) -> dict[str, Any]:
        """Start an episode: draw the scale factors, refill the pose queue with `true_pose` (the
        perceived free joint's (pos, quat), None without pose latency); returns the perceived values
        (name -> value) for the reset observation."""
        self._perceived, self._first_action = {}, True
        if self.scale is not None:
            p = self.scale["parameters"]
            self._scale_factor = self.rng.uniform(p["low"], p["high"], 3)
        if self.pose is not None:
            self.pose_queue.refill(np.concatenate(true_pose))
            self._perceived[self.pose_name] = self._noisy_pose(self.pose_queue.read(0))
        return self.perceived(commands)

    def perceived(self, commands: Mapping[str, Any]) -> dict[str, Any]:
        """The perceived values now: the latent pose, and the noisy scales of the commanded ones."""
        out = dict(self._perceived)
        if self.scale is not None and self.scale_command in commands:
            out[self.scale_command] = np.asarray(commands[self.scale_command], np.float64) * self._scale_factor
        return out

    def after_physics(self, true_pose: tuple[np.ndarray, np.ndarray] | None, segment_steps: int,
                      commands: Mapping[str, Any]) -> dict[str, Any]:
        """Once per step after the physics (`segment_steps`: the goal segment's steps before this
        one's): the delayed noisy pose; returns the perceived values for this step's observation."""
        if self.pose is not None:
            pose = np.concatenate(true_pose)
            refill = self.pose["parameters"]["refill_on_goal"] and segment_steps == 0
            self.pose_queue.refill(pose) if refill else self.pose_queue.push(pose)
            age = int(self.rng.integers(0, self.pose["parameters"]["max_delay"] + 1))
            self._perceived[self.pose_name] = self._noisy_pose(self.pose_queue.read(age))
        return self.perceived(commands)

    # ---- actions and observations ----------------------------------------------------------------
    def action(self, action: np.ndarray, segment_steps: int) -> np.ndarray:
        """The action applied this step (`segment_steps`: the segment's steps evaluated so far)."""
        if self.action_queue is None:
            return action
        p = self.action_delay["parameters"]
        if self._first_action or (p["refill_on_goal"] and segment_steps == 1):
            self.action_queue.refill(action)
        else:
            self.action_queue.push(action)
        self._first_action = False
        return self.action_queue.read(int(self.rng.integers(0, p["max_delay"] + 1)))

    def observation(self, obs: np.ndarray, stepped: bool, segment_steps: int) -> np.ndarray:
        """The delivered observation: the stages in order; `stepped` False for a reset's observation
        (queues refilled), `segment_steps` the segment's steps after this one's evaluation."""
        obs = np.array(obs)
        for stage in self.stages:
            p = stage["parameters"]
            if stage["kind"] == "obs_noise":
                rows = self.slices[(p["key"], stage["applies_to"])] if (p["key"], stage["applies_to"]) in \
                    self.slices else self.slices[(None, stage["applies_to"])]
                width = rows.stop - rows.start
                if p["distribution"] == "uniform":
                    noise = self.rng.uniform(-p["scale"], p["scale"], width)
                else:
                    noise = self.rng.standard_normal(width, dtype=np.float32) * np.float32(p["scale"])
                obs[rows] = obs[rows] + noise.astype(obs.dtype)
                continue
            queue = self.queues[id(stage)]
            if not stepped or (p["refill_on_goal"] and segment_steps == 1):
                queue.refill(obs)
                continue
            queue.push(obs)
            obs = queue.read(int(self.rng.integers(0, p["max_delay"] + 1)))
        return obs
