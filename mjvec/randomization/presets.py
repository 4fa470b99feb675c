"""Named randomization settings and the `randomization=` argument of `gym.make_vec`.

Each task declares its own presets when it is registered (`mjvec.envs.tasks.register_task`), so
``randomization="paper"`` means each task's own; this module holds SimToolReal-v0's and the
argument checks every task shares.

`paper` (SimToolReal-v0's): exactly what the SimToolReal authors' training run turns on: grasp-box scale noise
U(0.9, 1.1) per reset, object-pose latency 0-9 steps with N(0, 1 cm) position noise and U(-5, 5)
deg rotation noise about a positive-octant axis, joint-velocity observation noise N(0, 0.1),
observation delay 0-2 steps, action delay 0-2 steps (the three delay queues refilled at every new
goal segment, as the source's), random pushes (independent force and torque, each with its own
p ~ log-U(0.001, 0.1) per env and reset, force N(0,1)^3 x m x 20, torque N(0,1)^3 x m x 2, only when
lifted, m the paper run's env-0 tool mass for every env). Physics-parameter DR is off in the
source and so here. The source's +-1 cm table-height DR is not included (the spec lists it as a
simplification; a moved world geom would also need its BVH widened).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence

from gymnasium.vector import VectorEnv

from mjvec.errors import ConfigError, allowed
from mjvec.randomization.model_dr import DomainRandomization
from mjvec.randomization.object_dr import ObjectPoseLatency, ObjectScaleNoise, RandomPushes
from mjvec.randomization.perception import ActionDelay, ObservationDelay, ObservationNoise
from mjvec.randomization.terms import EventTerm

PRESETS = ("paper",)  # SimToolReal-v0's; each task declares its own (mjvec.envs.tasks.register_task)


def paper(env: VectorEnv) -> VectorEnv:
    """Wrap `env` with the paper's randomization (see the module docstring)."""
    env = ObjectScaleNoise(env, 0.9, 1.1)
    env = ObjectPoseLatency(env, max_delay=9, pos_std=0.01, rot_deg=5.0, refill_on_goal=True)
    env = ObservationNoise(env, "joint_vel", 0.1)  # before the delay: the source delays the noisy obs
    env = ObservationDelay(env, max_delay=2, refill_on_goal=True)
    env = ActionDelay(env, max_delay=2, refill_on_goal=True)
    return RandomPushes(env, prob_range=(0.001, 0.1), force_scale=20.0, torque_scale=2.0, mass_scale="reference")


def check_randomization(randomization: object, presets: Collection[str] | None = PRESETS) -> None:
    """Raise ConfigError unless `randomization` is None, a name in `presets` or a sequence of EventTerm.

    presets: the preset names allowed (default: SimToolReal-v0's); None accepts any str, for a
    caller that checks names against a task's own presets itself.
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
    """`None` -> env; a preset name -> that preset of `presets` (default: {"paper": `paper`},
    SimToolReal-v0's); a sequence of EventTerms -> DomainRandomization."""
    presets = {"paper": paper} if presets is None else presets
    check_randomization(randomization, tuple(presets))
    if randomization is None:
        return env
    if isinstance(randomization, str):
        return presets[randomization](env)
    return DomainRandomization(env, list(randomization))
