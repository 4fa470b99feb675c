"""A small MjVecEnv over tests/scenes.py (2-link position-controlled arm + a free tool, 3 topologies).

Used by the randomization tests: it has masses, contacts, dofs with damping/armature and position
actuators, so every model-field term has something to act on.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from mjvec.backends.base import Scene
from mjvec.backends.cpu import CpuBackend
from mjvec.envs.base import MjVecEnv
from tests.scenes import make_scene

NUM_VARIANTS = 9


class ArmEnv(MjVecEnv):
    """obs = [qpos, qvel]; action = 2 joint targets; reward 0; truncated every `max_steps` steps."""

    def __init__(self, num_envs: int = 6, *, num_threads: int = 1, env_id_offset: int = 0,
                 max_steps: int = 1000, **kwargs) -> None:
        scene = Scene(NUM_VARIANTS, make_scene, num_envs, env_id_offset=env_id_offset)
        backend = CpuBackend(scene, num_threads=num_threads, progress=False)
        m = backend.model
        super().__init__(
            backend,
            single_observation_space=gym.spaces.Box(-np.inf, np.inf, (m.nq + m.nv,), np.float64),
            single_action_space=gym.spaces.Box(-1.0, 1.0, (2,), np.float32),
            frame_skip=2,
            **kwargs,
        )
        self.max_steps = max_steps
        self.steps = np.zeros(num_envs, np.int64)

    def _apply_action(self, actions: np.ndarray) -> None:
        self.backend.ctrl[:] = actions

    def _evaluate(self, active: np.ndarray):
        self.steps[active] += 1
        zeros = np.zeros(self.num_envs)
        return zeros, zeros.astype(bool), self.steps >= self.max_steps, {}

    def _observe(self) -> np.ndarray:
        return np.concatenate([self.backend.qpos, self.backend.qvel], axis=1)

    def _reset_envs(self, env_ids: np.ndarray) -> None:
        m = self.backend.model
        qpos = np.tile(m.qpos0, (env_ids.size, 1))
        qpos[:, :2] = self.rng.uniform(env_ids, "arm", -0.5, 0.5, (2,))
        qvel = np.zeros((env_ids.size, m.nv))
        self.backend.reset(env_ids, qpos, qvel)
        self.steps[env_ids] = 0


def actions(global_ids: np.ndarray, t: int) -> np.ndarray:
    """Deterministic actions per (global env id, step)."""
    return np.stack([np.sin(0.3 * t + global_ids), np.cos(0.2 * t + 0.5 * global_ids)], axis=1)
