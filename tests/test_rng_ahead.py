"""EnvRandom's draw-ahead blocks (mjvec.rng's module docstring). Oracle: the same EnvRandom with
blocks off (AHEAD_REQUESTS = 1: one request at a time), driven through the same calls: every
returned array is equal bit for bit, and so are the words of every stream drawn afterwards (the
counters each call leaves behind), whatever interleaves the blocked calls: partial-row draws,
direct `bits` calls, other requests on the same stream, reseeding some envs, refused draws."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import mjvec.rng as rng_module
from mjvec.errors import ConfigError
from mjvec.rng import EnvRandom, words_as_uint64
from mjvec.xp import Rows

N = 24
STREAMS = ("noise", "delay", "axis", "angle", "ints")


def _requests(rng: EnvRandom, every: Rows, some: Rows, step: int) -> list:
    """One 'control step' of draws, as the randomization wrappers make them, plus disturbances."""
    out = [rng.normal(every, "noise", (5,), dtype=np.float32),
           rng.integers(every, "delay", 0, 10),
           rng.uniform(every, "axis", 0.0, 1.0, (3,)),
           rng.uniform(every, "angle", -0.3, 0.3),
           rng.normal(every, "ints", (2, 3))]
    if step % 7 == 3:  # a reset of some envs on a per-step stream (a partial request)
        out.append(rng.normal(some, "noise", (5,), dtype=np.float32))
    if step % 11 == 5:  # another request on a blocked stream (other bounds: another key)
        out.append(rng.uniform(every, "angle", -1.0, 1.0))
    if step % 13 == 6:  # raw words of a blocked stream
        out.append(rng.bits(every, "delay", 3))
    if step % 9 == 8:  # a request for every env whose bounds are arrays (never blocked)
        out.append(rng.uniform(every, "axis", np.zeros(3), np.full(3, 2.0), (3,)))
    return out


def _run(like, ahead: int, monkeypatch: pytest.MonkeyPatch, steps: int = 60) -> list:
    monkeypatch.setattr(rng_module, "AHEAD_REQUESTS", ahead)
    rng = EnvRandom(np.arange(100, 100 + N), 7, like=like)
    every = Rows.all(N, like)
    mask = np.zeros(N, bool)
    mask[[1, 4, 17]] = True
    some = Rows.of_mask(mask if like is None else torch.as_tensor(mask))
    out = []
    for step in range(steps):
        if step % 17 == 10:
            rng.seed(3, env_ids=np.array([2, 4, 9]))  # some envs reseeded mid-block
        if step % 19 == 12:
            with rng.refused("no draws here"), pytest.raises(ConfigError, match="no draws here"):
                rng.normal(every, "noise", (5,), dtype=np.float32)
        out += _requests(rng, every, some, step)
    # What each stream draws next: the counters every call left behind.
    out += [rng.bits(every, stream, 4) for stream in STREAMS]
    return [words_as_uint64(a) if a.dtype in (np.uint64, torch.int64) else np.asarray(a) for a in out]


@pytest.mark.parametrize("like", [None, torch.zeros(1, dtype=torch.float64)], ids=["numpy", "torch"])
def test_blocks_return_what_one_request_at_a_time_returns(like, monkeypatch):
    plain = _run(like, 1, monkeypatch)
    for ahead in (2, 5, 32):
        blocked = _run(like, ahead, monkeypatch)
        assert len(blocked) == len(plain)
        for i, (a, b) in enumerate(zip(plain, blocked, strict=True)):
            assert a.dtype == b.dtype and a.shape == b.shape, (ahead, i)
            np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8), err_msg=f"ahead={ahead} call {i}")


def test_blocks_form_for_repeated_requests_of_every_env(monkeypatch):
    """The blocks exist (else the test above compares the plain path with itself), for requests of
    every env and, on the host, of some envs, and a served value is a copy: writing into it changes
    nothing later."""
    monkeypatch.setattr(rng_module, "AHEAD_REQUESTS", 8)
    rng = EnvRandom(np.arange(N), 1)
    every = Rows.all(N)
    first = rng.normal(every, "s", (3,))
    assert "s" not in rng._blocks  # one request is not a pattern yet
    second = rng.normal(every, "s", (3,))
    assert rng._blocks["s"].size == 8 and rng._blocks["s"].used == 1
    second[...] = np.nan
    third = rng.normal(every, "s", (3,))
    assert np.isfinite(third).all() and not np.array_equal(first, third)
    rng.normal(Rows.of_ids([0, 5], N), "t", (3,))
    assert "t" not in rng._blocks
    rng.normal(Rows.of_ids([0, 5], N), "t", (3,))  # on the host some envs' requests form blocks too
    served = np.zeros(N, np.int64)
    served[[0, 5]] = 1
    assert rng._blocks["t"].size == 8 and rng._blocks["t"].per_env.tolist() == served.tolist()
    device = EnvRandom(np.arange(N), 1, like=torch.zeros(1))
    for _ in range(3):
        device.normal(Rows.of_mask(torch.as_tensor(np.arange(N) < 3)), "t", (3,))
    assert "t" not in device._blocks  # a device request of some envs (a dense mask) is never blocked
    big = EnvRandom(np.arange(4096), 1)
    for _ in range(3):
        big.normal(Rows.all(4096), "s", (64,))
    assert "s" not in big._blocks  # past AHEAD_WORDS a block is not worth it


def test_a_host_mask_of_every_env_is_every_env(monkeypatch):
    """Rows.of_mask of an all-True numpy mask (a step where every env is active) selects every env
    as Rows.all does: take/put need no indexing and its draws are served from blocks, with the
    same bits as one request at a time; a mask with one env out stays an id selection."""
    everyone = Rows.of_mask(np.ones(N, bool))
    assert everyone.everything and everyone.ids.tolist() == list(range(N))
    array = np.arange(N * 2.0).reshape(N, 2)
    assert everyone.take(array) is array
    one_out = np.ones(N, bool)
    one_out[3] = False
    partial = Rows.of_mask(one_out)
    assert not partial.everything and partial.take(array).shape == (N - 1, 2)
    assert not Rows.of_mask(torch.ones(N, dtype=torch.bool)).everything  # a device mask is never inspected

    def draws(ahead: int) -> tuple[list[np.ndarray], set[str]]:
        monkeypatch.setattr(rng_module, "AHEAD_REQUESTS", ahead)
        rng = EnvRandom(np.arange(N), 5)
        out = []
        for step in range(12):
            rows = Rows.of_mask(one_out if step == 7 else np.ones(N, bool))
            out += [rng.normal(rows, "s", (3,)), rng.uniform(rows, "u", -1.0, 1.0)]
        blocked = set(rng._blocks)
        return [*out, rng.bits(Rows.all(N), "s", 2), rng.bits(Rows.all(N), "u", 2)], blocked

    plain, _ = draws(1)
    blocked, streams = draws(8)
    assert streams == {"s", "u"}
    for i, (a, b) in enumerate(zip(plain, blocked, strict=True)):
        np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8), err_msg=f"call {i}")


def test_a_request_of_some_envs_is_served_from_the_block_per_env(monkeypatch):
    """On the host a request of some envs (a step where others autoreset) takes each env's own next
    numbers from the block, which then counts per env: the block survives it, an env served more
    often runs out first (then the block is rewound and the stream drawn directly), and the bits
    and the counters left behind are those of one request at a time."""
    some = Rows.of_ids([1, 4, 17], N)

    def run(ahead: int) -> tuple[list[np.ndarray], list[bool]]:
        monkeypatch.setattr(rng_module, "AHEAD_REQUESTS", ahead)
        rng = EnvRandom(np.arange(N), 9)
        out, alive = [], []
        for step in range(20):
            out.append(rng.normal(some if step % 3 == 2 else Rows.all(N), "s", (2,)))
            alive.append("s" in rng._blocks)
        return [*out, rng.bits(Rows.all(N), "s", 3)], alive

    plain, _ = run(1)
    blocked, alive = run(4)
    assert alive[1:5] == [True] * 4  # formed at the second request, kept through the partial one at step 2
    for i, (a, b) in enumerate(zip(plain, blocked, strict=True)):
        np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8), err_msg=f"call {i}")


def test_a_reset_stream_of_changing_subsets_matches_one_request_at_a_time(monkeypatch):
    """A stream only ever drawn for some envs, a different subset each time (empty ones included),
    with reseeds of some envs in between: blocks form from those requests (host), every env
    consuming its own numbers, and every bit and counter equals one request at a time."""
    subsets = np.random.default_rng(3).random((40, N)) < 0.2

    def run(ahead: int) -> tuple[list[np.ndarray], int]:
        monkeypatch.setattr(rng_module, "AHEAD_REQUESTS", ahead)
        rng = EnvRandom(np.arange(N), 4)
        out, formed = [], 0
        for step, mask in enumerate(subsets):
            if step == 17:
                rng.seed(8, env_ids=np.array([0, 3, 11]))
            rows = Rows.of_mask(mask)
            out += [rng.normal(rows, "reset/a", (3,)), rng.uniform(rows, "reset/b", -2.0, 2.0),
                    rng.quaternion(rows, "reset/q")]
            formed += "reset/a" in rng._blocks
        return [*out, *(rng.bits(Rows.all(N), s, 2) for s in ("reset/a", "reset/b", "reset/q"))], formed

    plain, _ = run(1)
    blocked, formed = run(8)
    assert formed > 30
    for i, (a, b) in enumerate(zip(plain, blocked, strict=True)):
        np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8), err_msg=f"call {i}")
