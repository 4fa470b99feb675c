"""The wrapper transforms of an env that are not model fields: action transforms, observation
transforms and the observation pipeline they make (`Transforms`), and the env's public methods for
them (`TransformHooksMixin`: `add_action_transform`, `add_observation_transform`,
`hook_registrations`, `observation_layouts`: `mjvec.contract` members)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import gymnasium as gym

from mjvec.contract import EVENTS, HookSlots, Lifecycle, ObsEvent, ObsTransform
from mjvec.errors import ConfigError
from mjvec.xp import Rows
from mjvec.xp import copy_array as _copy

__all__ = ["TransformHooksMixin", "Transforms", "copy_obs", "merge_rows"]

ActionTransform = Callable[[Any], Any]


class Transforms:
    """One env's transforms, in the order added, and the observation it returned last.

    actions / observations: the callables (see `TransformHooksMixin`). last_obs: the last returned
    observation (a copy, kept only while observation transforms exist): the rows a partial reset
    returns for the envs it does not reset.
    """

    def __init__(self) -> None:
        self.actions: list[ActionTransform] = []
        self.observations: list[ObsTransform] = []
        self.last_obs: Any = None

    def on_actions(self, actions: Any) -> Any:
        for transform in self.actions:
            actions = transform(actions)
        return actions

    def on_observation(self, obs: Any, event: ObsEvent, previous: Any, num_envs: int) -> Any:
        """The task's obs through the observation transforms. For a reset (``event.stepped`` False)
        of some envs, the other rows come from `previous` (the obs they returned last)."""
        if not self.observations:
            return obs
        for transform in self.observations:
            obs = transform(obs, event)
        if not event.stepped and previous is not None and (event.reset.dense or event.reset.size < num_envs):
            obs = merge_rows(previous, obs, event.reset)
        return obs

    def remember(self, obs: Any) -> None:
        """Keep a copy of the returned `obs` while observation transforms exist."""
        self.last_obs = copy_obs(obs) if self.observations else None


class TransformHooksMixin:
    """Observation / action transforms and `hook_registrations`, over the env's declared
    ``transforms`` (`Transforms`), ``lifecycle`` (`mjvec.contract.Lifecycle`) and ``slots``
    (`mjvec.contract.HookSlots`)."""

    transforms: Transforms
    lifecycle: Lifecycle
    slots: HookSlots

    def add_action_transform(self, fn: ActionTransform) -> Callable[[], None]:
        """Apply `fn` to every validated (N, A) action batch (the state's namespace) before `_apply_action`.

        Transforms run in the order added (e.g. an action-delay queue), only for steps that run (a
        refused step never reaches them). Returns an unsubscribe.
        """
        return _subscribe(self.transforms.actions, fn)

    def add_observation_transform(self, fn: ObsTransform) -> Callable[[], None]:
        """Apply `fn(obs, event)` to the observation of reset() and step(), in the order added.

        event: an `ObsEvent` (``stepped`` and the ``reset`` rows that start an episode; see its
        docstring). The transform sees the task's fresh obs in the state's namespace (a dict for
        dict spaces) and returns one of the same layout, before any output conversion. On a reset
        only the ``event.reset`` rows are used; the others are returned as they were last. SAME_STEP's
        ``final_obs`` is a stepped batch through the transforms. Returns an unsubscribe function.
        """
        return _subscribe(self.transforms.observations, fn)

    def hook_registrations(self) -> dict[str, int]:
        """How many wrapper callbacks are registered, by kind: lifecycle subscribers per event,
        observation and action transforms, and the filled task slots (all 0 once every wrapper
        around this env is closed)."""
        counts = {f"lifecycle.{event}": self.lifecycle.num_subscribers(event) for event in EVENTS}
        counts["observation_transforms"] = len(self.transforms.observations)
        counts["action_transforms"] = len(self.transforms.actions)
        counts.update({f"slot.{name}": filled for name, filled in self.slots.counts().items()})
        return counts

    @property
    def observation_layouts(self) -> dict[str | None, tuple[tuple[str, int], ...]]:
        """The named blocks of the observation, per key (None: a Box observation), from the task's
        class attributes: ``policy_layout`` for a Box observation, and ``<key>_layout`` for each key
        of a Dict one (``policy_layout``, ``critic_layout``, ...). Observation noise addresses blocks
        through it (`mjvec.contract.ObservationLayoutHooks`)."""
        space = self.single_observation_space
        if isinstance(space, gym.spaces.Dict):
            return {key: getattr(self, f"{key}_layout") for key in space.spaces if hasattr(self, f"{key}_layout")}
        return {None: self.policy_layout} if hasattr(self, "policy_layout") else {}


def _subscribe(callbacks: list, fn: Callable) -> Callable[[], None]:
    if not callable(fn):
        raise ConfigError(f"a transform must be callable, got {fn!r}")
    callbacks.append(fn)

    def unsubscribe() -> None:
        if fn in callbacks:
            callbacks.remove(fn)

    return unsubscribe


def copy_obs(obs: Any) -> Any:
    """A deep copy of an observation (arrays of either namespace, or a dict of them)."""
    if isinstance(obs, Mapping):
        return {k: copy_obs(v) for k, v in obs.items()}
    return _copy(obs)


def merge_rows(previous: Any, fresh: Any, rows: Rows) -> Any:
    """A copy of `previous` with the selection's rows taken from `fresh` (recursing into dicts)."""
    if isinstance(previous, Mapping):
        return {k: merge_rows(previous[k], fresh[k], rows) for k in previous}
    out = _copy(previous)
    rows.put(out, rows.take(fresh))
    return out
