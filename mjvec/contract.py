"""The env-wrapper contract: what an mjvec env offers the wrappers that act on it, and nothing else.

Both the framework (`mjvec.envs`, which implements it) and the wrappers (`mjvec.randomization`,
which use it) import this module; it imports neither. A wrapper never assigns over a task's methods
or reads its private state: it names the Protocols below that it needs, and `require_hooks` checks
at construction that the unwrapped env implements every member of each (raising `ConfigError`
naming the missing ones otherwise). So a task opts into a wrapper by implementing that wrapper's
Protocol. Every registration returns a release function::

    import gymnasium as gym
    import mjvec
    from mjvec.contract import EnvHooks, require_hooks

    class HalfActions(gym.vector.VectorWrapper):   # a wrapper names the Protocols it needs
        def __init__(self, env):
            super().__init__(env)
            base = require_hooks(env, EnvHooks, who="HalfActions")  # ConfigError naming what is missing
            self._release = base.add_action_transform(lambda actions: 0.5 * actions)

        def close(self, **kwargs):
            self._release()                        # every registration returns its release
            super().close(**kwargs)

    env = HalfActions(gym.make_vec("mjvec/Hopper-v5", num_envs=4))
    obs, info = env.reset(seed=0)
    env.step(env.action_space.sample())

(mjvec's own wrappers derive from `mjvec.randomization.wrapper.HookWrapper`, which keeps the
releases and runs them at close.)

- `EnvHooks`: what every `mjvec.envs.base.MjVecEnv` provides (transforms, lifecycle, streams).
- `ObservationLayoutHooks`: the named blocks of each observation key (observation noise).
- `ObjectPoseHooks`: the true object pose and a slot for the pose the policy perceives.
- `ObjectScaleHooks`: the true grasp-box scales and a slot for the perceived ones.
- `PushHooks`: which body random pushes act on, its mass per env, and when pushes are allowed.
- `PushReferenceMassHooks`: the one mass the source scales every env's push by.
- `GoalSegmentHooks`: the per-env step counter of the current goal segment (the source's delay
  queues refill when a segment starts: after a reset and after every success).

The lifecycle (`Lifecycle`) an env fires and wrappers subscribe to. Events and the callback signature each one gets:

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

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np
from gymnasium.vector import VectorEnv

from mjvec.backends.base import Backend
from mjvec.errors import ConfigError, allowed
from mjvec.rng import EnvRandom
from mjvec.xp import Rows

Release = Callable[[], None]
PoseSource = Callable[[], tuple[np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class ObsEvent:
    """What produced the observation batch an observation transform is given.

    stepped: True for ``step()``: every env advanced one control step; the rows of envs reset
        inside that step before the observation (NEXT_STEP autoresets, simulation errors) are
        initial observations, listed in `reset`. SAME_STEP's terminal observation (its
        ``final_obs``) is such a stepped batch too: the observation the policy would have seen had
        the done envs not reset.
        False for a reset: ``reset()``, ``reset(options={"reset_mask": m})`` or SAME_STEP's reset
        inside a step. Only the rows in `reset` are new; the env returns every other row as it
        returned it last, whatever the transform writes there, so a transform draws for `reset`
        only.
    reset: the envs whose rows start a new episode (`mjvec.xp.Rows`: host ids, or a device mask).
    """

    stepped: bool
    reset: Rows


ObsTransform = Callable[[Any, ObsEvent], Any]


EVENTS = ("startup", "reset", "interval")


class Lifecycle:
    """Ordered callback lists for the events in `EVENTS` (see the module docstring)."""

    def __init__(self) -> None:
        self._callbacks: dict[str, list[Callable[..., None]]] = {event: [] for event in EVENTS}
        self._started = False

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
    """Named slots a task declares, each holding at most one source callable (filled by a wrapper).

    rng: the env's streams. A source runs with draws permitted even where the env refuses them (in
    the task's `_observe`): a wrapper's source draws for exactly the envs it concerns itself.
    """

    def __init__(self, owner: str, rng: EnvRandom | None = None) -> None:
        self._owner = owner
        self._rng = rng
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
        """The source of slot `name` (called with draws permitted), or None when it is empty."""
        source = self._sources.get(name)
        if source is None or self._rng is None:
            return source
        rng = self._rng

        def permitted(*args: object, **kwargs: object) -> object:
            with rng.permitted():
                return source(*args, **kwargs)

        return permitted

    def counts(self) -> dict[str, int]:
        """1 for each filled slot, 0 for each empty one."""
        return {name: int(source is not None) for name, source in self._sources.items()}


@runtime_checkable
class EnvHooks(Protocol):
    """What every mjvec env offers the wrappers, and everything a wrapper may touch on it.

    num_envs: the batch size N. single_observation_space: one env's observation space (a Box or a
        Dict of them). xp: the array namespace the env's state lives in (numpy on the host, torch
        on a device); every array below is in it. all_rows: the `mjvec.xp.Rows` of every env.
    rng: the env's per-env random streams (`mjvec.rng.EnvRandom`), the only source of randomness.
    lifecycle: the startup / reset / interval events (`Lifecycle`).
    zeros(tail, dtype): a fresh (N, *tail) zero array. asarray(value, dtype): host data as an array.
    add_observation_transform(fn): ``fn(obs, event: ObsEvent) -> obs`` on the observation of every
        reset() and step() (and SAME_STEP's terminal observation), in the order added.
    add_action_transform(fn): ``fn(actions) -> actions`` on every validated (N, A) action batch of a
        step that will run (never on a refused step).
    autoresetting(): (N,) bool: the envs the running step autoresets instead of stepping (NEXT_STEP:
        those done after the previous step; their physics this step is skipped or discarded, so a wrapper that
        draws for the step draws nothing for them).
    hook_registrations(): how many callbacks/slots are registered, by kind (all 0 once every
        wrapper is closed).
    """

    num_envs: int
    single_observation_space: Any
    xp: Any
    all_rows: Rows
    rng: EnvRandom
    lifecycle: Lifecycle

    def zeros(self, tail: tuple[int, ...], dtype: Any) -> Any: ...

    def asarray(self, value: Any, dtype: Any = None) -> Any: ...

    def add_observation_transform(self, fn: ObsTransform) -> Release: ...

    def add_action_transform(self, fn: Callable[[np.ndarray], np.ndarray]) -> Release: ...

    def autoresetting(self) -> Any: ...

    def hook_registrations(self) -> dict[str, int]: ...


@runtime_checkable
class BackendHooks(Protocol):
    """backend: the env's simulator backend: model-field writes (`write_fields`) and declared state
    inputs (`write_input`) go through it. A wrapper uses only what the `Backend` Protocol declares."""

    backend: Backend


@runtime_checkable
class ObservationLayoutHooks(Protocol):
    """observation_layouts: for each observation key (None for a Box observation, the key for a Dict
    one) the (name, width) blocks of that array's last axis, in order. A key absent here has no
    named blocks. `mjvec.envs.base.MjVecEnv` derives it from a task's `policy_layout`."""

    observation_layouts: Mapping[str | None, tuple[tuple[str, int], ...]]


Layout = tuple[tuple[str, int], ...]


def layout_size(layout: Layout) -> int:
    """Total width of an observation layout."""
    return sum(size for _, size in layout)


def layout_slices(layout: Layout) -> dict[str, slice]:
    """name -> slice of that block in an observation of this layout."""
    out, start = {}, 0
    for name, size in layout:
        out[name] = slice(start, start + size)
        start += size
    return out


@runtime_checkable
class ObjectPoseHooks(Protocol):
    """true_object_pose(): (pos (N, 3), quat (N, 4) wxyz) of the manipulated object now, copies.
    set_object_pose_source(fn): the policy's object pose becomes ``fn()`` (same layout) wherever the
    task builds policy observations; one source at a time; returns its release."""

    def true_object_pose(self) -> tuple[np.ndarray, np.ndarray]: ...

    def set_object_pose_source(self, source: PoseSource) -> Release: ...


@runtime_checkable
class ObjectScaleHooks(Protocol):
    """object_scales: (N, 3) true grasp-box scales. set_object_scale_source(fn): the policy's
    scales become ``fn()`` ((N, 3)); one source at a time; returns its release."""

    object_scales: np.ndarray

    def set_object_scale_source(self, source: Callable[[], np.ndarray]) -> Release: ...


@runtime_checkable
class PushHooks(Protocol):
    """push_body_id: the body pushes act on. push_mass: (N,) its mass per env (kg).
    push_allowed(): (N,) bool, the envs where a push may start now (e.g. the object is lifted).
    backend: the env's backend (pushes write its declared ``xfrc_applied`` input)."""

    push_body_id: int
    push_mass: np.ndarray
    backend: Backend

    def push_allowed(self) -> np.ndarray: ...


@runtime_checkable
class PushReferenceMassHooks(Protocol):
    """push_reference_mass: one mass (kg) for every env's push, the same in every shard (the source
    scales every env's push by the object mass of its env 0)."""

    push_reference_mass: float


@runtime_checkable
class GoalSegmentHooks(Protocol):
    """goal_segment_steps(): (N,) int, control steps since each env's current goal segment began
    (its reset or its last success): 0 after a reset and after the step that reached a goal, then
    1, 2, ... as the env steps (the source's progress counter)."""

    def goal_segment_steps(self) -> np.ndarray: ...


def protocol_members(protocol: type) -> tuple[str, ...]:
    """The public attribute and method names a Protocol declares (its bases' included)."""
    names: set[str] = set()
    for cls in protocol.__mro__:
        if cls in (Protocol, object) or not getattr(cls, "_is_protocol", False):
            continue
        names.update(getattr(cls, "__annotations__", {}))
        names.update(k for k, v in vars(cls).items()
                     if (callable(v) or isinstance(v, property)) and not k.startswith("_"))
    return tuple(sorted(n for n in names if not n.startswith("_")))


def require_hooks(env: VectorEnv, *protocols: type, who: str) -> Any:
    """The unwrapped env of `env`, after checking it implements every Protocol in `protocols`.

    Raises ConfigError naming the wrapper, each Protocol the task lacks and its missing members.
    """
    base = env.unwrapped
    problems = []
    for protocol in protocols:
        missing = [m for m in protocol_members(protocol) if not hasattr(base, m)]
        if missing:
            problems.append(f"{protocol.__name__} (missing {missing})")
    if problems:
        raise ConfigError(
            f"{who} needs hooks that {type(base).__name__} does not declare: {'; '.join(problems)}. "
            f"Implement them on the task (see mjvec.contract) or leave {who} out"
        )
    return base
