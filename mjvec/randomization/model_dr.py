"""`DomainRandomization`: model-field randomization as a Gymnasium vector wrapper.

Construction validates every term against the backend's declared capabilities and the model's
names (fail closed: an undeclared field, an identity field, an unknown target or an impossible
range raises here, before the first step). Then the wrapper subscribes to the env's lifecycle:

- startup: startup terms for every env, once;
- reset(env_ids): reset terms for exactly those envs, BEFORE their state reset (every path:
  reset(), reset_mask, NEXT_STEP / SAME_STEP autoreset, sim-error resets);
- interval(dt): interval terms for the envs whose own timer ran out; each env's next period is
  drawn from `interval_s`.

Each event hands the backend ONE `write_fields` batch (so one recompute for the envs concerned).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import mujoco
import numpy as np
from gymnasium.vector import VectorEnv, VectorWrapper

from mjvec.backends.base import FieldWrite
from mjvec.contract import BackendHooks, EnvHooks, require_hooks
from mjvec.errors import ConfigError, FieldWriteError, allowed
from mjvec.randomization.terms import (
    FOVY_RANGE,
    EventTerm,
    apply_operation,
    coupled_fields,
    draw_shape,
    term_values,
    values_from_draw,
)
from mjvec.randomization.wrapper import HookWrapper, WrapperEffect
from mjvec.xp import Rows, to_host

_OBJ = {
    "body": mujoco.mjtObj.mjOBJ_BODY,
    "geom": mujoco.mjtObj.mjOBJ_GEOM,
    "actuator": mujoco.mjtObj.mjOBJ_ACTUATOR,
    "joint": mujoco.mjtObj.mjOBJ_JOINT,
    "camera": mujoco.mjtObj.mjOBJ_CAMERA,
    "material": mujoco.mjtObj.mjOBJ_MATERIAL,
    "light": mujoco.mjtObj.mjOBJ_LIGHT,
}
_COUNT = {"body": "nbody", "geom": "ngeom", "actuator": "nu", "joint": "njnt", "camera": "ncam", "material": "nmat",
          "light": "nlight"}


def _names(model: mujoco.MjModel, entity: str) -> list[str]:
    return [mujoco.mj_id2name(model, _OBJ[entity], i) or "" for i in range(getattr(model, _COUNT[entity]))]


def resolve_targets(model: mujoco.MjModel, term: EventTerm) -> np.ndarray:
    """Sorted unique ids (body/geom/dof/actuator) the term's target patterns name.

    A pattern matches a name when it equals it or fully matches it as a regular expression. Dof
    kinds name joints; a joint contributes all of its dofs. The qpos0 kind names hinge or slide
    joints (a ball's or free joint's entries are a unit quaternion); each contributes its one qpos
    entry. A pattern matching nothing raises.
    """
    if term.entity == "option":
        return np.zeros(0, np.int64)
    lookup = "joint" if term.entity in ("dof", "qpos") else term.entity
    names = _names(model, lookup)
    ids: set[int] = set()
    for pattern in term.targets:
        try:
            regex = re.compile(pattern)
        except re.error as error:
            raise ConfigError(f"term {term.name!r}: target {pattern!r} is not a valid regex ({error})") from error
        hits = [i for i, n in enumerate(names) if n and (n == pattern or regex.fullmatch(n))]
        if not hits:
            raise ConfigError(
                f"term {term.name!r} ({term.field}): target {pattern!r} matches no {lookup}; "
                f"{lookup} names are {allowed([n for n in names if n])}"
            )
        ids.update(hits)
    if term.entity == "qpos":
        return _scalar_joint_qpos(model, term, sorted(ids))
    if term.entity != "dof":
        return np.array(sorted(ids), np.int64)
    dofs: list[int] = []
    for j in sorted(ids):
        width = {0: 6, 1: 3, 2: 1, 3: 1}[int(model.jnt_type[j])]
        dofs.extend(range(model.jnt_dofadr[j], model.jnt_dofadr[j] + width))
    return np.array(dofs, np.int64)


def _scalar_joint_qpos(model: mujoco.MjModel, term: EventTerm, joints: list[int]) -> np.ndarray:
    """The qpos entries of hinge / slide `joints`; ConfigError naming any other joint."""
    scalar = (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))
    bad = [j for j in joints if int(model.jnt_type[j]) not in scalar]
    if bad:
        names = [mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, j) or f"joint {j}" for j in bad]
        ok = [n for j in range(model.njnt) if int(model.jnt_type[j]) in scalar
              and (n := mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, j))]
        raise ConfigError(
            f"term {term.name!r} (qpos0): targets {term.targets} match the free or ball joints {names}, whose qpos0 "
            f"is a position and unit quaternion, not an angle to offset; target hinge or slide joints: {allowed(ok)}"
        )
    return np.array(sorted(int(model.jnt_qposadr[j]) for j in joints), np.int64)


class DomainRandomization(HookWrapper, VectorWrapper):
    """Randomize model fields on lifecycle events (see the module docstring).

    env: an mjvec env (or a wrapper of one); its `unwrapped` must implement `EnvHooks` and
        `BackendHooks` (`mjvec.contract`).
    terms: the EventTerms; names must be unique.
    `dr_params[name]` holds each env's latest draw of each term ((num_envs, M) or (num_envs, M, C);
    NaN until first sampled), for logging and privileged observations.
    """

    def __init__(self, env: VectorEnv, terms: Sequence[EventTerm]) -> None:
        super().__init__(env)
        base = require_hooks(env, EnvHooks, BackendHooks, who="DomainRandomization")
        self._backend = base.backend
        self._rng = base.rng
        self._terms = tuple(terms)
        names = [t.name for t in self._terms]
        if len(set(names)) != len(names):
            raise ConfigError(f"term names must be unique; got {names}. Give each term a distinct name=")
        caps = self._backend.capabilities
        self._index: dict[str, np.ndarray] = {}
        for term in self._terms:
            if not isinstance(term, EventTerm):
                raise ConfigError(f"terms must be EventTerm instances, got {type(term).__name__}")
            for field in coupled_fields(term):
                caps.require(field, what=f"term {term.name!r} field")
            self._index[term.name] = resolve_targets(self._backend.model, term)
            self._check_relative(term)
            self._check_mass_targets(term)
            self._check_add_keeps_mass_positive(term)
            self._check_primitive(term)
            self._check_geometry_reach(term)
            self._check_fovy_reach(term)
        n = self._backend.num_envs
        # Every term's latest draw per env; NaN until the env's first draw of that term.
        self.dr_params: dict[str, np.ndarray] = {
            t.name: np.full((n, *draw_shape(t, self._index[t.name])), np.nan) for t in self._terms}
        self._timers = np.full((len(self._terms), n), np.inf)
        self._register(lambda: base.lifecycle.subscribe("startup", self._on_startup),
                       lambda: base.lifecycle.subscribe("reset", self._on_reset),
                       lambda: base.lifecycle.subscribe("interval", self._on_interval))

    @property
    def terms(self) -> tuple[EventTerm, ...]:
        return self._terms

    def describe(self) -> WrapperEffect:
        """The model-field terms, each as its `EventTerm` fields."""
        terms = [{"name": t.name, "kind": t.kind, "low": t.low, "high": t.high, "targets": list(t.targets),
                  "operation": t.operation, "distribution": t.distribution, "mode": t.mode,
                  "interval_s": None if t.interval_s is None else list(t.interval_s)} for t in self._terms]
        return WrapperEffect("model", "model", {"terms": terms})

    def per_env_bytes(self) -> int:
        """Each term's draws (`dr_params`, float64) and timer, and the backend's per-env rows of each
        field written (its staged copy and the engine's own row)."""
        specs = self._backend.capabilities.fields
        total = 0
        for term in self._terms:
            index = self._index[term.name]
            total += 8 * int(np.prod(draw_shape(term, index))) + 8
            for name in coupled_fields(term):
                total += 2 * 8 * int(np.prod(specs[name].shape))
        return total

    def _check_relative(self, term: EventTerm) -> None:
        """A term relative to the previous one composes with it in the same event: the term before it
        must write the same field, in the same mode, for every one of its targets."""
        if term.relative_to != "previous":
            return
        k = self._terms.index(term)
        before = self._terms[k - 1] if k else None
        problem = None
        if before is None:
            problem = "it is the first term"
        elif before.field != term.field or before.mode != term.mode:
            problem = f"the term before it, {before.name!r}, writes {before.field} in mode {before.mode!r}"
        elif not np.isin(self._index[term.name], self._index[before.name]).all():
            problem = f"the term before it, {before.name!r}, does not cover all of its targets {term.targets}"
        if problem is not None:
            raise ConfigError(
                f"term {term.name!r} ({term.field}, relative_to='previous'): {problem}; put it right after a term "
                f"that writes {term.field} in mode {term.mode!r} for all of its targets, or use relative_to='default'"
            )

    def _check_primitive(self, term: EventTerm) -> None:
        if term.kind != "geom_size":
            return
        model = self._backend.model
        # Every env's own variant: a slot may be a box in one tool and a mesh in another.
        types = self._backend.geom_types[:, self._index[term.name]]
        fixed = [mujoco.mjtGeom.mjGEOM_MESH, mujoco.mjtGeom.mjGEOM_SDF, mujoco.mjtGeom.mjGEOM_HFIELD,
                 mujoco.mjtGeom.mjGEOM_PLANE]
        mesh = [mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_GEOM, int(g))
                for g, column in zip(self._index[term.name], types.T, strict=True) if np.isin(column, fixed).any()]
        if mesh:
            raise ConfigError(
                f"term {term.name!r} (geom_size): targets {mesh} are mesh/plane/hfield geoms, whose shape cannot "
                "be resized per env; target primitive geoms (box, capsule, ...) or use tool_geometry='primitive'"
            )

    def _check_geometry_reach(self, term: EventTerm) -> None:
        """A geometry term must be writable at both ends of its range, in every env, before the
        first step (primitive geoms, positive sizes, bodies whose COM may move): the backend
        dry-runs those writes."""
        if term.kind not in ("geom_size", "geom_height", "body_com"):
            return
        if term.kind == "geom_size" and term.operation == "add" and term.distribution == "gaussian":
            # The dry run below can try a gaussian's mean only, and its draws reach any value.
            raise ConfigError(
                f"term {term.name!r} (geom_size): an add of a gaussian (mean {term.low}, std {term.high}) is unbounded "
                "and can make a size <= 0 in some draw; sizes must be positive: use distribution='uniform' with an "
                "add range that keeps every size positive, or operation='scale'"
            )
        be, index = self._backend, self._index[term.name]
        ids = np.arange(be.num_envs)
        values = {f: be.defaults(f) for f in coupled_fields(term)}
        # A gaussian's (low, high) are (mean, std): its mean is the one value every draw is near.
        for end in (term.low,) if term.distribution == "gaussian" else (term.low, term.high):
            draw = np.full((ids.size, *draw_shape(term, index)), float(end))
            writes = [FieldWrite(f, ids, index, new) for f, new in values_from_draw(values, values, term, index, draw)]
            try:
                be.check_writes(writes)
            except FieldWriteError as error:
                raise ConfigError(f"term {term.name!r} ({term.field}) at its range end {end}: {error}") from error

    def _check_fovy_reach(self, term: EventTerm) -> None:
        """A field-of-view term must keep every env's fovy inside (0, 180) degrees at both ends of
        its range (a gaussian is unbounded: refused unless it adds nothing)."""
        if term.kind != "camera_fovy":
            return
        low, high = FOVY_RANGE
        if term.distribution == "gaussian":
            raise ConfigError(
                f"term {term.name!r} (camera_fovy): a gaussian draw is unbounded and can leave (0, 180) degrees; use "
                "distribution='uniform' or 'log_uniform'"
            )
        default = self._backend.defaults("cam_fovy")[:, self._index[term.name]]
        for end in (term.low, term.high):
            value = apply_operation(default, np.float64(end), term.operation)
            if not ((value > low) & (value < high)).all():
                raise ConfigError(
                    f"term {term.name!r} (camera_fovy) at its range end {end} ({term.operation}) gives fields of view "
                    f"from {value.min():.4g} to {value.max():.4g} degrees; every one must stay in ({low:g}, {high:g})"
                )

    def _check_mass_targets(self, term: EventTerm) -> None:
        """A mass term's targets must have mass in every env: a massless body (the world, a mocap
        body such as a goal marker, an empty frame) has no mass to scale and no inertia to rescale."""
        if term.kind != "body_mass":
            return
        index = self._index[term.name]
        massless = index[(self._backend.defaults("body_mass")[:, index] <= 0).any(axis=0)]
        if massless.size:
            model = self._backend.model
            names = [mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, int(b)) or f"body {int(b)}" for b in massless]
            massive = np.flatnonzero((self._backend.defaults("body_mass") > 0).all(axis=0))
            keep = [n for b in massive if (n := mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, int(b)))]
            raise ConfigError(
                f"term {term.name!r} (body_mass): targets {term.targets} match massless bodies {allowed(names)} "
                "(compiled mass 0 in some env: the world, mocap or frame bodies); their mass cannot be scaled "
                "and their inertia would become NaN. Fix: target only bodies with mass; bodies with mass in "
                f"every env are {allowed(keep)}"
            )

    def _check_add_keeps_mass_positive(self, term: EventTerm) -> None:
        if term.kind != "body_mass" or term.operation != "add":
            return
        lowest = self._backend.defaults("body_mass")[:, self._index[term.name]].min()
        if term.relative_to == "previous":  # the least the term before it can leave (it is checked itself)
            before = self._terms[self._terms.index(term) - 1]
            lowest = {"scale": lowest * before.low, "add": lowest + before.low, "abs": before.low}[before.operation]
        lowest += term.low
        if term.distribution == "gaussian" or lowest <= 0:
            raise ConfigError(
                f"term {term.name!r} (body_mass): add range low={term.low} can make a mass <= 0 "
                f"(lowest default + low = {lowest:.4g}); masses must be positive"
            )

    def _writes(self, mode: str, env_ids: np.ndarray, which: np.ndarray | None = None) -> list[FieldWrite]:
        """One FieldWrite per field for this event's terms (`which[k]`: term k's subset of env_ids)."""
        active = [(k, t) for k, t in enumerate(self._terms) if t.mode == mode]
        if not active or env_ids.size == 0:
            return []
        fields = sorted({f for _, t in active for f in coupled_fields(t)})
        be = self._backend
        staged = {f: be.field_values(f, env_ids) for f in fields}
        touched: dict[str, tuple[np.ndarray, set[int]]] = {f: (np.zeros(env_ids.size, bool), set()) for f in fields}
        for k, term in active:
            rows = np.arange(env_ids.size) if which is None else np.flatnonzero(which[k])
            if rows.size == 0:
                continue
            ids = env_ids[rows]
            defaults = {f: be.defaults(f)[ids] for f in coupled_fields(term)}
            current = {f: staged[f][rows] for f in coupled_fields(term)}
            index = self._index[term.name]
            values, draw = term_values(self._rng, ids, defaults, current, term, index)
            for field, new in values:
                if index.size == 0:  # whole-tail field (gravity)
                    staged[field][rows] = new
                else:
                    staged[field][rows[:, None], index[None, :]] = new
                    touched[field][1].update(index.tolist())
                touched[field][0][rows] = True
            self.dr_params[term.name][ids] = draw
        writes = []
        for field, (rows_mask, entries) in touched.items():
            rows = np.flatnonzero(rows_mask)
            if rows.size == 0:
                continue
            if entries:
                index = np.array(sorted(entries), np.int64)
                writes.append(FieldWrite(field, env_ids[rows], index, staged[field][rows][:, index]))
            else:
                writes.append(FieldWrite(field, env_ids[rows], None, staged[field][rows]))
        return writes

    def _on_startup(self) -> None:
        writes = self._writes("startup", np.arange(self._backend.num_envs))
        if writes:
            self._backend.write_fields(writes)

    def _on_reset(self, rows: Rows) -> None:
        # Model fields are written from the host: on a device this reads the reset mask back
        # (model-field randomization is the one wrapper with a host round trip at resets).
        if not any(t.mode in ("reset", "interval") for t in self._terms):
            return
        env_ids = rows.host_ids()
        if not env_ids.size:
            return
        writes = self._writes("reset", env_ids)
        if writes:
            self._backend.write_fields(writes)
        for k, term in enumerate(self._terms):
            if term.mode == "interval":
                lo, hi = term.interval_s  # type: ignore[misc]
                self._timers[k, env_ids] = to_host(self._rng.uniform(env_ids, f"dr-timer/{term.name}", lo, hi))

    def _on_interval(self, dt: float) -> None:
        if not any(t.mode == "interval" for t in self._terms):
            return
        self._timers -= dt
        due = self._timers <= 0.0
        if not due.any():
            return
        env_ids = np.flatnonzero(due.any(axis=0))
        writes = self._writes("interval", env_ids, which=due[:, env_ids])
        if writes:
            self._backend.write_fields(writes)
        for k, term in enumerate(self._terms):
            fired = np.flatnonzero(due[k])
            if fired.size:
                lo, hi = term.interval_s  # type: ignore[misc]
                self._timers[k, fired] = to_host(self._rng.uniform(fired, f"dr-timer/{term.name}", lo, hi))

