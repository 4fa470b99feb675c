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


@pytest.mark.parametrize("rne", [False, True], ids=["batch", "persistent_batch"])
def test_resets_match_mj_resetData_also_after_a_mocap_body_moves(rne: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Lockstep with one plain MjData per env (mj_step, mj_resetData + state + mj_forward), every
    state and output compared after every step and every reset."""
    be = _backend(6, rne=rne)
    for name in FIELDS:  # outputs are copied out from the call after they are bound
        be.bind(name)
    calls = _count_resets(monkeypatch)
    models = [_with_mocap(int(v)).compile() for v in be.variant_of_env]
    datas = [_oracle_reset(m, be.qpos[i], be.qvel[i]) for i, m in enumerate(models)]
    be.reset(np.arange(6), be.qpos.copy(), be.qvel.copy())
    rng = np.random.default_rng(0)
    target = models[0].body("target").id
    names = FIELDS + (("cfrc_ext",) if rne else ())

    def compare(when: str) -> None:
        for i, (m, d) in enumerate(zip(models, datas, strict=True)):
            if rne:
                mujoco.mj_rnePostConstraint(m, d)
            for name in names:
                np.testing.assert_array_equal(be.bind(name)[i], getattr(d, name), err_msg=f"{name} env {i} {when}")

    for it in range(8):
        ids = np.array([1, 4]) if it % 2 else np.array([1, 2, 4])
        ctrl = rng.uniform(-1, 1, be.ctrl.shape)
        be.ctrl[:] = ctrl
        be.step(3)
        for i, (m, d) in enumerate(zip(models, datas, strict=True)):
            d.ctrl[:] = ctrl[i]
            mujoco.mj_step(m, d, 3)
        if not rne:  # a step's outputs are its last substep's start, as mj_step leaves them
            compare(f"after step {it}")
        if it == 5:  # moves what mj_resetData writes into mocap_pos, in env 4 only
            pos = np.array([[[0.3, 0.3, 0.9]]])
            be.write_fields([FieldWrite("body_pos", np.array([4]), np.array([target]), pos)])
            models[4].body_pos[target] = pos[0, 0]
        qpos = np.stack([models[i].qpos0 + rng.uniform(-0.05, 0.05, models[i].nq) for i in ids])
        qvel = rng.uniform(-0.2, 0.2, (ids.size, models[0].nv))
        be.reset(ids, qpos, qvel)
        for k, i in enumerate(ids):
            datas[i] = _oracle_reset(models[i], qpos[k], qvel[k])
        compare(f"after reset {it}")
    assert np.array_equal(be.bind("mocap_pos")[4, 0], [0.3, 0.3, 0.9])
    assert np.abs(be.qvel).max() > 0.05
    # remembered: mj_resetData ran only at the first reset (all 6 envs, one call per variant group)
    # and at the first one after env 4's write (the 2 envs reset with it), in a persistent batch too
    assert sum(calls[:-1]) == 6 and len(calls) == be.num_groups + 1 and calls[-1] == 2


def test_models_that_keep_state_of_their_own_reset_for_real_every_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Sleeping keeps state in each MjData beside the row: such a model never writes remembered rows."""
    from mjvec.backends.cpu.reset_states import ResetStates, remembers_resets

    model = _with_mocap(0).compile()
    assert remembers_resets(model)
    model.opt.enableflags |= int(mujoco.mjtEnableBit.mjENBL_SLEEP)
    assert not remembers_resets(model)
    batch = mjb.Batch(model, 3, 1, persistent=True)
    calls = _count_resets(monkeypatch)
    states = ResetStates(batch, remembers_resets(model))
    for _ in range(3):
        states.reset(np.array([0, 2], np.int32))
    assert calls == [2, 2, 2]
