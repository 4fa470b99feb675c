"""``python -m mjvec rollout``: a random or SB3-checkpoint policy on a batch of envs, with images.

Outputs (``--grid``, ``--gif``) are checked to be writable before the env is built; a progress bar
on stderr covers the steps (and the GIF frames drawn with them). Loading a checkpoint unpickles
it, which runs code from the file: see `mjvec.cli.TRUST_WARNING`.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from tqdm import tqdm

from mjvec.cli.options import parse_options, resolve_env_id
from mjvec.errors import ConfigError


def _checkpoint_policy(
    args: argparse.Namespace, env: gym.vector.VectorEnv
) -> tuple[Callable[[Any], np.ndarray], Path | None]:
    """(obs -> actions of an SB3 checkpoint (deterministic), the VecNormalize stats file used or None)."""
    from stable_baselines3 import A2C, DDPG, PPO, SAC, TD3
    from stable_baselines3.common.vec_env import VecNormalize

    from mjvec.integrations.sb3 import SB3VecEnv

    algos = {"ppo": PPO, "sac": SAC, "td3": TD3, "a2c": A2C, "ddpg": DDPG}
    path = Path(args.checkpoint)
    if not path.is_file():
        raise ConfigError(f"--checkpoint {str(path)!r} does not exist")
    try:
        model = algos[args.algo].load(path, device="cpu")
    except Exception as error:  # a corrupt or foreign file fails deep inside SB3 with any error type
        raise ConfigError(
            f"--checkpoint {str(path)!r} is not a loadable SB3 {args.algo.upper()} checkpoint "
            f"({type(error).__name__}: {error}); pass the .zip that model.save() wrote, and --algo if not ppo"
        ) from error
    if model.observation_space != SB3VecEnv(env).observation_space:
        raise ConfigError(
            f"the checkpoint's observation space {model.observation_space} does not match the env's "
            f"{env.single_observation_space}; pass the training options (e.g. --option obs_mode=asymmetric)"
        )
    stats = Path(args.vecnormalize) if args.vecnormalize else _find_vecnormalize(path)
    normalize = None
    if stats is not None:
        try:
            normalize = VecNormalize.load(str(stats), SB3VecEnv(env))
        except Exception as error:
            raise ConfigError(
                f"--vecnormalize {str(stats)!r} is not a loadable VecNormalize file ({type(error).__name__}: "
                f"{error}); pass the .pkl that VecNormalize.save() wrote"
            ) from error
        normalize.training = False

    def policy(obs: Any) -> np.ndarray:
        if normalize is not None:
            obs = normalize.normalize_obs(obs)
        return model.predict(obs, deterministic=True)[0]

    return policy, stats


def _find_vecnormalize(checkpoint: Path) -> Path | None:
    """vecnormalize.pkl beside a final model, or CheckpointCallback's matching stats (see
    `mjvec.integrations.policies.find_vecnormalize`)."""
    from mjvec.integrations.policies import find_vecnormalize

    return find_vecnormalize(checkpoint)


def check_output_path(path: str, flag: str) -> None:
    """Refuse, before any work, an output file that cannot be written (a folder, a read-only place).

    Creates the missing parent folders (writing the file would) and opens the file for appending,
    removing it again if it did not exist: the only check that sees permissions, read-only file
    systems and pseudo file systems alike.
    """
    target = Path(path)
    if target.is_dir():
        raise ConfigError(f"{flag} {path!r} is a directory; give a file name, e.g. {str(target / 'out')!r}")
    existed = target.exists()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "ab"):
            pass
    except OSError as error:
        reason = error.strerror or str(error)
        raise ConfigError(f"{flag} {path!r} cannot be written ({reason}); choose another path") from error
    if not existed:
        target.unlink()


def written(path: str, flag: str, write: Callable[[], Path]) -> Path:
    """``write()``, an OSError on the way (a disk that filled up during the rollout, a folder removed
    or made read-only meanwhile) turned into a ConfigError naming `flag`, the path and the reason."""
    try:
        return write()
    except OSError as error:
        reason = error.strerror or str(error)
        raise ConfigError(
            f"{flag} {path!r} could not be written ({reason}); free space or choose another path"
        ) from error


def rollout(args: argparse.Namespace) -> dict[str, Any]:
    """Run a random or checkpoint policy; write the grid PNG / GIF; return a summary."""
    from mjvec.integrations.video import write_gif, write_png

    options = parse_options(args.option, "rollout")
    options.update({name: getattr(args, name) for name in ("nconmax", "njmax") if getattr(args, name) is not None})
    args.env_id = resolve_env_id(args.env_id)
    for flag, path in (("--grid", args.grid), ("--gif", args.gif)):
        if path is not None:
            check_output_path(path, flag)
    env = gym.make_vec(
        args.env_id, num_envs=args.num_envs, autoreset_mode="same_step", record_episode_statistics=True,
        render_mode="rgb_array" if (args.grid or args.gif) else None, render_size=tuple(args.render_size),
        **options,
    )
    try:
        policy, stats = _checkpoint_policy(args, env) if args.checkpoint else (_random_policy(env, args.seed), None)
        summary: dict[str, Any] = {"env_id": args.env_id, "num_envs": args.num_envs, "steps": args.steps,
                                   "policy": args.checkpoint or "random", "vecnormalize": stats and str(stats)}
        frames = _run(env, policy, args, summary)
        ids = np.arange(min(args.grid_envs, args.num_envs))
        if args.grid:
            grid = env.unwrapped.render_grid(ids)
            summary["grid"] = str(written(args.grid, "--grid", lambda: write_png(args.grid, grid)))
        if args.gif:
            print(f"writing {args.gif} ({len(frames)} frames)", file=sys.stderr, flush=True)
            fps = env.metadata["render_fps"] / args.frame_every
            summary["gif"] = str(written(args.gif, "--gif", lambda: write_gif(args.gif, frames, fps=fps)))
            summary["gif_frames"] = len(frames)
    finally:
        env.close()
    return summary


def _run(env: gym.vector.VectorEnv, policy: Callable[[Any], np.ndarray], args: argparse.Namespace,
         summary: dict[str, Any]) -> list[np.ndarray]:
    """Step `env` args.steps times from reset(seed); fill `summary`; return the GIF frames (if any)."""
    base = env.unwrapped
    ids = np.arange(min(args.grid_envs, args.num_envs))
    obs, _ = env.reset(seed=args.seed)
    frames = [base.render_grid(ids)] if args.gif else []
    returns, successes, step_s = [], [], 0.0
    desc = "rollout (rendering GIF frames)" if args.gif else "rollout"
    for t in tqdm(range(1, args.steps + 1), desc=desc, unit="step", leave=False, file=sys.stderr):
        actions = policy(obs)
        t0 = time.perf_counter()
        obs, _, _, _, info = env.step(actions)
        step_s += time.perf_counter() - t0
        if "episode" in info:
            done = info["_episode"]
            returns.extend(info["episode"]["r"][done].tolist())
            successes.extend(info["episode"].get("success", np.zeros_like(done))[done].tolist())
        if args.gif and t % args.frame_every == 0:
            frames.append(base.render_grid(ids))
    leaves = obs.values() if isinstance(obs, dict) else [obs]
    summary.update({
        "env_steps_per_s": round(args.num_envs * args.steps / max(step_s, 1e-9)),
        "episodes": len(returns),
        "return_mean": float(np.mean(returns)) if returns else None,
        "success_rate": float(np.mean(successes)) if successes else None,
        "obs_finite": bool(all(np.isfinite(v).all() for v in leaves)),
    })
    return frames


def _random_policy(env: gym.vector.VectorEnv, seed: int) -> Callable[[Any], np.ndarray]:
    rng = np.random.default_rng(seed)
    space = env.action_space
    return lambda obs: rng.uniform(space.low, space.high).astype(space.dtype)
