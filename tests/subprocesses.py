"""Child processes of the tests: this checkout importable, the session's scratch working directory.

A child that ran in the repository root would import this checkout through its cwd, but would also
leave MuJoCo's MUJOCO_LOG.TXT there (conftest fails a session that does); with `checkout_env` it
imports this checkout from PYTHONPATH and runs where the session's cwd is (a scratch folder).
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def checkout_env(**overrides: str) -> dict[str, str]:
    """os.environ with this checkout first on PYTHONPATH, plus `overrides`."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path, **overrides}
