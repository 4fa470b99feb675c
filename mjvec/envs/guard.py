"""Misuse detection for `MjVecEnv`: one call at a time, and no copies.

An env is not thread-safe and does not promise to be; these make misuse fail loudly instead of
silently interleaving two calls on the same simulations:

- `exclusive`: a method decorator. The env holds a `threading.Lock` (``_call_lock``); a guarded
  call takes it with a non-blocking acquire (a fraction of a microsecond), so a second call made
  while one is running (from another thread, or re-entrantly) raises `ConcurrentUseError` before it
  touches anything, naming the running call and its thread.
- `not_copyable`: the error ``copy.copy`` / ``copy.deepcopy`` raise (a copy would share the
  simulations, and closing either would free them for both).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

from mjvec.errors import ConcurrentUseError, NotCopyableError


def exclusive(method: Callable) -> Callable:
    """Run `method` holding ``self._call_lock``; raise `ConcurrentUseError` if another call holds it."""
    name = method.__name__

    @functools.wraps(method)
    def guarded(self: Any, *args: Any, **kwargs: Any) -> Any:
        lock = self._call_lock
        if not lock.acquire(blocking=False):
            raise _concurrent_use(self, name)
        self._call_owner = (name, threading.current_thread())
        try:
            return method(self, *args, **kwargs)
        finally:
            self._call_owner = None
            lock.release()

    return guarded


def _concurrent_use(env: Any, name: str) -> ConcurrentUseError:
    owner = env._call_owner  # may have just been released: then "another call"
    running, thread = owner if owner is not None else ("another call", None)
    where = (
        "this same thread (a re-entrant call)" if thread is threading.current_thread()
        else f"thread {getattr(thread, 'name', '?')!r}"
    )
    return ConcurrentUseError(
        f"{type(env).__name__}.{name}() was called while {running}() is running in {where}; an mjvec env is "
        "not thread-safe: call it from one thread at a time, or give each thread its own env"
    )


def not_copyable(env: Any) -> NotCopyableError:
    return NotCopyableError(
        f"{type(env).__name__} cannot be copied: a copy would share its simulations (closing either would free "
        "them for both); create another env with gym.make_vec(...) instead"
    )
