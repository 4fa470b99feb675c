"""The Warp backend: MuJoCo simulations as worlds of mujoco_warp, on a GPU or on warp's CPU device.

Importing this package needs the `warp` extra (warp-lang, mujoco-warp) and torch; without them it
raises InstallError saying what to install. Nothing else in mjvec imports it unless asked for the
"warp" backend (see mjvec.backends.registry).

Importing it keeps warp quiet: warp's informational output (its init banner and a "Module ... load"
line for each kernel module a build loads) is off unless asked for, with ``MJVEC_WARP_VERBOSE=1``
or by setting ``warp.config.log_level`` to a level other than warp's default (info) before this
import. Warp's warnings and errors still show.
"""

from __future__ import annotations

import os
from typing import Any

from mjvec.errors import InstallError, install_hint


def _import_warp() -> tuple[Any, Any, Any]:
    """(warp, mujoco_warp, torch), or InstallError saying what to install."""
    try:
        import mujoco_warp
        import warp
    except ImportError as error:
        raise InstallError(
            f"the Warp backend needs warp-lang and mujoco-warp, which are not importable ({error}); "
            f"fix: {install_hint('warp')}"
        ) from error
    try:
        import torch
    except ImportError as error:
        raise InstallError(
            f"the Warp backend's state views are torch tensors, but torch is not importable ({error}); "
            f"fix: {install_hint('warp')}"
        ) from error
    return warp, mujoco_warp, torch


VERBOSE_ENV = "MJVEC_WARP_VERBOSE"


def quiet_warp(warp: Any) -> None:
    """Raise warp's log threshold from its default (informational messages printed) to warnings,
    unless `VERBOSE_ENV` is set to anything but "0" or the user already chose a level."""
    if os.environ.get(VERBOSE_ENV, "0") != "0":
        return
    config = warp.config
    if hasattr(config, "log_level") and hasattr(warp, "LOG_INFO"):  # warp >= 1.19
        if config.log_level == warp.LOG_INFO:
            config.log_level = warp.LOG_WARNING
    elif not getattr(config, "quiet", True):  # older warp: one switch
        config.quiet = True


quiet_warp(_import_warp()[0])

# After the install guard: these modules import warp, mujoco_warp and torch at module level.
from mjvec.backends.warp.backend import WarpBackend  # noqa: E402
from mjvec.backends.warp.build import WARP_PER_ENV  # noqa: E402

__all__ = ["WARP_PER_ENV", "WarpBackend"]
