"""rl_games (PyPI rl-games 1.6.5) on an mjvec task through `mjvec.integrations.rl_games`, from a
trainer config (default: the SimToolReal authors' paper run, mjvec/tasks/simtoolreal/agents/
rl_games_lstm_asymmetric_ppo.yaml: LSTM actor, asymmetric central-value critic, their PPO settings).

    bash scripts/setup_rl_games.sh                      # rl-games needs its own env (psutil<6)
    .venv-rl-games/bin/python examples/train_rl_games.py --num-envs 64 --max-epochs 50
    .venv-rl-games/bin/python examples/train_rl_games.py --config mjvec/tasks/cube_rotate/agents/rl_games_ppo.yaml
    .venv-rl-games/bin/python examples/train_rl_games.py --device cuda:0 --backend warp  # paper scale: 24,576 envs

The config runs as written except for what the flags set: ``--num-envs`` (``num_actors``; the
minibatch becomes min(config's, num_envs x horizon), as the authors' fork launcher scales it, and
must divide the batch), ``--max-epochs``, ``--seed`` (rl_games' Runner also seeds the env with it:
env i is keyed by (seed, global id i)), ``--device``, ``--backend``, and ``--option key=value`` env
options. On the CPU mixed precision and torch.compile are off (they need a GPU to pay off).
TensorBoard (``<train-dir>/<name>_<time>/summaries``): rl_games' own curves plus the adapter's
episode logs (``Episode/success``, ``Episode_Reward/<term>``, ``Metrics/tolerance``) written by
`MjvecAlgoObserver`. Checkpoints: ``<train-dir>/<name>_<time>/nn/*.pth`` (rl_games' format).
"""

from __future__ import annotations

import copy
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("MUJOCO_GL", "osmesa")

import mjvec  # noqa: F401  (registers the tasks)
from mjvec.cli.options import parse_options
from mjvec.errors import missing_extra

try:  # the rl_games extra (its own environment): say how to make it rather than a bare ModuleNotFoundError
    import torch
    import tyro
    import yaml
    from rl_games.torch_runner import Runner

    from mjvec.integrations.rl_games import MjvecAlgoObserver, register_rl_games
except ImportError as _error:
    print(missing_extra("rl_games", _error, "examples/train_rl_games.py"), file=sys.stderr)
    raise SystemExit(2) from None

CONFIG = Path(__file__).parents[1] / "mjvec" / "tasks" / "simtoolreal" / "agents" / "rl_games_lstm_asymmetric_ppo.yaml"


@dataclass
class Args:
    """rl_games training from a trainer config (see the module docstring)."""

    config: Path = CONFIG
    """the rl_games YAML (params: algo, model, network, config)"""
    num_envs: int | None = None
    """num_actors (None: the config's; the paper's 24,576 needs a GPU)"""
    max_epochs: int | None = None
    """stop after this many PPO epochs (None: the config's)"""
    seed: int | None = None
    """seed of torch and of the env streams (None: the config's)"""
    device: str = "cpu"
    """torch device of the agent ("cpu", "cuda:0")"""
    backend: str = "cpu"
    """simulation backend ("cpu" or "warp"); with warp on a GPU the env outputs torch on --device"""
    option: list[str] = field(default_factory=list)
    """env options key=value (a Python literal, else a string), e.g. num_tools=6"""
    train_dir: Path = Path("out/rl_games")
    torch_threads: int = 1
    """torch intra-op threads on the CPU (the simulator has its own pool)"""


def build_params(args: Args) -> dict[str, Any]:
    """The config with the flags applied (see the module docstring)."""
    params = copy.deepcopy(yaml.safe_load(args.config.read_text()))
    p = params["params"]
    cfg = p["config"]
    if args.seed is not None:
        p["seed"] = args.seed
    if args.num_envs is not None:
        cfg["num_actors"] = args.num_envs
    if args.max_epochs is not None:
        cfg["max_epochs"] = args.max_epochs
    batch = cfg["num_actors"] * cfg["horizon_length"]
    for section in (cfg, cfg.get("central_value_config")):
        if section is not None:
            section["minibatch_size"] = min(section["minibatch_size"], batch)
            if batch % section["minibatch_size"]:
                raise SystemExit(f"num_envs x horizon = {batch} is not divisible by minibatch_size "
                                 f"{section['minibatch_size']}: choose --num-envs so it is")
    env_config = cfg.setdefault("env_config", {})
    env_config["backend"] = args.backend
    env_config.setdefault("adapter", {})["device"] = args.device  # rl_games expects its tensors there
    if args.backend == "warp":
        env_config.update(device=args.device, array_backend="torch")
    env_config.update(parse_options(args.option, command="train"))
    cfg.update(device=args.device, device_name=args.device, train_dir=str(args.train_dir))
    if not args.device.startswith("cuda"):
        cfg["mixed_precision"] = False
        cfg["torch_compile"] = False
    return params


def main(args: Args) -> None:
    torch.set_num_threads(args.torch_threads)
    params = build_params(args)
    register_rl_games(params["params"]["config"]["env_name"])
    runner = Runner(MjvecAlgoObserver())
    runner.load(params)
    runner.run({"train": True, "play": False})


if __name__ == "__main__":
    main(tyro.cli(Args))
