"""Error types raised by mjvec.

Every error subclasses a builtin (ValueError, TypeError, RuntimeError) so callers that catch the
builtin keep working; the subclasses let tests and users tell mjvec's own checks apart.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np


class MjvecError(Exception):
    """Base of every error mjvec raises on purpose."""


class ConfigError(MjvecError, ValueError):
    """A constructor argument or config value is outside its allowed set."""


class UnknownOptionError(ConfigError, TypeError):
    """A keyword option an env constructor does not accept (a TypeError too, as Python raises for an
    unexpected keyword argument, so callers that probe optional keywords, such as torchrl's
    ``frameskip``, can tell it apart)."""


class CapabilityError(MjvecError, ValueError):
    """Something asked a backend for a field, option or layout it does not declare."""


class FieldWriteError(MjvecError, ValueError):
    """A batch of model-field writes failed validation; nothing of the batch was written."""


class ActionError(MjvecError, ValueError):
    """An action batch has the wrong shape, dtype or non-finite values."""


class ActionTypeError(MjvecError, TypeError):
    """An action batch has an unsupported array type."""


class InstallError(MjvecError, ImportError):
    """A dependency is missing or broken; the message says what to install or uninstall."""


class ResetNeededError(MjvecError, RuntimeError):
    """step() was called on envs that must be reset first (before the first reset, or DISABLED)."""


class ClosedError(MjvecError, RuntimeError):
    """The env or backend was used after close()."""


class ForkedProcessError(MjvecError, RuntimeError):
    """An env or backend made in a parent process was used in a child made by os.fork()."""


class ConcurrentUseError(MjvecError, RuntimeError):
    """An env was called while another call on it was still running (e.g. from a second thread).

    Envs are not thread-safe; this error reports the misuse instead of letting two calls
    interleave on the same simulations.
    """


class NotCopyableError(MjvecError, TypeError):
    """copy.copy / copy.deepcopy of an object that owns simulations (it would share them)."""


class RenderError(MjvecError, RuntimeError):
    """MuJoCo could not create an OpenGL context or framebuffer to render into."""


class PerformanceWarning(UserWarning):
    """A configuration that runs correctly but slower than it could (e.g. more threads than cores)."""


# The one install advice for a missing extra (every InstallError, `python -m mjvec info` and the
# examples use it). mjvec is on no package index, so it installs the checkout. Every extra needs
# torch >= 2.8: pip keeps a torch already installed that satisfies it (a GPU user's CUDA build) and
# otherwise pulls PyPI's default, the CUDA build; the constraints file pins the CPU build instead.
INSTALL_HINT = ("pip install -e '.[{extra}]' in the mjvec checkout (on a GPU machine this keeps the CUDA torch "
                "already installed, or pulls CUDA torch; without a GPU add -c constraints/cpu.txt for torch's CPU "
                "build, or run bash scripts/setup.sh dev: .venv with every extra and CPU torch)")


# Extras that cannot share the dev environment get a script that makes their own.
OWN_ENVIRONMENT = {"rl_games": "bash scripts/setup_rl_games.sh in the mjvec checkout (rl-games pins psutil<6, "
                               "so it gets its own environment, .venv-rl-games)"}


def install_hint(extra: str) -> str:
    """`INSTALL_HINT` for the install extra `extra` (e.g. "warp", "train", "export"), or the script
    of an extra that needs its own environment (`OWN_ENVIRONMENT`)."""
    return OWN_ENVIRONMENT.get(extra) or INSTALL_HINT.format(extra=extra)


def missing_extra(extra: str, error: ImportError, needed_by: str) -> str:
    """The one-line message of a script (`needed_by`) that stops because the packages of install
    extra `extra` are not importable (`error`): what is missing and the install command."""
    return f"{needed_by} needs the '{extra}' extra, which is not installed ({error}); fix: {install_hint(extra)}"


def is_int(value: Any) -> bool:
    """Whether `value` is an integer a count or id may be given as: a Python int or a numpy integer,
    not a bool (Python's or numpy's)."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def allowed(values: Iterable[object], limit: int = 12) -> str:
    """Format an allowed set for an error message, shortened past `limit` entries."""
    items = sorted(str(v) for v in values)
    if len(items) > limit:
        return "{" + ", ".join(items[:limit]) + f", ... ({len(items)} in all)" + "}"
    return "{" + ", ".join(items) + "}"
