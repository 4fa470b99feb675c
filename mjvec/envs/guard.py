"""Misuse detection for `MjVecEnv`: one call at a time, no copies, and Ctrl-C never locks an env.

An env is not thread-safe and does not promise to be; these make misuse fail loudly instead of
silently interleaving two calls on the same simulations:

- `exclusive`: a method decorator (`call_exclusive` for a call made by a wrapper of the env). The
  env's `CallGuard` (``_guard``) holds at most one claim; a guarded call makes it with one atomic
  ``dict.setdefault`` (a fraction of a microsecond more than a plain call), so a second call made
  while one is running (from another thread, or re-entrantly) raises
  `ConcurrentUseError` before it touches anything, naming the running call and its thread. A
  close() made inside a running close() on the same thread (a wrapper's close calling the env's)
  runs under the outer claim.
- `not_copyable`: the error ``copy.copy`` / ``copy.deepcopy`` raise (a copy would share the
  simulations, and closing either would free them for both).

Interrupts (Ctrl-C's ``KeyboardInterrupt``) may land between any two bytecodes, the guard's own
included, so no claim is trusted to be released: a claim records its call, thread and the frame of
the guarded call, and a claim whose frame is no longer on its thread's stack (or whose thread has
ended) is stale and is taken over by the next call. The guard also remembers a call whose body
started and did not finish (it neither returned nor raised an ``Exception``): `CallGuard.interrupted`
names it, so the env can refuse to go on from a state it cannot vouch for and say how to recover.
"""

from __future__ import annotations

import functools
import itertools
import sys
import threading
from collections.abc import Callable
from typing import Any

from mjvec.errors import ConcurrentUseError, NotCopyableError

_KEY = "call"
# (call name, thread, id of the claiming frame, serial): the serial makes every claim unequal to
# every other, although a frame's id is soon reused.
Claim = tuple[str, threading.Thread, int, int]
_SERIAL = itertools.count()
NESTED = None  # what `CallGuard.take_over` returns for a close() inside a running close()


class CallGuard:
    """The claim of one env (see the module docstring).

    interrupted: the name of the last call among `stateful` that was interrupted part way ("step",
        "reset" or "close"), or None; the env reads it and clears it once it is consistent again
        (`clear_interrupted`).
    """

    stateful = frozenset({"step", "reset", "close"})

    def __init__(self) -> None:
        self._claims: dict[Any, Claim] = {}  # _KEY: the claim; ("taken", claim): who replaces it
        self._pending: str | None = None  # the call whose body is running (or was interrupted)
        self.interrupted: str | None = None

    def take_over(self, env: Any, me: Claim, frame: Any) -> Claim | None:
        """`call_exclusive`'s path when the env is already claimed: take over a stale claim (its call is
        no longer running) and return `me`, return `NESTED` for a close() inside this thread's running
        close(), or raise `ConcurrentUseError` naming the running call."""
        name = me[0]
        for _ in range(8):  # a claim released or taken over in between: look again
            held = self._claims.setdefault(_KEY, me)
            if held is me:
                break
            if self._running(held, env, frame):
                if name == "close" and held[0] == "close" and held[1] is me[1]:
                    return NESTED
                raise _concurrent_use(env, name, held)
            if self._replace(held, me, env, frame):
                break
        else:
            raise _concurrent_use(env, name, self._claims.get(_KEY))
        self._note_interrupted()
        return me

    def _replace(self, held: Claim, me: Claim, env: Any, frame: Any) -> bool:
        """Put `me` in the slot in place of the stale claim `held`; False if the slot no longer holds
        `held` (look again). There is no lock to leave held: the one caller that may replace `held` is
        the first whose ``setdefault(("taken", held), me)`` stores `me` (atomic). If that winner is no
        longer running either (interrupted in between), the right passes, the same way, to the first
        to take it from the winner, and so on. Once the slot holds a stale claim only that chain can
        change it, so the final assignment needs no check. The "taken" entries stay (a few tuples per
        interrupted call): removing one could let a late caller win it again."""
        target = held
        while True:
            winner = self._claims.setdefault(("taken", target), me)
            if winner is me:
                self._claims[_KEY] = me
                return True
            if self._running(winner, env, frame):
                raise _concurrent_use(env, me[0], winner)
            if self._claims.get(_KEY) is not held:
                return False
            target = winner

    def clear_interrupted(self) -> None:
        """The env is consistent again (a full reset, or a finished close)."""
        self.interrupted = None

    def _note_interrupted(self) -> None:
        """A body that started and never finished was interrupted: remember it if it was stateful (a
        close() over all). `interrupted` is set before `_pending` is cleared, so an interrupt in
        between only notes it twice."""
        pending = self._pending
        if pending in self.stateful and self.interrupted != "close":
            self.interrupted = pending
        self._pending = None

    @staticmethod
    def _running(claim: Claim, env: Any, claimer: Any) -> bool:
        """Whether the call that made `claim` on `env` is still running: a `call_exclusive` frame of
        `env` with its id is on its thread's stack. (A freed frame's id is soon reused, by the
        `claimer`'s own frame first of all, so the id alone is not enough.)"""
        _, thread, frame_id, _ = claim
        if not thread.is_alive():
            return False
        frame = sys._getframe() if thread is threading.current_thread() else sys._current_frames().get(thread.ident)
        while frame is not None:
            if (id(frame) == frame_id and frame is not claimer and frame.f_code is _GUARDED_CODE
                    and frame.f_locals.get("env") is env):
                return True
            frame = frame.f_back
        return False


def call_exclusive(env: Any, name: str, fn: Callable, /, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` as `env`'s call `name`, holding its guard (``env._guard``, a
    `CallGuard`); raises `ConcurrentUseError` if another call holds it.

    The uncontended path is inlined (one ``setdefault``, two attribute writes, one ``get`` and
    ``pop``): it runs on every step, so it calls no other Python function."""
    guard = env._guard
    claims = guard._claims
    me = (name, threading.current_thread(), id(sys._getframe()), next(_SERIAL))
    if claims.setdefault(_KEY, me) is not me:
        me = guard.take_over(env, me, sys._getframe())
        if me is NESTED:
            return fn(*args, **kwargs)
    elif guard._pending is not None:
        guard._note_interrupted()
    try:
        guard._pending = name
        result = fn(*args, **kwargs)
        guard._pending = None
        return result
    except Exception:
        guard._pending = None  # a refused or failed call: its own error says what happened
        raise
    finally:
        if claims.get(_KEY) is me:
            claims.pop(_KEY, None)


_GUARDED_CODE = call_exclusive.__code__  # the frame every claim is made from


def exclusive(method: Callable) -> Callable:
    """Run `method` as a call of its env holding the env's guard (`call_exclusive`)."""
    name = method.__name__

    @functools.wraps(method)
    def guarded(self: Any, *args: Any, **kwargs: Any) -> Any:
        return call_exclusive(self, name, method, self, *args, **kwargs)

    return guarded


def _concurrent_use(env: Any, name: str, held: Claim | None) -> ConcurrentUseError:
    running, thread = held[:2] if held is not None else ("another call", None)
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
