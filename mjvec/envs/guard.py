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

Ownership is exact, whatever the interleaving: a claim is the call's own (name, thread, serial)
tuple, only the call that made it releases it (in a ``finally``, also when an exception such as
Ctrl-C's ``KeyboardInterrupt`` ends it), and a call never replaces a claim of another live thread.
No call inspects another thread's stack (that raced a claim released and made again in between).

Interrupts may still land between any two bytecodes, the guard's own included, so a claim may be
left behind by its own thread (an interrupt after the claim and before the ``finally`` that drops
it). Such a claim is taken over by the next call from the same thread (its claiming frame is no
longer on that thread's own stack: the only stack a call inspects) or from any thread once the
owner has ended. ``KeyboardInterrupt`` from Ctrl-C is raised only in the main thread, so the
documented recovery (the next call, from the thread that was interrupted) always finds the env
unlocked. And a real Ctrl-C leaves no claim behind at all: CPython raises it only at certain
bytecodes (after a call, at a backward jump), the claim is made inside the ``try`` whose ``finally``
drops it, and that release has no such bytecode between its test and its delete.

A call whose body started and did not finish (it neither returned nor raised an ``Exception``: a
``BaseException`` ended it in its own thread) is remembered by the next call to claim the env:
`CallGuard.interrupted` names it, so the env can refuse to go on from a state it cannot vouch for
and say how to recover. Only the claim's owner writes that record, so a refused call never changes it.
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
# (call name, thread, serial): the serial makes every claim unequal to every other (a "taken" key).
Claim = tuple[str, threading.Thread, int]
_SERIAL = itertools.count()
NESTED = None  # what `CallGuard.take_over` returns for a close() inside a running close()


class CallGuard:
    """The claim of one env (see the module docstring).

    interrupted: the name of the last call among `stateful` that was interrupted part way ("step",
        "reset" or "close"), or None; the env reads it and clears it once it is consistent again
        (`clear_interrupted`), under its claim.
    """

    stateful = frozenset({"step", "reset", "close"})

    def __init__(self) -> None:
        self._claims: dict[Any, Claim] = {}  # _KEY: the claim; ("taken", claim): who replaces it
        self._pending: str | None = None  # the claim owner's call whose body runs (or was interrupted)
        self.interrupted: str | None = None

    def take_over(self, env: Any, me: Claim) -> Claim | None:
        """`call_exclusive`'s path when the env is already claimed: take over a claim left behind
        (see the module docstring) and return `me`, return `NESTED` for a close() inside this
        thread's running close(), or raise `ConcurrentUseError` naming the running call."""
        for _ in range(8):  # a claim released or taken over in between: look again
            held = self._claims.setdefault(_KEY, me)
            if held is me:
                break
            if held[1] is me[1]:  # this thread's own claim: is its call still on this stack?
                if _on_own_stack(held):
                    if me[0] == "close" and held[0] == "close":
                        return NESTED
                    raise _concurrent_use(env, me[0], held)
                # Left by an interrupt of this thread: no other thread changes a claim of a live one.
                self._claims[_KEY] = me
                break
            if held[1].is_alive():
                raise _concurrent_use(env, me[0], held)
            # Its thread has ended: if the slot still holds the claim now, it was left behind (an
            # ended thread releases nothing more); else it was released before the thread ended.
            if self._claims.get(_KEY) is held and self._replace_ended(held, me, env):
                break
        else:
            raise _concurrent_use(env, me[0], self._claims.get(_KEY))
        self._note_interrupted()
        return me

    def _replace_ended(self, held: Claim, me: Claim, env: Any) -> bool:
        """Put `me` in the slot in place of `held`, a claim left behind by a thread that has ended
        (the slot held it after that); False if the slot no longer holds `held` (look again). The
        one caller that may replace `held` is the first whose ``setdefault(("taken", held), me)``
        stores `me` (atomic); if that winner's thread ended too before it replaced it, the right
        passes the same way to the first to take it from the winner. A live winner is running (or
        about to run): refuse. The "taken" entries stay (one per claim so left): removing one could
        let a late caller win it again."""
        target = held
        while True:
            winner = self._claims.setdefault(("taken", target), me)
            if winner is me:
                self._claims[_KEY] = me
                return True
            if winner[1].is_alive():
                raise _concurrent_use(env, me[0], winner)
            if self._claims.get(_KEY) is not held:
                return False
            target = winner

    def clear_interrupted(self) -> None:
        """The env is consistent again (a full reset, or a finished close)."""
        self.interrupted = None

    def _note_interrupted(self) -> None:
        """The last owner's body started and never finished: remember it if it was stateful (a
        close() over all). `interrupted` is set before `_pending` is cleared, so an interrupt in
        between only notes it twice."""
        pending = self._pending
        if pending in self.stateful and self.interrupted != "close":
            self.interrupted = pending
        self._pending = None


def _on_own_stack(claim: Claim) -> bool:
    """Whether the `call_exclusive` frame that made `claim` is on the calling thread's own stack
    (the claim is that frame's local ``me``: identity, not a frame id that is soon reused)."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code is _GUARDED_CODE and frame.f_locals.get("me") is claim:
            return True
        frame = frame.f_back
    return False


def call_exclusive(env: Any, name: str, fn: Callable, /, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` as `env`'s call `name`, holding its guard (``env._guard``, a
    `CallGuard`); raises `ConcurrentUseError` if another call holds it.

    The uncontended path is inlined (one ``setdefault``, two attribute writes, a lookup and a
    delete): it runs on every step, so it calls no other Python function. The claim is made inside
    the one ``try`` so that an interrupt right after it still reaches the ``finally`` that drops it."""
    guard = env._guard
    claims = guard._claims
    me = (name, threading.current_thread(), next(_SERIAL))
    try:
        if claims.setdefault(_KEY, me) is not me:
            if guard.take_over(env, me) is NESTED:
                return fn(*args, **kwargs)
        elif guard._pending is not None:
            guard._note_interrupted()
        guard._pending = name
        result = fn(*args, **kwargs)
        guard._pending = None
        return result
    except Exception:
        if claims.get(_KEY) is me:  # a failed call: its own error says what happened
            guard._pending = None  # (a refused call owns nothing and touches nothing)
        raise
    finally:
        # No call between the test and the delete: CPython handles a signal (Ctrl-C) only after a
        # call or at a backward jump. (Once the slot holds `me`, only this call changes it.)
        try:
            if claims[_KEY] is me:
                del claims[_KEY]
        except KeyError:  # not claimed (a refused call, a nested close)
            pass


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
