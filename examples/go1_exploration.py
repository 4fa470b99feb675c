"""How much reward random exploration finds on a Go1 joystick task, per action spread.

    python examples/go1_exploration.py                      # stds 0, 0.1, 0.2, 0.3, 0.6, 1.0
    python examples/go1_exploration.py --stds 0.61 --num-envs 1024 --seconds 5

A PPO policy at initialisation acts like its mean (near the default pose, action 0) plus Gaussian
noise of its initial std, clipped to the action box [-1, 1]. Playground's Go1 reward is clipped at
0 after the penalties, so a spread that makes the robot stumble earns 0 on most steps and gives the
critic nothing to fit. For each std of `--stds` this runs `--num-envs` envs (the paper
randomization, from `reset(seed)`) for `--seconds` with actions clip(N(0, std^2)) and reports the
fraction of control steps whose reward is positive, the mean reward per step, and the falls
(terminations) per 1,000 control steps. The action noise comes from a generator keyed by
(--seed, the std's index). A markdown table goes to stdout (and --json).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

import gymnasium as gym
import numpy as np
from tqdm import tqdm

import mjvec  # noqa: F401  (registers the tasks)
from mjvec.errors import missing_extra

try:  # the train extra: say how to install it rather than stop at a bare ModuleNotFoundError
    import tyro
except ImportError as _error:
    print(missing_extra("train", _error, "examples/go1_exploration.py"), file=sys.stderr)
    raise SystemExit(2) from None


@dataclass
class Args:
    """Reward found by random Gaussian actions on a Go1 joystick task (see the module docstring)."""

    env_id: str = "playground/Go1JoystickFlatTerrain-v0"
    stds: tuple[float, ...] = (0.0, 0.1, 0.2, 0.3, 0.6, 1.0)
    num_envs: int = 256
    seconds: float = 5.0
    seed: int = 0
    randomization: str = "paper"
    num_threads: int | None = None
    json: Path | None = None


def check_args(args: Args) -> None:
    """Refuse what cannot be measured, before any env is made."""
    bad = [s for s in args.stds if not np.isfinite(s) or s < 0]
    if bad or not args.stds:
        raise SystemExit(f"--stds must be finite and >= 0 (at least one), got {list(args.stds)}: e.g. --stds 0 0.3 1")
    if args.num_envs < 1 or args.seconds <= 0:
        raise SystemExit(f"--num-envs must be >= 1 and --seconds > 0, got {args.num_envs} and {args.seconds}")


def explore(env: gym.vector.VectorEnv, std: float, steps: int, seed: int, rng_key: int) -> dict:
    """Run `steps` control steps of clip(N(0, std^2)) actions from `env.reset(seed=seed)`; the
    noise comes from a generator keyed by (seed, rng_key). Returns the positive-reward fraction,
    the mean reward per step and the terminations per 1,000 env steps."""
    rng = np.random.default_rng([seed, rng_key])
    env.reset(seed=seed)
    low, high = env.single_action_space.low, env.single_action_space.high
    positive = falls = 0
    total = 0.0
    for _ in tqdm(range(steps), desc=f"std {std:g}", unit="step", dynamic_ncols=True, leave=False):
        actions = np.clip(rng.normal(0.0, std, (env.num_envs, *env.single_action_space.shape)), low, high)
        _, reward, terminated, _, _ = env.step(actions.astype(env.single_action_space.dtype))
        reward = np.asarray(reward, np.float64)
        positive += int((reward > 0).sum())
        total += float(reward.sum())
        falls += int(np.asarray(terminated).sum())
    n = steps * env.num_envs
    return {"std": std, "positive_fraction": positive / n, "mean_reward": total / n, "falls_per_1000": 1000 * falls / n}


def main(args: Args) -> list[dict]:
    check_args(args)
    env = gym.make_vec(args.env_id, num_envs=args.num_envs, randomization=args.randomization,
                       num_threads=args.num_threads)
    steps = round(args.seconds / env.unwrapped.control_dt)
    rows = [explore(env, std, steps, args.seed, i) for i, std in enumerate(args.stds)]
    env.close()
    print("| action std | steps with reward > 0 | mean reward / step | falls / 1,000 steps |\n|---|---|---|---|")
    for r in rows:
        print(f"| {r['std']:g} | {r['positive_fraction']:.3f} | {r['mean_reward']:.5f} | {r['falls_per_1000']:.2f} |")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, "rows": rows}, indent=2))
    return rows


if __name__ == "__main__":
    main(tyro.cli(Args))
