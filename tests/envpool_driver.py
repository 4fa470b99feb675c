"""EnvPool 1.2.5's C++ port of MuJoCo Playground's Go1 joystick, driven from its own virtual
environment by tests/test_go1_envpool.py: ``.venv-envpool/bin/python tests/envpool_driver.py
JOB.json`` (scripts/setup_envpool.sh makes that environment). This file imports nothing of mjvec.

JOB.json: {"task": EnvPool's id, "num_envs": N, "rounds": R, "seed": S, "actions": {name: (12,)
constant action}, "horizon": H, "outputs": path.npz}. The driver writes (all from EnvPool's public
interface; it cannot be given a state):

- ``config``: the spec's config as JSON (every constant EnvPool's port reads), ``obs_shapes``,
  ``action_low`` / ``action_high``, ``max_episode_steps``, ``reward_names`` (the ``reward_*`` infos);
- per round (R rounds of ``reset()`` of all N envs, so R x N draws from EnvPool's per-env
  streams): ``reset_state`` / ``reset_privileged`` (R x N, ...), ``reset_command``,
  ``reset_steps_until_next_cmd``; for each named constant action, one step from that reset (a
  fresh ``reset()`` before each): ``<name>_state``, ``<name>_privileged``, ``<name>_reward``,
  ``<name>_reward_<term>``;
- ``episode_end``: (N,) the step at which each env's first episode ended under zero actions
  within H steps (0: not within H), and ``episode_truncated`` (N,): whether it ended truncated.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import envpool
import numpy as np


def _collect(job: dict) -> dict[str, np.ndarray]:
    n, task = int(job["num_envs"]), job["task"]
    env = envpool.make(task, env_type="gymnasium", num_envs=n, batch_size=n, num_threads=1, seed=int(job["seed"]))
    spec = envpool.make_spec(task)
    config = {k: v for k, v in spec.config._asdict().items() if isinstance(v, (int, float, str, bool))}
    out: dict[str, list] = {}
    names: list[str] = []
    for _ in range(int(job["rounds"])):
        obs, info = env.reset()
        for key, value in (("reset_state", obs["state"]), ("reset_privileged", obs["privileged_state"]),
                           ("reset_command", info["command"]),
                           ("reset_steps_until_next_cmd", info["steps_until_next_cmd"])):
            out.setdefault(key, []).append(np.array(value))
        for name, action in job["actions"].items():
            env.reset()
            obs, reward, _, _, info = env.step(np.tile(np.asarray(action, np.float64), (n, 1)))
            names = sorted(k[len("reward_"):] for k in info if k.startswith("reward_"))
            out.setdefault(f"{name}_state", []).append(np.array(obs["state"]))
            out.setdefault(f"{name}_privileged", []).append(np.array(obs["privileged_state"]))
            out.setdefault(f"{name}_reward", []).append(np.array(reward))
            for term in names:
                out.setdefault(f"{name}_reward_{term}", []).append(np.array(info[f"reward_{term}"]))
    result = {k: np.concatenate(v) for k, v in out.items()}
    env.reset()
    end, trunc = np.zeros(n, np.int64), np.zeros(n, bool)
    zero = np.zeros((n, 12))
    for t in range(1, int(job["horizon"]) + 1):
        _, _, terminated, truncated, _ = env.step(zero)
        first = (end == 0) & (terminated | truncated)
        end[first], trunc[first] = t, truncated[first] & ~terminated[first]
    space = env.observation_space
    result |= {"config": np.array(json.dumps(config)), "reward_names": np.array(names),
               "obs_shapes": np.array([space["state"].shape[0], space["privileged_state"].shape[0]]),
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
