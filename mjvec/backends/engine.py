"""The seam between the one grouped backend and an engine: what an engine adapter implements.

`GroupedBackend` (mjvec.backends.grouped) implements the `Backend` contract ONCE over the variant
groups of a scene (`variants.make_groups`): argument checks, routing env ids to (group, row),
canonical -> group geom ids, the `(num_envs, ...)` state views, the recompute policy (one recompute
per write batch, for the envs written). An `Engine` holds one engine object per group (a
`mujoco.batch.Batch`, a mujoco_warp Model + Data) and does only what needs the engine's own calls.

Every method takes group indices `g` and ROWS of the group (its simulations / worlds, ascending
where the backend sorts them), never local env ids, and arrays already validated. Values an engine
returns or takes for model fields are host numpy arrays; state arrays are the engine's own (numpy,
or torch on the engine's device).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import mujoco
import numpy as np

from mjvec.backends.base import Capabilities, FieldSpec, FieldWrite
from mjvec.backends.groupviews import GroupViews
from mjvec.backends.variants import Routing, VariantGroup

# (write, validated local env ids, values in the field's dtype), as `GroupedBackend` checks them.
Checked = Sequence[tuple[FieldWrite, np.ndarray, np.ndarray]]
# Per group a call touches: (group, positions in the call's env ids, rows of the group).
Split = Sequence[tuple[int, np.ndarray, np.ndarray]]


class Engine(Protocol):
    """One engine's calls on the variant groups of a `GroupedBackend` (see the module docstring).

    per_env: the MjModel fields (and 'opt.<name>' options) the engine can hold per env: variants
        that differ elsewhere go to separate groups.
    field_dtype: the dtype model fields are stored in.
    whole_groups: a forward, reset or recompute of some rows of a group runs EVERY row of it (the
        engine puts the other rows' bound outputs back itself): the backend then scatters every
        env's pending inputs first, so no row runs on stale ones.
    geometry_triggers: fields after whose writes `refresh_geometry` runs (empty: the recompute
        covers the geometry a write moves).
    start_views: MjData fields bound at construction besides qpos, qvel, ctrl and xfrc_applied.
    """

    per_env: frozenset[str]
    field_dtype: np.dtype
    whole_groups: bool
    geometry_triggers: frozenset[str]
    start_views: tuple[str, ...]

    def build(self, groups: list[VariantGroup], routing: Routing, model: mujoco.MjModel, views: GroupViews) -> None:
        """Make one engine object per group, each row holding its env's own compiled values; refuse
        (ConfigError) groups the engine cannot run. Keeps `views` to read and restore bound state."""

    def capabilities(self, fields: Mapping[str, FieldSpec]) -> Capabilities:
        """The backend's capabilities with these writable fields."""

    def start(self) -> None:
        """Called once the contract's views are bound: load kernels, set up per-step state."""

    def rows(self, g: int, name: str) -> np.ndarray:
        """Group g's current (E_g, *tail) values of model field `name` (host, read only)."""

    def check_writes(self, checked: Checked) -> None:
        """Raise what this engine cannot apply of these validated writes; write nothing."""

    def write(self, g: int, name: str, rows: np.ndarray, index: np.ndarray | None, values: np.ndarray) -> None:
        """values (R, *tail) or (R, M, *tail[1:]) into field `name` of group g's rows, at the group's
        entity ids `index` (None: the whole tail)."""

    def refresh_geometry(self, moved: list[tuple[str, int, np.ndarray, np.ndarray]]) -> None:
        """After writes of (field, group, rows, group entity ids) of `geometry_triggers` fields."""

    def recompute(self, fields: frozenset[str], touched: list[np.ndarray]) -> None:
        """The derived constants a write of `fields` makes stale, for each group's touched rows
        (ascending; empty: untouched). Called once per write batch that needs a recompute."""

    def bind(self, g: int, name: str) -> Any:
        """Group g's live (E_g, ...) array of MjData field `name`, or ConfigError saying why not."""

    def step(self, nstep: int) -> Any:
        """`nstep` physics steps of every row; the (num_envs,) bool mask of envs that failed (each
        kept finite). Inputs were scattered; the backend gathers the outputs after. An engine whose
        capabilities declare ``partial_step`` also takes ``skip``, a checked (num_envs,) bool host
        mask of envs to leave unstepped (`Backend.step`)."""

    def reset(self, split: Split, state: Mapping[str, Any]) -> None:
        """mj_resetData for the rows of `split`, then every array of `state` (name -> (K, *tail),
        row `pos` of each group's rows), then one forward of those rows."""

    def forward(self, split: Split) -> None:
        """mj_forward of the rows of `split`; other rows' bound outputs stay as they were."""

    def sense(self, rows: list[np.ndarray] | None) -> None:
        """The sensor cadence (`GroupedBackend.sense`): rows[g], a bool per row of group g (None: every
        row), computes MuJoCo's sensors at the last substep of the next step; resets and forwards
        compute them for their rows. An engine that cannot pick rows computes them for all."""

    def image_renderer(self, cameras: tuple[int, ...], kinds: frozenset[str]) -> Any:
        """A batch renderer (`mjvec.backends.base.ImageRenderer`) of these camera ids for these
        kinds (each in the engine's `Capabilities.images`, checked by the caller)."""

    def write_env_model(self, g: int, row: int, model: mujoco.MjModel) -> None:
        """Write row `row`'s model into `model`, a copy of group g's template."""

    def close(self) -> None:
        """Release the engine objects."""

    def forked_away(self) -> None:
        """In a forked child: keep alive (never free) what the child cannot release."""


class DeviceEngine(Engine, Protocol):
    """An engine whose state arrays are device arrays (`Capabilities.array_namespace` "torch")."""

    def reset_where(self, mask: Any, state: Mapping[str, Any]) -> None:
        """The reset of a (num_envs,) device bool mask, with (num_envs, *tail) state arrays whose
        masked rows are used (mj_resetData, the state, one forward), reading nothing back to the host."""
