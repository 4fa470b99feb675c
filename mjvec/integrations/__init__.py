"""Adapters between mjvec envs and RL libraries, and the trained-policy path (export, evaluation).

One module per library. Each name below is imported lazily, on first use, so ``import mjvec`` (and
``import mjvec.integrations``) never imports rsl_rl, rl_games, onnx, onnxruntime or SB3:

- `SB3VecEnv` (`mjvec.integrations.sb3`): Stable-Baselines3's ``VecEnv`` over a SAME_STEP env.
- `FlattenInfo`, `TianshouVecEnv` (`mjvec.integrations.adapters`): for torchrl and tianshou.
- `mjvec.integrations.video`: PNG grids and GIFs of rendered frames.

- `RslRlVecEnv` (`mjvec.integrations.rsl_rl`): rsl_rl's ``VecEnv`` (rsl-rl-lib 5.x) over an mjvec env.
- `RlGamesVecEnv`, `register_rl_games`, `MjvecAlgoObserver` (`mjvec.integrations.rl_games`):
  rl_games' ``IVecEnv``, its registration, and a TensorBoard observer for the episode logs.
- `load_policy`, `Policy` (`mjvec.integrations.policies`): a trained actor (examples/ppo.py,
  SB3, rsl_rl, or an exported file) with its observation normalization, as one callable.
- `export_policy` (`mjvec.integrations.export`): that actor as ONNX and TorchScript files.
- `evaluate` (`mjvec.integrations.evaluate`): a policy on held-out envs (``python -m mjvec eval``).
"""

from __future__ import annotations

import importlib
from typing import Any

_WHERE = {
    "SB3VecEnv": "mjvec.integrations.sb3",
    "FlattenInfo": "mjvec.integrations.adapters",
    "TianshouVecEnv": "mjvec.integrations.adapters",
    "RslRlVecEnv": "mjvec.integrations.rsl_rl",
    "RlGamesVecEnv": "mjvec.integrations.rl_games",
    "register_rl_games": "mjvec.integrations.rl_games",
    "MjvecAlgoObserver": "mjvec.integrations.rl_games",
    "load_policy": "mjvec.integrations.policies",
    "Policy": "mjvec.integrations.policies",
    "export_policy": "mjvec.integrations.export",
    "evaluate": "mjvec.integrations.evaluate",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'mjvec.integrations' has no attribute {name!r}; it offers {__all__}")
    return getattr(importlib.import_module(_WHERE[name]), name)


def __dir__() -> list[str]:
    return __all__
