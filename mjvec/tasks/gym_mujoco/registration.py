"""The suite's registration on the shared task path (`mjvec.envs.tasks.register_task`).

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

from mjvec.envs.tasks import Task, register_task, registered_tasks, terms_bytes_per_env
from mjvec.tasks.gym_mujoco.env import GymMujocoEnv
from mjvec.tasks.gym_mujoco.presets import locomotion, locomotion_terms
from mjvec.tasks.gym_mujoco.scene import load_spec, resolve_xml
from mjvec.tasks.gym_mujoco.specs import TASKS, TaskDef

__all__ = ["ENV_IDS", "register_envs"]

ENV_IDS = tuple(task.env_id for task in TASKS.values())


def _xml_path(task: TaskDef, opts: Any) -> Path:
    return resolve_xml(opts.xml_file or task.xml)


@functools.lru_cache(maxsize=16)
def _compiled(path: Path) -> mujoco.MjModel:
    """The compiled model of a file, for the per-env byte counts (compiled once per process)."""
    return load_spec(path).compile()


def _bytes_per_env(task: TaskDef, opts: Any) -> int:
    """The task's host bytes per env: its state and a step's temporaries (about ten observation-sized
    float64 arrays), plus, where contact forces are read, the one MjData per env that a persistent
    CPU batch keeps, counted as its whole buffer (of which a step touches less: about 200 KB per env
    resident for Ant and Humanoid, measured by benchmarks/gym_suite.py)."""
    model = _compiled(_xml_path(task, opts))
    obs = model.nq + model.nv + 22 * model.nbody
    persistent = model.nbuffer if task.needs_contact_forces(opts) else 0
    return 8 * (10 * obs + 64) + persistent


def _register(task: TaskDef) -> Task:
    return register_task(
        task.env_id,
        env_class=GymMujocoEnv,
        options=task.options,
        variants=lambda opts: (1, functools.partial(_variant, _xml_path(task, opts))),
        env_kwargs=lambda opts: {"task": task, "options": opts},
        presets={"locomotion": locomotion},
        bound_fields=lambda opts: GymMujocoEnv.bound_fields(task, opts),
        bytes_per_env=lambda opts: _bytes_per_env(task, opts),
        preset_bytes=lambda opts, model: terms_bytes_per_env(model, locomotion_terms(model)),
        scene_options=lambda opts: {"rne_post_constraint": task.needs_contact_forces(opts)},
    )


def _variant(path: Path, v: int) -> mujoco.MjSpec:
    return load_spec(path)


def register_envs() -> tuple[Task, ...]:
    """Register the five tasks (idempotent: a second call returns the registered ones)."""
    registered = registered_tasks()
    return tuple(registered[t.env_id] if t.env_id in registered else _register(t) for t in TASKS.values())
