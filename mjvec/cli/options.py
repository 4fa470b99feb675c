"""What the CLI's commands share: env options given as ``--option key=value``, and the task ids."""

from __future__ import annotations

import ast
import importlib
from collections.abc import Sequence
from typing import Any

from mjvec.envs.registry import registered_tasks
from mjvec.errors import ConfigError

# Env options a command sets itself: --option NAME=... is refused with what to use instead.
FIXED_OPTIONS = {
    "info": {"num_envs": "info builds one env"},
    "rollout": {
        "num_envs": "use --num-envs", "render_size": "use --render-size H W",
        "render_mode": "rollout renders when --grid or --gif is given",
        "autoreset_mode": "rollout runs with autoreset_mode='same_step'",
        "record_episode_statistics": "rollout records episode statistics itself",
        "nconmax": "use --nconmax", "njmax": "use --njmax",
    },
    "eval": {"num_envs": "use --num-envs", "env_id_offset": "use --env-id-offset",
             "render_mode": "eval renders when --grid or --gif is given", "render_size": "use --render-size H W",
             "autoreset_mode": "eval runs with autoreset_mode='disabled'",
             "record_episode_statistics": "eval records episode statistics itself"},
}
TRUST_WARNING = (
    "SB3 .zip checkpoints and VecNormalize .pkl files are pickles: loading one runs code from the file. "
    "Load only checkpoints you trust."
)


def parse_options(pairs: Sequence[str], command: str = "info") -> dict[str, Any]:
    """``key=value`` pairs as env options: each value a Python literal, else the string itself; an
    option the command sets itself is refused (`FIXED_OPTIONS`)."""
    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key.isidentifier():
            raise ConfigError(f"--option expects key=value (e.g. num_tools=6), got {pair!r}")
        if key in FIXED_OPTIONS.get(command, {}):
            raise ConfigError(
                f"--option {pair} collides with what {command} sets itself: {FIXED_OPTIONS[command][key]}"
            )
        try:
            options[key] = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            options[key] = text
    return options


def mjvec_env_ids() -> list[str]:
    """The ids of every task registered through `mjvec.envs.registry.register_task`, sorted."""
    return sorted(registered_tasks())


def resolve_env_id(env_id: str) -> str:
    """The registered id named by `env_id`: a registered id, or ``"module:Id-v0"`` (as `gym.make`
    takes it), which imports `module` first so that a task registered there is found.

    Raises ConfigError naming the registered ids (and the module, when it cannot be imported).
    """
    module, sep, name = env_id.rpartition(":")
    if sep:
        try:
            importlib.import_module(module)
        except ImportError as error:
            raise ConfigError(f"cannot import {module!r} (from the env id {env_id!r}): {error}") from error
        env_id = name
    if env_id not in registered_tasks():
        raise ConfigError(
            f"{env_id!r} is not registered; mjvec ids are {mjvec_env_ids()} (see python -m mjvec list). A task of your "
            "own: give 'package.module:Id-v0', which imports the module that registers it, as gym.make does"
        )
    return env_id
