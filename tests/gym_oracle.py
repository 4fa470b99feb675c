"""Lockstep driver: N mjvec envs of a suite task against N of Gymnasium's own envs of the same id.

Both sides start every episode in the same state. The first: each Gymnasium env draws its own
(``reset(seed=seed + i)``) and the mjvec batch starts there through ``reset(options={"qpos": Q,
"qvel": V})``. Every later one: mjvec draws it from its own streams (its autoreset) and the
Gymnasium env is reset and `set_state` to it (Gymnasium's documented way of setting qpos/qvel,
which runs mj_forward as mjvec's reset does). Both get the same seeded float32 actions.
mjvec runs NEXT_STEP autoreset: an env done at step t is reset at t+1, where its Gymnasium twin is
reset to the same state and its observation compared with mjvec's reset observation.
Everything is compared bit for bit (bytes and dtype): observations, rewards, terminated,
truncated and every info term of Gymnasium's step and reset.

With ``randomization=`` (model-field EventTerms or a preset), each Gymnasium twin's MjModel is given
its mjvec env's current values of the randomized fields (a direct MjModel edit) and mj_setConst
before every episode starts: the independent oracle of mjvec's batched writes and recompute.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import mujoco
import numpy as np


def bits(value: Any) -> tuple[str, bytes]:
    """(dtype, bytes) of a value: two values with the same bits compare equal."""
    array = np.asarray(value)
    return str(array.dtype), array.tobytes()


@dataclass
class OracleRun:
    """What a lockstep run saw: steps compared, episodes ended, mismatches (empty when equal)."""

    steps: int = 0
    terminations: int = 0
    truncations: int = 0
    resets: int = 0
    mismatches: list[str] = field(default_factory=list)

    def check(self, what: str, ours: Any, theirs: Any) -> None:
        if bits(ours) != bits(theirs) and len(self.mismatches) < 20:
            self.mismatches.append(f"{what}: mjvec {np.asarray(ours)!r} vs gymnasium {np.asarray(theirs)!r}")


# What EventTerms write (the mass term scales inertia too, the gain term writes gainprm and biasprm).
RANDOMIZED_FIELDS = ("body_mass", "body_inertia", "body_ipos", "geom_friction", "dof_damping", "dof_armature",
                     "dof_frictionloss", "actuator_gainprm", "actuator_biasprm", "gravity")


def copy_model_fields(backend: Any, i: int, model: mujoco.MjModel, data: mujoco.MjData) -> None:
    """Write env i's current randomizable fields into `model` directly, then mj_setConst."""
    for name in RANDOMIZED_FIELDS:
        value = backend.field_values(name, np.array([i]))[0]
        target = model.opt.gravity if name == "gravity" else getattr(model, name)
        target[...] = value
    mujoco.mj_setConst(model, data)


def _gym_reset_to(ref: gym.Env, qpos: np.ndarray, qvel: np.ndarray, backend: Any = None,
                  i: int = 0) -> tuple[np.ndarray, dict[str, Any]]:
    ref.reset()
    env = ref.unwrapped
    if backend is not None:
        copy_model_fields(backend, i, env.model, env.data)
    env.set_state(qpos.copy(), qvel.copy())
    return env._get_obs(), env._get_reset_info()


def _check_info(run: OracleRun, where: str, info: dict[str, Any], i: int, theirs: dict[str, Any]) -> None:
    ours = {k for k in info if not k.startswith("_") and k != "sim_error"}
    if ours != set(theirs):
        run.mismatches.append(f"{where}: info keys {sorted(ours)} vs gymnasium's {sorted(theirs)}")
        return
    for key, value in theirs.items():
        if not info[f"_{key}"][i]:
            run.mismatches.append(f"{where}: info[{key!r}] is masked out for env {i}")
        run.check(f"{where} info[{key!r}]", info[key][i], value)


def lockstep(name: str, num_envs: int, steps: int, seed: int, *, max_episode_steps: int | None = None,
             num_threads: int = 1, randomization: Any = None, **options: Any) -> OracleRun:
    """Run `steps` steps of ``mjvec/<name>`` and ``<name>`` side by side (see the module docstring)."""
    limit = {} if max_episode_steps is None else {"max_episode_steps": max_episode_steps}
    env = gym.make_vec(f"mjvec/{name}", num_envs=num_envs, num_threads=num_threads, randomization=randomization,
                       **limit, **options)
    refs = [gym.make(name, **limit, **options) for _ in range(num_envs)]
    base, run = env.unwrapped, OracleRun()
    sync = base.backend if randomization is not None else None
    try:
        if sync is None:
            # First episode: Gymnasium draws its own reset states (seed + i) and mjvec starts there
            # through its documented reset options; later episodes go the other way (below).
            firsts = [ref.reset(seed=seed + i) for i, ref in enumerate(refs)]
            qpos = np.stack([ref.unwrapped.data.qpos.copy() for ref in refs])
            qvel = np.stack([ref.unwrapped.data.qvel.copy() for ref in refs])
            obs, info = env.reset(seed=seed, options={"qpos": qpos, "qvel": qvel})
        else:  # randomized models: the twins get their env's values before they start
            obs, info = env.reset(seed=seed)
            firsts = [_gym_reset_to(ref, base.backend.qpos[i], base.backend.qvel[i], sync, i)
                      for i, ref in enumerate(refs)]
        for i, (ref_obs, ref_info) in enumerate(firsts):
            run.check(f"reset obs env {i}", obs[i], ref_obs)
            _check_info(run, f"reset env {i}", info, i, ref_info)
        low, high = env.single_action_space.low, env.single_action_space.high
        actions_rng = np.random.default_rng(seed)
        pending = np.zeros(num_envs, bool)
        for t in range(steps):
            actions = actions_rng.uniform(low, high, (num_envs, low.size)).astype(np.float32)
            obs, reward, terminated, truncated, info = env.step(actions)
            for i, ref in enumerate(refs):
                where = f"step {t} env {i}"
                if pending[i]:  # mjvec reset env i in this step: its twin starts the same episode
                    ref_obs, _ = _gym_reset_to(ref, base.backend.qpos[i], base.backend.qvel[i], sync, i)
                    run.check(f"{where} (autoreset) obs", obs[i], ref_obs)
                    run.check(f"{where} (autoreset) reward", reward[i], np.float64(0.0))
                    run.check(f"{where} (autoreset) done", (terminated[i], truncated[i]), (False, False))
                    run.resets += 1
                    continue
                ref_obs, ref_reward, ref_term, ref_trunc, ref_info = ref.step(actions[i])
                run.check(f"{where} obs", obs[i], ref_obs)
                run.check(f"{where} reward", reward[i], np.float64(ref_reward))
                run.check(f"{where} terminated", terminated[i], np.bool_(ref_term))
                run.check(f"{where} truncated", truncated[i], np.bool_(ref_trunc))
                _check_info(run, where, info, i, ref_info)
                run.steps += 1
            run.terminations += int(terminated.sum())
            run.truncations += int(truncated.sum())
            pending = terminated | truncated
    finally:
        env.close()
        for ref in refs:
            ref.close()
    return run
