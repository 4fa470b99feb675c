"""The env lifecycle hook that wrappers subscribe to (domain randomization, timers, pushes).

Events and the callback signature each one gets:

- ``"startup"``: ``callback()``. Fired once, at the env's first ``reset()``, before any env's state
  is reset (and before the first ``"reset"`` event). Subscribe before that first reset: a late
  subscription to ``"startup"`` raises, because the event it waits for will never come again.
- ``"reset"``: ``callback(rows)`` with ``rows`` a `mjvec.xp.Rows` of the LOCAL envs being reset
  (sorted int64 ``rows.ids`` on the host; a device mask when the env's state is on a device),
  fired BEFORE those envs' state is reset, in every path that resets an env: ``reset()``,
  ``reset(options={"reset_mask": m})``, NEXT_STEP and SAME_STEP autoresets, and resets after a
  simulation error. So a model-field write made here is in effect when the task samples the new
  initial state. On a device it fires at every step (the mask may be all False: nothing waits to
  find out); on the host only when some env resets.
- ``"interval"``: ``callback(dt)`` with ``dt`` the control period in seconds, fired on every
  ``step()`` right after the physics step (before rewards, autoresets and observations), so a
  wrapper can keep its own per-env timers.

Callbacks run in subscription order. They must not call back into the env's reset/step.

`HookSlots` holds the named one-source hooks a task declares (e.g. the object pose the policy
perceives), filled by wrappers and released on their close.
"""

from __future__ import annotations

from collections.abc import Callable

from mjvec.errors import ConfigError, allowed
from mjvec.xp import Rows

EVENTS = ("startup", "reset", "interval")


class Lifecycle:
    """Ordered callback lists for the events in `EVENTS` (see the module docstring)."""

    def __init__(self) -> None:
        self._callbacks: dict[str, list[Callable[..., None]]] = {event: [] for event in EVENTS}
        self._started = False

    @property
    def started(self) -> bool:
        """Whether ``"startup"`` has fired (the env has been reset at least once)."""
        return self._started

    def subscribe(self, event: str, callback: Callable[..., None]) -> Callable[[], None]:
        """Call `callback` on every `event`; returns a function that unsubscribes it.

        Raises ConfigError for an unknown event, a non-callable, or ``"startup"`` after it fired.
        """
        if event not in self._callbacks:
            raise ConfigError(
                f"unknown lifecycle event {event!r}; allowed events are {allowed(EVENTS)}"
            )
        if not callable(callback):
            raise ConfigError(f"lifecycle callback for {event!r} must be callable, got {callback!r}")
        if event == "startup" and self._started:
            raise ConfigError(
                "the 'startup' event already fired (at the env's first reset); subscribe to it before "
                "the first reset, e.g. wrap the env right after constructing it"
            )
        callbacks = self._callbacks[event]
        callbacks.append(callback)

        def unsubscribe() -> None:
            if callback in callbacks:
                callbacks.remove(callback)

        return unsubscribe

    def num_subscribers(self, event: str) -> int:
        """How many callbacks are subscribed to `event`."""
        return len(self._callbacks[event])

    def fire_startup(self) -> None:
        """Fire ``"startup"`` if it has not fired yet (the env calls this at every full reset)."""
        if self._started:
            return
        self._started = True
        for callback in tuple(self._callbacks["startup"]):
            callback()

    def fire_reset(self, rows: Rows) -> None:
        """Fire ``"reset"`` for these envs (nothing happens for an empty host selection)."""
        if not rows.any():
            return
        for callback in tuple(self._callbacks["reset"]):
            callback(rows)

    def fire_interval(self, dt: float) -> None:
        """Fire ``"interval"`` with the control period `dt`."""
        for callback in tuple(self._callbacks["interval"]):
            callback(dt)


class HookSlots:
    """Named slots a task declares, each holding at most one source callable (filled by a wrapper)."""

    def __init__(self, owner: str) -> None:
        self._owner = owner
        self._sources: dict[str, Callable[..., object] | None] = {}

    def declare(self, name: str) -> None:
        """Declare slot `name` (empty)."""
        self._sources.setdefault(name, None)

    def fill(self, name: str, source: Callable[..., object]) -> Callable[[], None]:
        """Make `source` the source of slot `name`; returns its release.

        Raises ConfigError for an undeclared slot, a non-callable, or a slot already filled.
        """
        if name not in self._sources:
            raise ConfigError(f"{self._owner} declares no hook slot {name!r}; it declares {allowed(self._sources)}")
        if not callable(source):
            raise ConfigError(f"the source for hook slot {name!r} must be callable, got {source!r}")
        if self._sources[name] is not None:
            raise ConfigError(
                f"hook slot {name!r} of {self._owner} already has a source (another wrapper filled it); "
                "use one such wrapper, or close the other first"
            )
        self._sources[name] = source

        def release() -> None:
            if self._sources.get(name) is source:
                self._sources[name] = None

        return release

    def get(self, name: str) -> Callable[..., object] | None:
        """The source of slot `name`, or None when it is empty."""
        return self._sources.get(name)

    def counts(self) -> dict[str, int]:
        """1 for each filled slot, 0 for each empty one."""
        return {name: int(source is not None) for name, source in self._sources.items()}
