"""CPU backend: thousands of MuJoCo simulations on MuJoCo's own `mujoco.batch` thread pool.

`variants.plan_groups` splits the scene's variants into groups of one MjData layout and one
structure; each group is one `mujoco.batch.Batch` on the group's template model, whose differing
fields are expanded and hold each env's own compiled rows. The env sees global-order
`(num_envs, ...)` arrays: with one group they are the Batch's own live views; with several,
backend-owned arrays gathered from the groups after every call (outputs) and scattered into them
before every call (inputs: ctrl, xfrc_applied, qfrc_applied, mocap_*).

Float64 throughout: every env steps bit-exactly like its own variant compiled alone and stepped
with plain `mujoco.mj_step` (tested over the whole tool catalog).
"""

from __future__ import annotations

import ctypes
import logging
import os
from collections.abc import Sequence
from typing import Any

import mujoco
import mujoco.batch as mjb
import numpy as np

from mjvec.backends import fields as F
from mjvec.backends.base import (
    IDENTITY_FIELDS,
    Capabilities,
    FieldWrite,
    RecomputeLevel,
    Scene,
    SceneBackend,
    combine_levels,
    frozen_mapping,
)
from mjvec.backends.checks import validate_env_ids
from mjvec.backends.cpu.geometry import GeometryWrites
from mjvec.backends.cpu.rne_post import RnePostConstraint
from mjvec.backends.cpu.setconst import PerEnvSetConst, batch_rows, exact_batch_set_const
from mjvec.backends.determinism import check_deterministic
from mjvec.backends.variants import Routing, canonical_model, plan_groups
from mjvec.errors import ConfigError

log = logging.getLogger(__name__)

# State inputs the caller writes between calls; with several groups they are scattered each call.
INPUT_FIELDS = frozenset({"ctrl", "xfrc_applied", "qfrc_applied", "mocap_pos", "mocap_quat"})
_DIVERGENCE = [int(mujoco.mjtWarning.mjWARN_BADQPOS), int(mujoco.mjtWarning.mjWARN_BADQVEL),
               int(mujoco.mjtWarning.mjWARN_BADQACC)]
# Every expandable field and option of mujoco.batch: what may differ per env within one group.
PER_ENV_FIELDS = frozenset(mjb.MODEL_FIELDS)


def default_num_threads() -> int:
    """The CPU affinity count of this process (what the OS lets it run on)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _return_freed_memory() -> None:
    """Give the heap freed by compiling every variant back to the OS (glibc keeps it otherwise, and
    it would count as this backend's resident memory). A no-op where malloc_trim does not exist."""
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass


def batch_field(name: str) -> str:
    """The `mujoco.batch` name of a capability field ('gravity' is the option 'opt.gravity')."""
    return f"opt.{name}" if name in F.OPTION_FIELDS else name


class CpuBackend(GeometryWrites, SceneBackend):
    """The `Backend` contract over `mujoco.batch` (see mjvec.backends.base.Backend).

    num_threads: threads per group's Batch, the caller's included (default: the CPU affinity count).
    forward_after_step: compute mj_forward's stages at the end of every step, so derived fields
        (xpos, site_xpos, ...) are current with qpos; otherwise they describe the start of the last
        substep, as after mj_step.
    deterministic: accepted for every backend's sake; `mujoco.batch` is bit-identical at any thread
        count either way, so `capabilities.determinism` is "bit_exact" whatever it is.

    With ``scene.rne_post_constraint`` the batches are persistent and ``bind("cfrc_ext")`` is
    computed by mj_rnePostConstraint after every step, reset and forward (`cpu.rne_post`).
    """

    def __init__(
        self,
        scene: Scene,
        *,
        num_threads: int | None = None,
        forward_after_step: bool = False,
        progress: bool = True,
        deterministic: bool = False,
    ) -> None:
        check_deterministic(deterministic)
        threads = default_num_threads() if num_threads is None else num_threads
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
            raise ConfigError(f"num_threads must be an int >= 1 or None, got {num_threads!r}")
        self._scene = scene
        self._num_threads = threads
        self._stage = int(mujoco.mjtStage.mjSTAGE_ACC if forward_after_step else mujoco.mjtStage.mjSTAGE_NONE)
        self._groups = plan_groups(scene, PER_ENV_FIELDS, progress=progress)
        self._routing = Routing(self._groups, scene.num_envs)
        persistent = bool(scene.rne_post_constraint)
        self._batches = [mjb.Batch(g.template, g.num_envs, min(threads, g.num_envs), persistent=persistent)
                         for g in self._groups]
        # Per group: None where Batch.set_const is exact, else the per-env recompute (see setconst.py).
        self._per_env_set_const: list[PerEnvSetConst | None] = []
        for group, batch in zip(self._groups, self._batches, strict=True):
            for name, rows in group.fields.items():
                batch.expand(name)[...] = rows[group.rows]
            exact = exact_batch_set_const(group, threads)
            self._per_env_set_const.append(None if exact else PerEnvSetConst(batch, group.env_ids))
            group.fields = {}  # the Batch holds every env's rows now; the per-variant copy is spare
        self._model = canonical_model(self._groups)
        self._timestep = float(self._model.opt.timestep)
        self._views: dict[str, np.ndarray] = {}
        self._group_views: dict[str, list[np.ndarray]] = {}
        specs = F.field_specs(self._model, np.float64)
        self._capabilities = Capabilities(
            backend="cpu", fields=frozen_mapping(specs), array_namespace="numpy", device="cpu",
            exact_variants=True, determinism="bit_exact",
        )
        self._defaults = {name: self._gather_field(name) for name in specs}
        for value in self._defaults.values():
            value.setflags(write=False)
        self._rne = RnePostConstraint(
            [g.template for g in self._groups], self._batches, [g.env_ids for g in self._groups],
            scene.num_envs, self._model.nbody) if persistent else None
        self._start_lifetime()
        for name in ("qpos", "qvel", "ctrl", "xfrc_applied"):
            self.bind(name)
        _return_freed_memory()

    # ---- identity -------------------------------------------------------------------------
    @property
    def num_threads(self) -> int:
        return self._num_threads

    @property
    def num_groups(self) -> int:
        return len(self._groups)

    @property
    def group_batches(self) -> tuple[mjb.Batch, ...]:
        """The per-group `mujoco.batch.Batch`es (for tests and benchmarks; not a stable API)."""
        return tuple(self._batches)

    @property
    def routing(self) -> Routing:
        """Where each env lives: `routing.group_of_env`, `routing.row_of_env` (simulation ids)."""
        return self._routing

    @property
    def geom_types(self) -> np.ndarray:
        """(num_envs, ngeom) int: the mjtGeom type of canonical slot j in env i's variant, -1 if absent."""
        return self._routing.geom_types([self._rows(g, "geom_type") for g in range(len(self._groups))])

    # ---- model fields ---------------------------------------------------------------------
    def _rows(self, g: int, name: str) -> np.ndarray:
        """Group g's current per-sim values of `name`, without expanding it (read only)."""
        return batch_rows(self._batches[g], name)

    def _writable_rows(self, g: int, name: str) -> np.ndarray:
        """Group g's live per-sim rows of `name`, expanding it on first use (writes only: an expanded
        field is copied into the worker's model for every simulation)."""
        return self._batches[g].expand(name)

    def _gather_field(self, name: str, env_ids: np.ndarray | None = None) -> np.ndarray:
        spec = self._capabilities.fields[name]
        canonical = F.model_value(self._model, name)
        per_group = [self._rows(g, batch_field(name)) for g in range(len(self._groups))]
        out = self._routing.gather(per_group, canonical, geom=spec.entity == "geom")
        return out if env_ids is None else out[env_ids]

    def defaults(self, field_name: str) -> np.ndarray:
        self._capabilities.require(field_name)
        return self._defaults[field_name]

    def field_values(self, field_name: str, env_ids: np.ndarray | None = None) -> np.ndarray:
        self._check_open()
        self._capabilities.require(field_name)
        ids = None if env_ids is None else validate_env_ids(env_ids, self.num_envs)
        return self._gather_field(field_name, ids)

    def check_writes(self, writes: Sequence[FieldWrite]) -> None:
        """Raise exactly what `write_fields(writes)` would for these writes; write nothing."""
        self._check_open()
        self._validated(writes)

    def _validated(self, writes: Sequence[FieldWrite]) -> list[tuple[FieldWrite, np.ndarray, np.ndarray]]:
        checked = self._checked_writes(writes)
        for write, ids, values in checked:
            if write.field == "geom_size":
                self._check_sizes(write, ids, values)
            elif write.field == "body_ipos":
                self._check_not_simple(write, ids)
        return checked

    def write_fields(self, writes: Sequence[FieldWrite]) -> None:
        self._check_open()
        checked = self._validated(writes)
        self._count_writes(writes)
        touched = np.zeros(self.num_envs, bool)
        for write, ids, values in checked:
            for g, pos, rows in self._routing.split(ids):
                index, vals = self._local_index(g, write.field, write.index, values[pos])
                target = self._writable_rows(g, batch_field(write.field))
                if index is None:
                    target[rows] = vals
                elif index.size:
                    target[rows[:, None], index[None, :]] = vals
            touched[ids] = True
        level = combine_levels(self._capabilities.fields[w.field].recompute for w, _, _ in checked)
        if level != RecomputeLevel.NONE and touched.any():
            # mj_setConst is the recompute mujoco.batch offers; it covers both levels at once, and
            # with them the geometry a write moves (bounds, body BVHs, geom_sameframe).
            for g, _, rows in self._routing.split(np.flatnonzero(touched)):
                per_env = self._per_env_set_const[g]
                if per_env is None:
                    self._batches[g].set_const(rows)
                else:
                    per_env(rows)

    def _local_index(self, g: int, field: str, index: np.ndarray | None, vals: np.ndarray) -> tuple:
        """Canonical geom slots -> group g's geom ids; a slot absent there has no effect."""
        if self._capabilities.fields[field].entity != "geom":
            return index, vals
        canon = np.arange(self._model.ngeom) if index is None else index
        local = self._groups[g].geom_map[canon]
        keep = local >= 0
        return local[keep], vals[:, keep]

    # ---- state ----------------------------------------------------------------------------
    def bind(self, name: str) -> np.ndarray:
        """(num_envs, ...) array of MjData field `name` (see the module docstring for liveness).

        State inputs (ctrl, xfrc_applied, qfrc_applied, mocap_pos, mocap_quat) are writable and take
        effect at the next call; outputs are read-only and refreshed after every call.
        """
        self._check_open()
        if name in self._views:
            return self._views[name]
        if self._rne is not None and name == "cfrc_ext":
            return self._rne.cfrc_ext
        if name in IDENTITY_FIELDS or name in mjb.MODEL_FIELDS:
            raise ConfigError(f"{name!r} is a model field, not an MjData field; read it with field_values()")
        try:
            group_views = [batch.bind(name) for batch in self._batches]
        except ValueError as error:
            raise ConfigError(f"cannot bind MjData field {name!r}: {error}") from error
        tails = {v.shape[1:] for v in group_views}
        if len(tails) > 1:
            raise ConfigError(
                f"MjData field {name!r} has a different shape in each variant group ({sorted(tails)}): its size "
                "depends on the variant (its geoms, or the sparsity its bodies compile to), so it has no "
                "(num_envs, ...) view; bind a field sized by bodies, joints, dofs, actuators or sites"
            )
        if self._routing.single:
            view = group_views[0]
        else:
            view = np.empty((self.num_envs, *group_views[0].shape[1:]), group_views[0].dtype)
            for group, gv in zip(self._groups, group_views, strict=True):
                view[group.env_ids] = gv
        self._views[name] = view
        self._group_views[name] = group_views
        return view

    @property
    def qpos(self) -> np.ndarray:
        return self._views["qpos"]

    @property
    def qvel(self) -> np.ndarray:
        return self._views["qvel"]

    @property
    def ctrl(self) -> np.ndarray:
        return self._views["ctrl"]

    @property
    def xfrc_applied(self) -> np.ndarray:
        return self._views["xfrc_applied"]

    def _scatter_inputs(self, env_ids: np.ndarray | None = None) -> None:
        """Copy the global input views into the groups: every env, or only `env_ids`."""
        if self._routing.single:
            return
        for name, view in self._views.items():
            if name in INPUT_FIELDS:
                for g, glob, rows in self._selection(env_ids):
                    self._group_views[name][g][rows] = view[glob]

    def _gather_outputs(self, env_ids: np.ndarray | None = None, *, inputs: bool = True) -> None:
        """Copy the bound fields from the groups into the global views (every env, or `env_ids`).

        inputs=False skips the inputs: a step leaves them as they were, so the global views hold them.
        """
        if self._routing.single:
            return
        for name, view in self._views.items():
            if inputs or name not in INPUT_FIELDS:
                for g, glob, rows in self._selection(env_ids):
                    view[glob] = self._group_views[name][g][rows]

    def _selection(self, env_ids: np.ndarray | None) -> list[tuple[int, Any, Any]]:
        """Per group: (group, global env ids, rows in the group) of env_ids (all envs if None)."""
        if env_ids is None:
            return [(g, group.env_ids, slice(None)) for g, group in enumerate(self._groups)]
        return [(g, env_ids[pos], rows) for g, pos, rows in self._routing.split(env_ids)]

    def step(self, nstep: int = 1) -> np.ndarray:
        self._check_open()
        if isinstance(nstep, bool) or not isinstance(nstep, int) or nstep < 1:
            raise ConfigError(f"nstep must be an int >= 1, got {nstep!r}")
        self._scatter_inputs()
        failed = np.zeros(self.num_envs, bool)
        messages = []
        for g, (group, batch) in enumerate(zip(self._groups, self._batches, strict=True)):
            before = batch.warning[:, _DIVERGENCE, 1].copy()
            try:
                batch.step(nstep=nstep, stage=self._stage)
            except mjb.SimulationError as error:  # those sims kept their state; the others ran
                failed[group.env_ids[error.ids]] = True
                messages.append(str(error))
            # MuJoCo resets a diverging simulation itself (and warns); count that as a failure.
            diverged = (batch.warning[:, _DIVERGENCE, 1] > before).any(axis=1)
            failed[group.env_ids[diverged]] = True
            if self._rne is not None:
                self._rne.update(g)
        self._gather_outputs(inputs=False)
        if failed.any():
            log.warning("simulation failed in envs %s: %s", np.flatnonzero(failed).tolist(), messages)
        return failed

    def reset(self, env_ids: np.ndarray, qpos: np.ndarray, qvel: np.ndarray) -> None:
        """mj_resetData for these envs (every state field, inputs and mocap included, goes back to
        the model's defaults), then qpos/qvel, then mj_forward. Other envs are untouched."""
        self._check_open()
        ids = validate_env_ids(env_ids, self.num_envs)
        qpos = np.asarray(qpos, np.float64)
        qvel = np.asarray(qvel, np.float64)
        if qpos.shape != (ids.size, self._model.nq) or qvel.shape != (ids.size, self._model.nv):
            raise ConfigError(
                f"reset expects qpos ({ids.size}, {self._model.nq}) and qvel ({ids.size}, {self._model.nv}), "
                f"got {qpos.shape} and {qvel.shape}"
            )
        if not (np.isfinite(qpos).all() and np.isfinite(qvel).all()):
            raise ConfigError("reset qpos/qvel must be finite")
        for g, pos, rows in self._routing.split(ids):
            order = np.argsort(rows)
            rows, pos = rows[order], pos[order]
            batch = self._batches[g]
            batch.reset(rows, stage=int(mujoco.mjtStage.mjSTAGE_NONE))
            batch.bind("qpos")[rows] = qpos[pos]
            batch.bind("qvel")[rows] = qvel[pos]
            batch.forward(rows)
            if self._rne is not None:
                self._rne.update(g, rows)
        self._gather_outputs(ids)

    def forward(self, env_ids: np.ndarray | None = None) -> None:
        self._check_open()
        ids = np.arange(self.num_envs) if env_ids is None else np.unique(validate_env_ids(env_ids, self.num_envs))
        self._scatter_inputs(ids)
        for g, _, rows in self._routing.split(ids):
            self._batches[g].forward(rows)
            if self._rne is not None:
                self._rne.update(g, rows)
        self._gather_outputs(ids)

    # ---- lifetime -------------------------------------------------------------------------
    def write_env_model(self, env_id: int, model: mujoco.MjModel) -> None:
        """Write env `env_id`'s model (its group template with its own per-env values) into `model`,
        a copy of `env_template(env_id)` (e.g. to render the env exactly as it is simulated)."""
        self._check_open()
        g, row = int(self._routing.group_of_env[env_id]), int(self._routing.row_of_env[env_id])
        self._batches[g].get_model(row, model)

    def env_template(self, env_id: int) -> mujoco.MjModel:
        """The template model of env `env_id`'s group (shared: copy it before writing into it)."""
        return self._groups[int(self._routing.group_of_env[env_id])].template

    def close(self) -> None:
        """Release the batches; idempotent. Any later call raises ClosedError."""
        if self._closed:
            return
        self._closed = True
        self._views.clear()
        self._group_views.clear()
        self._batches = []

    def _forked_away(self) -> None:
        # A Batch's destructor joins its worker threads, which do not exist in a forked child:
        # freeing one there would hang forever (even at interpreter exit). Keep them alive.
        for batch in getattr(self, "_batches", []):
            ctypes.pythonapi.Py_IncRef(ctypes.py_object(batch))
