"""Gymnasium's MuJoCo locomotion suite, batched: ``mjvec/Ant-v5``, ``mjvec/HalfCheetah-v5``,
``mjvec/Hopper-v5``, ``mjvec/Walker2d-v5`` and ``mjvec/Humanoid-v5``.

Built from the XML files of the installed ``gymnasium`` package through the public task API, with
Gymnasium v5's observations, rewards, terminations, infos, 1000-step limit and constructor options
(docs/gym_mujoco.md says what equals Gymnasium's env bit for bit and what does not)::

    import gymnasium as gym
    import mjvec  # registers the suite

    env = gym.make_vec("mjvec/Ant-v5", num_envs=1024, num_threads=2)
    obs, info = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(env.action_space.sample())

Modules: `options` (typed options), `specs` (what differs per task, and where its XML file is: the
installed gymnasium's, loaded by `mjvec.assets.mjcf`),
`terms` (the per-step expressions), `env` (`GymMujocoEnv`), `presets` ("locomotion"),
`registration`.
"""

from mjvec.tasks.gym_mujoco.env import GymMujocoEnv
from mjvec.tasks.gym_mujoco.options import (
    AntOptions,
    GymMujocoOptions,
    HalfCheetahOptions,
    HopperOptions,
    HumanoidOptions,
    Walker2dOptions,
)
from mjvec.tasks.gym_mujoco.registration import ENV_IDS, register_envs
from mjvec.tasks.gym_mujoco.specs import TASKS, TaskDef

__all__ = [
    "ENV_IDS",
    "TASKS",
    "AntOptions",
    "GymMujocoEnv",
    "GymMujocoOptions",
    "HalfCheetahOptions",
    "HopperOptions",
    "HumanoidOptions",
    "TaskDef",
    "Walker2dOptions",
    "register_envs",
]
