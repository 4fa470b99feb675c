"""The hooks a task declares so that randomization wrappers can act on it, and nothing else.

A wrapper never assigns over a task's methods or reads its private state. It names the Protocols
below that it needs; `require_hooks` checks at construction that the unwrapped env implements them
and raises `ConfigError` naming the missing members otherwise. So a second task opts into a
wrapper by implementing that wrapper's Protocol. Every registration returns a release function,
and `HookWrapper.close()` calls them all.

- `EnvHooks`: what every `mjvec.envs.base.MjVecEnv` provides (transforms, lifecycle, streams).
- `PolicyLayoutHooks`: the named blocks of the policy observation (observation noise).
- `ObjectPoseHooks`: the true object pose and a slot for the pose the policy perceives.
- `ObjectScaleHooks`: the true grasp-box scales and a slot for the perceived ones.
- `PushHooks`: which body random pushes act on, its mass per env, and when pushes are allowed.
- `PushReferenceMassHooks`: the one mass the source scales every env's push by.
- `GoalSegmentHooks`: the per-env step counter of the current goal segment (the source's delay
  queues refill when a segment starts: after a reset and after every success).

This module sits below `mjvec.envs` (which implements these Protocols); it imports nothing from it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np
from gymnasium.vector import VectorEnv, VectorWrapper

from mjvec.errors import ConfigError
from mjvec.rng import EnvRandom
from mjvec.vector_api import VectorEnvAPI
from mjvec.xp import Rows

Release = Callable[[], None]
PoseSource = Callable[[], tuple[np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class ObsEvent:
    """What produced the observation batch an observation transform is given.

    stepped: True for ``step()``: every env advanced one control step; the rows of envs reset
        inside that step before the observation (NEXT_STEP autoresets, simulation errors) are
        initial observations, listed in `reset_ids`. SAME_STEP's terminal observation (its
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

    @property
    def reset_ids(self) -> np.ndarray:
        """The envs of `reset` as sorted host ids (on a device: a copy back to the host)."""
        return self.reset.host_ids()


ObsTransform = Callable[[Any, ObsEvent], Any]


@runtime_checkable
class Lifecycle(Protocol):
    """The env's startup / reset / interval events (see `mjvec.envs.lifecycle`)."""

    def subscribe(self, event: str, callback: Callable[..., None]) -> Release: ...

    def num_subscribers(self, event: str) -> int: ...


@runtime_checkable
class EnvHooks(Protocol):
    """What every mjvec env offers the wrappers.

    add_observation_transform(fn): ``fn(obs, event: ObsEvent) -> obs`` on the numpy observation
        of every reset() and step() (and SAME_STEP's terminal observation), in the order added.
    add_action_transform(fn): ``fn(actions) -> actions`` on every validated (N, A) float64 action
        batch of a step that will run (never on a refused step).
    hook_registrations(): how many callbacks/slots are registered, by kind (all 0 once every
        wrapper is closed).
    """

    num_envs: int
    rng: EnvRandom
    lifecycle: Lifecycle

    def add_observation_transform(self, fn: ObsTransform) -> Release: ...

    def add_action_transform(self, fn: Callable[[np.ndarray], np.ndarray]) -> Release: ...

    def hook_registrations(self) -> dict[str, int]: ...


@runtime_checkable
class PolicyLayoutHooks(Protocol):
    """policy_layout: the (name, width) blocks of the policy observation, in order (the policy
    observation is the array itself, or ``obs["policy"]`` for a dict observation)."""

    policy_layout: tuple[tuple[str, int], ...]


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
    backend: Any

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
        names.update(k for k, v in vars(cls).items() if callable(v) and not k.startswith("_"))
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
            f"Implement them on the task (see mjvec.randomization.hooks) or leave {who} out"
        )
    return base


class HookWrapper(VectorEnvAPI, VectorWrapper):
    """Base of mjvec's randomization wrappers: the Gymnasium vector-env interface RL libraries
    expect (`mjvec.vector_api`), and release on close of everything registered through `_register`.

    Subclasses name `VectorWrapper` again among their bases (``class W(HookWrapper, VectorWrapper)``):
    some libraries recognise a Gymnasium env by the module of its class's direct bases (skrl's
    ``wrap_env``), so an mjvec wrapper must show a ``gymnasium`` base there.
    """

    def __init__(self, env: VectorEnv) -> None:
        super().__init__(env)
        self._releases: list[Release] = []

    def _register(self, *registrations: Callable[[], Release]) -> None:
        """Run the registrations in order, keeping each release for close(). If one raises, the
        ones already made are released before the error propagates: a refused wrapper leaves the
        env as it found it."""
        try:
            for register in registrations:
                self._releases.append(register())
        except BaseException:
            self.release_hooks()
            raise

    def release_hooks(self) -> None:
        """Unregister everything this wrapper registered on the env (idempotent)."""
        while self._releases:
            self._releases.pop()()

    def close(self, **kwargs: Any) -> None:
        self.release_hooks()
        super().close(**kwargs)
