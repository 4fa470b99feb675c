"""Model-field randomization terms: typed configs and pure term functions.

A term is an `EventTerm` config plus the pure function `term_values(rng, env_ids, defaults,
current, term, index)` that samples new values for the given envs. `defaults` are the backend's
read-only per-env defaults (what each env's own variant compiled to), so `scale` and `add` are
always taken from the compiled value and repeated resets never accumulate. Terms never write model
fields themselves: the `DomainRandomization` wrapper hands one batch of their writes to the
backend per event.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from mjvec.errors import ConfigError, allowed
from mjvec.rng import EnvRandom
from mjvec.rotations import rotate_by_axis_angle
from mjvec.xp import to_host

MODES = ("startup", "reset", "interval")
DISTRIBUTIONS = ("uniform", "log_uniform", "gaussian")
OPERATIONS = ("abs", "scale", "add")
# What a term's scale / add applies to: the compiled default, or the value the term just before it
# (same field, same event) made.
RELATIVE_TO = ("default", "previous")

# kind -> (field, tail columns written, entity the targets name). The column picks one component
# of a multi-valued field, e.g. the sliding coefficient of geom_friction.
KINDS: dict[str, tuple[str, tuple[int, ...] | None, str]] = {
    "body_mass": ("body_mass", None, "body"),
    "body_com": ("body_ipos", (0, 1, 2), "body"),
    # The principal inertia alone (the mass stays), one draw per body for its three axes.
    "body_inertia": ("body_inertia", None, "body"),
    "geom_friction": ("geom_friction", (0,), "geom"),
    "dof_damping": ("dof_damping", None, "dof"),
    "dof_armature": ("dof_armature", None, "dof"),
    "dof_frictionloss": ("dof_frictionloss", None, "dof"),
    "actuator_kp": ("actuator_gainprm", (0,), "actuator"),
    "actuator_kd": ("actuator_biasprm", (2,), "actuator"),
    "gravity": ("gravity", (0, 1, 2), "option"),
    # Primitive geoms only (mesh shapes are shared assets); mass and inertia stay as compiled.
    "geom_size": ("geom_size", (0, 1, 2), "geom"),
    "geom_height": ("geom_pos", (2,), "geom"),
    # Hinge and slide joints only: the joint's reference position (see mjvec.backends.fields).
    "qpos0": ("qpos0", None, "qpos"),
    # What cameras see (camera observations, mjvec.envs.cameras): a camera's pose and field of view
    # (depth and rendered images), colours, materials and lights (rendered images, and render()).
    "camera_pos": ("cam_pos", (0, 1, 2), "camera"),
    "camera_rotation": ("cam_quat", None, "camera"),  # a rotation vector (rad) in the camera's own frame
    "camera_fovy": ("cam_fovy", None, "camera"),
    "geom_rgba": ("geom_rgba", (0, 1, 2), "geom"),
    "material_rgba": ("mat_rgba", (0, 1, 2), "material"),
    "material_specular": ("mat_specular", None, "material"),
    "material_shininess": ("mat_shininess", None, "material"),
    "material_emission": ("mat_emission", None, "material"),
    "light_pos": ("light_pos", (0, 1, 2), "light"),
    "light_dir": ("light_dir", (0, 1, 2), "light"),
    "light_diffuse": ("light_diffuse", (0, 1, 2), "light"),
    "light_ambient": ("light_ambient", (0, 1, 2), "light"),
    "light_specular": ("light_specular", (0, 1, 2), "light"),
}
# Kinds whose values are colours or shading weights in [0, 1]: the sampled values are clipped to it.
UNIT_KINDS = frozenset({"geom_rgba", "material_rgba", "material_specular", "material_shininess", "material_emission",
                        "light_diffuse", "light_ambient", "light_specular"})
FOVY_RANGE = (0.0, 180.0)  # degrees, both ends excluded


def _real(label: str, what: str, value: object) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ConfigError(
            f"term {label!r}: {what} must be a real number (int or float), got {type(value).__name__} {value!r}"
        )
    return float(value)


def _targets(label: str, targets: object) -> tuple[str, ...]:
    if isinstance(targets, str):
        raise ConfigError(
            f"term {label!r}: targets must be a tuple of names or regex patterns, got the str {targets!r} "
            f"(which would be read as its characters); write targets=({targets!r},)"
        )
    try:
        out = tuple(targets)  # type: ignore[call-overload]
    except TypeError:
        raise ConfigError(
            f"term {label!r}: targets must be a tuple of names or regex patterns, got {type(targets).__name__} "
            f"{targets!r}"
        ) from None
    bad = [t for t in out if not isinstance(t, str) or not t]
    if bad:
        raise ConfigError(f"term {label!r}: every target must be a non-empty str (a name or regex), got {bad}")
    return out


def _interval(label: str, value: object) -> tuple[float, float]:
    problem = "interval_s must be a pair (min, max) of finite seconds with 0 < min <= max"
    if isinstance(value, (str, bytes)) or not isinstance(value, (tuple, list, np.ndarray)) or len(value) != 2:
        raise ConfigError(f"term {label!r}: {problem}, got {value!r}")
    lo, hi = (_real(label, f"interval_s[{i}]", v) for i, v in enumerate(value))
    if not (math.isfinite(lo) and math.isfinite(hi) and 0 < lo <= hi):
        raise ConfigError(f"term {label!r}: {problem}, got {value!r}")
    return lo, hi


@dataclass(frozen=True)
class EventTerm:
    """One model-field randomization.

    kind: what to randomize (a key of `KINDS`); it fixes the model field(s) written.
    targets: names or regular expressions (full match) of the bodies / geoms / joints (for dof
        kinds) / actuators / cameras / materials / lights to randomize; empty for `gravity`, which
        has no targets.
    Camera and visual kinds: "camera_pos" (m, the camera's position in its body's frame),
        "camera_rotation" (operation "add" only: a rotation vector in rad, each component drawn,
        turning the compiled orientation about the camera's own axes), "camera_fovy" (degrees; every
        env's value must stay in (0, 180), checked at construction); colours (rgb of "geom_rgba",
        "material_rgba", the light colours) and material weights are clipped to [0, 1]; a
        "light_dir" is renormalised.
    "body_inertia": a body's principal inertia alone (its mass stays), one draw per body applied to
        its three axes (MuJoCo Playground's LEAP cube randomization scales it so).
    low, high: the range (uniform, log_uniform) or (mean, std) for gaussian.
    operation: abs (value), scale (default x value), add (default + value).
    mode: startup (once, at the first reset), reset (before every reset of an env), interval
        (every `interval_s` = (min, max) seconds per env, sampled per env).
    recompute_inertia: body_mass only: scale body_inertia by the same factor as the mass, so
        the body's density distribution (and so its inertia) stays consistent with the new mass.
    relative_to: what scale / add apply to: "default" (each env's compiled value, so draws never
        accumulate) or "previous": the value the term just before it in the list made in the same
        event, which must write the same field for all of this term's targets in the same mode
        (startup or reset). E.g. Playground's Go1 torso mass, every mass x U(0.9, 1.1) and then the
        torso's + U(-1, 1) kg, is a scale term followed by an add term relative to it.
    name: label in `dr_params` and error messages (default: kind).
    """

    kind: str
    low: float
    high: float
    targets: tuple[str, ...] = ()
    operation: str = "scale"
    distribution: str = "uniform"
    mode: str = "reset"
    interval_s: tuple[float, float] | None = None
    recompute_inertia: bool = True
    relative_to: str = "default"
    name: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise ConfigError(f"EventTerm name must be a str, got {type(self.name).__name__} {self.name!r}")
        for what, value, choices in (
            ("kind", self.kind, KINDS),
            ("operation", self.operation, OPERATIONS),
            ("distribution", self.distribution, DISTRIBUTIONS),
            ("mode", self.mode, MODES),
            ("relative_to", self.relative_to, RELATIVE_TO),
        ):
            if not isinstance(value, str) or value not in choices:
                raise ConfigError(
                    f"term {self.name or self.kind!r}: {what} {value!r} is not one of {allowed(choices)}"
                )
        label = self.name or self.kind
        object.__setattr__(self, "name", label)
        object.__setattr__(self, "targets", _targets(label, self.targets))
        for what in ("low", "high"):
            object.__setattr__(self, what, _real(label, what, getattr(self, what)))
        if not isinstance(self.recompute_inertia, (bool, np.bool_)):
            raise ConfigError(
                f"term {label!r}: recompute_inertia must be True or False, got {self.recompute_inertia!r}"
            )
        if self.interval_s is not None:
            object.__setattr__(self, "interval_s", _interval(label, self.interval_s))
        if not (math.isfinite(self.low) and math.isfinite(self.high)):
            raise ConfigError(f"term {label!r}: range ({self.low}, {self.high}) must be finite")
        if self.distribution != "gaussian" and self.low > self.high:
            raise ConfigError(
                f"term {label!r} ({KINDS[self.kind][0]}): inverted range low={self.low} > high={self.high}; "
                "swap them"
            )
        if self.distribution == "gaussian" and self.high < 0:
            raise ConfigError(f"term {label!r}: gaussian std (high) must be >= 0, got {self.high}")
        if self.distribution == "log_uniform" and self.low <= 0:
            raise ConfigError(f"term {label!r}: log_uniform needs low > 0, got {self.low}")
        if self.kind == "gravity" and self.targets:
            raise ConfigError(f"term {label!r}: gravity has no targets; got {self.targets}")
        if self.kind != "gravity" and not self.targets:
            raise ConfigError(f"term {label!r} ({self.kind}): give targets (names or regex patterns)")
        if self.mode == "interval":
            if self.interval_s is None:
                raise ConfigError(
                    f"term {label!r}: mode 'interval' needs interval_s=(min, max) with 0 < min <= max, "
                    f"got {self.interval_s}"
                )
        elif self.interval_s is not None:
            raise ConfigError(f"term {label!r}: interval_s is only for mode 'interval' (mode is {self.mode!r})")
        if self.kind in ("body_mass", "geom_size", "body_inertia"):
            self._check_positive(label)
        if self.relative_to == "previous" and (self.mode == "interval" or self.operation == "abs"):
            raise ConfigError(
                f"term {label!r}: relative_to='previous' composes with the term before it in one event: it needs "
                f"mode 'startup' or 'reset' (each interval term keeps its own timer) and operation 'scale' or 'add' "
                f"(an abs value ignores what it is relative to); got mode {self.mode!r}, operation {self.operation!r}"
            )
        if self.kind in UNIT_KINDS and self.operation == "abs" and self.distribution != "gaussian" and \
                not 0.0 <= self.low <= self.high <= 1.0:
            raise ConfigError(
                f"term {label!r} ({self.field}): colours and material weights are in [0, 1]; an abs range "
                f"({self.low}, {self.high}) must lie in it"
            )
        if self.kind == "camera_rotation" and self.operation != "add":
            raise ConfigError(
                f"term {label!r} (camera_rotation): operation must be 'add' (a rotation drawn in rad and applied to "
                f"the compiled orientation), got {self.operation!r}"
            )

    def _check_positive(self, label: str) -> None:
        lowest = self.low if self.distribution != "gaussian" else -math.inf
        what = {"body_mass": "masses", "body_inertia": "inertias"}.get(self.kind, "sizes")
        if self.operation in ("abs", "scale") and lowest <= 0:
            raise ConfigError(
                f"term {label!r} ({self.field}): {self.operation} range must stay > 0 (low={self.low}"
                f"{', gaussian is unbounded' if self.distribution == 'gaussian' else ''}); {what} must be positive"
            )

    @property
    def field(self) -> str:
        return KINDS[self.kind][0]

    @property
    def entity(self) -> str:
        return KINDS[self.kind][2]


def sample(rng: EnvRandom, env_ids: np.ndarray, term: EventTerm, shape: tuple[int, ...]) -> np.ndarray:
    """(K, *shape) host draws of the term's distribution on the term's own stream (model fields are
    written from the host, so draws made on a device come back to it)."""
    stream = f"dr/{term.name}"
    if term.distribution == "uniform":
        return to_host(rng.uniform(env_ids, stream, term.low, term.high, shape))
    if term.distribution == "log_uniform":
        return to_host(rng.log_uniform(env_ids, stream, term.low, term.high, shape))
    return term.low + term.high * to_host(rng.normal(env_ids, stream, shape))


def apply_operation(default: np.ndarray, draw: np.ndarray, operation: str) -> np.ndarray:
    """The new value from the compiled default and a draw."""
    if operation == "abs":
        return draw
    if operation == "scale":
        return default * draw
    return default + draw


def term_values(
    rng: EnvRandom,
    env_ids: np.ndarray,
    defaults: Mapping[str, np.ndarray],
    current: Mapping[str, np.ndarray],
    term: EventTerm,
    index: np.ndarray,
) -> tuple[list[tuple[str, np.ndarray]], np.ndarray]:
    """Sample `term` for `env_ids`; returns ([(field, new values at index)], draws).

    defaults[f] / current[f]: (K, *tail) rows of env_ids: the compiled defaults (what scale/add
    apply to) and the values in effect now (what the columns a term does not randomize keep).
    New values are (K, M, ...) at `index` (the resolved target ids), or (K, 3) for gravity.
    draws: (K, M) or (K, M, C) or (K, 3), the raw samples, for `dr_params`.
    """
    draw = sample(rng, env_ids, term, draw_shape(term, index))
    return values_from_draw(defaults, current, term, index, draw), draw


def draw_shape(term: EventTerm, index: np.ndarray) -> tuple[int, ...]:
    """The per-env shape of a term's draws for resolved target ids `index`."""
    columns = KINDS[term.kind][1]
    if term.kind == "gravity":
        return (3,)
    if term.kind == "camera_rotation":
        return (index.size, 3)
    return (index.size,) if columns is None else (index.size, len(columns))


def values_from_draw(
    defaults: Mapping[str, np.ndarray],
    current: Mapping[str, np.ndarray],
    term: EventTerm,
    index: np.ndarray,
    draw: np.ndarray,
) -> list[tuple[str, np.ndarray]]:
    """[(field, new values at index)] of `term` for given draws (see `term_values`). A term
    ``relative_to="previous"`` applies its operation to `current` (what the term before it made)."""
    field, columns, _ = KINDS[term.kind]
    base = current if term.relative_to == "previous" else defaults
    if term.kind == "gravity":
        return [(field, apply_operation(base[field], draw, term.operation))]
    default = defaults[field][:, index]
    if term.kind == "camera_rotation":
        half = 0.5 * np.sqrt((draw * draw).sum(axis=-1))
        return [(field, rotate_by_axis_angle(default, draw, half))]
    if term.kind == "body_inertia":
        draw = draw[..., None]
    if columns is None:
        new = apply_operation(base[field][:, index], draw, term.operation)
    else:
        new = current[field][:, index].copy()
        cols = list(columns)
        # actuator_kd lives in biasprm as -kd: randomize kd itself, then store its negative.
        sign = -1.0 if term.kind == "actuator_kd" else 1.0
        new[..., cols] = sign * apply_operation(sign * base[field][:, index][..., cols], draw, term.operation)
    if term.kind in UNIT_KINDS:
        new = np.clip(new, 0.0, 1.0)
    elif term.kind == "light_dir":
        new = new / np.maximum(np.sqrt((new * new).sum(axis=-1, keepdims=True)), 1e-12)
    out = [(field, new)]
    if term.kind == "body_mass" and term.recompute_inertia:
        # Same shape and density distribution scaled by the mass ratio: inertia scales alike.
        out.append(("body_inertia", defaults["body_inertia"][:, index] * (new / default)[..., None]))
    elif term.kind == "actuator_kp":
        # A position actuator's force is kp*(ctrl - q): gain kp and bias -kp move together.
        bias = current["actuator_biasprm"][:, index].copy()
        bias[..., 1] = -new[..., 0]
        out.append(("actuator_biasprm", bias))
    return out


def coupled_fields(term: EventTerm) -> tuple[str, ...]:
    """Every model field a term writes (for capability checks at construction)."""
    extra: dict[str, tuple[str, ...]] = {"body_mass": ("body_inertia",) if term.recompute_inertia else ()}
    extra["actuator_kp"] = ("actuator_biasprm",)
    return (term.field, *extra.get(term.kind, ()))


