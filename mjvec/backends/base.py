"""The backend contract every simulator backend implements.

A backend owns `num_envs` MuJoCo simulations of one `Scene` and is the ONLY place that writes
model fields. Everything above it (envs, randomization) talks to it through this module's types:

- `Scene`: what to simulate. `num_variants` independently compilable scene specs (one per tool)
  and the fixed assignment env -> variant (`(env_id_offset + i) % num_variants` unless given).
- `FieldSpec` / `Capabilities`: the writable model fields. Key presence in
  `Capabilities.fields` IS the capability; callers check it before the first step and fail closed.
- `FieldWrite`: one write of per-env values into a field, for a set of local env ids.
- `RecomputeLevel`: which derived constants a write invalidates. Levels combine as a set.

Env ids handed to a backend are LOCAL (0 .. num_envs-1). The global id of local env i is
`env_id_offset + i`; it fixes the variant and the env's random streams, so shards of one large
run keep their identity.
"""

from __future__ import annotations

import enum
import functools
import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

import mujoco
import numpy as np

from mjvec.backends.determinism import DETERMINISM
from mjvec.errors import ConfigError, allowed
from mjvec.validate import require_bool, require_int


class RecomputeLevel(enum.Flag):
    """Derived model constants a field write invalidates.

    `SET_CONST_FIXED` covers constants of the mass distribution (body_subtreemass, ...);
    `SET_CONST_0` covers those computed at qpos0 (invweight0s, dof_M0, actuator_acc0, ...).
    A write needing both needs the full `SET_CONST`, which is exactly their union: combine
    levels with `|` (see `combine_levels`), never with max().
    """

    NONE = 0
    SET_CONST_FIXED = enum.auto()
    SET_CONST_0 = enum.auto()
    SET_CONST = SET_CONST_FIXED | SET_CONST_0


def combine_levels(levels: Iterable[RecomputeLevel]) -> RecomputeLevel:
    """The union of `levels` (NONE for none)."""
    return functools.reduce(operator.or_, levels, RecomputeLevel.NONE)


# Fields that define which geometry a slot is or whether it collides. They are each env's own
# variant's (the BVHs, pair filters and mesh ids are built around them), so no backend ever
# declares them writable and every backend rejects them by name.
IDENTITY_FIELDS = frozenset({"geom_dataid", "geom_type", "geom_contype", "geom_conaffinity"})

# What the first axis of a field's per-env tail indexes, by the field's name prefix.
_ENTITY_OF_PREFIX = (
    ("body_", "body"),
    ("geom_", "geom"),
    ("dof_", "dof"),
    ("jnt_", "joint"),
    ("actuator_", "actuator"),
    ("site_", "site"),
    ("qpos0", "qpos"),
    ("cam_", "camera"),
    ("mat_", "material"),
    ("light_", "light"),
)


def entity_of_field(name: str) -> str:
    """The entity kind (body, geom, dof, joint, actuator, site, qpos, camera, material, light,
    option) a field indexes."""
    for prefix, entity in _ENTITY_OF_PREFIX:
        if name.startswith(prefix):
            return entity
    return "option"


@dataclass(frozen=True)
class FieldSpec:
    """A writable per-env model field.

    shape: the per-env tail, e.g. (nbody,) for body_mass, (3,) for gravity.
    dtype: the dtype values are stored in (float64 on CPU, float32 on Warp).
    recompute: what a write of it invalidates; the backend runs that recompute itself.
    entity: what the first tail axis indexes (see `entity_of_field`).
    """

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype
    recompute: RecomputeLevel
    entity: str


# MjData state inputs a caller may write between calls (through `write_input` or the views). The one
# definition: every backend scatters, mirrors or copies exactly these.
STATE_INPUTS = frozenset({"ctrl", "qfrc_applied", "xfrc_applied", "mocap_pos", "mocap_quat"})
# What `Backend.reset` takes besides qpos/qvel: the MjData fields a task sets when an episode starts,
# written after mj_resetData and before the reset's one forward.
RESET_INPUTS = ("ctrl", "mocap_pos", "mocap_quat", "act")
# What a camera observation can be made of (`Capabilities.images`): "depth" from MuJoCo's
# camera-attached rangefinder sensors (z-depth per pixel, computed inside the physics step, with
# each env's own model), "rgb" and "segmentation" from a batch renderer.
IMAGE_KINDS = ("depth", "rgb", "segmentation")


@dataclass(frozen=True)
class Capabilities:
    """What a backend can do, declared before the first step.

    fields: every writable model field; a field absent here cannot be written.
    array_namespace: "numpy" or "torch": the type of the state views.
    device: where state lives ("cpu", "cuda:0").
    exact_variants: each env steps bit-exactly like its variant compiled alone (float64 CPU);
        False means "within float32 tolerance".
    inputs: the MjData state inputs `write_input` accepts; applied at the next step.
    determinism: the key of `DETERMINISM` this backend keeps, as built (its `deterministic`
        option included): what a second run with the same seed and actions reproduces.
    images: the `IMAGE_KINDS` this backend produces for camera observations: "depth" where it
        computes MuJoCo's sensors (see `Backend.sense`), "rgb" and "segmentation" where it has a
        batch renderer (`Backend.image_renderer`).
    partial_step: `Backend.step` takes ``skip``, a (num_envs,) bool host mask of envs it leaves
        unstepped (their state as it was, never reported failed); the env base passes the envs it
        autoresets in that call, whose physics it would discard. False: every call steps every env.
    """

    backend: str
    fields: Mapping[str, FieldSpec]
    array_namespace: str
    device: str
    exact_variants: bool
    inputs: frozenset[str] = STATE_INPUTS
    determinism: str = "none"
    images: frozenset[str] = frozenset()
    partial_step: bool = False

    def __post_init__(self) -> None:
        unknown = sorted(set(self.images) - set(IMAGE_KINDS))
        if unknown:
            raise ConfigError(
                f"Capabilities.images has {unknown}, which are not image kinds; allowed values are "
                f"{allowed(IMAGE_KINDS)}"
            )
        if self.determinism not in DETERMINISM:
            raise ConfigError(
                f"Capabilities.determinism={self.determinism!r} is not a determinism level; allowed values are "
                f"{allowed(DETERMINISM)}"
            )

    def require(self, field_name: str, *, what: str = "field") -> FieldSpec:
        """The spec of `field_name`, or a CapabilityError naming the writable set."""
        from mjvec.errors import CapabilityError

        spec = self.fields.get(field_name)
        if spec is None:
            hint = (
                " It is an identity field (which geometry a slot is, or whether it collides) and is "
                "never writable per env."
                if field_name in IDENTITY_FIELDS
                else " Pick one of the writable fields or use a backend that declares it."
            )
            raise CapabilityError(
                f"{what} {field_name!r} is not writable on the {self.backend!r} backend; writable "
                f"fields are {allowed(self.fields)}.{hint}"
            )
        return spec


@dataclass(frozen=True)
class FieldWrite:
    """Write `values` into `field` for the local envs `env_ids`.

    env_ids: (K,) int, local env ids, unique, in [0, num_envs).
    index: None to write the whole per-env tail, or (M,) int ids into its first axis
        (body ids for body_mass, dof ids for dof_damping, ...).
    values: (K, *tail) when index is None, else (K, M, *tail[1:]).
    """

    field: str
    env_ids: np.ndarray
    index: np.ndarray | None
    values: np.ndarray

    def __post_init__(self) -> None:
        object.__setattr__(self, "env_ids", np.asarray(self.env_ids).reshape(-1))
        if self.index is not None:
            object.__setattr__(self, "index", np.asarray(self.index).reshape(-1))
        object.__setattr__(self, "values", np.asarray(self.values))


def default_assignment(num_envs: int, num_variants: int, env_id_offset: int = 0) -> np.ndarray:
    """Variant of each local env: `(env_id_offset + i) % num_variants`."""
    return ((env_id_offset + np.arange(num_envs, dtype=np.int64)) % num_variants).astype(np.int64)


@dataclass(frozen=True)
class Scene:
    """What a backend simulates.

    make_variant(v) returns a fresh, independently compilable MjSpec of variant v (a pure
    function: the same v always gives the same scene). Compiled alone it is the oracle for every
    env assigned to v. Variants with the same geom layout are batched together; different layouts
    (topology classes) go to separate groups.
    assignment: (num_envs,) variant per local env; None means `default_assignment`. It is fixed
    for the life of the backend.
    rne_post_constraint: run MuJoCo's mj_rnePostConstraint at the end of every step, reset and
        forward, so the bound ``cfrc_ext`` (per-body external contact wrenches) is the one computed
        from that call's last forward pass (after an RK4 step: its last stage), as Gymnasium's
        MuJoCo envs compute it after every ``mj_step``. Off by default: it costs time per env.
    check_variant: None, or check_variant(v, model), called by the backend with each used variant
        as it compiles it, before it allocates anything per env; it raises (ConfigError) to refuse
        the scene. The env layer's memory check (`mjvec.envs.memory.VariantMemoryCheck`).
    """

    num_variants: int
    make_variant: Callable[[int], mujoco.MjSpec]
    num_envs: int
    env_id_offset: int = 0
    assignment: np.ndarray | None = None
    name: str = "scene"
    rne_post_constraint: bool = False
    check_variant: Callable[[int, mujoco.MjModel], None] | None = field(default=None, repr=False, compare=False)
    _variant_of_env: np.ndarray = field(init=False, repr=False, compare=False)
    _compiled: dict = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for label, value, low in (
            ("num_variants", self.num_variants, 1),
            ("num_envs", self.num_envs, 1),
            ("env_id_offset", self.env_id_offset, 0),
        ):
            require_int(value, f"Scene.{label}", low=low)
        if self.assignment is None:
            variant_of_env = default_assignment(self.num_envs, self.num_variants, self.env_id_offset)
        else:
            variant_of_env = np.array(self.assignment, dtype=np.int64).reshape(-1)
            if variant_of_env.shape != (self.num_envs,):
                raise ConfigError(
                    f"Scene.assignment must have shape ({self.num_envs},), got {variant_of_env.shape}"
                )
            bad = (variant_of_env < 0) | (variant_of_env >= self.num_variants)
            if bad.any():
                raise ConfigError(
                    f"Scene.assignment has variant ids outside [0, {self.num_variants}) at envs "
                    f"{np.flatnonzero(bad)[:8].tolist()}"
                )
        require_bool(self.rne_post_constraint, "Scene.rne_post_constraint")
        if self.check_variant is not None and not callable(self.check_variant):
            raise ConfigError(f"Scene.check_variant must be None or a callable (v, model), got {self.check_variant!r}")
        variant_of_env.setflags(write=False)
        object.__setattr__(self, "_variant_of_env", variant_of_env)
        object.__setattr__(self, "_compiled", {})

    def keep_compiled(self, v: int, spec: mujoco.MjSpec, model: mujoco.MjModel) -> None:
        """Hold variant v's (spec, model), compiled by the caller, for the next `compile_variant(v)`."""
        self._compiled[int(v)] = (spec, model)

    def compile_variant(self, v: int, *, keep: bool = False) -> tuple[mujoco.MjSpec, mujoco.MjModel]:
        """(spec, compiled model) of variant v. keep=True holds the pair for the next call, which
        takes it back: so a caller that compiles a variant before the backend does (a memory
        estimate) costs no second compile, and nothing stays held after the backend's pass."""
        pair = self._compiled.pop(int(v), None)
        if pair is None:
            spec = self.make_variant(int(v))
            pair = (spec, spec.compile())
        if keep:
            self._compiled[int(v)] = pair
        return pair

    @property
    def variant_of_env(self) -> np.ndarray:
        """(num_envs,) int64, read-only: the fixed variant of each local env."""
        return self._variant_of_env

    @property
    def used_variants(self) -> np.ndarray:
        """Sorted unique variant ids that at least one env uses."""
        return np.unique(self._variant_of_env)


@runtime_checkable
class Backend(Protocol):
    """The contract both backends implement (see the module docstring).

    State views (`qpos`, `qvel`, `ctrl`, `xfrc_applied`, and whatever `bind` returned) are
    `(num_envs, ...)` arrays owned by the backend. Inputs (`ctrl`, `xfrc_applied`) written into
    them are applied at the next `step`; outputs are current after every `step`, `reset` and
    `forward`. After `step`, derived quantities (xpos, site_xpos, ...) are those of the last
    substep's start, as after `mj_step`, unless the backend was built with forward_after_step.
    """

    @property
    def num_envs(self) -> int: ...

    @property
    def env_id_offset(self) -> int: ...

    @property
    def scene(self) -> Scene:
        """The `Scene` the backend was built from (its variants and the fixed env -> variant map)."""
        ...

    @property
    def model(self) -> mujoco.MjModel:
        """The canonical compiled model: names, ids and sizes only; never the live values."""
        ...

    @property
    def variant_of_env(self) -> np.ndarray: ...

    @property
    def geom_types(self) -> np.ndarray:
        """(num_envs, ngeom) int: each env's own mjtGeom type of canonical slot j, -1 where absent."""
        ...

    @property
    def capabilities(self) -> Capabilities: ...

    def defaults(self, field_name: str) -> np.ndarray:
        """Read-only (num_envs, *tail): the value each env's own variant compiled to."""
        ...

    def field_values(self, field_name: str, env_ids: np.ndarray | None = None) -> np.ndarray:
        """A copy (K, *tail) of the current values of a declared field for env_ids (all if None)."""
        ...

    def field_version(self, field_name: str) -> int:
        """How many write batches have touched `field_name` (a host counter: a consumer that caches
        a field, e.g. on a device, re-reads it only when this changes)."""
        ...

    def check_writes(self, writes: Sequence[FieldWrite]) -> None:
        """Raise what `write_fields` would for each of these writes on its own; write nothing."""
        ...

    def write_fields(self, writes: Sequence[FieldWrite]) -> None:
        """Validate all writes, apply all, then ONE recompute for the touched envs."""
        ...

    def bind(self, name: str) -> Any:
        """A (num_envs, ...) view of an MjData field, refreshed after every call."""
        ...

    @property
    def qpos(self) -> Any: ...

    @property
    def qvel(self) -> Any: ...

    @property
    def ctrl(self) -> Any: ...

    @property
    def xfrc_applied(self) -> Any: ...

    def write_input(self, name: str, env_ids: Any, index: Any, values: Any) -> None:
        """Set MjData state input `name` (one of `capabilities.inputs`) of local envs `env_ids` (None:
        all) at rows `index` of its first per-env axis (None: the whole tail) to `values`, taking
        effect at the next step. Everything is validated before anything is written."""
        ...

    def step(self, nstep: int = 1, *, skip: np.ndarray | None = None) -> np.ndarray:
        """Advance every env by `nstep` physics steps, except those of `skip`.

        skip: None, or (only where `capabilities.partial_step`) a (num_envs,) bool host mask: those
        envs are not stepped, keep their state and are not reported failed.

        Returns a (num_envs,) bool mask of envs whose simulation failed during this call (a
        MuJoCo error or a divergence warning). A failed env keeps a finite state; the caller
        resets it. The other envs are unaffected.
        """
        ...

    def reset(self, env_ids: Any, qpos: Any, qvel: Any, *, ctrl: Any = None, mocap_pos: Any = None,
              mocap_quat: Any = None, act: Any = None) -> None:
        """Reset the listed envs to mj_resetData, then set qpos/qvel (K, nq)/(K, nv) and whichever of
        ctrl (K, nu), mocap_pos (K, nmocap, 3), mocap_quat (K, nmocap, 4), act (K, na) are given, then
        ONE forward: the outputs after the call are those of that whole state.

        Every state field not given (ctrl, xfrc_applied, mocap poses, ...) takes mj_resetData's value,
        whatever was written to it before the call. Other envs are untouched. Everything is validated
        (ids, shapes, finite values, and that the model has the field: `act` needs na > 0) before
        anything moves.

        On a backend whose state is device arrays (`capabilities.array_namespace` "torch"), env_ids
        may instead be a (num_envs,) bool device mask, with (num_envs, *tail) arrays whose masked
        rows are used: nothing is then read back to the host.
        """
        ...

    def env_template(self, env_id: int) -> mujoco.MjModel:
        """The model of env `env_id`'s group, shared by its envs (copy it before writing into it)."""
        ...

    def write_env_model(self, env_id: int, model: mujoco.MjModel) -> None:
        """Write the model env `env_id` runs on (its own per-env values included) into `model`, a copy
        of `env_template(env_id)`: to render the env, or to hand it to any mj_ function."""
        ...

    def forward(self, env_ids: np.ndarray | None = None) -> None: ...

    def sense(self, env_ids: Any) -> None:
        """Compute MuJoCo's sensor stage (camera rangefinders included) only where it is read, from
        this call on: in every reset and forward (for their envs), and in a `step` only at its last
        substep (the state the other derived fields describe after a step) and only for the envs of
        `env_ids` (a (num_envs,) bool mask, or None for all). A backend that cannot pick envs (a
        device backend: its mask stays on the device) computes it for every env at the last substep.
        Until the next call, the ``sensordata`` rows of envs not picked hold unspecified values.
        Before the first call, sensors run at every substep, as in mj_step. Physics never reads a
        sensor, so trajectories are unchanged."""
        ...

    def image_renderer(self, cameras: Sequence[str], kinds: frozenset[str]) -> Any:
        """A batch renderer (`ImageRenderer`) of these model cameras for these kinds ("rgb",
        "segmentation"; each in `capabilities.images`), or a CapabilityError naming a backend
        that has one."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class ImageRenderer(Protocol):
    """Renders every env's cameras in one batch, each env with its own model (`Backend.image_renderer`).

    `render()` draws the state each env's bound outputs describe now (after a step: the last
    substep's start, as the depth sensors) and returns {kind: one (num_envs, H, W, 3) uint8 array
    ("rgb") or (num_envs, H, W) int32 array of canonical geom ids, -1 for background
    ("segmentation") per camera, in the order asked}, in the backend's array namespace and on its
    device; the arrays are overwritten by the next render.
    """

    kinds: frozenset[str]

    def render(self) -> dict[str, tuple[Any, ...]]: ...

    def close(self) -> None: ...


def frozen_mapping(d: Mapping[str, Any]) -> Mapping[str, Any]:
    """A read-only view of `d` (used for capability tables)."""
    return MappingProxyType(dict(d))
