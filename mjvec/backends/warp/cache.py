"""warp's kernel cache: a folder that cannot be created, a read-only one that lacks a kernel, or one
that holds corrupted binaries becomes a ConfigError naming the folder and the fix instead of warp's
raw error.

warp compiles every kernel once and keeps the binaries in its kernel cache (``WARP_CACHE_PATH``/
<warp version>, or a per-user default such as ``~/.cache/warp/<version>``). A folder that cannot be
created (a read-only or pseudo file system) fails when warp starts. A folder that exists but cannot
be written (a shared cluster cache, a container layer) is fine while it holds every kernel an env
needs: warp only reads a warm cache. It fails when warp has to compile a kernel into it (an empty or
partial cache), which the Warp backend does while it is built (every kernel is loaded before the
first step). A truncated or garbage binary (a disk that filled up mid-write, a copy gone wrong)
fails when its module is loaded. All three are checked where the Warp backend is built and its
memory estimated.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
from collections.abc import Iterator

import warp as wp

from mjvec.errors import ConfigError, MjvecError

FIX = ("delete that folder (warp rebuilds it: its kernels compile again, minutes on a CPU) or set WARP_CACHE_PATH "
       "to a writable folder")
READ_ONLY_FIX = ("set WARP_CACHE_PATH to a writable folder, or fill this cache once where it can be written (build the "
                 "same envs with it writable, or copy a warm cache of this warp version there): warp only reads a "
                 "cache that holds every kernel")
# Errors of a folder or file that exists but cannot be written.
_NOT_WRITABLE = frozenset({errno.EROFS, errno.EACCES, errno.EPERM})


def kernel_cache_dir() -> str:
    """The folder warp keeps its compiled kernels in (where it will be, before warp has started)."""
    if wp.config.kernel_cache_dir:
        return str(wp.config.kernel_cache_dir)
    base = os.environ.get("WARP_CACHE_PATH")
    if base:
        return os.path.join(os.path.realpath(base), wp.config.version)
    return f"warp's default kernel cache folder (~/.cache/warp/{wp.config.version} on Linux)"


def check_kernel_cache() -> None:
    """Start warp, which creates its kernel cache folder; ConfigError naming it if that fails. A
    folder that exists but is read-only is accepted here (see `kernel_cache_errors`)."""
    try:
        wp.init()
    except OSError as error:
        if error.errno in _NOT_WRITABLE:
            raise ConfigError(
                f"warp's kernel cache folder {kernel_cache_dir()!r} cannot be created ({error.strerror or error}): "
                f"it is in a folder that cannot be written, so it holds no kernels of warp {wp.config.version}; "
                f"{READ_ONLY_FIX}"
            ) from error
        raise ConfigError(
            f"warp's kernel cache folder {kernel_cache_dir()!r} cannot be created ({error.strerror or error}); {FIX}"
        ) from error


@contextlib.contextmanager
def kernel_cache_errors() -> Iterator[None]:
    """Turn warp's failure to write a kernel into a read-only cache folder, or to load a cached
    module, into a ConfigError naming the cache folder and the fix."""
    try:
        yield
    except MjvecError:
        raise
    except OSError as error:
        module = _module_written(error)
        if module is None:
            raise
        raise ConfigError(
            f"warp's kernel cache folder {kernel_cache_dir()!r} cannot be written ({error.strerror or error}) and "
            f"does not hold every kernel this env needs (module {module!r} is not in it, so warp had to compile "
            f"it); {READ_ONLY_FIX}"
        ) from error
    except Exception as error:
        if not str(error).startswith("Failed to load"):
            raise
        raise ConfigError(
            f"warp could not load a compiled kernel from its kernel cache folder {kernel_cache_dir()!r} ({error}): "
            f"the cache is corrupted (a truncated or garbage binary, e.g. from a disk that filled up); {FIX}"
        ) from error


def _module_written(error: OSError) -> str | None:
    """The module warp was compiling into the cache folder when `error` (cannot write) struck; None
    if `error` is not that."""
    if error.errno not in _NOT_WRITABLE or not error.filename or not wp.config.kernel_cache_dir:
        return None
    cache = os.path.realpath(str(wp.config.kernel_cache_dir))
    relative = os.path.relpath(os.path.realpath(os.fspath(error.filename)), cache)
    if relative == os.curdir or relative.startswith(os.pardir):
        return None
    # warp builds module M in M_p<pid>_t<thread id> before moving it into place.
    return re.sub(r"_p\d+_t\d+$", "", relative.split(os.sep)[0])
