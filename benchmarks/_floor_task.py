"""The framework floor: a task whose hooks do next to nothing, for `benchmarks.breakdown --floor`.

A step of this env pays only what every mjvec step pays whatever the task: the Gymnasium vector
API, the one-caller guard, action validation, the backend's step call, the lifecycle, the
autoreset bookkeeping, info assembly and output conversion. Its hooks write the controls, return
a zero reward and no terminations, and observe qpos and qvel; episodes are never truncated
within a benchmark block, so no reset runs either. What is left of its step beside the physics is
the least host time any task's step can take on this code.

The model is Gymnasium's inverted pendulum (the XML it ships), so the physics is cheap too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import gymnasium.envs.mujoco
import mujoco
import numpy as np

from mjvec.envs.base import MjVecEnv
from mjvec.envs.registry import register_task

FLOOR_TASK = "mjvec_bench/Floor-v0"
_XML = Path(gymnasium.envs.mujoco.__file__).parent / "assets" / "inverted_pendulum.xml"
# Long enough that no benchmark block reaches a truncation (and so a reset).
_EPISODE_STEPS = 10**9


def _spec(variant: int) -> mujoco.MjSpec:
    return mujoco.MjSpec.from_file(str(_XML))


class FloorEnv(MjVecEnv):
    """The five hooks, each as cheap as a valid hook can be (see the module docstring)."""

    def __init__(self, backend: Any, **env_options: Any) -> None:
        super().__init__(backend, single_observation_space=gym.spaces.Box(-np.inf, np.inf, (4,), np.float32),
                         single_action_space=gym.spaces.Box(-3.0, 3.0, (1,), np.float32), frame_skip=1,
                         max_episode_steps=_EPISODE_STEPS, **env_options)

    def _apply_action(self, actions: np.ndarray) -> None:
        self.backend.ctrl[:] = actions

    def _evaluate(self, active: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        n = self.num_envs
        return np.zeros(n), np.zeros(n, bool), np.zeros(n, bool), {}

    def _observe(self) -> np.ndarray:
        return np.concatenate([self.backend.qpos, self.backend.qvel], axis=1).astype(np.float32)

    def _reset_envs(self, rows: Any) -> None:
        qpos = np.zeros((rows.size, self.backend.qpos.shape[1]))
        self.backend.reset(rows.selector(), qpos, np.zeros((rows.size, self.backend.qvel.shape[1])))


def register() -> str:
    """Register FLOOR_TASK once (a second call is a no-op); returns its id."""
    if FLOOR_TASK not in gym.registry:
        register_task(FLOOR_TASK, env_class=FloorEnv, variants=lambda opts: (1, _spec))
    return FLOOR_TASK
