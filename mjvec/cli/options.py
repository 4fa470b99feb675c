"""What the CLI's commands share: env options given as ``--option key=value``, and the task ids."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Any

from mjvec.envs.tasks import registered_tasks
from mjvec.errors import ConfigError

# Env options a command sets itself: --option NAME=... is refused with what to use instead.
FIXED_OPTIONS = {
    "info": {"num_envs": "info builds one env"},
    "rollout": {
        "num_envs": "use --num-envs", "render_size": "use --render-size H W",
        "render_mode": "rollout renders when --grid or --gif is given",
        "autoreset_mode": "rollout runs with autoreset_mode='same_step'",
        "record_episode_statistics": "rollout records episode statistics itself",
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
    """The ids of every task registered through `mjvec.envs.tasks.register_task`, sorted."""
    return sorted(registered_tasks())
