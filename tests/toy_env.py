"""A toy MjVecEnv task (and rollout helpers) for the base-env tests: an inverted hinge pendulum with a mocap target.

Variant v changes the pole's length and color (so frames of different variants differ). One motor
drives the hinge. reward = -|angle|; terminated when |angle| > threshold; truncated after
max_steps; success when |angle| < success_angle. Reset samples the angle, its velocity and the
mocap target's x from `self.rng`. Observation: [angle, angular velocity, target x] (float32), or
the same as a dict {"state": (2,), "target": (1,)} with dict_obs=True.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import mujoco
import numpy as np

from mjvec.backends.base import Scene
from mjvec.backends.cpu import CpuBackend
from mjvec.envs.base import MjVecEnv

NUM_VARIANTS = 3
TIMESTEP = 0.01
FRAME_SKIP = 2
COLORS = ((1.0, 0.1, 0.1, 1.0), (0.1, 1.0, 0.1, 1.0), (0.1, 0.1, 1.0, 1.0))


def pole_length(v: int) -> float:
    return 0.3 + 0.2 * v


def pendulum_spec(v: int) -> mujoco.MjSpec:
    """Variant v of the scene, independently compilable."""
    spec = mujoco.MjSpec()
    spec.option.timestep = TIMESTEP
    world = spec.worldbody
    world.add_light(name="light", pos=[0, 0, 3], dir=[0, 0, -1])
    world.add_geom(
        name="floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[2, 2, 0.1], rgba=[0.3, 0.3, 0.3, 1],
        contype=0, conaffinity=0,
    )
    pole = world.add_body(name="pole", pos=[0, 0, 0.2])
    pole.add_joint(name="hinge", type=mujoco.mjtJoint.mjJNT_HINGE, axis=[0, 1, 0], damping=0.05)
    pole.add_geom(
        name="rod", type=mujoco.mjtGeom.mjGEOM_CAPSULE, fromto=[0, 0, 0, 0, 0, pole_length(v)],
        size=[0.04, 0, 0], rgba=COLORS[v % len(COLORS)], density=1000, contype=0, conaffinity=0,
    )
    target = world.add_body(name="target", mocap=True, pos=[0.5, 0, 0.5])
    target.add_geom(
        name="target_geom", type=mujoco.mjtGeom.mjGEOM_SPHERE, size=[0.05, 0, 0], rgba=[1, 1, 0, 1],
        contype=0, conaffinity=0,
    )
    # On its own static body: a world-body camera's com-relative offset would differ per variant.
    world.add_body(name="camera_mount", pos=[0, -2.0, 0.6]).add_camera(
        name="front", pos=[0, 0, 0], xyaxes=[1, 0, 0, 0, 0, 1]
    )
    motor = spec.add_actuator(name="motor", target="hinge", trntype=mujoco.mjtTrn.mjTRN_JOINT)
    motor.gainprm[0] = 1.0
    motor.ctrlrange = [-1.0, 1.0]
    motor.ctrllimited = True
    return spec


def variant_model(v: int) -> mujoco.MjModel:
    return pendulum_spec(v).compile()


def make_backend(num_envs: int, *, env_id_offset: int = 0, num_threads: int = 1) -> CpuBackend:
    scene = Scene(
        num_variants=NUM_VARIANTS, make_variant=pendulum_spec, num_envs=num_envs,
        env_id_offset=env_id_offset, name="toy_pendulum",
    )
    return CpuBackend(scene, num_threads=num_threads, progress=False)


class ToyPendulumEnv(MjVecEnv):
    """The toy task (see the module docstring). Extra kwargs go to MjVecEnv."""

    render_camera = "front"

    def __init__(
        self,
        num_envs: int = 4,
        *,
        env_id_offset: int = 0,
        num_threads: int = 1,
        max_steps: int = 12,
        threshold: float = 0.35,
        success_angle: float = 0.05,
        dict_obs: bool = False,
        **kwargs: Any,
    ) -> None:
        backend = make_backend(num_envs, env_id_offset=env_id_offset, num_threads=num_threads)
        if dict_obs:
            obs_space: gym.Space = gym.spaces.Dict(
                {
                    "state": gym.spaces.Box(-np.inf, np.inf, (2,), np.float32),
                    "target": gym.spaces.Box(-np.inf, np.inf, (1,), np.float32),
                }
            )
        else:
            obs_space = gym.spaces.Box(-np.inf, np.inf, (3,), np.float32)
        super().__init__(
            backend,
            single_observation_space=obs_space,
            single_action_space=gym.spaces.Box(-1.0, 1.0, (1,), np.float32),
            frame_skip=FRAME_SKIP,
            **kwargs,
        )
        self.max_steps = max_steps
        self.threshold = threshold
        self.success_angle = success_angle
        self.dict_obs = dict_obs
        self.steps = np.zeros(num_envs, np.int64)
        self.mocap_pos = backend.bind("mocap_pos")
        self.last_applied: np.ndarray | None = None  # the batch _apply_action received last

    def _apply_action(self, actions: np.ndarray) -> None:
        self.last_applied = actions.copy()
        self.backend.ctrl[:] = actions

    def _evaluate(self, active: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        angle = self.backend.qpos[:, 0].copy()
        self.steps[active] += 1
        reward = -np.abs(angle)
        terminated = np.abs(angle) > self.threshold
        truncated = self.steps >= self.max_steps
        info = {"success": np.abs(angle) < self.success_angle, "angle": angle}
        return reward, terminated, truncated, info

    def _observe(self) -> Any:
        state = np.concatenate([self.backend.qpos, self.backend.qvel], axis=1).astype(np.float32)
        target = self.mocap_pos[:, 0, :1].astype(np.float32)
        if self.dict_obs:
            return {"state": state, "target": target}
        return np.concatenate([state, target], axis=1)

    def _reset_envs(self, env_ids: np.ndarray) -> None:
        qpos = self.rng.uniform(env_ids, "init_qpos", -0.2, 0.2, (1,))
        qvel = self.rng.uniform(env_ids, "init_qvel", -0.5, 0.5, (1,))
        self.backend.reset(env_ids, qpos, qvel)
        self.mocap_pos[env_ids, 0, 0] = self.rng.uniform(env_ids, "target", -0.5, 0.5)
        self.steps[env_ids] = 0


# ---- test helpers -------------------------------------------------------------------------------
def policy(global_ids: np.ndarray, t: int) -> np.ndarray:
    """A deterministic action per (global env id, time): the same for an env in any batch."""
    return (0.8 * np.sin(0.7 * t + 1.3 * global_ids))[:, None].astype(np.float32)


def rollout(env: MjVecEnv, steps: int, seed: int | list[int] | None = 0) -> list[tuple]:
    """[(obs, reward, terminated, truncated, info)] of a reset followed by `steps` policy steps."""
    obs, _ = env.reset(seed=seed)
    out = [(obs, None, None, None, {})]
    for t in range(steps):
        out.append(env.step(policy(env.global_env_ids, t)))
    return out


def column(traj: list[tuple], k: int, rows: slice | np.ndarray = slice(None)) -> np.ndarray:
    return np.stack([np.asarray(step[k])[rows] for step in traj[1:]])


def inject_fault(env: MjVecEnv, env_id: int, at_call: int) -> None:
    """Make backend.step report env `env_id` as failed on its `at_call`-th call from now."""
    original, count = env.backend.step, [0]

    def step(nstep: int = 1, **kwargs: Any) -> np.ndarray:
        failed = original(nstep, **kwargs)
        count[0] += 1
        if count[0] == at_call:
            failed = failed.copy()
            failed[env_id] = True
        return failed

    env.backend.step = step
