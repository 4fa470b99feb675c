"""Evaluate velocity tracking of a Go1 joystick policy: held commands, achieved velocities, errors.

    python examples/evaluate_go1.py --checkpoint out/ppo/checkpoint.pt --gif out/go1.gif
    python examples/evaluate_go1.py --checkpoint out/rsl_rl/playground/Go1JoystickFlatTerrain-v0/model_500.pt
    python examples/evaluate_go1.py --policy zero        # the baseline: stand still

Each command of `--commands` (forward, sideways, yaw rate) is held (`Go1JoystickEnv.set_command`,
resampling off) in `--envs-per-command` held-out envs (global ids from `--env-id-offset`) for one
episode of `--seconds`, from `reset(seed)`, with the policy's deterministic action and the options
it was trained with (the checkpoint's record: randomization and observation noise included). Per
command, over the envs that did not fall and the steps after `--warmup-s`: the mean achieved local
forward / sideways velocity and yaw rate (``info["velocity"]``), their error to the command, the
RMS per-step error, and the fall fraction. A markdown table goes to stdout (and --json, --markdown).

Checkpoints: examples/ppo.py's checkpoint.pt, rsl_rl's model_<it>.pt (with its params/agent.json),
or an ONNX / TorchScript export (`mjvec.integrations.policies.load_policy`); loading runs code from
the file: load only files you trust.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

os.environ.setdefault("MUJOCO_GL", "osmesa")

import gymnasium as gym
import numpy as np
from tqdm import tqdm

import mjvec  # noqa: F401  (registers the tasks)
from mjvec.errors import missing_extra
from mjvec.integrations.video import write_gif
from mjvec.tasks.go1_joystick import Go1JoystickConfig
from mjvec.tasks.locomotion import CommandConfig

try:  # the train extra: say how to install it rather than stop at a bare ModuleNotFoundError
    import tyro

    from mjvec.integrations.policies import load_policy
except ImportError as _error:
    print(missing_extra("train", _error, "examples/evaluate_go1.py"), file=sys.stderr)
    raise SystemExit(2) from None

# Forward, sideways and turning commands inside Playground's sampling ranges, and standing still.
COMMANDS = ((0.0, 0.0, 0.0), (0.5, 0.0, 0.0), (1.0, 0.0, 0.0), (1.5, 0.0, 0.0), (-0.5, 0.0, 0.0),
            (0.0, 0.5, 0.0), (0.0, -0.5, 0.0), (0.0, 0.0, 1.0), (0.0, 0.0, -1.0), (0.8, 0.0, 0.6))


@dataclass
class Args:
    """Velocity tracking of a Go1 joystick policy (see the module docstring)."""

    checkpoint: Path | None = None
    """a ppo.py / rsl_rl checkpoint or an export (None with --policy zero)"""
    policy: Literal["checkpoint", "zero"] = "checkpoint"
    """zero: all-zero actions (the default pose), the baseline"""
    env_id: str = "playground/Go1JoystickFlatTerrain-v0"
    commands: tuple[tuple[float, float, float], ...] = COMMANDS
    envs_per_command: int = 8
    seconds: float = 10.0
    warmup_s: float = 2.0
    """steps before this are not scored (the robot accelerates to the command)"""
    env_id_offset: int = 100_000
    """global id of the first env (held out from training's ids)"""
    seed: int = 12345
    num_threads: int | None = None
    gif: Path | None = None
    """a GIF of one env per command (the first --gif-commands)"""
    gif_commands: int = 4
    gif_seconds: float = 4.0
    """the GIF covers the episode's first seconds (software rendering is slow)"""
    gif_every: int = 2
    gif_size: tuple[int, int] = (180, 240)
    """(height, width) of each env's frame"""
    json: Path | None = None
    markdown: Path | None = None


def _env(args: Args, options: dict) -> gym.vector.VectorEnv:
    options = {k: v for k, v in options.items() if k not in ("num_envs", "num_threads", "env_id_offset", "config",
                                                             "autoreset_mode", "render_mode", "render_size")}
    held = Go1JoystickConfig(commands=CommandConfig(mean_resample_s=1e9))  # resampling off: commands are held
    return gym.make_vec(args.env_id, num_envs=len(args.commands) * args.envs_per_command,
                        env_id_offset=args.env_id_offset, num_threads=args.num_threads, config=held,
                        autoreset_mode="same_step", render_mode="rgb_array" if args.gif else None,
                        render_size=args.gif_size, **{"obs_mode": "asymmetric", **options})


def evaluate(args: Args) -> dict:
    if args.policy == "checkpoint" and args.checkpoint is None:
        raise SystemExit("--checkpoint is needed (or --policy zero)")
    policy = load_policy(args.checkpoint) if args.policy == "checkpoint" else None
    options = dict(policy.metadata.get("env_options", {})) if policy is not None else {}
    env = _env(args, options)
    base = env.unwrapped
    k = args.envs_per_command
    command = np.repeat(np.asarray(args.commands, np.float64), k, axis=0)
    obs, _ = env.reset(seed=args.seed)
    base.set_command(command)
    steps, warmup = round(args.seconds / base.control_dt), round(args.warmup_s / base.control_dt)
    alive = np.ones(env.num_envs, bool)
    achieved = []
    gif_ids = np.arange(min(args.gif_commands, len(args.commands))) * k
    frames = []
    for t in tqdm(range(steps), desc="evaluating", unit="step", dynamic_ncols=True):
        actions = policy(obs) if policy is not None else np.zeros((env.num_envs, 12), np.float32)
        obs, _, terminated, truncated, info = env.step(actions)
        alive &= ~(terminated | truncated)
        if t >= warmup:
            achieved.append(np.asarray(info["velocity"], np.float64).copy())
        if args.gif and t % args.gif_every == 0 and t * base.control_dt < args.gif_seconds:
            frames.append(base.render_grid(gif_ids, ncols=len(gif_ids)))
    velocity = np.stack(achieved, axis=1)  # (envs, scored steps, 3)
    rows = []
    for c, cmd in enumerate(args.commands):
        ids = np.arange(c * k, (c + 1) * k)
        up = ids[alive[ids]]
        mean = velocity[up].mean(axis=(0, 1)) if up.size else np.full(3, np.nan)
        rms = np.sqrt(((velocity[up] - np.asarray(cmd)) ** 2).mean(axis=(0, 1))) if up.size else np.full(3, np.nan)
        rows.append({"command": list(cmd), "achieved": mean.tolist(), "error": (mean - np.asarray(cmd)).tolist(),
                     "rms_error": rms.tolist(), "fell": float(1.0 - up.size / k)})
    result = {"checkpoint": str(args.checkpoint), "policy": args.policy, "env_id": args.env_id,
              "env_options": {key: str(v) for key, v in options.items()}, "envs_per_command": k,
              "seconds": args.seconds, "warmup_s": args.warmup_s, "commands": rows}
    if args.gif:
        result["gif"] = str(write_gif(args.gif, frames, fps=1.0 / (base.control_dt * args.gif_every)))
    env.close()
    return result


def markdown(result: dict) -> str:
    """The per-command table: command, achieved mean, error of the mean, RMS per-step error, falls."""
    head = ("| command (vx, vy, yaw) | achieved (vx, vy, yaw) | error of the mean | RMS error per step | fell |\n"
            "|---|---|---|---|---|")

    def triple(values: list) -> str:
        return "(" + ", ".join(f"{v:+.2f}" for v in values) + ")"

    lines = [f"| {triple(r['command'])} | {triple(r['achieved'])} | {triple(r['error'])} | "
             f"{triple(r['rms_error'])} | {r['fell']:.0%} |" for r in result["commands"]]
    return "\n".join([head, *lines])


def main(args: Args) -> dict:
    result = evaluate(args)
    table = markdown(result)
    print(table)
    for path, text in ((args.json, json.dumps(result, indent=2)), (args.markdown, table)):
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text + "\n")
    return result


if __name__ == "__main__":
    main(tyro.cli(Args))
