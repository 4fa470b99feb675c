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
