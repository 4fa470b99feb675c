"""Domain randomization as Gymnasium vector wrappers that emit backend field writes."""

from typing import Any

from mjvec._moved import moved_attribute
from mjvec.contract import (
    BackendHooks,
    EnvHooks,
    GoalSegmentHooks,
    ObjectPoseHooks,
    ObjectScaleHooks,
    ObservationLayoutHooks,
    ObsEvent,
    PushHooks,
    PushReferenceMassHooks,
)
from mjvec.randomization.inputs import StateInput
from mjvec.randomization.model_dr import DomainRandomization, resolve_targets
from mjvec.randomization.object_dr import MASS_SCALES, ObjectPoseLatency, ObjectScaleNoise, RandomPushes
from mjvec.randomization.perception import ActionDelay, ObservationDelay, ObservationNoise
from mjvec.randomization.presets import apply_randomization, check_randomization
from mjvec.randomization.terms import (
    DISTRIBUTIONS,
    KINDS,
    MODES,
    OPERATIONS,
    EventTerm,
    term_values,
)
from mjvec.randomization.wrapper import HookWrapper

__all__ = [
    "DISTRIBUTIONS",
    "KINDS",
    "MASS_SCALES",
    "MODES",
    "OPERATIONS",
    "ActionDelay",
    "BackendHooks",
    "DomainRandomization",
    "EnvHooks",
    "EventTerm",
    "GoalSegmentHooks",
    "HookWrapper",
    "ObjectPoseHooks",
    "ObjectPoseLatency",
    "ObjectScaleHooks",
    "ObjectScaleNoise",
    "ObsEvent",
    "ObservationDelay",
    "ObservationLayoutHooks",
    "ObservationNoise",
    "PushHooks",
    "PushReferenceMassHooks",
    "RandomPushes",
    "StateInput",
    "apply_randomization",
    "check_randomization",
    "resolve_targets",
    "term_values",
]


# SimToolReal-v0's preset and its table-height term, which moved to the task's package.
_MOVED = {"paper": "mjvec.tasks.simtoolreal.presets", "table_height": "mjvec.tasks.simtoolreal.presets"}


def __getattr__(name: str) -> Any:
    return moved_attribute(__name__, name, _MOVED)
