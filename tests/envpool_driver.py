"""EnvPool 1.2.5's C++ ports of MuJoCo Playground tasks (the Go1 joysticks, LeapCubeReorient,
PandaPickCube and PandaPickCubeOrientation), driven from their own virtual environment by
tests/test_go1_envpool.py, tests/test_leap_envpool.py and tests/test_panda_envpool.py (through
tests/envpool_compare.py): ``.venv-envpool/bin/python tests/envpool_driver.py JOB.json``
(scripts/setup_envpool.sh makes that environment). This file imports nothing of mjvec.

JOB.json: {"task": EnvPool's id, "num_envs": N, "rounds": R, "seed": S, "actions": {name: constant
action (the task's action width)}, "horizon": H, "outputs": path.npz, "reset_infos": [info names],
"step_infos": [info names]} (the last two optional, default none). The driver writes (all from
EnvPool's public interface; it cannot be given a state):

- ``config``: the spec's config as JSON (every constant EnvPool's port reads), ``obs_shapes`` (the
  widths of ``state`` and, where the task has one, ``privileged_state``), ``action_low`` /
  ``action_high``, ``max_episode_steps``, ``reward_names`` (the ``reward_*`` infos);
- per round (R rounds of ``reset()`` of all N envs, so R x N draws from EnvPool's per-env
  streams): ``reset_state`` (R x N, ...), ``reset_privileged`` (tasks with a privileged state),
  ``reset_<info>`` for each reset info named; for each named constant action, one step from that
  reset (a fresh ``reset()`` before each): ``<name>_state``, ``<name>_privileged``,
  ``<name>_reward``, ``<name>_reward_<term>`` (every ``reward_*`` info, as EnvPool reports it),
  ``<name>_<info>`` for each step info named;
- ``episode_end``: (N,) the step at which each env's first episode ended under zero actions
  within H steps (0: not within H), and ``episode_truncated`` (N,): whether it ended truncated.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import envpool
import numpy as np

OBS_KEYS = {"state": "state", "privileged_state": "privileged"}  # EnvPool's key -> the output's


def _observations(prefix: str, obs) -> dict[str, np.ndarray]:
    """A Dict observation by `OBS_KEYS`; a plain array (the Panda tasks' ``state``) as ``state``."""
    if isinstance(obs, dict):
        return {f"{prefix}_{name}": np.array(obs[key]) for key, name in OBS_KEYS.items() if key in obs}
    return {f"{prefix}_state": np.array(obs)}


def _append(out: dict[str, list], values: dict[str, np.ndarray]) -> None:
    for key, value in values.items():
        out.setdefault(key, []).append(value)


def _rounds(env, job: dict) -> tuple[dict[str, np.ndarray], list[str]]:
    n, out, names = int(job["num_envs"]), {}, []
    width = env.action_space.shape[0]
    for _ in range(int(job["rounds"])):
        obs, info = env.reset()
        _append(out, _observations("reset", obs))
        _append(out, {f"reset_{k}": np.array(info[k]) for k in job.get("reset_infos", ())})
        for name, action in job["actions"].items():
            if len(action) != width:
                raise ValueError(f"action {name!r} has {len(action)} entries; {job['task']} takes {width}")
            env.reset()
            obs, reward, _, _, info = env.step(np.tile(np.asarray(action, np.float64), (n, 1)))
            names = sorted(k[len("reward_"):] for k in info if k.startswith("reward_"))
            _append(out, _observations(name, obs) | {f"{name}_reward": np.array(reward)})
            _append(out, {f"{name}_reward_{term}": np.array(info[f"reward_{term}"]) for term in names})
            _append(out, {f"{name}_{k}": np.array(info[k]) for k in job.get("step_infos", ())})
    return {k: np.concatenate(v) for k, v in out.items()}, names


def _episode_ends(env, n: int, horizon: int) -> tuple[np.ndarray, np.ndarray]:
    env.reset()
    end, trunc = np.zeros(n, np.int64), np.zeros(n, bool)
    zero = np.zeros((n, env.action_space.shape[0]))
    for t in range(1, horizon + 1):
        _, _, terminated, truncated, _ = env.step(zero)
        first = (end == 0) & (terminated | truncated)
        end[first], trunc[first] = t, truncated[first] & ~terminated[first]
    return end, trunc


def _collect(job: dict) -> dict[str, np.ndarray]:
    n, task = int(job["num_envs"]), job["task"]
    env = envpool.make(task, env_type="gymnasium", num_envs=n, batch_size=n, num_threads=1, seed=int(job["seed"]))
    spec = envpool.make_spec(task)
    config = {k: v for k, v in spec.config._asdict().items() if isinstance(v, (int, float, str, bool))}
    result, names = _rounds(env, job)
    end, trunc = _episode_ends(env, n, int(job["horizon"]))
    space = env.observation_space
    widths = [space[k].shape[0] for k in OBS_KEYS if k in space.spaces] if hasattr(space, "spaces") else [
        space.shape[0]]
    result |= {"config": np.array(json.dumps(config)), "reward_names": np.array(names),
               "obs_shapes": np.array(widths),
               "action_low": env.action_space.low, "action_high": env.action_space.high,
               "max_episode_steps": np.array(spec.config.max_episode_steps),
               "episode_end": end, "episode_truncated": trunc}
    env.close()
    return result


def main() -> None:
    job = json.loads(Path(sys.argv[1]).read_text())
    np.savez(job["outputs"], **_collect(job))


if __name__ == "__main__":
    main()
