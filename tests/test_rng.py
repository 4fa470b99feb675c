"""EnvRandom: per-env counter-based streams. Oracles: the counter-mode definition (a draw of n
words equals the same words drawn in parts), independence of other envs, and the target
distributions (Kolmogorov-Smirnov distance to the exact CDF, moments)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mjvec.errors import ConfigError
from mjvec.rng import EnvRandom, words_as_uint64
from mjvec.xp import Rows

N_ENVS = 2000


def _ks_distance(samples: np.ndarray, cdf) -> float:
    x = np.sort(samples.ravel())
    f = cdf(x)
    n = x.size
    return float(max((np.arange(1, n + 1) / n - f).max(), (f - np.arange(n) / n).max()))


def _normal_cdf(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


def test_bits_are_a_counter_stream():
    a, b = EnvRandom(np.arange(8), 3), EnvRandom(np.arange(8), 3)
    ids = np.arange(8)
    whole = a.bits(ids, "s", 5)
    parts = np.concatenate([b.bits(ids, "s", 2), b.bits(ids, "s", 3)], axis=1)
    np.testing.assert_array_equal(whole, parts)


def test_a_draw_depends_only_on_its_env():
    """Env 5 drawing alone == env 5 drawing with every env == env 5 in a shard (global ids key it)."""
    together = EnvRandom(np.arange(8), 7).normal(np.arange(8), "n", (7,))[5]
    alone = EnvRandom(np.arange(8), 7).normal(np.array([5]), "n", (7,))[0]
    shard = EnvRandom(np.arange(4, 8), 7).normal(np.array([1]), "n", (7,))[0]  # local 1 = global 5
    np.testing.assert_array_equal(alone, together)
    np.testing.assert_array_equal(shard, together)


def test_streams_and_seeds_differ():
    r = EnvRandom(np.arange(4), 0)
    ids = np.arange(4)
    assert not np.array_equal(r.bits(ids, "a", 4), EnvRandom(np.arange(4), 0).bits(ids, "b", 4))
    assert not np.array_equal(r.bits(ids, "a", 4)[0], r.bits(ids, "a", 4)[1])
    one, two = EnvRandom(np.arange(4), 1), EnvRandom(np.arange(4), 2)
    assert not np.array_equal(one.bits(ids, "a", 4), two.bits(ids, "a", 4))


@pytest.mark.parametrize("width", [1, 6, 29])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_normal_distribution(width, dtype):
    r = EnvRandom(np.arange(N_ENVS), 11)
    z = np.concatenate([r.normal(np.arange(N_ENVS), "n", (width,), dtype=dtype) for _ in range(max(1, 60 // width))])
    assert z.shape[1:] == (width,) and z.dtype == dtype
    z = z.astype(np.float64)
    assert np.isfinite(z).all() and np.abs(z).max() < math.sqrt(64 * math.log(2)) + 1e-9
    assert abs(z.mean()) < 0.01 and abs(z.std() - 1.0) < 0.01
    assert abs((z ** 4).mean() - 3.0) < 0.1  # kurtosis of a normal
    assert _ks_distance(z, _normal_cdf) < 0.005
    if width > 1:  # the cos and sin halves of each Box-Muller pair are uncorrelated
        half = (width + 1) // 2
        products = z[:, :width - half] * z[:, half:]
        assert abs(products.mean()) < 4.0 / math.sqrt(products.size)  # 4 sigma of the pooled correlation


def test_uniform_and_integers_distribution():
    r = EnvRandom(np.arange(N_ENVS), 5)
    u = r.uniform(np.arange(N_ENVS), "u", -2.0, 3.0, (50,))
    assert u.min() >= -2.0 and u.max() < 3.0
    assert _ks_distance(u, lambda x: (x + 2.0) / 5.0) < 0.005
    k = r.integers(np.arange(N_ENVS), "k", 0, 3, (50,))
    np.testing.assert_allclose(np.bincount(k.ravel(), minlength=3) / k.size, 1 / 3, atol=0.01)
    # Small spans use exact integer arithmetic: the same numbers as floor(u * span) on the same words.
    a, b = EnvRandom(np.arange(64), 9), EnvRandom(np.arange(64), 9)
    ints = a.integers(np.arange(64), "i", -3, 7, (5,))
    u = b.uniform(np.arange(64), "i", 0.0, 1.0, (5,))
    np.testing.assert_array_equal(ints, -3 + np.floor(u * 10).astype(np.int64))
    big = r.integers(np.arange(N_ENVS), "big", 0, 10_000, (10,))  # the float path
    assert big.min() >= 0 and big.max() < 10_000 and abs(big.mean() - 4999.5) < 60
    with pytest.raises(ConfigError, match="integers needs high > low"):
        r.integers(np.arange(2), "k", 3, 3)


def test_quaternions_are_unit_and_uniform():
    r = EnvRandom(np.arange(N_ENVS), 2)
    q = np.concatenate([r.quaternion(np.arange(N_ENVS), "q") for _ in range(20)])
    np.testing.assert_allclose(np.linalg.norm(q, axis=1), 1.0, atol=1e-12)
    # Haar measure: the rotation angle has density (1 - cos t) / pi on [0, pi].
    angle = 2.0 * np.arccos(np.clip(np.abs(q[:, 0]), 0.0, 1.0))
    assert _ks_distance(angle, lambda t: (t - np.sin(t)) / np.pi) < 0.01


def test_seed_errors():
    with pytest.raises(ConfigError, match="seed must be a non-negative int"):
        EnvRandom(np.arange(2), -1)
    with pytest.raises(ConfigError, match="expected one per env"):
        EnvRandom(np.arange(2), [1, 2, 3])


# ---- the device streams: the same splitmix64 in int64 torch arithmetic ---------------------------
def _pair(n: int = 64, seed: int = 11) -> tuple[EnvRandom, EnvRandom]:
    torch = pytest.importorskip("torch")
    ids = np.arange(1000, 1000 + n)
    return EnvRandom(ids, seed), EnvRandom(ids, seed, like=torch.zeros(1))


def test_device_streams_give_the_host_words_and_uniforms_bit_for_bit():
    """Oracle: the uint64 host computation. Dense mask draws (the device step's form) advance only
    the masked envs, so a later draw still matches the host streams drawn by ids."""
    host, dev = _pair()
    import torch

    rng = np.random.default_rng(0)
    for k in range(6):
        mask = rng.random(64) < 0.4
        ids = np.flatnonzero(mask)
        rows = Rows.of_mask(torch.as_tensor(mask)) if k % 2 else ids
        np.testing.assert_array_equal(words_as_uint64(_sel(dev.bits(rows, "w", 3), mask, k)), host.bits(ids, "w", 3))
        u_dev = _sel(dev.uniform(rows, "u", -2.0, 5.0, (2, 3)), mask, k).numpy()
        np.testing.assert_array_equal(u_dev, host.uniform(ids, "u", -2.0, 5.0, (2, 3)))
        for low, high in ((-3, 7), (0, 600), (5, 5 + (1 << 20))):  # both integer paths
            got = _sel(dev.integers(rows, f"i{high}", low, high, (4,)), mask, k).numpy()
            np.testing.assert_array_equal(got, host.integers(ids, f"i{high}", low, high, (4,)))
    everyone = np.arange(64)
    np.testing.assert_array_equal(words_as_uint64(dev.bits(everyone, "w", 2)), host.bits(everyone, "w", 2))


def _sel(value, mask: np.ndarray, k: int):
    """The selected rows of a draw: a dense (mask) draw returns every row, an id draw only its own."""
    import torch

    return value[torch.as_tensor(mask)] if k % 2 else value


@pytest.mark.parametrize(("dtype", "ulps"), [(np.float64, 1), (np.float32, 1)])
def test_device_normals_and_quaternions_match_the_host_within_ulps(dtype, ulps):
    """Box-Muller's log and sincos are mjvec.portable's (the same bits in both namespaces); its
    sqrt is the namespace's own, and torch 2.13's CPU sqrt is not correctly rounded: 1 ulp at most."""
    host, dev = _pair(256)
    ids = np.arange(0, 256, 3)
    want = host.normal(ids, "n", (5,), dtype=dtype)
    got = dev.normal(ids, "n", (5,), dtype=dtype).numpy()
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=0, atol=ulps * np.finfo(dtype).eps * np.abs(want).max())
    np.testing.assert_allclose(dev.quaternion(ids, "q").numpy(), host.quaternion(ids, "q"), rtol=0, atol=1e-15)


def test_device_reseed_matches_the_host():
    host, dev = _pair()
    for r in (host, dev):
        r.uniform(np.arange(64), "a")
        r.seed([7, 8, 9], env_ids=np.array([1, 5, 60]))
    np.testing.assert_array_equal(dev.uniform(np.arange(64), "a", shape=(3,)).numpy(),
                                  host.uniform(np.arange(64), "a", shape=(3,)))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n", [1, 6, 7])
def test_host_normals_are_the_box_muller_formula_bit_for_bit(n, dtype):
    """The host's compiled transform against Box-Muller written out with `mjvec.portable`'s generic
    (namespace-independent) log and sincos: r = sqrt(-2 ln u1), (r cos(2 pi u2), r sin(2 pi u2))
    for each word, the cosines first, an odd count dropping the last sine."""
    from mjvec import portable

    words = (n + 1) // 2
    rng = np.random.default_rng(3)
    w = rng.integers(0, 2**64 - 1, (500, words), dtype=np.uint64, endpoint=True)
    w[:4, 0] = [0, 2**64 - 1, (2**32 - 1) << 32, 2**32 - 1]  # u1 at 2**-32 and 1, the angle at 0 and its top
    u1 = ((w >> np.uint64(32)).astype(np.float64) + 1.0) * 2.0**-32
    angle = (w & np.uint64(0xFFFFFFFF)).astype(np.float64) * (2.0 * math.pi * 2.0**-32)
    r = np.sqrt(-2.0 * portable._log64(np, u1))
    sin, cos = portable._sincos64(np, angle)
    want = np.concatenate([r * cos, r * sin], axis=1)[:, :n].astype(dtype)
    got = EnvRandom._host_normals(w, n, 1, (n,), dtype)
    assert got.shape == (500, 1, n) and got.dtype == dtype
    np.testing.assert_array_equal(got.reshape(500, n).view(np.uint8), want.view(np.uint8))


def test_host_words_are_the_splitmix_formula_bit_for_bit():
    """The compiled word generator against splitmix64 written out in numpy (`_mix` of key ^ tag plus
    (counter + j) golden, wrapping), with counters about to wrap past 2**64, a repeated env id (both
    rows start from the same counter, as a numpy gather does) and the counters it leaves."""
    from mjvec import _portable_host
    from mjvec import rng as mjvec_rng

    rng = np.random.default_rng(5)
    keys = rng.integers(0, 2**64 - 1, 40, dtype=np.uint64, endpoint=True)
    counters = rng.integers(0, 2**64 - 1, 40, dtype=np.uint64, endpoint=True)
    counters[:3] = [2**64 - 1, 2**64 - 5, 0]
    ids = np.array([0, 1, 2, 7, 7, 39, 12])
    tag = mjvec_rng._stream_tag("some/stream")
    before = counters.copy()
    got = _portable_host.words(keys, ids, tag, counters, 9)
    with np.errstate(over="ignore"):
        start = before[ids]
        want = mjvec_rng._mix(((keys[ids] ^ tag) + start * mjvec_rng._GOLDEN)[:, None]
                              + np.arange(9, dtype=np.uint64)[None, :] * mjvec_rng._GOLDEN)
        expected_counters = before.copy()
        expected_counters[ids] = start + np.uint64(9)
    assert got.dtype == np.uint64 and got.shape == (7, 9)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(counters, expected_counters)


@pytest.mark.parametrize(("low", "high"), [(-0.3, 1.7), (0, 5), (np.float32(0.1), np.float32(0.7)), (2.5, 2.5)])
def test_host_uniforms_are_the_formula_of_their_words(low, high):
    """The compiled uniform transform (words and low + (high - low) u in one pass) against the
    numpy formula on the same words (an identically seeded generator's bits), for float, int and
    float32 bounds, one request and a draw-ahead block, all envs and a selection."""
    for ids, shape, repeat in ((np.arange(16), (3,), 4), (np.array([2, 9, 11]), (2, 2), 1)):
        drawn, raw = EnvRandom(np.arange(16), 21), EnvRandom(np.arange(16), 21)
        for _ in range(repeat):  # repeated requests of every env: served from a block after the first
            got = drawn.uniform(ids, "u", low, high, shape)
            w = raw.bits(ids, "u", int(np.prod(shape)))
            u = ((w >> np.uint64(11)).astype(np.float64) * 2.0**-53).reshape(-1, *shape)
            want = np.asarray(low) + (np.asarray(high) - np.asarray(low)) * u
            assert got.dtype == np.float64 and got.shape == (ids.size, *shape)
            np.testing.assert_array_equal(got.view(np.uint64), want.view(np.uint64))
