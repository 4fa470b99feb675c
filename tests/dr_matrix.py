"""The randomization oracle matrix: cells, writes and their independent oracle.

A cell is (backend, tool geometry, field, operation, coverage). Fields are every field the
backends declare writable (`mjvec.backends.fields.field_specs`, what both backends build their
capabilities from, so the list is generated, not written here). A cell writes the field for the
envs of its coverage; the oracle is each touched env's own tool scene compiled alone with plain
MuJoCo, the same values written into that MjModel directly, then `mj_setConst`.

Operations make the values from each env's compiled defaults the way EventTerms do: `noop`
(x 1.0: must change nothing), `scale` (per env and entry, x U(0.9, 1.1)), `add` (+ U(0.02, 0.05)
x (|default| + 0.01)) and `abs` (the first touched env's default x 1.1, one value for all).
Coverage: `one` env, `group` (several envs of one engine group) and `groups` (envs of every
group; on a backend with one group, envs of every tool topology).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import mujoco
import numpy as np

from mjvec.assets import robot
from mjvec.backends import fields as F
from mjvec.backends.base import FieldWrite, Scene
from mjvec.tasks.simtoolreal.scene import (
    HOME_KEYFRAME,
    OBJECT_BODY_NAME,
    OBJECT_JOINT_NAME,
    TABLE_TOP_Z,
    default_catalog,
    scene_spec,
)

OPERATIONS = ("noop", "scale", "add", "abs")
COVERAGES = ("one", "group", "groups")
GEOMETRIES = ("primitive", "mesh")
# Writable fields, generated from the table both backends declare from.
FIELDS = tuple(sorted(F.field_specs(scene_spec(0).compile(), np.float64)))
CONTROL_STEPS = 20
SUBSTEPS = 2
TOPOLOGIES = ("box_box", "capsule_box", "box_only")


def matrix_tools(per_topology: int = 2) -> np.ndarray:
    """Tool ids: `per_topology` of each topology class, interleaved (env i gets tools[i])."""
    catalog = default_catalog()
    ids = [catalog.ids_of_topology(t)[:per_topology] for t in TOPOLOGIES]
    return np.array([int(t) for row in zip(*ids, strict=True) for t in row], np.int64)


def make_scene(tools: np.ndarray, geometry: str) -> Scene:
    return Scene(num_variants=600, make_variant=lambda v: scene_spec(v, geometry), num_envs=tools.size,
                 assignment=tools, name=f"matrix-{geometry}")


def targets(model: mujoco.MjModel, entity: str) -> np.ndarray | None:
    """The entries a cell writes: the tool's own and one of the robot's (None: the whole tail)."""
    tip = robot.FINGERTIP_BODY_NAMES[0]
    if entity == "body":
        return np.array([model.body(OBJECT_BODY_NAME).id, model.body(tip).id])
    if entity == "geom":
        tool = [g for g in range(model.ngeom) if model.geom(g).name in ("object_handle", "object_head")]
        return np.array([*tool, model.geom(f"{tip}_collision").id])
    if entity == "dof":
        adr = int(model.jnt_dofadr[model.joint(OBJECT_JOINT_NAME).id])
        return np.array([*range(adr, adr + 6), 1])
    if entity == "joint":
        return np.array([1, model.joint(robot.HAND_JOINT_NAMES[2]).id])
    if entity == "actuator":
        return np.array([1, model.nu - 3])
    if entity == "qpos":  # hinge joints' entries (a free joint's quaternion entries stay unit)
        return np.array([model.jnt_qposadr[1], model.jnt_qposadr[model.joint(robot.HAND_JOINT_NAMES[2]).id]])
    return None


def coverage_envs(coverage: str, group_of_env: np.ndarray, topology: np.ndarray) -> np.ndarray:
    if coverage == "one":
        return np.array([1])
    if coverage == "group":
        first = np.flatnonzero(group_of_env == group_of_env[0])
        return first[: max(2, min(3, first.size))] if first.size > 1 else first
    # every group and every topology at least once, in ascending env order
    keys = group_of_env * 10 + topology
    return np.sort(np.array([np.flatnonzero(keys == k)[0] for k in np.unique(keys)]))


@dataclass(frozen=True)
class Cell:
    field: str
    operation: str
    coverage: str

    def values(self, defaults: np.ndarray, env_ids: np.ndarray, index: np.ndarray | None, seed: int) -> np.ndarray:
        """(K, ...) values for `env_ids` from the backend's (num_envs, ...) compiled defaults."""
        base = defaults[env_ids] if index is None else defaults[env_ids][:, index]
        rng = np.random.default_rng(seed)
        # One factor per (env, entry), broadcast over the entry's components (keeps an inertia's
        # proportions and a range's order).
        shape = base.shape[:2] if index is not None else base.shape[:1]
        draw = rng.uniform(size=shape).reshape(shape + (1,) * (base.ndim - len(shape)))
        if self.operation == "noop":
            return base * 1.0
        if self.operation == "scale":
            return base * (0.9 + 0.2 * draw)
        if self.operation == "add":
            return base + (0.02 + 0.03 * draw) * (np.abs(base) + 0.01)
        return np.broadcast_to(base[:1] * 1.1, base.shape).copy()


def all_cells() -> list[Cell]:
    return [Cell(f, op, cov) for f in FIELDS for op in OPERATIONS for cov in COVERAGES]


def write_of(cell: Cell, backend, env_ids: np.ndarray, seed: int) -> FieldWrite:
    spec = backend.capabilities.fields[cell.field]
    index = targets(backend.model, spec.entity)
    values = cell.values(backend.defaults(cell.field), env_ids, index, seed)
    return FieldWrite(cell.field, env_ids, index, values)


class Oracles:
    """Each env's tool scene compiled alone (cached per tool), edited directly on demand."""

    def __init__(self, tools: np.ndarray, geometry: str) -> None:
        self.tools = tools
        self.compiled = {int(t): scene_spec(int(t), geometry).compile() for t in np.unique(tools)}

    def model(self, env: int, write: FieldWrite | None = None, k: int = 0) -> mujoco.MjModel:
        """Env `env`'s model: its tool compiled alone, with row `k` of `write` edited in + mj_setConst."""
        m = copy.copy(self.compiled[int(self.tools[env])])
        if write is None:
            return m
        if write.field in F.OPTION_FIELDS:
            getattr(m.opt, write.field)[...] = write.values[k]
        elif write.index is None:
            getattr(m, write.field)[...] = write.values[k]
        else:
            getattr(m, write.field)[write.index] = write.values[k]
        mujoco.mj_setConst(m, mujoco.MjData(m))
        return m


def initial_state(model: mujoco.MjModel, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(qpos, qvel) of one env: the robot at home, the tool lying yawed a few mm above the table."""
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, model.key(HOME_KEYFRAME).id)
    adr = int(model.jnt_qposadr[model.joint(OBJECT_JOINT_NAME).id])
    yaw = rng.uniform(0.1, 0.4)
    data.qpos[adr + 3:adr + 7] = [np.cos(yaw / 2), 0, 0, np.sin(yaw / 2)]
    data.qpos[adr:adr + 2] = rng.uniform(-0.05, 0.05, 2)
    mujoco.mj_forward(model, data)
    body = model.body(OBJECT_BODY_NAME).id
    lowest = np.inf
    for g in np.flatnonzero((model.geom_bodyid == body) & (model.geom_contype > 0)):
        half = model.geom_aabb[g, 3:]
        rot = data.geom_xmat[g].reshape(3, 3)
        lowest = min(lowest, data.geom_xpos[g, 2] + rot[2] @ model.geom_aabb[g, :3] - np.abs(rot[2]) @ half)
    data.qpos[adr + 2] += TABLE_TOP_Z + 0.002 - lowest
    qvel = np.zeros(model.nv)
    qvel[int(model.jnt_dofadr[model.joint(OBJECT_JOINT_NAME).id]) + 2] = -0.2
    return data.qpos.copy(), qvel


def controls(model: mujoco.MjModel, home: np.ndarray, num_envs: int, rng: np.random.Generator,
             *, gentle: bool = False) -> np.ndarray:
    """(N, nu) controls: the arm jittering about home; the fingers anywhere in their range, or
    (gentle) jittering about home too, so that no finger collides with another."""
    lo, hi = model.actuator_ctrlrange.T
    arm = home[:7] + rng.uniform(-0.05, 0.05, (num_envs, 7))
    if gentle:
        hand = np.clip(home[7:model.nu] + rng.uniform(-0.05, 0.05, (num_envs, model.nu - 7)), lo[7:], hi[7:])
    else:
        hand = lo[7:] + (hi[7:] - lo[7:]) * rng.uniform(size=(num_envs, model.nu - 7))
    return np.concatenate([arm, hand], axis=1)


def topology_of(tools: np.ndarray) -> np.ndarray:
    catalog = default_catalog()
    return np.array([TOPOLOGIES.index(catalog[int(t)].topology) for t in tools])
