"""The `randomization=` argument of `gym.make_vec`: its checks and how it wraps an env.

Each task declares its own named presets when it is registered (`mjvec.envs.registry.register_task`),
in its own package (e.g. `mjvec.tasks.simtoolreal.presets`), so ``randomization="paper"`` means
each task's own.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence

from gymnasium.vector import VectorEnv

from mjvec.errors import ConfigError, allowed
from mjvec.randomization.model_dr import DomainRandomization
from mjvec.randomization.terms import EventTerm


def check_randomization(randomization: object, presets: Collection[str] | None = None) -> None:
    """Raise ConfigError unless `randomization` is None, a name in `presets` or a sequence of EventTerm.

    presets: the preset names allowed; None accepts any str, for a caller that checks names against
    a task's own presets itself.
    """
    names = "one of the task's presets" if presets is None else f"a preset name ({allowed(presets)})"
    if randomization is None:
        return
    if isinstance(randomization, str):
        if presets is not None and randomization not in presets:
            raise ConfigError(f"randomization={randomization!r} is not a preset; allowed are {allowed(presets)}, "
                              "None, or a list of EventTerm")
        return
    if not isinstance(randomization, Sequence) or isinstance(randomization, bytes):
        raise ConfigError(
            f"randomization must be None, {names} or a sequence of EventTerm; got "
            f"{type(randomization).__name__} {randomization!r}"
            + ("; wrap a single term in a list: randomization=[term]" if isinstance(randomization, EventTerm) else "")
        )
    bad = [f"{i}: {type(t).__name__}" for i, t in enumerate(randomization) if not isinstance(t, EventTerm)]
    if bad:
        raise ConfigError(
            f"randomization must be None, {names} or a list of EventTerm; entries {bad[:8]} are not EventTerm"
        )


def apply_randomization(
    env: VectorEnv,
    randomization: str | Sequence[EventTerm] | None,
    presets: Mapping[str, Callable[[VectorEnv], VectorEnv]] | None = None,
) -> VectorEnv:
    """`None` -> env; a preset name -> that preset of `presets` (the task's); a sequence of
    EventTerms -> DomainRandomization."""
    presets = {} if presets is None else presets
    check_randomization(randomization, tuple(presets))
    if randomization is None:
        return env
    if isinstance(randomization, str):
        return presets[randomization](env)
    return DomainRandomization(env, list(randomization))
