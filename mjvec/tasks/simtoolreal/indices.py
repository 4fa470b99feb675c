"""What SimToolReal-v0 reads of its model and catalog, resolved once: `TaskIndices` and `SimViews`.

`build_indices` turns the names the task uses (joints, actuators, sites, bodies, the goal's mocap
body) into ids and addresses of the backend's canonical model, and gathers each env's tool
metadata from the catalog (tools are fixed per env for the env's life). `bind_views` binds the
MjData fields the task reads. Both records are immutable and built before the first step; their
arrays live where the backend's state does (numpy, or torch on its device).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import mujoco
import numpy as np

from mjvec.assets import robot
from mjvec.errors import ConfigError
from mjvec.tasks.simtoolreal import scene as tool_scene
from mjvec.tasks.simtoolreal import terms as tool_terms
from mjvec.tasks.simtoolreal.catalog.tools import ToolCatalog
from mjvec.tasks.simtoolreal.config import SimToolRealConfig

Array = Any  # an array of the state's namespace (numpy, or torch on a device)
AsArray = Callable[..., Array]  # asarray(host value, dtype=None) -> an array where the state lives


@dataclass(frozen=True, eq=False)
class TaskIndices:
    """Model ids and per-env tool arrays of the task (J arm and hand joints, F fingertips, N envs).

    Model (the canonical model: every variant shares these ids): `jnt_qpos`, `jnt_dof`, `act_ids`
    (J,) int index arrays of the arm and hand joints' qpos/dof addresses and actuators, in
    `mjvec.assets.robot.JOINT_NAMES` order; `joint_lower` / `joint_upper` (J,) their ranges;
    `default_joint_pos` (J,) the reset pose clipped to them; `obj_qpos` / `obj_dof` the object's
    free-joint addresses; `object_body_id`; `palm_site`, `palm_body` (the site's body), `palm_root`
    (its kinematic tree's root body); `tip_sites` (F,) fingertip site ids; `goal_mocap` the goal
    ghost's mocap index; `qpos0` (nq,) and `nv`; `spawn_pos` (3,) the object's spawn centre
    over the table at its compiled height (`spawn_z` that height as a host float; each env's own
    spawn height, which follows its table, is `TaskState.spawn_z`); `table_geom` the table's geom
    id; `dtype` the state's float dtype, which the task computes in.

    Tools: `tool_ids` (N,) host int64, read-only; `tool_id_array` the same where the state lives;
    `object_scales`, `handle_dims` (N, 3) and `object_mass` (N,) from the catalog (read-only on
    the host); `fixed_offsets` (1, 4, 3) the fixed-size keypoint box the reward and success
    use, shared by every tool.
    """

    jnt_qpos: Array
    jnt_dof: Array
    act_ids: Array
    joint_lower: Array
    joint_upper: Array
    default_joint_pos: Array
    obj_qpos: int
    obj_dof: int
    object_body_id: int
    palm_site: int
    palm_body: int
    palm_root: int
    tip_sites: Array
    goal_mocap: int
    qpos0: Array
    nv: int
    spawn_pos: Array
    spawn_z: float
    table_geom: int
    dtype: Any
    tool_ids: np.ndarray
    tool_id_array: Array
    object_scales: Array
    handle_dims: Array
    object_mass: Array
    fixed_offsets: Array


@dataclass(frozen=True, eq=False)
class SimViews:
    """The backend's bound (N, ...) MjData views the task reads (refreshed by the backend after every
    call; `mjvec.envs.memory` counts them): `cvel` and `subtree_com` only for the critic (None in
    obs_mode "policy")."""

    mocap_pos: Array
    mocap_quat: Array
    site_xpos: Array
    xquat: Array
    cvel: Array | None
    subtree_com: Array | None


def bind_views(backend: Any, fields: tuple[str, ...]) -> SimViews:
    """Bind `fields` (`SimToolRealEnv.bound_fields`) of `backend` into a `SimViews`."""
    views = {name: backend.bind(name) for name in fields}
    return SimViews(views["mocap_pos"], views["mocap_quat"], views["site_xpos"], views["xquat"],
                    views.get("cvel"), views.get("subtree_com"))


def build_indices(model: mujoco.MjModel, catalog: ToolCatalog, tool_ids: np.ndarray, cfg: SimToolRealConfig,
                  asarray: AsArray, dtype: Any) -> TaskIndices:
    """Resolve every name the task uses in `model` and gather the tools of `tool_ids` (N,) from `catalog`.

    asarray: makes host data an array where the state lives (`MjVecEnv.asarray`); dtype: the
    state's float dtype. Raises ConfigError naming a joint the scene lacks, or a goal body that is
    not a mocap body.
    """
    def joint(name: str) -> Any:
        try:
            return model.joint(name)
        except KeyError as error:
            raise ConfigError(f"the scene has no joint {name!r}; is it a SimToolReal scene?") from error

    def index(ids: list[int]) -> Array:
        return asarray(np.asarray(ids, np.int64))

    jnt_ids = np.array([joint(n).id for n in robot.JOINT_NAMES], np.int64)
    lower, upper = model.jnt_range[jnt_ids, 0], model.jnt_range[jnt_ids, 1]
    obj = joint(tool_scene.OBJECT_JOINT_NAME)
    palm_site = int(model.site(robot.PALM_SITE_NAME).id)
    palm_body = int(model.site_bodyid[palm_site])
    goal_mocap = int(model.body_mocapid[model.body(tool_scene.GOAL_BODY_NAME).id])
    if goal_mocap < 0:
        raise ConfigError(f"body {tool_scene.GOAL_BODY_NAME!r} must be a mocap body")
    return TaskIndices(
        jnt_qpos=index([joint(n).qposadr[0] for n in robot.JOINT_NAMES]),
        jnt_dof=index([joint(n).dofadr[0] for n in robot.JOINT_NAMES]),
        act_ids=index([model.actuator(n).id for n in robot.ACTUATOR_NAMES]),
        joint_lower=asarray(lower, dtype),
        joint_upper=asarray(upper, dtype),
        default_joint_pos=asarray(np.clip(np.asarray(robot.DEFAULT_JOINT_POS, np.float64), lower, upper), dtype),
        obj_qpos=int(obj.qposadr[0]),
        obj_dof=int(obj.dofadr[0]),
        object_body_id=int(model.body(tool_scene.OBJECT_BODY_NAME).id),
        palm_site=palm_site,
        palm_body=palm_body,
        palm_root=int(model.body_rootid[palm_body]),
        tip_sites=index([model.site(n).id for n in robot.FINGERTIP_SITE_NAMES]),
        goal_mocap=goal_mocap,
        qpos0=asarray(model.qpos0, dtype),
        nv=int(model.nv),
        spawn_pos=asarray(tool_scene.OBJECT_SPAWN_POS, dtype),
        spawn_z=float(tool_scene.OBJECT_SPAWN_POS[2]),
        table_geom=int(model.geom(tool_scene.TABLE_GEOM_NAME).id),
        dtype=dtype,
        **_tool_arrays(catalog, tool_ids, asarray, dtype),
        fixed_offsets=tool_terms.keypoint_offsets(asarray(cfg.fixed_keypoint_size, dtype), cfg.keypoint_scale)[None],
    )


def _tool_arrays(catalog: ToolCatalog, tool_ids: np.ndarray, asarray: AsArray, dtype: Any) -> dict[str, Any]:
    """The per-env tool fields of `TaskIndices`, gathered once per distinct tool."""
    tools = {int(t): catalog[int(t)] for t in np.unique(tool_ids)}
    scales = np.stack([np.asarray(tools[int(t)].object_scales, np.float64) for t in tool_ids])
    dims = np.stack([np.asarray(tools[int(t)].handle_dims, np.float64) for t in tool_ids])
    mass = np.array([float(tools[int(t)].mass) for t in tool_ids])
    out = {"tool_ids": tool_ids.copy(), "tool_id_array": asarray(tool_ids), "object_scales": asarray(scales, dtype),
           "handle_dims": asarray(dims, dtype), "object_mass": asarray(mass, dtype)}
    out["tool_ids"].setflags(write=False)
    for name in ("object_scales", "handle_dims", "object_mass"):
        if isinstance(out[name], np.ndarray):
            out[name].setflags(write=False)
    return out
