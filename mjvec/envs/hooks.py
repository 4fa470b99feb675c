"""The wrapper hooks of `MjVecEnv` that are not model fields (a mixin): observation and action
transforms and the count of every registered callback (`mjvec.contract.EnvHooks`).

Uses ``_action_transforms``, ``_obs_transforms``, ``_slots`` and ``lifecycle``, set by
`MjVecEnv.__init__`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from mjvec.contract import EVENTS, ObsTransform
from mjvec.errors import ConfigError

__all__ = ["TransformHooksMixin"]


class TransformHooksMixin:
    """Observation / action transforms and `hook_registrations` (see each method)."""

    def add_action_transform(self, fn: Callable[[np.ndarray], np.ndarray]) -> Callable[[], None]:
        """Apply `fn` to every validated (N, A) action batch (the state's namespace) before `_apply_action`.

        Transforms run in the order added (e.g. an action-delay queue), only for steps that run (a
        refused step never reaches them). Returns an unsubscribe.
        """
        return _subscribe(self._action_transforms, fn)

    def add_observation_transform(self, fn: ObsTransform) -> Callable[[], None]:
        """Apply `fn(obs, event)` to the numpy observation of reset() and step(), in the order added.

        event: an `ObsEvent` (``stepped`` and the ``reset`` rows that start an episode; see its
        docstring). The transform sees the task's fresh obs in the state's namespace (a dict for
        dict spaces) and returns one of the same layout, before any output conversion. On a reset
        only the ``event.reset`` rows are used; the others are returned as they were last. SAME_STEP's
        ``final_obs`` is a stepped batch through the transforms. Returns an unsubscribe function.
        """
        return _subscribe(self._obs_transforms, fn)

    def hook_registrations(self) -> dict[str, int]:
        """How many wrapper callbacks are registered, by kind: lifecycle subscribers per event,
        observation and action transforms, and the filled task slots (all 0 once every wrapper
        around this env is closed)."""
        counts = {f"lifecycle.{event}": self.lifecycle.num_subscribers(event) for event in EVENTS}
        counts["observation_transforms"] = len(self._obs_transforms)
        counts["action_transforms"] = len(self._action_transforms)
        counts.update({f"slot.{name}": filled for name, filled in self._slots.counts().items()})
        return counts


def _subscribe(callbacks: list, fn: Callable) -> Callable[[], None]:
    if not callable(fn):
        raise ConfigError(f"a transform must be callable, got {fn!r}")
    callbacks.append(fn)

    def unsubscribe() -> None:
        if fn in callbacks:
            callbacks.remove(fn)

    return unsubscribe
