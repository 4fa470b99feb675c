"""The CPU backend's cfrc_ext: mj_rnePostConstraint in the batch's thread pool (mjb_apply) against
the serial host pass (each simulation's MjData copied out, mj_rnePostConstraint on the template),
bit for bit, and neither moving a bit of the trajectory. The serial pass itself is checked against
plain `mj_step` + `mj_rnePostConstraint` in tests/test_gym_mujoco.py."""

from __future__ import annotations

import logging

import mujoco
import mujoco.batch as mjb
import numpy as np
import pytest

from mjvec.backends.cpu import rne_post
from mjvec.backends.cpu.rne_post import RnePostConstraint
from mjvec.errors import ConfigError
from mjvec.tasks.gym_mujoco.specs import xml_path

N = 24


def _batches(model: mujoco.MjModel, count: int, threads: int = 2) -> list[mjb.Batch]:
    rng = np.random.default_rng(1)
    qpos = model.qpos0 + rng.uniform(-0.1, 0.1, (N, model.nq))
    batches = [mjb.Batch(model, N, threads, persistent=True) for _ in range(count)]
    for batch in batches:
        batch.bind("qpos")[:] = qpos
        batch.forward()
    return batches


@pytest.mark.parametrize("xml", ["ant.xml", "humanoid.xml"])
def test_pool_equals_the_serial_pass_and_moves_no_state(xml):
    model = mujoco.MjModel.from_xml_path(str(xml_path(xml)))
    pooled_batch, serial_batch, untouched = _batches(model, 3)
    pool = RnePostConstraint([model], [pooled_batch])
    serial = RnePostConstraint([model], [serial_batch], pool=False)
    assert pool.pooled and not serial.pooled
    assert not pool.cfrc_ext[0].flags.writeable and pool.cfrc_ext[0].shape == (N, model.nbody, 6)
    rng = np.random.default_rng(0)
    contact, refreshed = 0.0, 0
    for t in range(30):
        ctrl = rng.uniform(-1, 1, (N, model.nu))
        for batch in (pooled_batch, serial_batch, untouched):
            batch.bind("ctrl")[:] = ctrl
            batch.step(nstep=5)
        before = pool.cfrc_ext[0].copy()
        pool.update(0)
        serial.update(0)
        if t % 6 == 2:  # a partial reset, as the engine's: only those rows recomputed
            rows = np.sort(rng.choice(N, 5, replace=False))
            for batch, rne in ((pooled_batch, pool), (serial_batch, serial), (untouched, None)):
                batch.reset(rows)
                if rne is not None:
                    rne.update(0, rows)
        assert np.array_equal(pool.cfrc_ext[0], serial.cfrc_ext[0]), (xml, t)
        refreshed += not np.array_equal(before, pool.cfrc_ext[0])  # in place: the bound view is live
        for batch in (pooled_batch, serial_batch):
            assert np.array_equal(batch.state, untouched.state)
            assert np.array_equal(batch.bind("qacc"), untouched.bind("qacc"))
        contact = max(contact, float(np.abs(pool.cfrc_ext[0]).max()))
    assert contact > 1.0 and refreshed > 15  # real forces compared, not zeros, and fresh each step
    pool.update(0, np.array([], np.int64))  # no rows: nothing to run


def test_fallback_is_the_serial_pass_and_says_why(monkeypatch, caplog):
    model = mujoco.MjModel.from_xml_path(str(xml_path("ant.xml")))
    monkeypatch.setattr(rne_post, "_LAYOUT_VERSION", "9.9.9")
    (batch,) = _batches(model, 1)
    with caplog.at_level(logging.INFO, logger=rne_post.__name__):
        rne = RnePostConstraint([model], [batch])
    assert not rne.pooled
    assert any("runs serially" in r.message and "is not 9.9.9" in r.message for r in caplog.records)
    assert rne_post._batch_pointer(batch, rne_post._libmujoco()).startswith("mujoco 4.0.0 is not 9.9.9")


def test_the_pointer_check_rejects_a_batch_it_does_not_describe():
    model = mujoco.MjModel.from_xml_path(str(xml_path("ant.xml")))
    lib = rne_post._libmujoco()
    assert not isinstance(lib, str)
    persistent = mjb.Batch(model, 3, 1, persistent=True)
    assert isinstance(rne_post._batch_pointer(persistent, lib), int)
    flat = mjb.Batch(model, 3, 1)
    assert rne_post._batch_pointer(flat, lib) == "the pointer does not describe the batch (persistent 0 != 1)"
    with pytest.raises(ConfigError, match=r"needs persistent batches .* groups \[1\] are not: .*persistent=True"):
        RnePostConstraint([model, model], [persistent, flat])


def _with_masses(model: mujoco.MjModel, batches: list[mjb.Batch]) -> None:
    """Per-simulation body masses: a fused call must run each simulation on its own model."""
    masses = model.body_mass * (1 + 0.2 * np.random.default_rng(3).random((N, model.nbody)))
    for batch in batches:
        batch.expand("body_mass")[...] = masses


@pytest.mark.parametrize("xml", ["ant.xml", "humanoid.xml"])
def test_the_fused_step_and_forward_equal_the_call_then_the_pass(xml):
    """`run`: mj_step x nstep (or mj_forward) and mj_rnePostConstraint in one mjb_apply, against
    Batch.step / Batch.forward and then the pooled pass: every output, the state rows and the
    warning counters, bit for bit, over whole steps, partial steps, partial resets and a divergence."""
    model = mujoco.MjModel.from_xml_path(str(xml_path(xml)))
    fused_batch, plain_batch = _batches(model, 2)
    _with_masses(model, [fused_batch, plain_batch])
    fused = RnePostConstraint([model], [fused_batch])
    plain = RnePostConstraint([model], [plain_batch], fuse=False)
    assert fused.fused and not plain.fused and plain.pooled
    names = ("qpos", "qvel", "qacc", "xpos", "cinert", "cvel", "qfrc_actuator", "cfrc_ext")
    views = [{k: b.bind(k) for k in names} for b in (fused_batch, plain_batch)]
    rng = np.random.default_rng(0)
    changed = 0
    for t in range(24):
        ctrl = rng.uniform(-1, 1, (N, model.nu))
        rows = None if t % 3 else np.sort(rng.choice(N, 7, replace=False)).astype(np.int32)
        if t == 10:  # a huge velocity: MuJoCo warns and resets that simulation inside the step
            for batch in (fused_batch, plain_batch):
                batch.bind("qvel")[4, 0] = 1e12
        before = views[0]["cfrc_ext"].copy()
        for batch in (fused_batch, plain_batch):
            batch.bind("ctrl")[:] = ctrl
        fused.run(0, rows, 5)
        plain_batch.step(rows, nstep=5)
        plain.update(0, rows)
        if t % 4 == 1:  # a partial reset: new state rows, then one forward (fused: with the pass)
            reset = np.sort(rng.choice(N, 3, replace=False))
            qpos = model.qpos0 + rng.uniform(-0.1, 0.1, (3, model.nq))
            for batch in (fused_batch, plain_batch):
                batch.reset(reset, stage=mujoco.mjtStage.mjSTAGE_NONE)
                batch.bind("qpos")[reset] = qpos
            fused.run(0, reset, 0)
            plain_batch.forward(reset)
            plain.update(0, reset)
        for name in names:
            assert np.array_equal(views[0][name], views[1][name]), (xml, t, name)
        assert np.array_equal(fused_batch.state, plain_batch.state), (xml, t)
        assert np.array_equal(fused_batch.warning, plain_batch.warning), (xml, t)
        changed += not np.array_equal(before, views[0]["cfrc_ext"])
    assert changed > 20 and np.abs(views[0]["cfrc_ext"]).max() > 1.0
    assert fused_batch.warning[4, mujoco.mjtWarning.mjWARN_BADQVEL, 1] == 1  # the divergence happened
    fused.run(0, np.array([], np.int64), 5)  # no rows: nothing runs
    assert np.array_equal(fused_batch.state, plain_batch.state)


def test_a_fused_step_where_mujoco_raises_fails_as_batch_step_does():
    """An arena too small for the contacts: MuJoCo raises in mj_step. The fused call names the same
    simulations as Batch.step's SimulationError, and every simulation ends with the same state
    and outputs (the failed ones keep theirs)."""
    spec = mujoco.MjSpec.from_file(str(xml_path("ant.xml")))
    spec.memory = 12_000
    model = spec.compile()
    fused_batch, plain_batch = _batches(model, 2)
    fused = RnePostConstraint([model], [fused_batch])
    plain = RnePostConstraint([model], [plain_batch], fuse=False)
    rng = np.random.default_rng(1)
    raised = 0
    for t in range(40):
        ctrl = rng.uniform(-1, 1, (N, model.nu))
        for batch in (fused_batch, plain_batch):
            batch.bind("ctrl")[:] = ctrl
        errors = []
        for call in (lambda: fused.run(0, None, 5), lambda: plain_batch.step(nstep=5)):
            try:
                call()
                errors.append(None)
            except mjb.SimulationError as error:
                errors.append(error)
        plain.update(0)
        if errors[1] is None:
            assert errors[0] is None, t
        else:
            raised += 1
            assert np.array_equal(errors[0].ids, errors[1].ids) and str(errors[0]) == str(errors[1]), t
        assert np.array_equal(fused_batch.state, plain_batch.state), t
        assert np.array_equal(fused_batch.bind("cfrc_ext"), plain_batch.bind("cfrc_ext")), t
    assert raised  # the arena did overflow


def test_without_the_fused_callback_the_pass_runs_unfused_and_says_why(monkeypatch, caplog):
    model = mujoco.MjModel.from_xml_path(str(xml_path("ant.xml")))
    monkeypatch.setattr(rne_post, "_FUSED", ["the fused callback did not compile (test)"])
    (batch,) = _batches(model, 1)
    with caplog.at_level(logging.INFO, logger=rne_post.__name__):
        rne = RnePostConstraint([model], [batch])
    assert rne.pooled and not rne.fused
    assert any("unfused (the fused callback did not compile (test))" in r.message for r in caplog.records)
    with pytest.raises(RuntimeError, match=r"RnePostConstraint.run needs the fused callback"):
        rne.run(0, None, 5)
