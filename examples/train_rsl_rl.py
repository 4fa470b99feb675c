"""rsl_rl (rsl-rl-lib 5.x, unmodified) on SimToolReal-v0, CubeRotate-v0 or one of the playground/
tasks (Go1 joystick flat and rough, LeapCubeReorient, PandaPickCube) through
`mjvec.integrations.rsl_rl.RslRlVecEnv`, from the task's trainer config (its
mjvec/tasks/<task>/agents/rsl_rl_ppo.yaml, or --config).

    python examples/train_rsl_rl.py --env-id CubeRotate-v0 --num-envs 256 --max-iterations 500
    python examples/train_rsl_rl.py --num-envs 64 --option num_tools=6 --max-iterations 100
    python examples/train_rsl_rl.py --backend warp --device cuda:0 --num-envs 4096     # on a GPU

The env runs in SAME_STEP mode (what rsl_rl expects); ``init_at_random_ep_len`` (on by default)
staggers the first episodes by writing random counts into the env's episode-step counter.
SimToolReal-v0 runs with ``obs_mode="asymmetric"`` (actor on "policy", critic on "critic").
Output in ``--log-dir`` (default out/rsl_rl/<env id>): rsl_rl's ``model_<it>.pt`` checkpoints and
TensorBoard events (rsl_rl's losses and ``Train/mean_reward``, plus the adapter's episode logs:
``Episode/success``, ``Episode_Reward/<term>``, ``Metrics/<key>``), and ``params/agent.json`` (the
train config, the observation sizes and the env options) so that
``python -m mjvec eval --checkpoint <log-dir>/model_<it>.pt`` and the exporters can rebuild the actor.
"""

from __future__ import annotations

import math
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("MUJOCO_GL", "osmesa")

import gymnasium as gym

import mjvec  # noqa: F401  (registers the tasks)
from mjvec.cli.options import parse_options
from mjvec.errors import missing_extra

try:  # the train extra: say how to install it rather than stop at a bare ModuleNotFoundError
    import torch
    import tyro
    import yaml
    from rsl_rl.runners import OnPolicyRunner

    from mjvec.integrations.rsl_rl import RslRlVecEnv, save_run_config
except ImportError as _error:
    print(missing_extra("train", _error, "examples/train_rsl_rl.py"), file=sys.stderr)
    raise SystemExit(2) from None

CHUNK = 5  # iterations per runner.learn call under --time-limit-s (each call ends with a checkpoint)
# Each task's trainer configs sit beside it, in mjvec/tasks/<task>/agents/.
TASKS = Path(__file__).parents[1] / "mjvec" / "tasks"
GO1 = ("playground/Go1JoystickFlatTerrain-v0", "playground/Go1JoystickRoughTerrain-v0")
PANDA = ("playground/PandaPickCube-v0", "playground/PandaPickCubeOrientation-v0")
# Playground's rsl_rl_config gives both Go1 joystick tasks the same settings (bar max_iterations),
# and both Panda pick tasks.
TASK_FOLDER = {"SimToolReal-v0": "simtoolreal", "CubeRotate-v0": "cube_rotate",
               "playground/LeapCubeReorient-v0": "leap_cube_reorient", **dict.fromkeys(GO1, "go1_joystick"),
               **dict.fromkeys(PANDA, "panda_pick_cube")}
TASK_CONFIG = {env_id: TASKS / folder / "agents" / "rsl_rl_ppo.yaml" for env_id, folder in TASK_FOLDER.items()}
TASK_OPTIONS = {"SimToolReal-v0": {"obs_mode": "asymmetric"}, "CubeRotate-v0": {},
                "playground/LeapCubeReorient-v0": {"obs_mode": "asymmetric"},
                **{env_id: {"obs_mode": "asymmetric"} for env_id in GO1}}


@dataclass
class Args:
    """rsl_rl PPO on an mjvec task (see the module docstring)."""

    env_id: str = "SimToolReal-v0"
    """SimToolReal-v0, CubeRotate-v0, playground/Go1JoystickFlatTerrain-v0 or ...RoughTerrain-v0"""
    config: Path | None = None
    """the trainer config (None: mjvec/tasks/<task>/agents/rsl_rl_ppo.yaml)"""
    num_envs: int = 64
    max_iterations: int = 100
    """PPO iterations (each num_envs x num_steps_per_env env steps)"""
    num_steps_per_env: int | None = None
    """rollout horizon (None: the config's)"""
    randomization: str | None = None
    """the task's preset name or "none" (None: the task's default)"""
    option: list[str] = field(default_factory=list)
    """env options key=value (a Python literal, else a string), e.g. num_tools=6"""
    backend: str = "cpu"
    device: str = "cpu"
    """torch device of the runner; with --backend warp also the env's"""
    init_at_random_ep_len: bool = True
    seed: int = 0
    log_dir: Path | None = None
    """None: out/rsl_rl/<env id>"""
    torch_threads: int = 1
    """torch intra-op threads on the CPU (the simulator has its own pool)"""
    init_std: float | None = None
    """the policy's initial action std (None: the config's)"""
    min_std: float | None = None
    """a floor on the policy's action std (rsl_rl's ``std_range``; None: the config's)"""
    time_limit_s: float | None = None
    """stop at the first chunk of CHUNK iterations that ends past this many seconds (None: none)"""
    resume: Path | None = None
    """an rsl_rl checkpoint (model_<it>.pt) to continue from: its networks, observation normalizers,
    optimizer state and iteration count (the env restarts: fresh episodes from --seed); with
    --init-std too, the policy's std is then set to that value (exploration restarted)"""


def env_options(args: Args) -> dict[str, Any]:
    """The make_vec options of this run (recorded in params/agent.json for evaluation)."""
    options: dict[str, Any] = dict(TASK_OPTIONS.get(args.env_id, {}))
    if args.randomization is not None:
        options["randomization"] = None if args.randomization == "none" else args.randomization
    options.update(parse_options(args.option, command="train"))
    if args.backend == "warp":
        options.update(backend="warp", device=args.device, array_backend="torch")
    return options


def set_policy_std(runner: OnPolicyRunner, std: float) -> None:
    """Every action dimension's std of the runner's Gaussian policy set to std (either of rsl_rl's
    parameterisations: the std itself or its log)."""
    distribution = runner.alg.actor.distribution
    with torch.no_grad():
        if distribution.std_type == "scalar":
            distribution.std_param.fill_(std)
        else:
            distribution.log_std_param.fill_(math.log(std))


def main(args: Args) -> Path:
    torch.set_num_threads(args.torch_threads)
    torch.manual_seed(args.seed)
    config = yaml.safe_load((args.config or TASK_CONFIG[args.env_id]).read_text())
    train_cfg = config["train"]
    if args.num_steps_per_env is not None:
        train_cfg["num_steps_per_env"] = args.num_steps_per_env
    if args.init_std is not None:
        train_cfg["actor"]["distribution_cfg"]["init_std"] = args.init_std
    if args.min_std is not None:
        train_cfg["actor"]["distribution_cfg"]["std_range"] = [args.min_std, 1e6]
    options = env_options(args)
    env = gym.make_vec(args.env_id, num_envs=args.num_envs, autoreset_mode="same_step", **options)
    venv = RslRlVecEnv(env, seed=args.seed, log_keys=config.get("log_keys", ()),
                       reward_scale=config.get("reward_scale", 1.0))
    log_dir = args.log_dir or Path("out/rsl_rl") / args.env_id
    runner = OnPolicyRunner(venv, train_cfg, log_dir=str(log_dir), device=args.device)
    save_run_config(log_dir, venv, runner.cfg, {k: v for k, v in options.items() if k != "device"})
    if args.resume is not None:
        runner.load(str(args.resume), map_location=args.device)
        runner.current_learning_iteration += 1  # the checkpoint's iteration is done: go on from the next
        if args.init_std is not None:
            set_policy_std(runner, args.init_std)
    start, done = time.perf_counter(), 0
    while done < args.max_iterations:
        if done:
            # rsl_rl leaves the counter at the chunk's last iteration: the next chunk's first is one on.
            runner.current_learning_iteration += 1
        chunk = args.max_iterations - done if args.time_limit_s is None else min(CHUNK, args.max_iterations - done)
        runner.learn(chunk, init_at_random_ep_len=args.init_at_random_ep_len and done == 0)
        done += chunk
        if args.time_limit_s is not None and time.perf_counter() - start > args.time_limit_s:
            break
    venv.close()
    last = log_dir / f"model_{runner.current_learning_iteration}.pt"
    print(f"wrote {last}; evaluate it with: python -m mjvec eval --checkpoint {last}")
    return last


if __name__ == "__main__":
    main(tyro.cli(Args))
