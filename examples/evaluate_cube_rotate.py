"""Evaluate a CubeRotate-v0 policy: mean cube angular velocity about world z and drop rate.

    python examples/evaluate_cube_rotate.py --policy random
    python examples/evaluate_cube_rotate.py --policy ppo --checkpoint out/ppo_cube/checkpoint.pt --gif out/cube.gif
    python examples/evaluate_cube_rotate.py --policy sb3 --checkpoint out/sb3_cube/RUN/final_model.zip

Runs `--episodes` envs (held-out global ids from `--env-id-offset`), ONE full episode each from
``reset(seed)``, with the policy's deterministic action (its mean) or uniform random actions, and
prints (and writes to --json) per-episode statistics averaged over the episodes:

- ``angvel_z_mean``: the episode's turn about world z divided by its duration (rad/s; the mean of
  ``info["cube_angvel_z"]`` over its steps), averaged over episodes;
- ``drop_rate``: the fraction of episodes that ended with the cube dropped (terminated);
- ``length_mean`` (control steps) and ``return_mean``.

A checkpoint of examples/ppo.py (``checkpoint.pt``) is rebuilt with that script's Agent; an SB3
model uses the ``vecnormalize.pkl`` beside it when present; loading an SB3 model or that pickle runs code
from the file: load only files you trust.
"""

from __future__ import annotations

import importlib.util
import json
import pickle
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import gymnasium as gym
import numpy as np
from tqdm import tqdm

import mjvec  # noqa: F401  (registers the tasks)
from mjvec.errors import missing_extra
from mjvec.integrations.video import write_gif

try:  # the train extra: say how to install it rather than stop at a bare ModuleNotFoundError
    import torch
    import tyro
except ImportError as _error:
    print(missing_extra("train", _error, "examples/evaluate_cube_rotate.py"), file=sys.stderr)
    raise SystemExit(2) from None

ENV_ID = "CubeRotate-v0"


@dataclass
class Args:
    """Evaluation of a CubeRotate-v0 policy over one episode in each of --episodes envs."""

    policy: Literal["random", "ppo", "sb3"] = "random"
    checkpoint: Path | None = None
    """examples/ppo.py's checkpoint.pt, or an SB3 model .zip"""
    episodes: int = 128
    """envs, one episode each"""
    env_id_offset: int = 100_000
    """global id of the first env (held out from training's 0..num_envs-1)"""
    seed: int = 12345
    num_threads: int | None = None
    gif: Path | None = None
    """write a GIF of the first --gif-envs envs"""
    gif_envs: int = 2
    gif_steps: int = 120
    gif_every: int = 2
    gif_size: tuple[int, int] = (180, 240)
    """(height, width) of each env's frame"""
    json: Path | None = None


def ppo_policy(path: Path) -> Callable[[np.ndarray], np.ndarray]:
    """The deterministic (mean) action of examples/ppo.py's Agent from its checkpoint."""
    spec = importlib.util.spec_from_file_location("ppo_example", Path(__file__).with_name("ppo.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    state = torch.load(path, map_location="cpu", weights_only=True)
    args = module.Args(**{k: v for k, v in state["args"].items() if k in ("hidden", "norm_obs", "init_log_std")}
                       | {"hidden": tuple(state["args"]["hidden"])})
    weights = state["agent"]
    agent = module.Agent(weights["policy_norm.mean"].numel(), weights["critic_norm.mean"].numel(),
                         weights["actor_logstd"].numel(), args)
    agent.load_state_dict(weights)
    agent.eval()

    def act(obs: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return agent.distribution(torch.as_tensor(obs, dtype=torch.float32)).mean.clamp(-1, 1).numpy()

    return act


def sb3_policy(path: Path) -> Callable[[np.ndarray], np.ndarray]:
    """The deterministic action of an SB3 PPO model, its observations normalized by the
    `VecNormalize` statistics saved beside it (when present)."""
    from stable_baselines3 import PPO

    model = PPO.load(path, device="cpu")
    stats = path.with_name("vecnormalize.pkl")
    normalize = None
    if stats.is_file():
        with stats.open("rb") as f:  # VecNormalize.save pickles itself without its env
            normalize = pickle.load(f)
        normalize.training = False

    def act(obs: np.ndarray) -> np.ndarray:
        if normalize is not None:
            obs = normalize.normalize_obs(obs)
        return model.predict(obs, deterministic=True)[0]

    return act


def evaluate(args: Args) -> dict[str, float]:
    env = gym.make_vec(ENV_ID, num_envs=args.episodes, env_id_offset=args.env_id_offset,
                       num_threads=args.num_threads, randomization=None, autoreset_mode="disabled",
                       render_mode="rgb_array" if args.gif else None, render_size=args.gif_size)
    rng = np.random.default_rng(args.seed)
    if args.policy == "random":
        def policy(obs: np.ndarray) -> np.ndarray:
            return rng.uniform(-1.0, 1.0, env.action_space.shape)
    elif args.checkpoint is None:
        raise SystemExit(f"--policy {args.policy} needs --checkpoint")
    else:
        policy = ppo_policy(args.checkpoint) if args.policy == "ppo" else sb3_policy(args.checkpoint)
    obs, _ = env.reset(seed=args.seed)
    n = args.episodes
    running = np.ones(n, bool)
    turn, steps, returns, dropped = np.zeros(n), np.zeros(n, np.int64), np.zeros(n), np.zeros(n, bool)
    base = env.unwrapped
    ids = np.arange(min(args.gif_envs, n))
    frames = [base.render_grid(ids, ncols=2)] if args.gif else []
    t = 0
    progress = tqdm(total=n, desc="episodes finished", unit="ep", dynamic_ncols=True)
    while running.any():
        # Every env runs until its first episode ends; finished envs are stepped no further in
        # effect (they are reset and their rows ignored).
        obs, reward, term, trunc, info = env.step(policy(obs))
        t += 1
        turn += np.where(running, info["cube_angvel_z"] * base.control_dt, 0.0)
        returns += np.where(running, reward, 0.0)
        steps += running
        dropped |= running & term
        done = running & (term | trunc)
        running &= ~done
        progress.update(int(done.sum()))
        progress.set_postfix(step=t, refresh=False)
        if args.gif and t <= args.gif_steps and t % args.gif_every == 0:
            frames.append(base.render_grid(ids, ncols=2))
        if (term | trunc).any():
            obs, _ = env.reset(options={"reset_mask": term | trunc})
    progress.close()
    duration = steps * base.control_dt
    result = {
        "policy": args.policy, "checkpoint": str(args.checkpoint), "episodes": n,
        "angvel_z_mean": float(np.mean(turn / duration)), "angvel_z_std": float(np.std(turn / duration)),
        "drop_rate": float(dropped.mean()), "length_mean": float(steps.mean()),
        "return_mean": float(returns.mean()), "turn_per_episode_rad": float(turn.mean()),
    }
    if args.gif:
        result["gif"] = str(write_gif(args.gif, frames, fps=env.metadata["render_fps"] / args.gif_every))
    env.close()
    return result


def main(args: Args) -> dict[str, float]:
    result = evaluate(args)
    text = json.dumps(result, indent=2)
    print(text)
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n")
    return result


if __name__ == "__main__":
    main(tyro.cli(Args))
