"""Domain randomization as Gymnasium vector wrappers that emit backend field writes."""

from mjvec.randomization.model_dr import DomainRandomization, resolve_targets
from mjvec.randomization.terms import DISTRIBUTIONS, KINDS, MODES, OPERATIONS, EventTerm, term_values

__all__ = [
    "DISTRIBUTIONS",
    "KINDS",
    "MODES",
    "OPERATIONS",
    "DomainRandomization",
    "EventTerm",
    "resolve_targets",
    "term_values",
]
