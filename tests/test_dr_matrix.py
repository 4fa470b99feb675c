"""The randomization oracle matrix (see tests/dr_matrix.py for the cells and the oracle).

Every cell: after the write, every model field of each touched env equals its own tool's scene
compiled alone with the same edit made directly + mj_setConst (CPU: bit for bit; Warp: float32
tolerances stated below), every untouched env is unchanged, a short trajectory with tool-table
contact equals the oracle's (CPU: bit for bit), and writing the defaults back restores the envs
bit for bit. A cell the backend cannot make exact must be refused with nothing written.

The default run covers every field with a sample of the operations and coverages on both tool
geometries; `pytest -m slow` runs the whole matrix.
"""

from __future__ import annotations

import copy

import mujoco
import numpy as np
import pytest

from mjvec.backends.base import FieldWrite
from mjvec.backends.cpu import CpuBackend
from mjvec.backends.variants import field_value, model_arrays
from mjvec.errors import FieldWriteError
from tests import dr_matrix as M

# Arrays that locate names or hold mesh assets: a group template carries every variant's meshes,
# so these (and geom_dataid, the template's mesh ids) are compared through what they select.
_SKIP = ("names", "names_map", "paths", "geom_dataid")
_ASSET = ("mesh_", "oct_", "name_")
_BVH = ("bvh_aabb", "bvh_child", "bvh_depth", "bvh_nodeid")


def compared_arrays(model: mujoco.MjModel) -> list[str]:
    return [n for n in model_arrays(model) if n not in _SKIP and not n.startswith(_ASSET)]


def model_diff(got: mujoco.MjModel, want: mujoco.MjModel) -> list[str]:
    """Names of the arrays (and options) that differ bit for bit (BVHs: the bodies' rows)."""
    out = []
    for name in compared_arrays(want):
        if name in _BVH:
            a, b = got.__getattribute__(name)[: int(want.body_bvhnum.sum())], field_value(want, name)
        else:
            a, b = getattr(got, name), getattr(want, name)
        if a.shape != b.shape or a.tobytes() != b.tobytes():
            out.append(name)
    for name in ("gravity", "timestep", "impratio", "tolerance"):
        if np.asarray(getattr(got.opt, name)).tobytes() != np.asarray(getattr(want.opt, name)).tobytes():
            out.append(f"opt.{name}")
    return out


def env_model(backend, env: int) -> mujoco.MjModel:
    m = copy.copy(backend.env_template(env))
    backend.write_env_model(env, m)
    return m


class CpuRig:
    def __init__(self, geometry: str) -> None:
        self.tools = M.matrix_tools()
        self.geometry = geometry
        self.backend = CpuBackend(M.make_scene(self.tools, geometry), num_threads=2, progress=False)
        self.oracles = M.Oracles(self.tools, geometry)
        self.topology = M.topology_of(self.tools)
        rng = np.random.default_rng(7)
        states = [M.initial_state(self.oracles.model(i), rng) for i in range(self.tools.size)]
        self.qpos = np.stack([s[0] for s in states])
        self.qvel = np.stack([s[1] for s in states])
        for i in range(self.tools.size):
            assert model_diff(env_model(self.backend, i), self.oracles.model(i)) == [], i


@pytest.fixture(scope="module", params=M.GEOMETRIES)
def cpu_rig(request) -> CpuRig:
    rig = CpuRig(request.param)
    yield rig
    rig.backend.close()


def _trajectory(backend, models: list[mujoco.MjModel], qpos: np.ndarray, qvel: np.ndarray, exact: bool,
                atol: float = 0.0) -> bool:
    """Step the backend and each env's oracle model alike; return whether the tools touched the table."""
    n = len(models)
    backend.reset(np.arange(n), qpos, qvel)
    datas = [mujoco.MjData(m) for m in models]
    for m, d, q, v in zip(models, datas, qpos, qvel, strict=True):
        d.qpos[:], d.qvel[:] = q, v
        mujoco.mj_forward(m, d)
    rng = np.random.default_rng(11)
    contact = np.zeros(n, bool)
    tool = models[0].body(M.OBJECT_BODY_NAME).id
    for _ in range(M.CONTROL_STEPS):
        ctrl = M.controls(models[0], qpos[0], n, rng)
        backend.ctrl[:] = ctrl
        backend.step(M.SUBSTEPS)
        for i, (m, d) in enumerate(zip(models, datas, strict=True)):
            d.ctrl[:] = ctrl[i]
            mujoco.mj_step(m, d, M.SUBSTEPS)
            bodies = m.geom_bodyid[d.contact.geom[: d.ncon]]
            contact[i] |= bool(((bodies == tool).any(axis=1) & (bodies == 0).any(axis=1)).any())
        want = np.stack([d.qpos for d in datas])
        if exact:
            np.testing.assert_array_equal(np.asarray(backend.qpos), want)
        else:
            np.testing.assert_allclose(np.asarray(backend.qpos), want, rtol=0, atol=atol)
    return bool(contact.all())


def check_cpu_cell(rig: CpuRig, cell: M.Cell, seed: int = 0) -> None:
    be = rig.backend
    ids = M.coverage_envs(cell.coverage, be.routing.group_of_env, rig.topology)
    write = M.write_of(cell, be, ids, seed)
    before = [env_model(be, i) for i in range(rig.tools.size)]
    for i in range(rig.tools.size):  # every cell starts from the compiled models (restored by the last cell)
        assert model_diff(before[i], rig.oracles.model(i)) == [], ("a previous cell left env", i, "changed")
    try:
        be.check_writes([write])
    except FieldWriteError as error:
        # Fail closed: only what cannot be made exact is refused, and the refusal writes nothing.
        assert cell.field == "geom_size" and rig.geometry == "mesh", error
        with pytest.raises(FieldWriteError, match="cannot be written"):
            be.write_fields([write])
        assert all(model_diff(env_model(be, i), before[i]) == [] for i in range(rig.tools.size))
        return
    be.write_fields([write])
    models = []
    for i in range(rig.tools.size):
        got = env_model(be, i)
        k = np.flatnonzero(ids == i)
        want = rig.oracles.model(i, write, int(k[0])) if k.size else before[i]
        assert model_diff(got, want) == [], (i, cell)
        models.append(want)
    if cell.operation == "noop":
        assert all(model_diff(models[i], before[i]) == [] for i in range(rig.tools.size))
    assert _trajectory(be, models, rig.qpos, rig.qvel, exact=True), "no tool-table contact"
    restore = FieldWrite(cell.field, ids, write.index,
                         M.Cell(cell.field, "noop", cell.coverage).values(be.defaults(cell.field), ids, write.index, 0))
    be.write_fields([restore])
    for i in range(rig.tools.size):
        assert model_diff(env_model(be, i), before[i]) == [], ("restore", i, cell)


FAST = [M.Cell(f, op, cov) for f in M.FIELDS for op, cov in (("noop", "groups"), ("scale", "groups"),
                                                              ("add", "one"), ("abs", "group"))]


def _cell_id(cell: M.Cell) -> str:
    return f"{cell.field}-{cell.operation}-{cell.coverage}"


@pytest.mark.parametrize("cell", FAST, ids=_cell_id)
def test_cpu_write_equals_direct_edit_and_mj_setconst(cpu_rig: CpuRig, cell: M.Cell) -> None:
    check_cpu_cell(cpu_rig, cell)


@pytest.mark.slow
@pytest.mark.parametrize("cell", [c for c in M.all_cells() if c not in FAST], ids=_cell_id)
def test_cpu_matrix_full(cpu_rig: CpuRig, cell: M.Cell) -> None:
    check_cpu_cell(cpu_rig, cell, seed=1)
