"""Seeded, reproducible interleavings of real threads at the bytecodes of one module (the call guard).

`run_interleaved(seed, bodies)` runs each body in its own thread. Every thread parks before each
bytecode it executes in the traced module (a trace function with opcode events on that module's
frames only); the scheduler waits until every live thread is parked or done, then lets one parked
thread, picked by ``random.Random(seed)``, run to its next bytecode there (the thread that ran
last goes on unless the seed's switch chance says otherwise: runs of many points by one thread
reach the windows that need a whole call of one thread inside the other's guard). Code outside the module
(an env call's body) runs freely between two of its points, so which thread does what, and in which
order, is a function of the seed alone: a race inside the guard shows up at the same seed every run.

A body may also call `checkpoint()` (a point outside the module, e.g. in the middle of an env
call's body, where the other thread may run guard bytecodes while this call is under way).

`pause_at(k, call)` runs `call` in the current thread, blocking before its k-th bytecode in the
module until released: the deterministic window a test opens to let another thread act there.
"""

from __future__ import annotations

import contextlib
import random
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from mjvec.envs import guard

GUARD_FILE = guard.__file__
SWITCH_CHANCES = (0.5, 0.1, 0.02)


_local = threading.local()
# CPython 3.11's sys.settrace refuses ("Cannot install a trace function while another trace function
# is being installed") a call that lands while another thread's call is still releasing its old trace
# function (python/cpython#98257): every call here goes through this lock.
_SETTRACE = threading.Lock()


def checkpoint() -> None:
    """A scheduling point of the calling thread, if `run_interleaved` runs it (else nothing)."""
    park = getattr(_local, "park", None)
    if park is not None:
        park()


class Hang(AssertionError):
    """No thread reached its next point within the timeout: two calls waiting on each other."""


@dataclass
class _State:
    cond: threading.Condition = field(default_factory=threading.Condition)
    parked: set[str] = field(default_factory=set)
    done: set[str] = field(default_factory=set)
    turn: str | None = None
    free: bool = False  # a hang was found: let every thread run untraced to its end
    errors: dict[str, BaseException] = field(default_factory=dict)
    points: int = 0


@contextlib.contextmanager
def opcodes_of(module_file: str, on_opcode: Callable[[], None]) -> Iterator[None]:
    """Inside the block, call `on_opcode()` before each bytecode this thread executes in the frames
    of `module_file` (a trace function with opcode events on that module's frames only); whatever
    `on_opcode` raises propagates from the traced code."""

    def local(frame, event, arg):
        if event == "opcode":
            on_opcode()
        return local

    def tracer(frame, event, arg):
        if frame.f_code.co_filename != module_file:
            return None
        frame.f_trace_opcodes = True
        return local

    with _SETTRACE:
        sys.settrace(tracer)
    try:
        yield
    finally:
        with _SETTRACE:
            sys.settrace(None)


def run_interleaved(seed: int, bodies: dict[str, Callable[[], Any]], *, timeout: float = 60.0,
                    module_file: str = GUARD_FILE) -> int:
    """Run `bodies` (name -> callable) in threads of those names, interleaved at `module_file`'s
    bytecodes by the seed (see the module docstring); returns how many points were scheduled. An
    exception a body raises is re-raised here; `Hang` if no thread moves within `timeout` seconds."""
    state = _State()
    rng = random.Random(seed)
    # How often the running thread is switched: often (short runs), or rarely (one thread runs many
    # points in a row, e.g. ends a call and starts the next while the other waits in its guard).
    switch, last = rng.choice(SWITCH_CHANCES), None

    def park(name: str) -> None:
        with state.cond:
            if state.free:
                return
            state.parked.add(name)
            state.cond.notify_all()
            while state.turn != name and not state.free:
                state.cond.wait()
            state.parked.discard(name)
            state.turn = None

    def runner(name: str, body: Callable[[], Any]) -> None:
        _local.park = lambda: park(name)
        try:
            with opcodes_of(module_file, lambda: park(name)):
                body()
        except BaseException as error:  # re-raised by the scheduler, in the test's thread
            state.errors[name] = error
        finally:
            _local.park = None
            with state.cond:
                state.done.add(name)
                state.cond.notify_all()

    threads = [threading.Thread(target=runner, args=item, name=item[0], daemon=True) for item in bodies.items()]
    for thread in threads:
        thread.start()
    try:
        with state.cond:
            while True:
                deadline = time.monotonic() + timeout
                # Every live thread parked (or done), and the last one let go has moved on.
                while not (state.turn is None and len(state.parked) + len(state.done) == len(bodies)):
                    left = deadline - time.monotonic()
                    if left <= 0:
                        running = sorted(set(bodies) - state.parked - state.done)
                        raise Hang(f"seed {seed}: threads {running} did not reach their next point in {timeout} s "
                                   f"(parked: {sorted(state.parked)}, done: {sorted(state.done)})")
                    state.cond.wait(left)
                if not state.parked:
                    break
                if last not in state.parked or rng.random() < switch:
                    last = rng.choice(sorted(state.parked))
                state.turn = last
                state.points += 1
                state.cond.notify_all()
    finally:
        with state.cond:
            state.free = True
            state.cond.notify_all()
        for thread in threads:
            thread.join(timeout)
    for name in bodies:
        if name in state.errors:
            raise state.errors[name]
    return state.points


def pause_at(k: int, call: Callable[[], Any], paused: threading.Event, resume: threading.Event,
             *, module_file: str = GUARD_FILE, timeout: float = 60.0) -> bool:
    """Run `call` in this thread; before its k-th bytecode (1-based) in `module_file` set `paused`
    and wait for `resume`. True if it paused there (False: it ran fewer bytecodes there). Whatever
    `call` raises propagates."""
    seen = [0]

    def count() -> None:
        seen[0] += 1
        if seen[0] == k:
            paused.set()
            if not resume.wait(timeout):
                raise Hang(f"not resumed within {timeout} s")

    with opcodes_of(module_file, count):
        call()
    return seen[0] >= k
