"""The CPU engine's remembered reset rows (mjvec/backends/cpu/reset_states.py) against plain mujoco:
a reset that writes a remembered row must leave exactly what mj_resetData + the given state +
mj_forward leaves in the env's variant compiled alone, also after a model write moved what
mj_resetData reads (a mocap body's position), and must actually skip mj_resetData when it can."""

from __future__ import annotations

import mujoco
import mujoco.batch as mjb
import numpy as np
import pytest

from mjvec.backends.base import FieldWrite, Scene
from mjvec.backends.cpu import CpuBackend
from tests.scenes import make_scene


def _with_mocap(v: int) -> mujoco.MjSpec:
    spec = make_scene(v)
    target = spec.worldbody.add_body(name="target", pos=[0.1 * (v + 1), -0.2, 0.5], mocap=True)
    target.add_geom(type=mujoco.mjtGeom.mjGEOM_SPHERE, size=[0.02, 0, 0], contype=0, conaffinity=0)
    return spec


def _backend(num_envs: int, *, rne: bool = False) -> CpuBackend:
    scene = Scene(num_variants=3, make_variant=_with_mocap, num_envs=num_envs, rne_post_constraint=rne)
    return CpuBackend(scene, num_threads=2, progress=False)


FIELDS = ("qpos", "qvel", "mocap_pos", "mocap_quat", "ctrl", "qacc_warmstart", "time", "xpos", "qacc")


def _oracle_reset(model: mujoco.MjModel, qpos: np.ndarray, qvel: np.ndarray) -> mujoco.MjData:
    data = mujoco.MjData(model)
    mujoco.mj_resetData(model, data)
    data.qpos[:], data.qvel[:] = qpos, qvel
    mujoco.mj_forward(model, data)
    return data


def _count_resets(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    inner = mjb.Batch.reset

    def counted(self: mjb.Batch, ids: object = None, *args: object, **kwargs: object) -> None:
        calls.append(len(np.atleast_1d(ids)))  # type: ignore[arg-type]
        inner(self, ids, *args, **kwargs)

    monkeypatch.setattr(mjb.Batch, "reset", counted)
    return calls


@pytest.mark.parametrize("rne", [False, True], ids=["remembered", "persistent_batch"])
def test_resets_match_mj_resetData_also_after_a_mocap_body_moves(rne: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    be = _backend(6, rne=rne)
    for name in FIELDS:  # outputs are copied out from the call after they are bound
        be.bind(name)
    calls = _count_resets(monkeypatch)
    models = [_with_mocap(int(v)).compile() for v in be.variant_of_env]
    rng = np.random.default_rng(0)
    target = models[0].body("target").id
    for it in range(8):
        ids = np.array([1, 4]) if it % 2 else np.array([1, 2, 4])
        be.ctrl[:] = rng.uniform(-1, 1, be.ctrl.shape)
        be.step(3)
        if it == 5:  # moves what mj_resetData writes into mocap_pos, in env 4 only
            pos = np.array([[[0.3, 0.3, 0.9]]])
            be.write_fields([FieldWrite("body_pos", np.array([4]), np.array([target]), pos)])
            models[4].body_pos[target] = pos[0, 0]
        qpos = np.stack([models[i].qpos0 + rng.uniform(-0.05, 0.05, models[i].nq) for i in ids])
        qvel = rng.uniform(-0.2, 0.2, (ids.size, models[0].nv))
        be.reset(ids, qpos, qvel)
        for k, i in enumerate(ids):
            data = _oracle_reset(models[i], qpos[k], qvel[k])
            for name in FIELDS:
                np.testing.assert_array_equal(be.bind(name)[i], getattr(data, name), err_msg=f"{name} env {i} it {it}")
    assert np.array_equal(be.bind("mocap_pos")[4, 0], [0.3, 0.3, 0.9])
    # remembered: mj_resetData ran only at the first reset (3 envs) and at the first one after env
    # 4's write (the 2 envs reset with it); a persistent batch runs it at every reset
    assert calls == ([3, 2] * 4 if rne else [3, 2])
