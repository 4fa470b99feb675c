"""Domain randomization as Gymnasium vector wrappers that emit backend field writes."""

from mjvec.randomization.hooks import (
    EnvHooks,
    GoalSegmentHooks,
    HookWrapper,
    ObjectPoseHooks,
    ObjectScaleHooks,
    ObsEvent,
    PolicyLayoutHooks,
    PushHooks,
    PushReferenceMassHooks,
)
from mjvec.randomization.inputs import StateInput
from mjvec.randomization.model_dr import DomainRandomization, resolve_targets
from mjvec.randomization.object_dr import MASS_SCALES, ObjectPoseLatency, ObjectScaleNoise, RandomPushes
from mjvec.randomization.perception import ActionDelay, ObservationDelay, ObservationNoise
from mjvec.randomization.presets import PRESETS, apply_randomization, check_randomization, paper
from mjvec.randomization.terms import (
    DISTRIBUTIONS,
    KINDS,
    MODES,
    OPERATIONS,
    EventTerm,
    table_height,
    term_values,
)

__all__ = [
    "DISTRIBUTIONS",
    "KINDS",
    "MASS_SCALES",
    "MODES",
    "OPERATIONS",
    "PRESETS",
    "ActionDelay",
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
    "ObservationNoise",
    "PolicyLayoutHooks",
    "PushHooks",
    "PushReferenceMassHooks",
    "RandomPushes",
    "StateInput",
    "apply_randomization",
    "check_randomization",
    "paper",
    "resolve_targets",
    "table_height",
    "term_values",
]
