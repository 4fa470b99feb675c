"""The suite's registration on the shared task path (`mjvec.envs.registry.register_task`).

Ids live in mjvec's Gymnasium namespace, ``mjvec/<Gymnasium id>`` (``mjvec/Ant-v5``, ...): a
namespace is part of a Gymnasium id, so they can never clash with Gymnasium's own ``Ant-v5``. After
``import mjvec``, ``gym.make_vec("mjvec/Ant-v5", num_envs=N)`` gives the batched env and
``gym.make("mjvec/Ant-v5")`` a single `gymnasium.Env`.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import mujoco

from mjvec.assets.mjcf import load_spec
from mjvec.envs.registry import Task, register_once
from mjvec.tasks.gym_mujoco.env import GymMujocoEnv
from mjvec.tasks.gym_mujoco.presets import locomotion
from mjvec.tasks.gym_mujoco.specs import TASKS, TaskDef, xml_path

__all__ = ["ENV_IDS", "register_envs"]

ENV_IDS = tuple(task.env_id for task in TASKS.values())


def _xml_path(task: TaskDef, opts: Any) -> Path:
    return xml_path(opts.xml_file or task.xml)


def _register(task: TaskDef) -> Task:
    return register_once(
        task.env_id,
        env_class=GymMujocoEnv,
        options=task.options,
        variants=lambda opts: (1, functools.partial(_variant, _xml_path(task, opts))),
        env_kwargs=lambda opts: {"task": task, "options": opts},
        presets={"locomotion": locomotion},
    )


def _variant(path: Path, v: int) -> mujoco.MjSpec:
    return load_spec(path)


def register_envs() -> tuple[Task, ...]:
    """Register the five tasks (idempotent: a second call returns the registered ones)."""
    return tuple(_register(t) for t in TASKS.values())
