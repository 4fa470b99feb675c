"""Evaluate a policy's episode return on a Gymnasium MuJoCo task, in mjvec or in Gymnasium's own env.

    python examples/evaluate_return.py --env-id mjvec/HalfCheetah-v5 --policy ppo --checkpoint out/ppo_hc/checkpoint.pt
    python examples/evaluate_return.py --env-id mjvec/HalfCheetah-v5 --policy sb3 \\
        --checkpoint out/sb3_hc/final_model.zip --on gymnasium
    python examples/evaluate_return.py --env-id mjvec/HalfCheetah-v5 --policy random

Runs ONE full episode in each of `--episodes` envs with the policy's deterministic action (its
mean; uniform random actions for --policy random) and prints the mean and standard deviation of
the undiscounted episode return (and writes them to --json): the figure rl-baselines3-zoo's
benchmark reports (its ``mean_reward`` is the deterministic policy's mean episode return).
``--on mjvec`` evaluates on held-out mjvec envs (global ids from --env-id-offset, so neither their
reset draws nor anything else was seen in training); ``--on gymnasium`` on Gymnasium's own env of
the same id (``gym.make("HalfCheetah-v5")``, seeds seed..seed+episodes-1), which mjvec's task
equals step for step, so a return measured there is directly comparable with published ones.
Checkpoints load as in examples/evaluate_cube_rotate.py (an SB3 model or its VecNormalize pickle
runs code from the file: load only files you trust).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import gymnasium as gym
import numpy as np
from tqdm import tqdm

import mjvec  # noqa: F401  (registers the suite)
from mjvec.errors import missing_extra

try:  # the train extra: say how to install it rather than stop at a bare ModuleNotFoundError
    import torch  # noqa: F401  (the policies of evaluate_cube_rotate run in torch)
    import tyro
    from evaluate_cube_rotate import ppo_policy, sb3_policy
except ImportError as _error:
    print(missing_extra("train", _error, "examples/evaluate_return.py"), file=sys.stderr)
    raise SystemExit(2) from None


@dataclass
class Args:
    """Deterministic episode return of a policy (see the module docstring)."""

    env_id: str = "mjvec/HalfCheetah-v5"
    policy: Literal["random", "ppo", "sb3"] = "random"
    checkpoint: Path | None = None
    """examples/ppo.py's checkpoint.pt, or an SB3 model .zip (vecnormalize.pkl beside it is used)"""
    on: Literal["mjvec", "gymnasium"] = "mjvec"
    """where to evaluate: held-out mjvec envs, or Gymnasium's own env of the same id"""
    episodes: int = 32
    env_id_offset: int = 100_000
    seed: int = 12345
    num_threads: int | None = None
    json: Path | None = None


def make_policy(args: Args, space: gym.spaces.Box) -> Callable[[np.ndarray], np.ndarray]:
    rng = np.random.default_rng(args.seed)
    if args.policy == "random":
        return lambda obs: rng.uniform(space.low, space.high, (obs.shape[0], space.shape[0])).astype(np.float32)
    if args.checkpoint is None:
        raise SystemExit(f"--policy {args.policy} needs --checkpoint")
    act = ppo_policy(args.checkpoint) if args.policy == "ppo" else sb3_policy(args.checkpoint)
    return lambda obs: np.clip(act(obs), space.low, space.high).astype(np.float32)


def on_mjvec(args: Args) -> np.ndarray:
    env = gym.make_vec(args.env_id, num_envs=args.episodes, env_id_offset=args.env_id_offset,
                       num_threads=args.num_threads, autoreset_mode="disabled")
    policy = make_policy(args, env.single_action_space)
    obs, _ = env.reset(seed=args.seed)
    running, returns = np.ones(args.episodes, bool), np.zeros(args.episodes)
    with tqdm(total=args.episodes, desc="episodes", unit="episode") as bar:
        while running.any():
            obs, reward, term, trunc, _ = env.step(policy(obs))
            returns += np.where(running, reward, 0.0)
            running &= ~(term | trunc)
            bar.update(int(args.episodes - running.sum()) - bar.n)
            if (term | trunc).any():  # finished envs start another episode whose rows are ignored
                obs, _ = env.reset(options={"reset_mask": term | trunc})
    env.close()
    return returns


def on_gymnasium(args: Args) -> np.ndarray:
    name = args.env_id.split("/")[-1]
    env = gym.make(name)
    policy = make_policy(args, env.action_space)
    returns = []
    for k in tqdm(range(args.episodes), desc="episodes", unit="episode"):
        obs, _ = env.reset(seed=args.seed + k)
        total, done = 0.0, False
        while not done:
            obs, reward, term, trunc, _ = env.step(policy(obs[None])[0])
            total += float(reward)
            done = term or trunc
        returns.append(total)
    env.close()
    return np.asarray(returns)


def main(args: Args) -> dict:
    returns = on_mjvec(args) if args.on == "mjvec" else on_gymnasium(args)
    result = {"env_id": args.env_id, "on": args.on, "policy": args.policy, "checkpoint": str(args.checkpoint),
              "episodes": len(returns), "return_mean": float(returns.mean()), "return_std": float(returns.std())}
    text = json.dumps(result, indent=2)
    print(text)
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n")
    return result


if __name__ == "__main__":
    main(tyro.cli(Args))
