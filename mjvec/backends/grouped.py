"""`GroupedBackend`: the `Backend` contract implemented once, over the variant groups of a scene.

`variants.make_groups` splits the scene's variants into groups one engine object can run together
(the engine says what it holds per env: `Engine.per_env`); `variants.Routing` maps local env ids to
(group, row). Everything the contract promises is done here, for every engine alike:

- writes (`check_writes`, `write_fields`): validated against the declared fields, split by group,
  canonical geom slots turned into each group's own geom ids (a slot absent from a group has no
  effect there), handed to the engine, then the geometry refresh the engine asks for and ONE
  recompute for the rows written, at the combined level of the fields written;
- reads (`defaults`, `field_values`, `geom_types`): each group's rows gathered back into env order;
- state: the `(num_envs, ...)` views and their gather/scatter (`groupviews.GroupViews`), the
  argument checks of `reset`, `forward`, `step` and `write_input`.

An `Engine` (mjvec.backends.engine) holds the engine objects and only the engine's calls: the CPU
engine (`mujoco.batch`, mjvec.backends.cpu) and the Warp engine (mujoco_warp, mjvec.backends.warp).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import mujoco
import numpy as np

from mjvec.backends import _geometry as geometry_math
from mjvec.backends import fields as backend_fields
from mjvec.backends.base import (
    IDENTITY_FIELDS,
    RESET_INPUTS,
    Capabilities,
    FieldSpec,
    FieldWrite,
    RecomputeLevel,
    Scene,
    combine_levels,
    entity_of_field,
    frozen_mapping,
)
from mjvec.backends.checks import (
    check_input_write,
    check_reset_fields,
    check_reset_mask,
    check_reset_shapes,
    check_skip,
    check_write,
    validate_env_ids,
)
from mjvec.backends.engine import Checked, DeviceEngine, Engine, Split
from mjvec.backends.groupviews import GroupViews
from mjvec.backends.lifetime import Lifetime
from mjvec.backends.variants import Routing, canonical_model, make_groups, model_arrays
from mjvec.errors import ConfigError
from mjvec.validate import require_int

_MODEL_ONLY = frozenset(model_arrays()) - {"plugin"}  # 'plugin' names an MjData array too


class GroupedBackend(Lifetime):
    """The `Backend` contract over `engine`'s variant groups of `scene` (see the module docstring).

    Subclasses (`CpuBackend`, `WarpBackend`) check their options, make their engine and call this.
    """

    def __init__(self, scene: Scene, engine: Engine, *, progress: bool = True) -> None:
        self._scene = scene
        self._engine = engine
        self._groups = make_groups(scene, engine.per_env, progress=progress)
        self._routing = Routing(self._groups, scene.num_envs)
        self._model = canonical_model(self._groups)
        self._views = GroupViews(self._routing)
        self._field_versions: dict[str, int] = {}
        engine.build(self._groups, self._routing, self._model, self._views)
        specs = backend_fields.field_specs(self._model, engine.field_dtype)
        self._capabilities = engine.capabilities(frozen_mapping(specs))
        self._defaults = {name: self._gather_field(name) for name in specs}
        for value in self._defaults.values():
            value.setflags(write=False)
        self._start_lifetime()
        for name in ("qpos", "qvel", "ctrl", "xfrc_applied", *engine.start_views):
            self.bind(name)
        engine.start()

    # ---- identity -------------------------------------------------------------------------
    @property
    def num_envs(self) -> int:
        return self._scene.num_envs

    @property
    def env_id_offset(self) -> int:
        return self._scene.env_id_offset

    @property
    def scene(self) -> Scene:
        return self._scene

    @property
    def model(self) -> mujoco.MjModel:
        """The canonical compiled model: names, ids and sizes only; never the live values."""
        return self._model

    @property
    def variant_of_env(self) -> np.ndarray:
        return self._scene.variant_of_env

    @property
    def capabilities(self) -> Capabilities:
        return self._capabilities

    @property
    def num_groups(self) -> int:
        return len(self._groups)

    @property
    def routing(self) -> Routing:
        """Where each env lives: `routing.group_of_env`, `routing.row_of_env` (the group's simulation
        or world ids)."""
        return self._routing

    @property
    def geom_types(self) -> np.ndarray:
        """(num_envs, ngeom) int: the mjtGeom type of canonical slot j in env i's variant, -1 if absent."""
        return self._routing.geom_types([self._rows(g, "geom_type") for g in range(len(self._groups))])

    @property
    def geom_present(self) -> np.ndarray:
        """(num_envs, ngeom) bool: whether canonical geom slot j exists in env i's variant.

        Geom-indexed fields use the canonical (largest) layout of `model`. A value written to a
        slot absent from an env's variant is accepted and has no effect there: that geom does not
        exist in that env's world.
        """
        return self.geom_types >= 0

    # ---- model fields ---------------------------------------------------------------------
    def _rows(self, g: int, name: str) -> np.ndarray:
        """Group g's current (E_g, *tail) values of model field `name` (read only)."""
        return self._engine.rows(g, name)

    def _gather_field(self, name: str, env_ids: np.ndarray | None = None) -> np.ndarray:
        per_group = [self._rows(g, name) for g in range(len(self._groups))]
        out = self._routing.gather(per_group, backend_fields.model_value(self._model, name),
                                   geom=entity_of_field(name) == "geom")
        return out if env_ids is None else out[env_ids]

    def defaults(self, field_name: str) -> np.ndarray:
        """Read-only (num_envs, *tail): the value each env's own variant compiled to."""
        self._capabilities.require(field_name)
        return self._defaults[field_name]

    def field_values(self, field_name: str, env_ids: np.ndarray | None = None) -> np.ndarray:
        """A copy (K, *tail) of the current values of a declared field for env_ids (all if None)."""
        self._check_open()
        self._capabilities.require(field_name)
        ids = None if env_ids is None else validate_env_ids(env_ids, self.num_envs)
        return self._gather_field(field_name, ids)

    def field_version(self, field_name: str) -> int:
        """How many write batches have touched `field_name` so far (a host counter: a consumer that
        caches a field on a device re-reads it only when this changes)."""
        return self._field_versions.get(field_name, 0)

    def check_writes(self, writes: Sequence[FieldWrite]) -> None:
        """Raise exactly what `write_fields(writes)` would for these writes; write nothing."""
        self._check_open()
        self._validated(writes)

    def _validated(self, writes: Sequence[FieldWrite]) -> Checked:
        checked = [(w, *check_write(w, self._capabilities.require(w.field), self.num_envs)) for w in writes]
        for write, ids, values in checked:
            if write.field == "geom_size":
                slots = np.arange(self._model.ngeom) if write.index is None else write.index
                geometry_math.check_sizes(self._groups, self._routing.split(ids), lambda g: self._rows(g, "geom_type"),
                                          slots, values)
        self._engine.check_writes(checked)
        return checked

    def write_fields(self, writes: Sequence[FieldWrite]) -> None:
        """Validate all writes, apply all, then ONE recompute for the touched envs."""
        self._check_open()
        checked = self._validated(writes)
        for write in writes:
            self._field_versions[write.field] = self._field_versions.get(write.field, 0) + 1
        touched = [np.zeros(group.num_envs, bool) for group in self._groups]
        moved: list[tuple[str, int, np.ndarray, np.ndarray]] = []
        for write, ids, values in checked:
            spec = self._capabilities.fields[write.field]
            for g, pos, rows in self._routing.split(ids):
                index, vals = self._local_index(g, spec, write.index, values[pos])
                if index is None or index.size:
                    self._engine.write(g, write.field, rows, index, vals)
                if write.field in self._engine.geometry_triggers:
                    moved.append((write.field, g, rows, np.arange(spec.shape[0]) if index is None else index))
                touched[g][rows] = True
        if moved:
            self._engine.refresh_geometry(moved)
        fields = frozenset(w.field for w, _, _ in checked)
        if combine_levels(self._capabilities.fields[f].recompute for f in fields) != RecomputeLevel.NONE:
            self._engine.recompute(fields, [np.flatnonzero(t) for t in touched])

    def _local_index(self, g: int, spec: FieldSpec, index: np.ndarray | None, vals: np.ndarray) -> tuple:
        """Canonical geom slots -> group g's geom ids; a slot absent there has no effect."""
        if spec.entity != "geom":
            return index, vals
        canon = np.arange(self._model.ngeom) if index is None else index
        local = self._groups[g].geom_map[canon]
        keep = local >= 0
        return local[keep], vals[:, keep]

    # ---- state ----------------------------------------------------------------------------
    def bind(self, name: str) -> Any:
        """A (num_envs, ...) view of MjData field `name` (MuJoCo's MjData tails), kept for the life
        of the backend.

        State inputs (`capabilities.inputs`) are writable and take effect at the next call; outputs
        are refreshed after every `step`, `reset` and `forward`.
        """
        self._check_open()
        view = self._views.views.get(name)
        if view is not None:
            return view
        if name in IDENTITY_FIELDS or name in _MODEL_ONLY:
            raise ConfigError(f"{name!r} is a model field, not an MjData field; read it with field_values()")
        return self._views.bind(name, [self._engine.bind(g, name) for g in range(len(self._groups))])

    @property
    def qpos(self) -> Any:
        return self._views.views["qpos"]

    @property
    def qvel(self) -> Any:
        return self._views.views["qvel"]

    @property
    def ctrl(self) -> Any:
        return self._views.views["ctrl"]

    @property
    def xfrc_applied(self) -> Any:
        return self._views.views["xfrc_applied"]

    def write_input(self, name: str, env_ids: Any, index: Any, values: Any) -> None:
        """Set state input `name` of local envs `env_ids` (None: all) at rows `index` of its first
        per-env axis (None: the whole tail) to `values`; it takes effect at the next step.

        Everything is validated (name in `capabilities.inputs`, ids, rows, shape, finite values)
        before anything is written.
        """
        self._check_open()
        view = self.bind(name) if name in self._capabilities.inputs else None
        ids, rows, values = check_input_write(name, self._capabilities, None if view is None else view.shape,
                                              self.num_envs, env_ids, index, values)
        self._views.assign_input(name, ids, rows, values)

    def step(self, nstep: int = 1, *, skip: np.ndarray | None = None) -> Any:
        """Advance every env by `nstep` physics steps, except those of `skip` (`Backend.step`); the
        (num_envs,) bool mask of envs whose step failed (see the engine's backend class for where that
        mask lives and what a failed env keeps)."""
        self._check_open()
        nstep = require_int(nstep, "nstep", low=1)
        if skip is not None:
            skip = check_skip(skip, self._capabilities, self.num_envs)
        self._views.scatter_inputs()
        try:
            return self._engine.step(nstep) if skip is None else self._engine.step(nstep, skip)
        finally:  # also when the engine raises after stepping (a buffer overflow): the views stay true
            self._views.gather(inputs=False)

    def reset(self, env_ids: Any, qpos: Any, qvel: Any, *, ctrl: Any = None, mocap_pos: Any = None,
              mocap_quat: Any = None, act: Any = None) -> None:
        """mj_resetData for these envs (every state field, inputs and mocap included, goes back to
        the model's defaults), then qpos/qvel and whichever of ctrl, mocap_pos, mocap_quat, act are
        given, then ONE forward. Other envs are untouched.

        env_ids: host ids (K,) with (K, *tail) arrays: qpos (K, nq), qvel (K, nv), ctrl (K, nu),
        mocap_pos (K, nmocap, 3), mocap_quat (K, nmocap, 4), act (K, na); or, on a backend whose
        state is device arrays, a (num_envs,) bool device mask with (num_envs, *tail) arrays whose
        masked rows are used (then nothing is read back to the host). Everything is validated (ids,
        shapes, finite values on the host path, the model having the field) before anything moves.
        """
        self._check_open()
        given = {name: value for name, value in zip(RESET_INPUTS, (ctrl, mocap_pos, mocap_quat, act), strict=True)
                 if value is not None}
        check_reset_fields(self._model, given)
        masked = self._capabilities.array_namespace != "numpy" and _is_device_array(env_ids)
        ids = None if masked else validate_env_ids(env_ids, self.num_envs)
        state = {name: self._views.asarray(value) for name, value in {"qpos": qpos, "qvel": qvel, **given}.items()}
        if masked:
            check_reset_mask(self._model, env_ids, state, self.num_envs)
        else:
            check_reset_shapes(self._model, state, ids.size)
            if not ids.size:
                return
        if self._engine.whole_groups:
            self._views.scatter_inputs()
        if masked:
            cast(DeviceEngine, self._engine).reset_where(env_ids, state)
            self._views.gather()
            return
        self._engine.reset(self._sorted_split(ids), state)
        self._views.gather(ids)

    def _sorted_split(self, ids: np.ndarray) -> Split:
        """`routing.split(ids)` with each group's rows ascending (and their positions along)."""
        out = []
        for g, pos, rows in self._routing.split(ids):
            order = np.argsort(rows)
            out.append((g, pos[order], rows[order]))
        return out

    def forward(self, env_ids: np.ndarray | None = None) -> None:
        """mj_forward of these envs (all if None) with their current inputs; other envs untouched."""
        self._check_open()
        ids = None if env_ids is None else np.unique(validate_env_ids(env_ids, self.num_envs))
        self._views.scatter_inputs(None if self._engine.whole_groups else ids)
        self._engine.forward(self._routing.split(np.arange(self.num_envs) if ids is None else ids))
        self._views.gather(ids)

    # ---- camera images ---------------------------------------------------------------------
    def sense(self, env_ids: Any) -> None:
        """The sensor cadence (`mjvec.backends.base.Backend.sense`): MuJoCo's sensors run in resets,
        forwards and the last substep of a step, there only for the envs of the (num_envs,) bool
        mask `env_ids` (None: all). A device mask is not read: every env senses then."""
        self._check_open()
        if env_ids is None or _is_device_array(env_ids):
            self._engine.sense(None)
            return
        mask = np.asarray(env_ids)
        if mask.dtype != bool or mask.shape != (self.num_envs,):
            raise ConfigError(
                f"sense(env_ids) takes a ({self.num_envs},) bool mask or None, got dtype {mask.dtype} "
                f"shape {mask.shape}"
            )
        self._engine.sense([mask[group.env_ids] for group in self._groups])

    def image_renderer(self, cameras: Sequence[str], kinds: frozenset[str]) -> Any:
        """A batch renderer of `cameras` for `kinds` (`mjvec.backends.base.ImageRenderer`); a
        CapabilityError for a kind this backend does not render."""
        self._check_open()
        from mjvec.errors import CapabilityError

        kinds = frozenset(kinds)
        missing = sorted(kinds - (self._capabilities.images - {"depth"}))
        if missing:
            raise CapabilityError(
                f"{missing} images need a batch renderer, which the {self._capabilities.backend!r} backend does not "
                f"have (it makes {sorted(self._capabilities.images)} images); use backend='warp' (mujoco-warp's "
                "batch renderer; device='cpu' runs it without a GPU), or cameras='depth'"
            )
        ids = []
        for name in cameras:
            cam = mujoco.mj_name2id(self._model, mujoco.mjtObj.mjOBJ_CAMERA, name)
            if cam < 0:
                names = [self._model.camera(i).name for i in range(self._model.ncam)]
                raise ConfigError(f"image_renderer: the model has no camera {name!r}; its cameras are {names}")
            ids.append(cam)
        return self._engine.image_renderer(tuple(ids), kinds)

    # ---- rendering and lifetime -----------------------------------------------------------
    def env_template(self, env_id: int) -> mujoco.MjModel:
        """The template model of env `env_id`'s group (shared: copy it before writing into it)."""
        return self._groups[int(self._routing.group_of_env[env_id])].template

    def write_env_model(self, env_id: int, model: mujoco.MjModel) -> None:
        """Write env `env_id`'s model (its group template with its own per-env values) into `model`,
        a copy of `env_template(env_id)` (e.g. to render the env exactly as it is simulated)."""
        self._check_open()
        self._engine.write_env_model(int(self._routing.group_of_env[env_id]), int(self._routing.row_of_env[env_id]),
                                     model)

    def close(self) -> None:
        """Release the engine objects; idempotent. Any later call raises ClosedError."""
        if self._closed:
            return
        self._closed = True
        self._views.close()
        self._engine.close()

    def _forked_away(self) -> None:
        engine = getattr(self, "_engine", None)
        if engine is not None:
            engine.forked_away()


def _is_device_array(value: Any) -> bool:
    """A torch tensor (or any array with torch's interface), not a numpy array or a list of ids."""
    return not isinstance(value, np.ndarray) and hasattr(value, "is_floating_point")
