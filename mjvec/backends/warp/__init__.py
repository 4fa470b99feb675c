"""The Warp backend: MuJoCo simulations as worlds of mujoco_warp, on a GPU or on warp's CPU device.

Importing this package needs the `warp` extra (warp-lang, mujoco-warp) and torch; without them it
raises InstallError saying what to install. Nothing else in mjvec imports it unless asked for the
"warp" backend (see mjvec.backends.registry).
"""

from __future__ import annotations

from typing import Any

from mjvec.errors import InstallError


def _import_warp() -> tuple[Any, Any, Any]:
    """(warp, mujoco_warp, torch), or InstallError saying what to install."""
    try:
        import mujoco_warp
        import warp
    except ImportError as error:
        raise InstallError(
            f"the Warp backend needs warp-lang and mujoco-warp, which are not importable ({error}); "
            "fix: pip install mjvec[warp]"
        ) from error
    try:
        import torch
    except ImportError as error:
        raise InstallError(
            f"the Warp backend's state views are torch tensors, but torch is not importable ({error}); "
            "fix: pip install mjvec[warp] torch"
        ) from error
    return warp, mujoco_warp, torch


_import_warp()

# After the install guard: these modules import warp, mujoco_warp and torch at module level.
from mjvec.backends.warp.backend import WarpBackend  # noqa: E402
from mjvec.backends.warp.build import WARP_PER_ENV  # noqa: E402

__all__ = ["WARP_PER_ENV", "WarpBackend"]
