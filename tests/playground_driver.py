"""MuJoCo Playground's own Go1 joystick code (``playground`` 0.2.0), driven from its own virtual
environment by tests/test_go1_playground.py: ``.venv-playground/bin/python tests/playground_driver.py
JOBS.json`` (scripts/setup_playground.sh makes that environment). This file imports nothing of mjvec.

JOBS.json is a list of {"job": name, "inputs": path.npz, "outputs": path.npz, "overrides": {...},
"env": name} (``overrides``: Playground ``config_overrides``; ``env``: Playground's registry name,
default ``Go1JoystickFlatTerrain``; ``Go1JoystickRoughTerrain`` is the same ``Joystick`` class on its
heightfield scene). Jobs:

- ``model``: Playground's compiled, edited MjModel, saved as MJB (outputs is the .mjb path).
- ``task``: Playground's ``Joystick.step`` on states given by the caller, with the physics replaced:
  ``mjx_env.step`` returns the caller's post-physics data (qpos, qvel, sensordata, site_xpos,
  site_xmat, actuator_force) and records the motor targets and the ``xfrc_applied`` it was given.
  Everything else is Playground's code: its perturbation, contact and feet logic, observation,
  termination, rewards, command countdown and resampling. Inputs: ``pre_<info key>`` (T, N, ...),
  ``action`` (T, N, 12) and ``after_<field>`` (T, N, ...); outputs per step: obs, privileged,
  reward, done, each ``reward/<term>`` metric, the new info, targets and xfrc.
- ``samples``: N resets (``mjx.forward`` replaced by the identity and ``make_data`` by one Data
  built outside the trace, so the data's sensors and frames are zero and the observation's noisy
  entries are the noise itself) and N resamples of a fixed
  command (``sample_command``), each from its own key.
- ``leap_task``: Playground's ``CubeReorient.step`` (env ``LeapCubeReorient``) on states given by
  the caller, its physics replaced as in ``task``: inputs ``pre_<info key>``, ``pre_ctrl`` and
  ``pre_mocap_quat`` (the Data before the step), ``action`` and ``after_<field>`` (qpos, qvel,
  sensordata, actuator_force); outputs per step: obs, privileged, reward, done, the metrics, the
  new info, the targets and the goal's new mocap_quat.
- ``leap_samples``: N resets of ``CubeReorient`` (its Data's qpos, ctrl, mocap, sensordata and
  its first observation) and N goal
  spins drawn on success (``goal_quat_dquat``) by one ``step`` of a cube already at its goal.
- ``leap_trajectory``: N resets and T steps of Playground's ``CubeReorient`` as it is (impl from the
  overrides) with the given actions; outputs the start Data (qpos, qvel, ctrl, mocap_pos,
  mocap_quat) and per step qpos, qvel, reward, done.
- ``configs``: Playground's trainer settings for the env (``brax_ppo_config`` and
  ``rsl_rl_config`` of its suite's params module), as JSON [brax, rsl_rl] at outputs.
- ``trajectory``: N resets and T steps of Playground's env as it is (impl from the overrides), with
  the given actions; command resampling is pushed beyond the horizon. Outputs the start state and
  per step qpos, qvel, obs, privileged, reward, done.

PandaPickCube (``"env": "PandaPickCube"``; `job_panda_task`, `job_panda_samples`; ``model`` serves it
as is):

- ``panda_task``: Playground's ``PandaPickCube.step`` on states given by the caller, its physics
  replaced as in ``task``: inputs ``pre_ctrl`` (the position targets before the step),
  ``pre_target_pos``, ``pre_target_quat`` (the mocap target's), ``pre_reached_box``,
  ``action`` and ``after_<field>`` (qpos, qvel, xpos,
  xmat, site_xpos, site_xmat, sensordata); outputs per step obs, reward, done, each raw term and
  ``out_of_bounds`` (its metrics), ``reached_box`` and the targets it gave the physics.
- ``panda_samples``: N resets, each from its own key: the box position, the target position, the
  mocap target's position and orientation, the position targets and the reset observation.
- ``panda_trajectory``: N resets and T steps of Playground's env as it is (impl from the overrides)
  with the given actions: the start state and per step qpos, obs, reward, done. Optional inputs
  ``start_qpos``, ``start_ctrl``, ``start_target_pos`` replace the reset's (qvel stays zero).
- ``panda_ppo``: Playground's ``brax_ppo_config`` and ``rsl_rl_config`` for the env, as JSON.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jp
import mujoco
import numpy as np
from mujoco import mjx
from mujoco_playground import registry
from mujoco_playground._src import mjx_env

ENV = "Go1JoystickFlatTerrain"  # a job's default env
INFO_INT = ("steps_until_next_cmd", "steps_until_next_pert", "pert_duration", "steps_since_last_pert", "pert_steps")
INFO_BOOL = ("last_contact",)
AFTER = ("qpos", "qvel", "sensordata", "site_xpos", "site_xmat", "actuator_force")


@contextlib.contextmanager
def patched(owner: Any, name: str, value: Any) -> Iterator[None]:
    """`owner.name` is `value` inside the block (Playground's module functions, replaced for one job)."""
    original = getattr(owner, name)
    setattr(owner, name, value)
    try:
        yield
    finally:
        setattr(owner, name, original)


def _load(name: str, overrides: dict[str, Any]) -> Any:
    return registry.load(name, config_overrides=overrides or None)


def _info(pre: dict[str, np.ndarray], keys: Any) -> dict[str, Any]:
    info = {"rng": keys}
    for name, value in pre.items():
        dtype = jp.int32 if name in INFO_INT else (jp.bool_ if name in INFO_BOOL else jp.float32)
        info[name] = jp.asarray(value, dtype=dtype)
    return info


def job_model(env: Any, inputs: dict[str, np.ndarray], outputs: str) -> None:
    mujoco.mj_saveModel(env.mj_model, outputs, None)


def job_task(env: Any, inputs: dict[str, np.ndarray], outputs: str) -> None:
    base = mjx.make_data(env.mj_model, impl="jax")
    names = [k[4:] for k in inputs if k.startswith("pre_")]
    steps, num = inputs["action"].shape[:2]
    metrics = {f"reward/{k}": jp.zeros(()) for k in env._config.reward_config.scales.keys()}
    metrics["swing_peak"] = jp.zeros(())
    obs = {"state": jp.zeros(48), "privileged_state": jp.zeros(123)}

    def one(pre: dict[str, Any], key: Any, action: Any, after: dict[str, Any]) -> Any:
        seen: dict[str, Any] = {}

        def physics(model: Any, data: Any, targets: Any, n_substeps: int) -> Any:
            seen["targets"], seen["xfrc"] = targets, data.xfrc_applied[1]
            return data.replace(**after)

        state = mjx_env.State(base, obs, jp.zeros(()), jp.zeros(()), dict(metrics), _info(pre, key))
        with patched(mjx_env, "step", physics):  # Joystick.step calls mjx_env.step: the caller's physics
            new = env.step(state, action)
        return new.obs, new.reward, new.done, new.metrics, new.info, seen["targets"], seen["xfrc"]

    step = jax.jit(jax.vmap(one))
    keys = jax.random.split(jax.random.PRNGKey(int(inputs["seed"])), num)
    results: dict[str, list[np.ndarray]] = {}
    for t in range(steps):
        pre = {n: inputs[f"pre_{n}"][t] for n in names}
        after = {n: jp.asarray(inputs[f"after_{n}"][t], dtype=jp.float32) for n in AFTER}
        obs_t, reward, done, met, info, targets, xfrc = step(pre, keys, jp.asarray(inputs["action"][t], jp.float32),
                                                            after)
        keys = info["rng"]
        row = {"obs": obs_t["state"], "privileged": obs_t["privileged_state"], "reward": reward, "done": done,
               "targets": targets, "xfrc": xfrc, **{k: v for k, v in met.items()},
               **{f"info_{k}": v for k, v in info.items() if k != "rng"}}
        for name, value in row.items():
            results.setdefault(name, []).append(np.asarray(value))
    np.savez(outputs, **{k: np.stack(v) for k, v in results.items()})


LEAP_INFO_INT = ("step", "steps_since_last_success", "success_count", "pert_wait_steps", "pert_duration_steps")
LEAP_AFTER = ("qpos", "qvel", "sensordata", "actuator_force")


def _leap_info(pre: dict[str, Any], key: Any, env: Any) -> dict[str, Any]:
    info = {"rng": key, "last_pert_step": jp.array([-jp.inf]), "pert_wait_steps": jp.array([100]),
            "pert_duration_steps": jp.array([10]), "pert_vel": jp.zeros(6), "pert_dir": jp.zeros(6)}
    for name, value in pre.items():
        info[name] = jp.asarray(value, dtype=jp.int32 if name in LEAP_INFO_INT else jp.float32)
    return info


_CLIP = jp.clip


def _clip(x: Any, min: Any = None, max: Any = None, *, a_min: Any = None, a_max: Any = None) -> Any:
    """jax.numpy.clip accepting a_min / a_max: Playground 0.2.0's ``_cube_orientation_error`` calls
    ``jp.clip(..., a_max=1.0)``, names jax 0.10 removed (the same function, its old keywords)."""
    return _CLIP(x, a_min if min is None else min, a_max if max is None else max)


def _leap_step(env: Any) -> Any:
    """jit(vmap) of Playground's step on (pre info, pre ctrl, pre mocap_quat, key, action, after)."""
    base = mjx.make_data(env.mj_model, impl="jax")
    metrics = {f"reward/{k}": jp.zeros(()) for k in env._config.reward_config.scales.keys()}
    metrics.update({"reward/success": jp.zeros(()), "steps_since_last_success": 0, "success_count": 0})
    obs = {"state": jp.zeros(env.observation_size["state"]),
           "privileged_state": jp.zeros(env.observation_size["privileged_state"])}

    def one(pre: dict[str, Any], ctrl: Any, mocap_quat: Any, key: Any, action: Any, after: dict[str, Any]) -> Any:
        seen: dict[str, Any] = {}

        def physics(model: Any, data: Any, targets: Any, n_substeps: int) -> Any:
            seen["targets"] = targets
            return data.replace(ctrl=targets, **after)

        data = base.replace(ctrl=ctrl, mocap_quat=mocap_quat)
        state = mjx_env.State(data, obs, jp.zeros(()), jp.zeros(()), dict(metrics), _leap_info(pre, key, env))
        with patched(mjx_env, "step", physics), patched(jp, "clip", _clip):  # the caller's physics
            new = env.step(state, action)
        return new.obs, new.reward, new.done, new.metrics, new.info, seen["targets"], new.data.mocap_quat

    return jax.jit(jax.vmap(one))


def job_leap_task(env: Any, inputs: dict[str, np.ndarray], outputs: str) -> None:
    names = [k[4:] for k in inputs if k.startswith("pre_") and k not in ("pre_ctrl", "pre_mocap_quat")]
    steps, num = inputs["action"].shape[:2]
    step = _leap_step(env)
    keys = jax.random.split(jax.random.PRNGKey(int(inputs["seed"])), num)
    results: dict[str, list[np.ndarray]] = {}
    for t in range(steps):
        pre = {n: inputs[f"pre_{n}"][t] for n in names}
        after = {n: jp.asarray(inputs[f"after_{n}"][t], dtype=jp.float32) for n in LEAP_AFTER}
        f32 = {k: jp.asarray(inputs[k][t], jp.float32) for k in ("pre_ctrl", "pre_mocap_quat", "action")}
        obs_t, reward, done, met, info, targets, mocap = step(pre, f32["pre_ctrl"], f32["pre_mocap_quat"], keys,
                                                             f32["action"], after)
        keys = info["rng"]
        row = {"obs": obs_t["state"], "privileged": obs_t["privileged_state"], "reward": reward, "done": done,
               "targets": targets, "mocap_quat": mocap, **dict(met.items()),
               **{f"info_{k}": v for k, v in info.items() if k != "rng"}}
        for name, value in row.items():
            results.setdefault(name, []).append(np.asarray(value))
    np.savez(outputs, **{k: np.stack(v) for k, v in results.items()})


def job_leap_samples(env: Any, inputs: dict[str, np.ndarray], outputs: str) -> None:
    count = int(inputs["count"])
    keys = jax.random.split(jax.random.PRNGKey(int(inputs["seed"])), count)
    state = jax.jit(jax.vmap(env.reset))(keys)
    # One step of a cube sitting at its goal (orientation sensors equal): success, so the spin is drawn.
    step = _leap_step(env)
    sensordata = np.zeros((count, env.mj_model.nsensordata), np.float32)
    for name in ("cube_orientation", "cube_goal_orientation"):
        adr = env.mj_model.sensor(name).adr[0]
        sensordata[:, adr] = 1.0
    pre = {"last_act": jp.zeros((count, 16)), "last_last_act": jp.zeros((count, 16)),
           "goal_quat_dquat": jp.zeros((count, 3)), "motor_targets": state.data.ctrl,
           "qpos_error_history": jp.zeros((count, 16)), "cube_pos_error_history": jp.zeros((count, 3)),
           "cube_ori_error_history": jp.zeros((count, 6)),
           **{k: jp.zeros((count,), jp.int32) for k in LEAP_INFO_INT}}
    after = {"qpos": state.data.qpos, "qvel": state.data.qvel, "sensordata": jp.asarray(sensordata),
             "actuator_force": jp.zeros((count, 16))}
    spin_keys = jax.random.split(jax.random.PRNGKey(int(inputs["seed"]) + 1), count)
    *_, info, _, _ = step(pre, state.data.ctrl, state.data.mocap_quat, spin_keys, jp.zeros((count, 16)), after)
    np.savez(outputs, qpos=state.data.qpos, ctrl=state.data.ctrl, mocap_quat=state.data.mocap_quat[:, 0],
             mocap_pos=state.data.mocap_pos[:, 0], spin=info["goal_quat_dquat"], obs=state.obs["state"],
             sensordata=state.data.sensordata)


def job_leap_trajectory(env: Any, inputs: dict[str, np.ndarray], outputs: str) -> None:
    steps, num = inputs["action"].shape[:2]
    keys = jax.random.split(jax.random.PRNGKey(int(inputs["seed"])), num)
    with patched(jp, "clip", _clip):
        state = jax.jit(jax.vmap(env.reset))(keys)
        step = jax.jit(jax.vmap(env.step))
        start = {k: np.asarray(getattr(state.data, k)) for k in ("qpos", "qvel", "ctrl", "mocap_pos", "mocap_quat")}
        results: dict[str, list[np.ndarray]] = {}
        for t in range(steps):
            state = step(state, jp.asarray(inputs["action"][t], jp.float32))
            row = {"qpos": state.data.qpos, "qvel": state.data.qvel, "reward": state.reward, "done": state.done}
            for name, value in row.items():
                results.setdefault(name, []).append(np.asarray(value))
    np.savez(outputs, **{f"start_{k}": v for k, v in start.items()}, **{k: np.stack(v) for k, v in results.items()})


def job_configs(env: Any, inputs: dict[str, np.ndarray], outputs: str, name: str) -> None:
    from mujoco_playground.config import locomotion_params, manipulation_params

    params = manipulation_params if name.startswith(("Leap", "Panda", "Aloha", "Aero")) else locomotion_params
    configs = [params.brax_ppo_config(name).to_dict(), params.rsl_rl_config(name).to_dict()]
    Path(outputs).write_text(json.dumps(configs, default=str))


def job_samples(env: Any, inputs: dict[str, np.ndarray], outputs: str) -> None:
    keys = jax.random.split(jax.random.PRNGKey(int(inputs["seed"])), int(inputs["count"]))
    base = mjx.make_data(env.mj_model, impl="jax")

    def make_data(model: Any, qpos: Any = None, qvel: Any = None, ctrl: Any = None, **unused: Any) -> Any:
        return base.replace(qpos=qpos, qvel=qvel, ctrl=ctrl)  # the one Data built outside the trace

    # No physics: zero sensors and frames, so the observation's noisy entries are the noise alone.
    with patched(mjx, "forward", lambda model, data: data), patched(mjx_env, "make_data", make_data):
        state = jax.jit(jax.vmap(env.reset))(keys)
    resample_keys = jax.random.split(jax.random.PRNGKey(int(inputs["seed"]) + 1), int(inputs["count"]))
    x = jp.asarray(inputs["command"], jp.float32)
    resampled = jax.jit(jax.vmap(env.sample_command, in_axes=(0, None)))(resample_keys, x)
    info = state.info
    np.savez(outputs, command=info["command"], steps_until_next_cmd=info["steps_until_next_cmd"],
             steps_until_next_pert=info["steps_until_next_pert"], pert_duration=info["pert_duration"],
             pert_duration_seconds=info["pert_duration_seconds"], pert_mag=info["pert_mag"],
             qpos=state.data.qpos, qvel=state.data.qvel, noise=state.obs["state"][:, :33], resampled=resampled)


def job_trajectory(env: Any, inputs: dict[str, np.ndarray], outputs: str) -> None:
    steps, num = inputs["action"].shape[:2]
    keys = jax.random.split(jax.random.PRNGKey(int(inputs["seed"])), num)
    state = jax.jit(jax.vmap(env.reset))(keys)
    state.info["steps_until_next_cmd"] = jp.full((num,), 10**6, jp.int32)  # no resample in the horizon
    start = {"qpos": state.data.qpos, "qvel": state.data.qvel, "command": state.info["command"],
             "obs": state.obs["state"], "privileged": state.obs["privileged_state"]}
    step = jax.jit(jax.vmap(env.step))
    results: dict[str, list[np.ndarray]] = {}
    for t in range(steps):
        state = step(state, jp.asarray(inputs["action"][t], jp.float32))
        row = {"qpos": state.data.qpos, "qvel": state.data.qvel, "obs": state.obs["state"],
               "privileged": state.obs["privileged_state"], "reward": state.reward, "done": state.done}
        for name, value in row.items():
            results.setdefault(name, []).append(np.asarray(value))
    np.savez(outputs, **{f"start_{k}": np.asarray(v) for k, v in start.items()},
             **{k: np.stack(v) for k, v in results.items()})


PANDA_AFTER = ("qpos", "qvel", "xpos", "xmat", "site_xpos", "site_xmat", "sensordata")


def job_panda_task(env: Any, inputs: dict[str, np.ndarray], outputs: str) -> None:
    base = mjx.make_data(env.mj_model, impl="jax")
    metrics = {k: jp.zeros(()) for k in (*env._config.reward_config.scales.keys(), "out_of_bounds")}
    model = env.mj_model
    shapes = {"xmat": (model.nbody, 3, 3), "site_xmat": (model.nsite, 3, 3)}

    def one(ctrl: Any, target: Any, quat: Any, reached: Any, action: Any, after: dict[str, Any]) -> Any:
        seen: dict[str, Any] = {}

        def physics(model: Any, data: Any, targets: Any, n_substeps: int) -> Any:
            seen["targets"] = targets
            return data.replace(ctrl=targets, **after)

        info = {"rng": jax.random.PRNGKey(0), "target_pos": target, "reached_box": reached}
        data = base.replace(ctrl=ctrl, mocap_quat=base.mocap_quat.at[env._mocap_target].set(quat))
        state = mjx_env.State(data, jp.zeros(66), jp.zeros(()), jp.zeros(()), dict(metrics), info)
        with patched(mjx_env, "step", physics):  # PandaPickCube.step calls mjx_env.step: the caller's physics
            new = env.step(state, action)
        return new.obs, new.reward, new.done, new.metrics, new.info["reached_box"], seen["targets"]

    step = jax.jit(jax.vmap(one))
    results: dict[str, list[np.ndarray]] = {}
    for t in range(inputs["action"].shape[0]):
        after = {n: jp.asarray(inputs[f"after_{n}"][t], dtype=jp.float32) for n in PANDA_AFTER}
        after = {n: v.reshape(v.shape[0], *shapes[n]) if n in shapes else v for n, v in after.items()}
        obs, reward, done, met, reached, targets = step(
            *(jp.asarray(inputs[f"pre_{n}"][t], jp.float32) for n in ("ctrl", "target_pos", "target_quat",
                                                                       "reached_box")),
            jp.asarray(inputs["action"][t], jp.float32), after)
        row = {"obs": obs, "reward": reward, "done": done, "reached_box": reached, "targets": targets,
               **{f"raw/{k}": v for k, v in met.items()}}
        for name, value in row.items():
            results.setdefault(name, []).append(np.asarray(value))
    np.savez(outputs, **{k: np.stack(v) for k, v in results.items()})


def job_panda_samples(env: Any, inputs: dict[str, np.ndarray], outputs: str) -> None:
    keys = jax.random.split(jax.random.PRNGKey(int(inputs["seed"])), int(inputs["count"]))
    state = jax.jit(jax.vmap(env.reset))(keys)
    target = env._mocap_target[0] if np.ndim(env._mocap_target) else env._mocap_target
    np.savez(outputs, qpos=state.data.qpos, target_pos=state.info["target_pos"],
             mocap_pos=state.data.mocap_pos[:, target], mocap_quat=state.data.mocap_quat[:, target],
             ctrl=state.data.ctrl, obs=state.obs)


def job_panda_trajectory(env: Any, inputs: dict[str, np.ndarray], outputs: str) -> None:
    steps, num = inputs["action"].shape[:2]
    state = jax.jit(jax.vmap(env.reset))(jax.random.split(jax.random.PRNGKey(int(inputs["seed"])), num))
    if "start_qpos" in inputs:
        target = jp.asarray(inputs["start_target_pos"], jp.float32)
        mocap = state.data.mocap_pos.at[:, env._mocap_target].set(target[:, None, :] if np.ndim(env._mocap_target)
                                                                   else target)
        data = state.data.replace(qpos=jp.asarray(inputs["start_qpos"], jp.float32), mocap_pos=mocap,
                                  ctrl=jp.asarray(inputs["start_ctrl"], jp.float32))
        state = state.replace(data=data, info={**state.info, "target_pos": target})
    start = {"qpos": state.data.qpos, "target_pos": state.info["target_pos"], "ctrl": state.data.ctrl}
    step = jax.jit(jax.vmap(env.step))
    results: dict[str, list[np.ndarray]] = {}
    for t in range(steps):
        state = step(state, jp.asarray(inputs["action"][t], jp.float32))
        for name, value in (("qpos", state.data.qpos), ("obs", state.obs), ("reward", state.reward),
                            ("done", state.done)):
            results.setdefault(name, []).append(np.asarray(value))
    np.savez(outputs, **{f"start_{k}": np.asarray(v) for k, v in start.items()},
             **{k: np.stack(v) for k, v in results.items()})


def job_panda_ppo(env: Any, inputs: dict[str, np.ndarray], outputs: str) -> None:
    from mujoco_playground.config import manipulation_params

    configs = {"brax": manipulation_params.brax_ppo_config("PandaPickCube").to_dict(),
               "rsl_rl": manipulation_params.rsl_rl_config("PandaPickCube").to_dict()}
    Path(outputs).write_text(json.dumps(configs, default=list))


JOBS = {"model": job_model, "task": job_task, "samples": job_samples, "trajectory": job_trajectory,
        "panda_task": job_panda_task, "panda_samples": job_panda_samples, "panda_ppo": job_panda_ppo,
        "panda_trajectory": job_panda_trajectory,
        "leap_task": job_leap_task, "leap_samples": job_leap_samples, "leap_trajectory": job_leap_trajectory}


def main(path: str) -> None:
    for job in json.loads(Path(path).read_text()):
        name = job.get("env", ENV)
        if job["job"] == "configs":
            job_configs(None, {}, job["outputs"], name)
            continue
        env = _load(name, job.get("overrides", {}))
        inputs = dict(np.load(job["inputs"])) if job.get("inputs") else {}
        JOBS[job["job"]](env, inputs, job["outputs"])


if __name__ == "__main__":
    main(sys.argv[1])
