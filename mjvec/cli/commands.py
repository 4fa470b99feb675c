"""The ``python -m mjvec`` command line: list, info, rollout (`mjvec.cli.rollout`), eval (`mjvec.cli.evaluate`), bench.

    python -m mjvec list                                   # registered mjvec tasks
    python -m mjvec info CubeRotate-v0 [--json]            # spaces, variants, options, presets, backends
    python -m mjvec info CubeRotate-v0 --contract          # its policy contract (docs/deploy.md)
    python -m mjvec rollout --num-envs 8 --steps 120 --grid out/grid.png --gif out/rollout.gif
    python -m mjvec rollout --checkpoint out/sb3_ppo/RUN/final_model.zip --gif out/policy.gif
    python -m mjvec eval --checkpoint out/ppo/checkpoint.pt --num-envs 128 --gif out/eval.gif
    python -m mjvec bench                                  # list the benchmarks of a source checkout
    python -m mjvec bench cpu_backend -- --num-envs 64     # run one (python -m benchmarks.cpu_backend)

Env options are passed as ``--option key=value`` (value parsed as a Python literal, else a string),
e.g. ``--option num_tools=6 --option randomization=none``. This is a user-facing command, so it
prints its results; every user error (bad arguments or options, unwritable outputs, a file that
is not a checkpoint, missing extras) prints one line on stderr and exits 2, as argparse does.
`info` imports neither torch nor warp: backends are reported from the installed packages.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import json
import os
import subprocess
import sys
import textwrap
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import mjvec
from mjvec.backends.registry import BACKENDS, backend_status
from mjvec.cli.options import TRUST_WARNING, mjvec_env_ids, parse_options, resolve_env_id
from mjvec.envs.registry import get_task
from mjvec.errors import ConfigError, MjvecError
from mjvec.tasks.simtoolreal.registration import ENV_ID


def task_line(env_id: str) -> str:
    """One line of `list`: the id, its env class and its randomization presets."""
    task = get_task(env_id)
    cls = task.env_class
    return f"{env_id}  {cls.__module__}:{cls.__qualname__}  presets: {', '.join(sorted(task.presets)) or 'none'}"


def _space_dict(space: gym.Space) -> Any:
    if isinstance(space, gym.spaces.Dict):
        return {k: _space_dict(s) for k, s in space.spaces.items()}
    if isinstance(space, gym.spaces.Box):
        return {"type": "Box", "shape": list(space.shape), "dtype": str(space.dtype),
                "low": float(np.min(space.low)), "high": float(np.max(space.high))}
    return {"type": type(space).__name__, "repr": repr(space)}


def env_info(env_id: str, options: dict[str, Any]) -> dict[str, Any]:
    """Spaces, timing, variants, options, presets and backends of `env_id`, from a one-env instance
    built with `options`."""
    env_id = resolve_env_id(env_id)
    task = get_task(env_id)
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
            "variants": int(base.backend.scene.num_variants),
        }
        for name in ("policy_layout", "critic_layout"):
            if hasattr(base, name):
                info[name] = [[block, width] for block, width in getattr(base, name)]
        if hasattr(base, "max_episode_steps"):
            info["max_episode_steps"] = base.max_episode_steps
        elif hasattr(base, "cfg"):
            info["max_episode_steps"] = getattr(base.cfg, "max_episode_steps", None)
        catalog = getattr(base, "catalog", None)
        if hasattr(catalog, "counts_by_topology"):  # SimToolReal's tool catalog
            info["tools"] = {"total": len(catalog), "per_topology": catalog.counts_by_topology()}
    finally:
        env.close()
    info["options"] = [f.name for f in dataclasses.fields(task.options)]
    info["presets"] = sorted(task.presets)
    info["backends"] = backend_status()
    return info


def contract_text_of(env_id: str, options: dict[str, Any]) -> str:
    """The policy contract of `env_id` built with `options` (one env), as the JSON text exports write."""
    from mjvec.integrations.policy_contract import contract_text, env_contract

    env = gym.make_vec(resolve_env_id(env_id), num_envs=1, **options)
    try:
        return contract_text(env_contract(env))
    finally:
        env.close()


def _chain(env: Any) -> list[Any]:
    chain = [env]
    while hasattr(chain[-1], "env") and isinstance(chain[-1].env, gym.vector.VectorEnv):
        chain.append(chain[-1].env)
    return chain


# ---- bench -----------------------------------------------------------------------------------
def benchmarks_root() -> Path | None:
    """The folder holding benchmarks/ (a source checkout): the working directory or mjvec's parent."""
    for root in (Path.cwd(), Path(mjvec.__file__).resolve().parents[1]):
        if (root / "benchmarks" / "__init__.py").is_file():
            return root
    return None


def list_benchmarks(root: Path) -> dict[str, str]:
    """Runnable benchmark module name -> the first paragraph of its docstring, as plain text.

    Runnable: not private (no leading underscore) and with an ``if __name__ == "__main__"`` block
    (helper modules such as the plain-MuJoCo backend have none and print nothing when run).
    """
    out = {}
    for path in sorted((root / "benchmarks").glob("*.py")):
        tree = ast.parse(path.read_text())
        if path.stem.startswith("_") or not any(_is_main_guard(node) for node in tree.body):
            continue
        doc = (ast.get_docstring(tree) or "").strip().split("\n\n")[0]
        out[path.stem] = _plain(" ".join(doc.split()))
    return out


def _is_main_guard(node: ast.stmt) -> bool:
    return isinstance(node, ast.If) and "__main__" in ast.unparse(node.test) and "__name__" in ast.unparse(node.test)


def _plain(text: str) -> str:
    """Docstring markup (``code``, `name`) as plain text for the terminal."""
    return text.replace("``", "").replace("`", "")


def bench(args: argparse.Namespace) -> int:
    root = benchmarks_root()
    if root is None:
        print("no benchmarks/ folder found: the benchmarks ship with the source checkout, not the package; "
              "run this from the repository root")
        return 1
    available = list_benchmarks(root)
    if args.name is None:
        print(f"benchmarks in {root / 'benchmarks'} (run: python -m mjvec bench NAME [-- ARGS]; NAME -- --help "
              "for its options):")
        for name, doc in available.items():
            lines = textwrap.wrap(doc, width=100, initial_indent=f"  {name:<20} ", subsequent_indent=" " * 23)
            print("\n".join(lines or [f"  {name}"]))
        return 0
    if args.name not in available:
        raise ConfigError(f"unknown benchmark {args.name!r}; available: {sorted(available)}")
    extra = args.args[1:] if args.args[:1] == ["--"] else args.args
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), env.get("PYTHONPATH")) if p)
    return subprocess.run([sys.executable, "-m", f"benchmarks.{args.name}", *extra], cwd=root, env=env).returncode


# ---- entry point -----------------------------------------------------------------------------
class _Parser(argparse.ArgumentParser):
    """argparse with every usage error on one stderr line (exit status 2, as argparse's own)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions as written; '(default: X)' after every option that has a default."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if not (default is None or default is False or default == [] or default == argparse.SUPPRESS) \
                and "%(default)" not in text:
            text += " (default: %(default)s)"
        return text


def _int_at_least(low: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an int >= {low}, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be an int >= {low}, got {value}")
        return value

    parse.__name__ = f"int >= {low}"
    return parse


ROLLOUT_HELP = (
    "Run a random or SB3-checkpoint policy on a batch of envs; print a summary and optionally\n"
    "write a grid PNG of the last state and a GIF of the first --grid-envs envs.\n\n"
    + textwrap.fill(f"Warning: {TRUST_WARNING}", width=90)
)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m mjvec", description="The mjvec command line: list, info, rollout, bench.")
    parser.add_argument("--version", action="version", version=f"mjvec {mjvec.__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    kw: dict[str, Any] = {"formatter_class": _HelpFormatter}
    sub.add_parser("list", help="registered mjvec tasks", description="List the registered mjvec tasks.", **kw)
    p = sub.add_parser("info", help="spaces, variants, options, presets, backends of an env id", **kw,
                       description="Spaces, timing, variants, options, presets and backends of an env id "
                                   "(built once with one env).")
    p.add_argument("env_id", nargs="?", default=ENV_ID, help="a registered env id, or module:Id-v0 (imports module)")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="env option, e.g. num_tools=6 or randomization=none (repeatable)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--contract", action="store_true",
                   help="print the env's policy contract (docs/deploy.md) instead, as JSON")
    p = sub.add_parser("rollout", help="run a random or SB3-checkpoint policy; write a grid PNG and/or GIF",
                       description=ROLLOUT_HELP, **kw)
    p.add_argument("--env-id", default=ENV_ID, help="a registered env id, or module:Id-v0 (imports module)")
    p.add_argument("--num-envs", type=_int_at_least(1), default=8, help="envs in the batch")
    p.add_argument("--steps", type=_int_at_least(1), default=120, help="control steps")
    p.add_argument("--seed", type=_int_at_least(0), default=0, help="reset seed (and the random policy's)")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="env option, e.g. num_tools=6 or randomization=none (repeatable)")
    p.add_argument("--checkpoint", default=None,
                   help="an SB3 model .zip (random actions without it); runs code from the file: load only "
                        "checkpoints you trust")
    p.add_argument("--algo", default="ppo", choices=("ppo", "sac", "td3", "a2c", "ddpg"),
                   help="the checkpoint's algorithm")
    p.add_argument("--vecnormalize", default=None,
                   help="VecNormalize .pkl (found beside the checkpoint if not given); runs code from the file")
    p.add_argument("--nconmax", type=_int_at_least(1), default=None,
                   help="contacts per world of a fixed-buffer backend (warp); raise it after a buffer overflow")
    p.add_argument("--njmax", type=_int_at_least(1), default=None,
                   help="constraint rows per world of a fixed-buffer backend (warp); raise it after an overflow")
    p.add_argument("--grid", default=None, help="PNG of the last state of the first --grid-envs envs")
    p.add_argument("--gif", default=None, help="GIF of the first --grid-envs envs")
    p.add_argument("--grid-envs", type=_int_at_least(1), default=4, help="envs drawn in the grid and GIF")
    p.add_argument("--frame-every", type=_int_at_least(1), default=2, help="a GIF frame every k control steps")
    p.add_argument("--render-size", type=_int_at_least(1), nargs=2, default=(180, 240), metavar=("H", "W"),
                   help="size of each env's frame in pixels")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    _add_eval_parser(sub, kw)
    p = sub.add_parser("bench", help="list the benchmarks, or run one (python -m benchmarks.NAME)", **kw,
                       description="List the benchmarks of a source checkout, or run one with its arguments.")
    p.add_argument("name", nargs="?", default=None, help="the benchmark to run (none: list them)")
    p.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the benchmark (after --)")
    return parser


def _add_eval_parser(sub: Any, kw: dict[str, Any]) -> None:
    p = sub.add_parser("eval", help="a trained policy on held-out envs: success, return, length, per variant", **kw,
                       description="Run a trained policy (examples/ppo.py checkpoint.pt, SB3 .zip, rsl_rl "
                                   "model_<it>.pt, or an exported .onnx / TorchScript .pt) for one episode in each "
                                   "of --num-envs held-out envs.\n\n" + textwrap.fill(f"Warning: {TRUST_WARNING}", 90))
    p.add_argument("--checkpoint", required=True, help="the policy file; pickles run code: load only trusted files")
    p.add_argument("--kind", default="auto", choices=("auto", "ppo", "sb3", "rsl_rl", "onnx", "torchscript"),
                   help="what the file is (auto: from its content)")
    p.add_argument("--env-id", default=None,
                   help="a registered env id (default: the checkpoint's, else SimToolReal-v0)")
    p.add_argument("--num-envs", type=_int_at_least(1), default=64, help="envs, one episode each")
    p.add_argument("--env-id-offset", type=_int_at_least(0), default=100_000,
                   help="global id of the first env (held out from training's ids)")
    p.add_argument("--seed", type=_int_at_least(0), default=12345, help="reset seed")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="env option over the checkpoint's, e.g. randomization=none (repeatable)")
    p.add_argument("--backend", default=None, choices=sorted(BACKENDS),
                   help="the backend to evaluate on (default: the checkpoint's option, else cpu); a policy trained on "
                        "one backend runs on the other")
    p.add_argument("--device", default=None,
                   help="where a device backend runs (warp: cuda:0 by default; cpu: warp's CPU device)")
    p.add_argument("--allow-mismatch", action="store_true",
                   help="run a policy whose contract differs from the env's (refused by default, naming the first "
                        "difference)")
    p.add_argument("--export", default=None, metavar="PREFIX",
                   help="also write PREFIX.onnx, PREFIX.pt (TorchScript) and PREFIX.contract.json")
    p.add_argument("--grid", default=None, help="PNG of the first --grid-envs envs at the last video step")
    p.add_argument("--gif", default=None, help="GIF of the first --grid-envs envs over --video-steps steps")
    p.add_argument("--grid-envs", type=_int_at_least(1), default=4, help="envs drawn in the grid and GIF")
    p.add_argument("--video-steps", type=_int_at_least(1), default=120, help="control steps in the GIF")
    p.add_argument("--render-size", type=_int_at_least(1), nargs=2, default=(180, 240), metavar=("H", "W"),
                   help="size of each env's frame in pixels")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")


def _print_info(info: dict[str, Any]) -> None:
    print(f"{info['id']}")
    print(f"  observation space: {json.dumps(info['observation_space'])}")
    print(f"  action space:      {json.dumps(info['action_space'])}")
    print(f"  control dt: {info['control_dt']:.6g} s ({info['render_fps']:.6g} Hz), max episode steps: "
          f"{info.get('max_episode_steps')}, wrappers: {info['wrappers'] or 'none'}")
    for name in ("policy_layout", "critic_layout"):
        if name in info:
            print(f"  {name}: " + ", ".join(f"{b}[{w}]" for b, w in info[name]))
    print(f"  variants: {info['variants']} (the env with global id g holds variant g % {info['variants']})")
    if "tools" in info:
        per = ", ".join(f"{k} {v}" for k, v in info["tools"]["per_topology"].items())
        print(f"  tools: {info['tools']['total']} ({per})")
    print(f"  options: {', '.join(info['options'])}")
    print(f"  randomization presets: {', '.join(info['presets']) or 'none'}")
    print("  backends: " + "; ".join(f"{k}: {v}" for k, v in info["backends"].items()))


def _format_value(key: str, value: Any) -> str:
    if key.endswith("_per_s") and isinstance(value, (int, float)):
        return f"{value:,.0f}"
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status (0 ok, 1 nothing to do, 2 usage or mjvec error)."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as done:  # --help, --version, or a usage error already printed on one line
        return int(done.code or 0)
    try:
        if args.command == "list":
            for env_id in mjvec_env_ids():
                print(task_line(env_id))
            return 0
        if args.command == "info" and args.contract:
            print(contract_text_of(args.env_id, parse_options(args.option, "info")))
            return 0
        if args.command == "info":
            info = env_info(args.env_id, parse_options(args.option, "info"))
            print(json.dumps(info, indent=2)) if args.json else _print_info(info)
            return 0
        if args.command == "rollout":
            from mjvec.cli.rollout import rollout  # imports rendering and (with --checkpoint) SB3 lazily

            summary = rollout(args)
            if args.json:
                print(json.dumps(summary, indent=2))
            else:
                print("\n".join(f"{k}: {_format_value(k, v)}" for k, v in summary.items()))
            return 0
        if args.command == "eval":
            from mjvec.cli.evaluate import format_summary, run_eval  # imports torch (and SB3, rsl_rl) lazily
            from mjvec.integrations.contract_check import ContractWarning

            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", ContractWarning)
                summary = run_eval(args)
            for warning in caught:
                if issubclass(warning.category, ContractWarning):
                    print(f"warning: {warning.message}", file=sys.stderr)
                else:
                    warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
            print(json.dumps(summary, indent=2) if args.json else format_summary(summary))
            return 0
        return bench(args)
    except (MjvecError, ImportError) as error:
        print(f"error: {' '.join(str(error).split())}", file=sys.stderr)
        return 2
