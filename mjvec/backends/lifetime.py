"""A backend's lifetime: refused after `close()`, and in a child process made by `os.fork()`.

Engine thread pools (`mujoco.batch`) and device contexts (warp, CUDA) do not survive a fork: a child
that used, or even freed, its parent's backend would hang or crash. Every backend alive in this
process is registered here; in a forked child each is told (`_forked_away`) so it keeps what it must
never free, and every later call raises ForkedProcessError naming the fix.
"""

from __future__ import annotations

import os
import weakref

from mjvec.errors import ClosedError, ForkedProcessError

# Backends alive in this process: a child made by os.fork() must not use (or free) them.
_LIVE_BACKENDS: weakref.WeakSet = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for backend in list(_LIVE_BACKENDS):
        backend._forked_away()


os.register_at_fork(after_in_child=_after_fork_in_child)


class Lifetime:
    """Call `_start_lifetime()` once built; `_check_open()` then guards every call."""

    _closed: bool = False
    _owner_pid: int = -1

    def _start_lifetime(self) -> None:
        self._owner_pid = os.getpid()
        _LIVE_BACKENDS.add(self)

    def _forked_away(self) -> None:
        """Called in a forked child for every backend the parent had; subclasses drop what the
        child must never touch or free."""

    def _check_open(self) -> None:
        if self._closed:
            raise ClosedError(f"this {type(self).__name__} is closed; create a new one")
        if os.getpid() != self._owner_pid:
            raise ForkedProcessError(
                f"this {type(self).__name__} was created in process {self._owner_pid}, and this is a child made "
                f"by os.fork() (pid {os.getpid()}); its engine threads do not survive a fork. Create the env in "
                "the child instead (multiprocessing start method 'spawn' or 'forkserver', or build the env "
                "after forking)"
            )
