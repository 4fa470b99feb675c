"""The randomization oracle matrix on the Warp backend (warp's cpu device); see tests/dr_matrix.py.

Every cell: after the write, every model field mujoco_warp holds per world equals, in each touched
env, its own tool's scene compiled alone with the same edit made directly + mj_setConst, within
float32 tolerance (the values written: their float32 cast exactly; what set_const derives in
float32: `DERIVED_RTOL`); untouched worlds are bit-unchanged; a short trajectory with tool-table
contact follows MuJoCo C on the edited models within `STATE_ATOL`; writing the defaults back restores
the field bit for bit and the derived constants to the compiled ones within `DERIVED_RTOL` (set_const
on Warp runs in float32, so a recompute, even of unchanged values, is exact only to that round-off).
`pytest -m slow` runs the whole matrix.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from mjvec.backends.base import FieldWrite
from mjvec.backends.warp import WarpBackend
from mjvec.errors import FieldWriteError
from tests import dr_matrix as M

# mujoco_warp's float32 set_const vs mj_setConst in float64 (measured over the matrix: 1.2e-5 relative
# on actuator_acc0 / dof_invweight0, entries of cam_mat0 near 0 within 4e-8 absolute).
DERIVED_RTOL, DERIVED_ATOL = 5e-5, 1e-6
# qpos after the short trajectory, Warp (float32) vs MuJoCo C (float64), the tool dropped onto the
# table and the hand moving, over the whole matrix (noop cells included): primitive tools measured
# 4.9e-6; mesh tools 3.9e-3, because mujoco_warp's convex mesh collision is its own (not MuJoCo C's
# libccd) and tilts a landing mesh tool differently from the first contact on, write or no write.
STATE_ATOL = {"primitive": 5e-5, "mesh": 1e-2}
CONTROL_STEPS = 5
# mujoco_warp reads these only with features this scene leaves off (dof_length: sleep), and the
# template's mesh ids are the group's own numbering.
NOT_COMPARED = frozenset({"geom_dataid", "dof_length"})


class WarpRig:
    def __init__(self, geometry: str) -> None:
        self.tools = M.matrix_tools()
        self.geometry = geometry
        self.backend = WarpBackend(M.make_scene(self.tools, geometry), device="cpu", progress=False)
        self.oracles = M.Oracles(self.tools, geometry)
        self.topology = M.topology_of(self.tools)
        self.per_world = sorted({n for w in self.backend._engine.worlds for n in w.per_world} - NOT_COMPARED)
        rng = np.random.default_rng(7)
        states = [M.initial_state(self.oracles.model(i), rng) for i in range(self.tools.size)]
        self.qpos = np.stack([s[0] for s in states])
        self.qvel = np.stack([s[1] for s in states])

    def held(self) -> dict[str, np.ndarray]:
        """Every per-world field (num_envs, ...) as float64, plus gravity."""
        out = {name: self.backend.model_values(name) for name in self.per_world}
        out["gravity"] = self.backend.field_values("gravity")
        return out


@pytest.fixture(scope="module", params=M.GEOMETRIES)
def warp_rig(request) -> WarpRig:
    rig = WarpRig(request.param)
    yield rig
    rig.backend.close()


def _oracle_value(model, name: str, like: np.ndarray) -> np.ndarray:
    value = np.asarray(model.opt.gravity if name == "gravity" else getattr(model, name), np.float64)
    return value.reshape(like.shape)


def _assert_held_like(rig: WarpRig, held: dict[str, np.ndarray], models: list, written: str) -> None:
    for name, got in held.items():
        for i, model in enumerate(models):
            want = _oracle_value(model, name, got[i])
            if name == written:
                np.testing.assert_array_equal(got[i], want.astype(np.float32), err_msg=f"{name} env {i}")
            else:
                np.testing.assert_allclose(got[i], want, rtol=DERIVED_RTOL, atol=DERIVED_ATOL,
                                           err_msg=f"{name} env {i}")


def _trajectory(rig: WarpRig, models: list) -> None:
    import mujoco

    be, n = rig.backend, rig.tools.size
    be.reset(np.arange(n), rig.qpos, rig.qvel)
    datas = [mujoco.MjData(m) for m in models]
    for m, d, q, v in zip(models, datas, rig.qpos, rig.qvel, strict=True):
        d.qpos[:], d.qvel[:] = q, v
        mujoco.mj_forward(m, d)
    rng = np.random.default_rng(11)
    for _ in range(CONTROL_STEPS):
        ctrl = M.controls(models[0], rig.qpos[0], n, rng, gentle=True)
        be.ctrl[...] = torch.as_tensor(ctrl, dtype=be.ctrl.dtype)
        be.step(M.SUBSTEPS)
        for i, (m, d) in enumerate(zip(models, datas, strict=True)):
            d.ctrl[:] = ctrl[i]
            mujoco.mj_step(m, d, M.SUBSTEPS)
    got = be.qpos.cpu().numpy()
    np.testing.assert_allclose(got, np.stack([d.qpos for d in datas]), rtol=0, atol=STATE_ATOL[rig.geometry])
    assert all(d.ncon > 0 for d in datas)


def check_warp_cell(rig: WarpRig, cell: M.Cell, seed: int = 0) -> None:
    be = rig.backend
    ids = M.coverage_envs(cell.coverage, be.routing.group_of_env, rig.topology)
    write = M.write_of(cell, be, ids, seed)
    before = rig.held()
    try:
        be.check_writes([write])
    except FieldWriteError as error:
        assert cell.field == "geom_size" and rig.geometry == "mesh", error
        with pytest.raises(FieldWriteError, match="cannot be written"):
            be.write_fields([write])
        after = rig.held()
        assert all(np.array_equal(after[n], before[n]) for n in before)
        return
    be.write_fields([write])
    held = rig.held()
    models = []
    for i in range(rig.tools.size):
        k = np.flatnonzero(ids == i)
        models.append(rig.oracles.model(i, write, int(k[0])) if k.size else rig.oracles.model(i))
    untouched = np.setdiff1d(np.arange(rig.tools.size), ids)
    for name, values in held.items():
        np.testing.assert_array_equal(values[untouched], before[name][untouched], err_msg=name)
    _assert_held_like(rig, held, models, cell.field)
    _trajectory(rig, models)
    defaults = be.defaults(cell.field)
    be.write_fields([FieldWrite(cell.field, ids, write.index,
                                defaults[ids] if write.index is None else defaults[ids][:, write.index])])
    # Restored: the field bit for bit, what set_const derives within its float32 round-off.
    restored = rig.held()
    np.testing.assert_array_equal(restored[cell.field], before[cell.field])
    _assert_held_like(rig, restored, [rig.oracles.model(i) for i in range(rig.tools.size)], cell.field)


# Each field: a no-op and a scale over every group, and one value over several worlds of one group.
FAST = [M.Cell(f, op, cov) for f in M.FIELDS for op, cov in (("noop", "groups"), ("scale", "groups"), ("abs", "group"))]


def _cell_id(cell: M.Cell) -> str:
    return f"{cell.field}-{cell.operation}-{cell.coverage}"


@pytest.mark.parametrize("cell", FAST, ids=_cell_id)
def test_warp_write_equals_direct_edit_and_mj_setconst(warp_rig: WarpRig, cell: M.Cell) -> None:
    check_warp_cell(warp_rig, cell)


@pytest.mark.slow
@pytest.mark.parametrize("cell", [c for c in M.all_cells() if c not in FAST], ids=_cell_id)
def test_warp_matrix_full(warp_rig: WarpRig, cell: M.Cell) -> None:
    check_warp_cell(warp_rig, cell, seed=1)
