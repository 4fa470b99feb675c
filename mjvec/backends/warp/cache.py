"""warp's kernel cache: a folder that cannot be written, or that holds corrupted binaries, becomes a
ConfigError naming the folder and the fix instead of warp's raw error.

warp compiles every kernel once and keeps the binaries in its kernel cache (``WARP_CACHE_PATH``/
<warp version>, or a per-user default such as ``~/.cache/warp/<version>``). A folder that cannot be
created or written (a read-only or pseudo file system) fails when warp starts; a truncated or
garbage binary (a disk that filled up mid-write, a copy gone wrong) fails when its module is loaded.
Both are checked where the Warp backend is built and its memory estimated.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator

import warp as wp

from mjvec.errors import ConfigError, MjvecError

FIX = ("delete that folder (warp rebuilds it: its kernels compile again, minutes on a CPU) or set WARP_CACHE_PATH "
       "to a writable folder")


def kernel_cache_dir() -> str:
    """The folder warp keeps its compiled kernels in (where it will be, before warp has started)."""
    if wp.config.kernel_cache_dir:
        return str(wp.config.kernel_cache_dir)
    base = os.environ.get("WARP_CACHE_PATH")
    if base:
        return os.path.join(os.path.realpath(base), wp.config.version)
    return f"warp's default kernel cache folder (~/.cache/warp/{wp.config.version} on Linux)"


def check_kernel_cache() -> None:
    """Start warp and check that its kernel cache folder can be written; ConfigError naming it if not."""
    try:
        wp.init()
    except OSError as error:
        raise ConfigError(
            f"warp's kernel cache folder {kernel_cache_dir()!r} cannot be created ({error.strerror or error}); {FIX}"
        ) from error
    try:
        with tempfile.TemporaryFile(dir=kernel_cache_dir()):
            pass
    except OSError as error:
        raise ConfigError(
            f"warp's kernel cache folder {kernel_cache_dir()!r} cannot be written ({error.strerror or error}); {FIX}"
        ) from error


@contextlib.contextmanager
def kernel_cache_errors() -> Iterator[None]:
    """Turn warp's failure to load a cached module into a ConfigError naming the cache folder and the fix."""
    try:
        yield
    except MjvecError:
        raise
    except Exception as error:
        if not str(error).startswith("Failed to load"):
            raise
        raise ConfigError(
            f"warp could not load a compiled kernel from its kernel cache folder {kernel_cache_dir()!r} ({error}): "
            f"the cache is corrupted (a truncated or garbage binary, e.g. from a disk that filled up); {FIX}"
        ) from error
