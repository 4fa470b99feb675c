"""mjvec._jit's scalar helpers against numpy, bit for bit: `pairwise_sum` against np.sum along an
axis (every length a kernel may sum, rows of every sign mix, signed zeros), `clip`, `minimum` and
`maximum` against np.clip, np.minimum and np.maximum on special values."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from mjvec import _jit


@_jit.kernel
def _row_sums(a: np.ndarray, out: np.ndarray) -> None:
    for i in range(a.shape[0]):
        out[i] = _jit.pairwise_sum(a[i])


@_jit.kernel
def _elementwise(x: np.ndarray, y: np.ndarray, out: np.ndarray) -> None:
    for i in range(x.shape[0]):
        out[0, i] = _jit.clip(x[i], -1.0, 1.0)
        out[1, i] = _jit.clip(x[i], 0.0, 1e4)
        out[2, i] = _jit.minimum(x[i], y[i])
        out[3, i] = _jit.maximum(x[i], y[i])


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.uint64)


@pytest.mark.parametrize("rows", [1, 2, 7, 64, 1024])
def test_pairwise_sum_is_numpys_sum_along_an_axis(rows: int) -> None:
    rng = np.random.default_rng(rows)
    for n in range(1, _jit.PAIRWISE_BLOCK + 1):
        # magnitudes over many binades and both signs: the order of the additions shows in the bits
        a = rng.normal(size=(rows, n)) * np.exp(rng.normal(size=(rows, n)) * 4)
        wide = rng.normal(size=(rows, n + 9))
        wide[:, 3:3 + n] = a  # a strided row view, as a kernel's inputs often are
        for values in (a, wide[:, 3:3 + n]):
            got = np.empty(rows)
            _row_sums(np.ascontiguousarray(values), got)
            np.testing.assert_array_equal(_bits(got), _bits(np.sum(values, axis=-1)), err_msg=f"n={n}")
    zeros = np.array([[-0.0] * 9, [0.0] + [-0.0] * 8, [-0.0] * 8 + [0.0], [1.0, -1.0] + [-0.0] * 7])
    got = np.empty(4)
    _row_sums(zeros, got)
    np.testing.assert_array_equal(_bits(got), _bits(np.sum(zeros, axis=-1)))
    _row_sums(np.ascontiguousarray(zeros[:, :3]), got)
    np.testing.assert_array_equal(_bits(got), _bits(np.sum(zeros[:, :3], axis=-1)))


def test_clip_minimum_maximum_are_numpys() -> None:
    special = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, 1e4, 2e4, 5e-324]
    x, y = (np.array(v) for v in zip(*itertools.product(special, special), strict=True))
    out = np.empty((4, x.size))
    _elementwise(x, y, out)
    want = [np.clip(x, -1.0, 1.0), np.clip(x, 0.0, 1e4), np.minimum(x, y), np.maximum(x, y)]
    for got, expected, name in zip(out, want, ("clip", "clip from 0", "minimum", "maximum"), strict=True):
        nan = np.isnan(expected)
        np.testing.assert_array_equal(np.isnan(got), nan, err_msg=name)
        np.testing.assert_array_equal(_bits(got[~nan]), _bits(expected[~nan]), err_msg=name)


def test_a_kernel_without_a_cache_location_compiles_uncached_and_says_so(monkeypatch, caplog) -> None:
    """numba raises at decoration where no cache location is writable; the kernel then compiles
    without a disk cache (the same results) and one warning names the fix."""
    real_njit = _jit.numba.njit

    def njit(*args, cache=False, **kwargs):
        if cache:
            raise RuntimeError("cannot cache function 'f': no locator available for file 'f.py'")
        return real_njit(*args, cache=cache, **kwargs)

    monkeypatch.setattr(_jit.numba, "njit", njit)
    monkeypatch.setattr(_jit, "_UNCACHED_LOGGED", False)

    def twice(a: np.ndarray, out: np.ndarray) -> None:
        for i in range(a.shape[0]):
            out[i] = 2.0 * a[i]

    with caplog.at_level("WARNING", logger="mjvec._jit"):
        compiled = _jit.kernel(twice)
        _jit.kernel(twice)
    out = np.empty(3)
    compiled(np.array([1.0, -0.5, 3.0]), out)
    np.testing.assert_array_equal(out, [2.0, -1.0, 6.0])
    warnings = [r for r in caplog.records if "NUMBA_CACHE_DIR" in r.getMessage()]
    assert len(warnings) == 1 and "no locator available" in warnings[0].getMessage()
