"""A third task written with only mjvec's public task API: what a task author writes, nothing more.

PoleBalance-v0: a hinged pole driven by one motor; variant v has its own pole length, so env with
global id g holds pole ``g % 3``. reward = -|angle|; terminated when |angle| > threshold (its own
option); an episode lasts at most `max_episode_steps` control steps (a shared option, 50 here).
Observation blocks: angle (1), angular velocity (1). Its one preset, "noisy", adds N(0, 0.01)
to the observed angle through `ObservationNoise`, which needs only the ``policy_layout`` hook.

The four pieces: scene variants (MjSpec builders), the env (an `MjVecEnv` subclass with five hooks,
and the optional `deployment_spec` declaring what its blocks and action are in MuJoCo terms, for the
policy contract), an options dataclass (a `TaskOptions` subclass), and one `register_task` call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import mujoco
import numpy as np

from mjvec.envs.base import MjVecEnv
from mjvec.envs.deployment import ActionDim, DeploymentSpec, ObsBlock, ObsSource
from mjvec.envs.registry import TaskOptions, register_once
from mjvec.errors import ConfigError
from mjvec.randomization import ObservationNoise

ENV_ID = "PoleBalance-v0"
NUM_POLES = 3
TIMESTEP = 0.01
FRAME_SKIP = 4
DEFAULT_MAX_STEPS = 50


# ---- 1. the scene: one independently compilable MjSpec per variant -------------------------------
def pole_length(v: int) -> float:
    return 0.4 + 0.2 * v


def pole_spec(v: int) -> mujoco.MjSpec:
    spec = mujoco.MjSpec()
    spec.option.timestep = TIMESTEP
    pole = spec.worldbody.add_body(name="pole", pos=[0, 0, 0.1])
    pole.add_joint(name="hinge", type=mujoco.mjtJoint.mjJNT_HINGE, axis=[0, 1, 0], damping=0.02)
    pole.add_geom(name="rod", type=mujoco.mjtGeom.mjGEOM_CAPSULE, fromto=[0, 0, 0, 0, 0, pole_length(v)],
                  size=[0.03, 0, 0], density=500, contype=0, conaffinity=0)
    motor = spec.add_actuator(name="motor", target="hinge", trntype=mujoco.mjtTrn.mjTRN_JOINT)
    motor.gainprm[0] = 2.0
    motor.ctrlrange = [-1.0, 1.0]
    motor.ctrllimited = True
    return spec


# ---- 2. the env: an MjVecEnv subclass ---------------------------------------------------------------
class PoleBalanceEnv(MjVecEnv):
    """Keep a hinged pole upright (see the module docstring)."""

    policy_layout = (("angle", 1), ("angular_velocity", 1))

    def __init__(self, backend: Any, *, threshold: float, max_steps: int, **env_options: Any) -> None:
        super().__init__(
            backend,
            single_observation_space=gym.spaces.Box(-np.inf, np.inf, (2,), np.float32),
            single_action_space=gym.spaces.Box(-1.0, 1.0, (1,), np.float32),
            frame_skip=FRAME_SKIP,
            **env_options,
        )
        self.threshold, self.max_steps = threshold, max_steps
        self.steps = np.zeros(self.num_envs, np.int64)

    def _apply_action(self, actions: np.ndarray) -> None:
        self.backend.ctrl[:] = actions

    def _evaluate(self, active: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        angle = self.backend.qpos[:, 0].copy()
        steps = self.steps + 1
        np.copyto(self.steps, steps, where=active)
        terminated = np.abs(angle) > self.threshold
        return -np.abs(angle), terminated, (steps >= self.max_steps) & ~terminated, {"angle": angle}

    def _observe(self) -> np.ndarray:
        return np.concatenate([self.backend.qpos, self.backend.qvel], axis=1).astype(np.float32)

    def deployment_spec(self) -> DeploymentSpec:
        blocks = (ObsBlock("angle", 1, ObsSource("joint_pos", ("hinge",)), units="rad"),
                  ObsBlock("angular_velocity", 1, ObsSource("joint_vel", ("hinge",)), units="rad/s"))
        return DeploymentSpec({None: blocks}, None, "float32", (ActionDim("motor", "hinge", "torque"),))

    def _reset_envs(self, env_ids: np.ndarray) -> None:
        qpos = self.rng.uniform(env_ids, "reset/angle", -0.1, 0.1, (1,))
        self.backend.reset(env_ids, qpos, np.zeros((env_ids.size, 1)))
        self.steps[env_ids] = 0


# ---- 3. the options: the shared ones plus the task's own -----------------------------------------
@dataclass(frozen=True)
class PoleBalanceOptions(TaskOptions):
    """TaskOptions plus threshold: |angle| (rad) beyond which an episode terminates."""

    threshold: float = 0.5

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.threshold, (int, float)) or not 0.0 < self.threshold < np.pi:
            raise ConfigError(f"threshold must be a number in (0, pi), got {self.threshold!r}")


def noisy(env: gym.vector.VectorEnv) -> gym.vector.VectorEnv:
    return ObservationNoise(env, "angle", 0.01)


# ---- 4. registration ----------------------------------------------------------------------------------
def register() -> None:
    """Register PoleBalance-v0 (once per process: a second call finds it registered)."""
    register_once(
        ENV_ID,
        env_class=PoleBalanceEnv,
        options=PoleBalanceOptions,
        variants=lambda opts: (NUM_POLES, pole_spec),
        env_kwargs=lambda opts: {"threshold": opts.threshold,
                                 "max_steps": opts.max_episode_steps or DEFAULT_MAX_STEPS},
        presets={"noisy": noisy},
    )


# Importing the module registers the task (as gym.make("tests.third_task:PoleBalance-v0") expects).
register()
