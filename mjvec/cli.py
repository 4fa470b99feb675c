"""The ``python -m mjvec`` command line: list, info, rollout, bench.

    python -m mjvec list                                   # registered mjvec env ids
    python -m mjvec info SimToolReal-v0 [--json]           # spaces, tools per topology, backends
    python -m mjvec rollout --num-envs 8 --steps 120 --grid out/grid.png --gif out/rollout.gif
    python -m mjvec rollout --checkpoint out/sb3_ppo/RUN/final_model.zip --gif out/policy.gif
    python -m mjvec bench                                  # list the benchmarks of a source checkout
    python -m mjvec bench cpu_backend -- --num-envs 64     # run one (python -m benchmarks.cpu_backend)

Env options are passed as ``--option key=value`` (value parsed as a Python literal, else a string),
e.g. ``--option num_tools=6 --option randomization=None``. This is a user-facing command, so it
prints its results; errors of mjvec (bad options, missing extras) print one line and exit 2.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import mjvec
from mjvec.backends.registry import backend_status
from mjvec.envs.registration import ENV_ID, SimToolRealOptions
from mjvec.errors import ConfigError, MjvecError

# Options dataclass per env id, for `info` (every other key is the env's to validate).
ENV_OPTIONS = {ENV_ID: SimToolRealOptions}


def _parse_options(pairs: Sequence[str]) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key.isidentifier():
            raise ConfigError(f"--option expects key=value (e.g. num_tools=6), got {pair!r}")
        try:
            options[key] = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            options[key] = text
    return options


def mjvec_env_ids() -> list[str]:
    """Registered Gymnasium ids whose entry points live in the mjvec package."""
    def ours(entry: Any) -> bool:
        module = entry if isinstance(entry, str) else getattr(entry, "__module__", "") or ""
        return module.split(".")[0].split(":")[0] == "mjvec"

    return sorted(i for i, s in gym.registry.items() if ours(s.vector_entry_point) or ours(s.entry_point))


def _entry_name(entry: Any) -> str:
    if entry is None or isinstance(entry, str):
        return str(entry)
    return f"{entry.__module__}:{entry.__qualname__}"


def _space_dict(space: gym.Space) -> Any:
    if isinstance(space, gym.spaces.Dict):
        return {k: _space_dict(s) for k, s in space.spaces.items()}
    if isinstance(space, gym.spaces.Box):
        return {"type": "Box", "shape": list(space.shape), "dtype": str(space.dtype),
                "low": float(np.min(space.low)), "high": float(np.max(space.high))}
    return {"type": type(space).__name__, "repr": repr(space)}


def env_info(env_id: str, options: dict[str, Any]) -> dict[str, Any]:
    """Spaces, timing, tools and backends of `env_id`, from a one-env instance built with `options`."""
    if env_id not in gym.registry:
        raise ConfigError(f"{env_id!r} is not registered; mjvec ids are {mjvec_env_ids()} (see python -m mjvec list)")
    env = gym.make_vec(env_id, num_envs=1, **options)
    try:
        base = env.unwrapped
        info: dict[str, Any] = {
            "id": env_id,
            "observation_space": _space_dict(env.single_observation_space),
            "action_space": _space_dict(env.single_action_space),
            "control_dt": getattr(base, "control_dt", None),
            "render_fps": env.metadata.get("render_fps"),
            "autoreset_mode": str(getattr(env.metadata.get("autoreset_mode"), "value", None)),
            "wrappers": [type(e).__name__ for e in _chain(env)[:-1]],
        }
        for name in ("policy_layout", "critic_layout"):
            if hasattr(base, name):
                info[name] = [[block, width] for block, width in getattr(base, name)]
        if hasattr(base, "cfg"):
            info["max_episode_steps"] = getattr(base.cfg, "max_episode_steps", None)
        catalog = getattr(base, "catalog", None)
        if catalog is not None:
            info["tools"] = {"total": len(catalog), "per_topology": catalog.counts_by_topology()}
    finally:
        env.close()
    if env_id in ENV_OPTIONS:
        info["options"] = [f.name for f in dataclasses.fields(ENV_OPTIONS[env_id])]
    info["backends"] = backend_status()
    return info


def _chain(env: Any) -> list[Any]:
    chain = [env]
    while hasattr(chain[-1], "env") and isinstance(chain[-1].env, gym.vector.VectorEnv):
        chain.append(chain[-1].env)
    return chain


# ---- rollout ---------------------------------------------------------------------------------
def _checkpoint_policy(
    args: argparse.Namespace, env: gym.vector.VectorEnv
) -> tuple[Callable[[Any], np.ndarray], Path | None]:
    """(obs -> actions of an SB3 checkpoint (deterministic), the VecNormalize stats file used or None)."""
    from stable_baselines3 import A2C, DDPG, PPO, SAC, TD3
    from stable_baselines3.common.vec_env import VecNormalize

    from mjvec.envs.sb3 import SB3VecEnv

    algos = {"ppo": PPO, "sac": SAC, "td3": TD3, "a2c": A2C, "ddpg": DDPG}
    path = Path(args.checkpoint)
    if not path.is_file():
        raise ConfigError(f"--checkpoint {str(path)!r} does not exist")
    model = algos[args.algo].load(path, device="cpu")
    if model.observation_space != SB3VecEnv(env).observation_space:
        raise ConfigError(
            f"the checkpoint's observation space {model.observation_space} does not match the env's "
            f"{env.single_observation_space}; pass the training options (e.g. --option obs_mode=asymmetric)"
        )
    stats = Path(args.vecnormalize) if args.vecnormalize else _find_vecnormalize(path)
    normalize = None
    if stats is not None:
        normalize = VecNormalize.load(str(stats), SB3VecEnv(env))
        normalize.training = False

    def policy(obs: Any) -> np.ndarray:
        if normalize is not None:
            obs = normalize.normalize_obs(obs)
        return model.predict(obs, deterministic=True)[0]

    return policy, stats


def _find_vecnormalize(checkpoint: Path) -> Path | None:
    """vecnormalize.pkl beside a final model, or CheckpointCallback's matching <prefix>_vecnormalize_<n>_steps.pkl."""
    stem = checkpoint.stem
    candidates = [checkpoint.parent / "vecnormalize.pkl"]
    if stem.endswith("_steps"):
        prefix, _, rest = stem.rpartition("_")[0].rpartition("_")
        candidates.insert(0, checkpoint.parent / f"{prefix}_vecnormalize_{rest}_steps.pkl")
    return next((c for c in candidates if c.is_file()), None)


def rollout(args: argparse.Namespace) -> dict[str, Any]:
    """Run a random or checkpoint policy; write the grid PNG / GIF; return a summary."""
    from mjvec.envs.video import write_gif, write_png

    env = gym.make_vec(
        args.env_id, num_envs=args.num_envs, autoreset_mode="same_step", record_episode_statistics=True,
        render_mode="rgb_array" if (args.grid or args.gif) else None, render_size=tuple(args.render_size),
        **_parse_options(args.option),
    )
    try:
        policy, stats = _checkpoint_policy(args, env) if args.checkpoint else (_random_policy(env, args.seed), None)
        summary: dict[str, Any] = {"env_id": args.env_id, "num_envs": args.num_envs, "steps": args.steps,
                                   "policy": args.checkpoint or "random", "vecnormalize": stats and str(stats)}
        frames = _run(env, policy, args, summary)
        ids = np.arange(min(args.grid_envs, args.num_envs))
        if args.grid:
            summary["grid"] = str(write_png(args.grid, env.unwrapped.render_grid(ids)))
        if args.gif:
            summary["gif"] = str(write_gif(args.gif, frames, fps=env.metadata["render_fps"] / args.frame_every))
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
    for t in range(1, args.steps + 1):
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
        "env_steps_per_s": args.num_envs * args.steps / max(step_s, 1e-9),
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


# ---- bench -----------------------------------------------------------------------------------
def benchmarks_root() -> Path | None:
    """The folder holding benchmarks/ (a source checkout): the working directory or mjvec's parent."""
    for root in (Path.cwd(), Path(mjvec.__file__).resolve().parents[1]):
        if (root / "benchmarks" / "__init__.py").is_file():
            return root
    return None


def list_benchmarks(root: Path) -> dict[str, str]:
    """Benchmark module name -> first line of its docstring."""
    out = {}
    for path in sorted((root / "benchmarks").glob("*.py")):
        if path.stem.startswith("_"):
            continue
        doc = ast.get_docstring(ast.parse(path.read_text())) or ""
        out[path.stem] = doc.strip().splitlines()[0] if doc.strip() else ""
    return out


def bench(args: argparse.Namespace) -> int:
    root = benchmarks_root()
    if root is None:
        print("no benchmarks/ folder found: the benchmarks ship with the source checkout, not the package; "
              "run this from the repository root")
        return 1
    available = list_benchmarks(root)
    if args.name is None:
        print(f"benchmarks in {root / 'benchmarks'} (run: python -m mjvec bench NAME [-- ARGS]):")
        for name, doc in available.items():
            print(f"  {name:<22} {doc}")
        return 0
    if args.name not in available:
        raise ConfigError(f"unknown benchmark {args.name!r}; available: {sorted(available)}")
    extra = args.args[1:] if args.args[:1] == ["--"] else args.args
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), env.get("PYTHONPATH")) if p)
    return subprocess.run([sys.executable, "-m", f"benchmarks.{args.name}", *extra], cwd=root, env=env).returncode


# ---- entry point -----------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m mjvec", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"mjvec {mjvec.__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="registered mjvec env ids")
    p = sub.add_parser("info", help="spaces, tools per topology class, backends of an env id")
    p.add_argument("env_id", nargs="?", default=ENV_ID)
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE", help="env option (repeatable)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p = sub.add_parser("rollout", help="run a random or SB3-checkpoint policy; write a grid PNG and/or GIF")
    p.add_argument("--env-id", default=ENV_ID)
    p.add_argument("--num-envs", type=int, default=8)
    p.add_argument("--steps", type=int, default=120)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE", help="env option (repeatable)")
    p.add_argument("--checkpoint", default=None, help="an SB3 model .zip (default: random actions)")
    p.add_argument("--algo", default="ppo", choices=("ppo", "sac", "td3", "a2c", "ddpg"))
    p.add_argument("--vecnormalize", default=None, help="VecNormalize .pkl (default: found beside the checkpoint)")
    p.add_argument("--grid", default=None, help="PNG of the last state of the first --grid-envs envs")
    p.add_argument("--gif", default=None, help="GIF of the first --grid-envs envs")
    p.add_argument("--grid-envs", type=int, default=4)
    p.add_argument("--frame-every", type=int, default=2, help="GIF frame every k control steps")
    p.add_argument("--render-size", type=int, nargs=2, default=(180, 240), metavar=("H", "W"))
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p = sub.add_parser("bench", help="list the benchmarks, or run one (python -m benchmarks.NAME)")
    p.add_argument("name", nargs="?", default=None)
    p.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the benchmark (after --)")
    return parser


def _print_info(info: dict[str, Any]) -> None:
    print(f"{info['id']}")
    print(f"  observation space: {json.dumps(info['observation_space'])}")
    print(f"  action space:      {json.dumps(info['action_space'])}")
    print(f"  control dt: {info['control_dt']} s ({info['render_fps']} Hz), max episode steps: "
          f"{info.get('max_episode_steps')}, wrappers: {info['wrappers'] or 'none'}")
    for name in ("policy_layout", "critic_layout"):
        if name in info:
            print(f"  {name}: " + ", ".join(f"{b}[{w}]" for b, w in info[name]))
    if "tools" in info:
        per = ", ".join(f"{k} {v}" for k, v in info["tools"]["per_topology"].items())
        print(f"  tools: {info['tools']['total']} ({per})")
    if "options" in info:
        print(f"  options: {', '.join(info['options'])}")
    print("  backends: " + "; ".join(f"{k}: {v}" for k, v in info["backends"].items()))


def _check_rollout_args(args: argparse.Namespace) -> None:
    for name in ("num_envs", "steps", "grid_envs", "frame_every"):
        if getattr(args, name) < 1:
            raise ConfigError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status (0 ok, 1 nothing to do, 2 usage or mjvec error)."""
    args = build_parser().parse_args(argv)
    try:
        if args.command == "list":
            for env_id in mjvec_env_ids():
                spec = gym.registry[env_id]
                print(f"{env_id}  gym.make_vec -> {_entry_name(spec.vector_entry_point)}; "
                      f"gym.make -> {_entry_name(spec.entry_point)}")
            return 0
        if args.command == "info":
            info = env_info(args.env_id, _parse_options(args.option))
            if args.json:
                print(json.dumps(info, indent=2))
            else:
                _print_info(info)
            return 0
        if args.command == "rollout":
            _check_rollout_args(args)
            summary = rollout(args)
            if args.json:
                print(json.dumps(summary, indent=2))
            else:
                print("\n".join(f"{k}: {v}" for k, v in summary.items()))
            return 0
        return bench(args)
    except (MjvecError, ImportError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
