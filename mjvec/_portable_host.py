"""Compiled host kernels of `mjvec.portable`'s log, exp, sincos, atan2, hypot and fma, and of `mjvec.rng`'s splitmix64
words and Box-Muller transform: the SAME IEEE-754 operations, in the same order, as the namespace-generic formulas in
`mjvec.portable`, one element at a time in one pass (`mjvec._jit`: no fast-math, so no fused
multiply-add and no reassociation). Every result is bit-identical to the generic formula's
(tests/test_portable.py and tests/test_rng.py compare them on special and random inputs; torch runs
the generic formulas); they only cost less per call, and a large array one pass instead of a few dozen.

The identities used (each exact in IEEE-754): a positive normal double's exponent field less
1023 and the double with its exponent field set to 1023 are the generic formula's e and m (taken
by bit casts, `mjvec._jit.float_bits` / `bits_float`, as the generic formula's views do), and m
times 0.5 is exact; 2^k is the double with exponent field k + 1023 for k in [-1022, 1023]; -x
flips the sign bit; a + b == b + a and a * b == b * a bit for bit. The per-element helpers use
selects rather than branches and call no C library function, so the compiler vectorizes their
loops (IEEE operations give the same result in a vector lane as in a scalar register).

`log`, `exp`, `sincos` and `atan2` check their domains in the same call and answer None outside them
(`mjvec.portable` then runs the generic formula): `log` takes positive normal finite float64
inputs, `exp` float64 inputs in [_EXP_MIN, _EXP_MAX] (no nan), `sincos` finite float64 inputs of
magnitude at most `SINCOS_MAX`, `atan2` finite float64 inputs. Inputs are never written.
"""

from __future__ import annotations

import math

import numpy as np

from mjvec._jit import bits_float, float_bits, inline, kernel, maximum, minimum
from mjvec._portable_constants import (
    _ATAN,
    _ATAN_EIGHTHS,
    _COS,
    _EXP,
    _EXP_MAX,
    _EXP_MIN,
    _INV_LN2,
    _LN2_HI,
    _LN2_LO,
    _LOG,
    _PI_HI,
    _PI_LO,
    _PIO2_1,
    _PIO2_2,
    _PIO2_3,
    _PIO2_HI,
    _PIO2_LO,
    _SIN,
    _SPLITTER,
    _SQRT2,
    _TINY,
    _TWO_OVER_PI,
)

# Up to here the reduction's count k = round(x 2 / pi) converts to int64 exactly.
SINCOS_MAX = 2.0**52
_LOG_C = np.array(_LOG)
_EXP_C = np.array(_EXP)
_SIN_C = np.array(_SIN)
_COS_C = np.array(_COS)
_ATAN_C = np.array(_ATAN)
_ATAN_HI = np.array([hi for hi, _ in _ATAN_EIGHTHS])
_ATAN_LO = np.array([lo for _, lo in _ATAN_EIGHTHS])
_TWO_POW_M32 = 1.0 / 4294967296.0
_TURN_PER_WORD = 2.0 * math.pi * _TWO_POW_M32  # radians per unit of a 32-bit angle word
_LOW_WORD = np.uint64(0xFFFFFFFF)
_HIGH_SHIFT = np.uint64(32)
# splitmix64 (mjvec.rng): the counter increment and the finalizer's multipliers and shifts.
GOLDEN = np.uint64(0x9E3779B97F4A7C15)
M1 = np.uint64(0xBF58476D1CE4E5B9)
M2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31, _S11 = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(11)
_TWO_POW_M53 = 1.0 / 9007199254740992.0
_BOX_MULLER_CHUNK = 512


@inline
def _horner(z: float, c: np.ndarray) -> float:
    """c0 + z (c1 + z (c2 + ...)), as `mjvec.portable._horner` evaluates it."""
    acc = c[-2] + z * c[-1]
    for i in range(c.shape[0] - 3, -1, -1):
        acc = c[i] + z * acc
    return acc


@inline
def _log1(a: float) -> float:
    # a positive normal double: its exponent field and its mantissa with the exponent of 1 (the
    # generic formula's bit operations); selects, not branches, so that the loops vectorize.
    bits = float_bits(a)
    e = ((bits >> 52) & 0x7FF) - 1023
    m = bits_float((bits & 0xFFFFFFFFFFFFF) | (1023 << 52))  # in [1, 2)
    big = m > _SQRT2
    m = m * 0.5 if big else m
    e = e + 1 if big else e
    f = m - 1.0
    s = f / (2.0 + f)
    z = s * s
    r = z * _horner(z, _LOG_C)
    ef = float(e)
    return ef * _LN2_HI + ((f - s * (f - r)) + ef * _LN2_LO)


@inline
def _exp1(a: float) -> float:
    kf = math.floor(a * _INV_LN2 + 0.5)
    r = (a - kf * _LN2_HI) - kf * _LN2_LO
    p = r * (1.0 + r * _horner(r, _EXP_C))
    k = np.int64(kf)
    half = k >> 1
    # 2^half and 2^(k - half) from their exponent fields, as the generic formula's _pow2.
    return (1.0 + p) * bits_float((half + 1023) << 52) * bits_float((k - half + 1023) << 52)


@inline
def exp_any(a: float) -> float:
    """`mjvec.portable.exp` of one float64 value, its special values included (nan passes through,
    above _EXP_MAX inf, below _EXP_MIN 0): for kernels that inline it."""
    if a != a:
        return a
    if a > _EXP_MAX:
        return math.inf
    if a < _EXP_MIN:
        return 0.0
    return _exp1(a)


@inline
def _sincos1(a: float) -> tuple[float, float]:
    kf = math.floor(a * _TWO_OVER_PI + 0.5)
    r = ((a - kf * _PIO2_1) - kf * _PIO2_2) - kf * _PIO2_3
    z = r * r
    s = r + r * z * _horner(z, _SIN_C)
    hz = 0.5 * z
    w = 1.0 - hz
    c = w + (((1.0 - w) - hz) + z * z * _horner(z, _COS_C))
    q = np.int64(kf) & 3
    odd = (q & 1) == 1
    sin_out = c if odd else s  # selects, as the generic formula's where: the loops vectorize
    cos_out = s if odd else c
    sin_out = -sin_out if (q & 2) == 2 else sin_out
    cos_out = -cos_out if ((q + 1) & 2) == 2 else cos_out
    return sin_out, cos_out


@inline
def _inside(a: np.ndarray, low: float, high: float, upper_open: bool) -> bool:
    """Every element in [low, high] ([low, high) with upper_open); nan is outside."""
    for i in range(a.shape[0]):
        x = a[i]
        if not (x >= low and (x < high if upper_open else x <= high)):
            return False
    return True


@kernel
def _log_checked(a: np.ndarray, out: np.ndarray) -> bool:
    if not _inside(a, _TINY, math.inf, True):
        return False
    for i in range(a.shape[0]):
        out[i] = _log1(a[i])
    return True


@kernel
def _exp_checked(a: np.ndarray, out: np.ndarray) -> bool:
    if not _inside(a, _EXP_MIN, _EXP_MAX, False):
        return False
    for i in range(a.shape[0]):
        out[i] = _exp1(a[i])
    return True


@inline
def in_sincos_domain(a: np.ndarray) -> bool:
    """Every element finite and of magnitude at most SINCOS_MAX (nan is outside): where `_sincos1`
    gives the generic formula's bits."""
    return _inside(a, -SINCOS_MAX, SINCOS_MAX, False)


@kernel
def _sincos_checked(a: np.ndarray, sin_out: np.ndarray, cos_out: np.ndarray) -> bool:
    if not in_sincos_domain(a):
        return False
    for i in range(a.shape[0]):
        sin_out[i], cos_out[i] = _sincos1(a[i])
    return True


@inline
def atan2_1(y: float, x: float) -> float:
    """`mjvec.portable.atan2` of one pair of finite float64 values, op for op (its docstring states
    the method): the octant's 0/1 factors are multiplied in as the generic formula's masks are."""
    ax, ay = abs(x), abs(y)
    hi, lo = maximum(ax, ay), minimum(ax, ay)
    a = lo / (hi if hi > 0.0 else 1.0)
    jf = np.floor(a * 8.0 + 0.5)
    c = jf * 0.125
    t = (a - c) / (1.0 + a * c)
    z = t * t
    j = np.int64(jf)
    small = (t + t * z * _horner(z, _ATAN_C)) + _ATAN_LO[j]
    steep = ay > ax
    reflect = float_bits(x) < 0 and (x != 0.0 or ay == 0.0)
    half_turn = 1.0 if steep else 0.0
    flat_reflect = 1.0 if (reflect and not steep) else 0.0
    base_hi = half_turn * _PIO2_HI + flat_reflect * _PI_HI
    base_lo = half_turn * _PIO2_LO + flat_reflect * _PI_LO
    sign = 1.0 - 2.0 * (1.0 if steep != reflect else 0.0)
    angle = (base_hi + sign * _ATAN_HI[j]) + (sign * small + base_lo)
    return -angle if float_bits(y) < 0 else angle


@kernel
def _atan2_checked(y: np.ndarray, x: np.ndarray, out: np.ndarray) -> bool:
    for i in range(y.shape[0]):
        if not (math.isfinite(y[i]) and math.isfinite(x[i])):
            return False
    for i in range(y.shape[0]):
        out[i] = atan2_1(y[i], x[i])
    return True


@kernel
def _hypot_kernel(x: np.ndarray, y: np.ndarray, out: np.ndarray) -> None:
    for i in range(x.shape[0]):
        out[i] = math.sqrt(x[i] * x[i] + y[i] * y[i])


@kernel
def _box_muller_kernel(w: np.ndarray, out: np.ndarray) -> None:
    rows, words, n = w.shape[0], w.shape[1], out.shape[1]
    # Blocks of whole rows: each block's words in one flat pass (a loop the compiler vectorizes),
    # then their columns' copy; the block's buffers stay in the cache.
    block = max(1, _BOX_MULLER_CHUNK // max(1, words))
    cosines, sines = np.empty(block * words), np.empty(block * words)
    flat = w.reshape(-1)
    for first in range(0, rows, block):
        count = min(block, rows - first)
        offset = first * words
        for k in range(count * words):
            word = flat[offset + k]
            u1 = (np.float64(np.int64(word >> _HIGH_SHIFT)) + 1.0) * _TWO_POW_M32
            angle = np.float64(np.int64(word & _LOW_WORD)) * _TURN_PER_WORD
            r = math.sqrt(-2.0 * _log1(u1))
            s, c = _sincos1(angle)
            cosines[k] = r * c
            sines[k] = r * s
        for i in range(count):
            for j in range(words):
                out[first + i, j] = cosines[i * words + j]
            for j in range(n - words):
                out[first + i, words + j] = sines[i * words + j]


@inline
def _splitmix(x: np.uint64) -> np.uint64:
    """splitmix64's finalizer of one uint64 state (`mjvec.rng._mix`)."""
    z = (x ^ (x >> _S30)) * M1
    z = (z ^ (z >> _S27)) * M2
    return z ^ (z >> _S31)


@inline
def _advance(ids: np.ndarray, counters: np.ndarray, total: np.uint64) -> np.ndarray:
    """The selected envs' counters before the draw, then each advanced by total: every start read
    before any counter moves, as a numpy gather then scatter does (a repeated id included)."""
    starts = np.empty(ids.shape[0], np.uint64)
    for r in range(ids.shape[0]):
        starts[r] = counters[ids[r]]
    for r in range(ids.shape[0]):
        counters[ids[r]] = starts[r] + total
    return starts


@kernel
def _words_kernel(keys: np.ndarray, ids: np.ndarray, tag: np.uint64, counters: np.ndarray, total: np.uint64,
                  out: np.ndarray) -> None:
    starts = _advance(ids, counters, total)
    for r in range(ids.shape[0]):
        x = (keys[ids[r]] ^ tag) + starts[r] * GOLDEN  # uint64: wrapping, as numpy's
        for j in range(out.shape[1]):
            out[r, j] = _splitmix(x)
            x += GOLDEN


@kernel
def _uniforms_kernel(keys: np.ndarray, ids: np.ndarray, tag: np.uint64, counters: np.ndarray, total: np.uint64,
                     low: float, span: float, out: np.ndarray) -> None:
    starts = _advance(ids, counters, total)
    for r in range(ids.shape[0]):
        x = (keys[ids[r]] ^ tag) + starts[r] * GOLDEN
        for j in range(out.shape[1]):
            out[r, j] = low + span * (np.float64(_splitmix(x) >> _S11) * _TWO_POW_M53)
            x += GOLDEN


def words(keys: np.ndarray, ids: np.ndarray, tag: np.uint64, counters: np.ndarray, total: int,
          uniform: tuple[float, float] | None = None) -> np.ndarray:
    """(len(ids), total) uint64: splitmix64 of (key ^ tag) + (counter + j) golden for j < total,
    each selected env's key and counter (uint64 arrays indexed by `ids`); then the selected counters
    advance by total (`mjvec.rng.EnvRandom._words` on the host). With uniform=(low, span): float64
    low + span u instead, u = the word's top 53 bits 2^-53 (`EnvRandom.uniform`'s transform)."""
    ids = np.ascontiguousarray(ids, np.int64)
    if uniform is None:
        out = np.empty((ids.shape[0], total), np.uint64)
        _words_kernel(keys, ids, np.uint64(tag), counters, np.uint64(total), out)
    else:
        out = np.empty((ids.shape[0], total), np.float64)
        _uniforms_kernel(keys, ids, np.uint64(tag), counters, np.uint64(total), float(uniform[0]),
                         float(uniform[1]), out)
    return out


@kernel
def _fma_kernel(a: np.ndarray, b: np.ndarray, c: np.ndarray, out: np.ndarray) -> None:
    """`mjvec.portable.fma`'s emulation, element by element: Dekker's product with Veltkamp's split,
    Knuth's two-sums, then the round-to-odd correction (integer steps on the bits, as its views)."""
    for i in range(out.shape[0]):
        x, y, z = a[i], b[i], c[i]
        p = x * y
        cx, cy = _SPLITTER * x, _SPLITTER * y
        xh, yh = cx - (cx - x), cy - (cy - y)
        xl, yl = x - xh, y - yh
        ul = ((xh * yh - p) + xh * yl + xl * yh) + xl * yl
        th = z + p
        bb = th - z
        tl = (z - (th - bb)) + (p - bb)
        s = tl + ul
        bs = s - tl
        e = (tl - (s - bs)) + (ul - bs)
        bits = float_bits(s)
        step = 1 if (e > 0.0) == (s > 0.0) else -1
        v = bits_float(bits + step) if (e != 0.0) and (bits & 1) == 0 else s
        out[i] = th + v


def fma(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """`mjvec.portable.fma`'s bits for three float64 numpy arrays of one shape (any strides): a b + c
    with one rounding, a's shape. No domain: the same operations give the same bits on any input
    (a nan result's payload may differ, as between any two compilations of one formula)."""
    out = np.empty(a.shape)
    if a.size:
        _fma_kernel(a.reshape(-1), b.reshape(-1), c.reshape(-1), out.reshape(-1))
    return out


def _flat(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float64).reshape(-1)


def log(a: np.ndarray) -> np.ndarray | None:
    """The natural logarithm of a non-empty float64 array (the generic formula's bits; a's shape) if
    every element is in the kernel's domain (positive, normal, finite), else None: one pass
    checks, the next computes."""
    out = np.empty(a.shape)
    return out if a.size and _log_checked(_flat(a), out.reshape(-1)) else None


def exp(a: np.ndarray) -> np.ndarray | None:
    """e^a of a non-empty float64 array if every element is in [_EXP_MIN, _EXP_MAX] (no nan), else None."""
    out = np.empty(a.shape)
    return out if a.size and _exp_checked(_flat(a), out.reshape(-1)) else None


def sincos(a: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(sin a, cos a) of a non-empty float64 array if every element is finite with magnitude at most
    SINCOS_MAX, else None."""
    sin_out, cos_out = np.empty(a.shape), np.empty(a.shape)
    if a.size and _sincos_checked(_flat(a), sin_out.reshape(-1), cos_out.reshape(-1)):
        return sin_out, cos_out
    return None


def atan2(y: np.ndarray, x: np.ndarray) -> np.ndarray | None:
    """atan2(y, x) of two non-empty float64 arrays of one shape (any strides) if every element of both
    is finite, else None."""
    out = np.empty(y.shape)
    if y.size and _atan2_checked(_flat(y), _flat(x), out.reshape(-1)):
        return out
    return None


def hypot(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """`mjvec.portable.hypot` of two float64 numpy arrays of one shape (any strides): sqrt(x x + y y),
    sqrt correctly rounded as numpy's. No domain: the same operations on any input."""
    out = np.empty(x.shape)
    if x.size:
        _hypot_kernel(x.reshape(-1), y.reshape(-1), out.reshape(-1))
    return out


def box_muller(w: np.ndarray, n: int, dtype: np.dtype) -> np.ndarray:
    """(rows, n) normals of dtype from (rows, words) uint64 words, words = ceil(n / 2): per word,
    u1 = (high 32 bits + 1) 2^-32 in (0, 1], angle = low 32 bits 2 pi 2^-32, r = sqrt(-2 log u1);
    the cosines r cos(angle) fill columns [0, words), the sines r sin(angle) the rest (an odd n drops
    the last sine). `mjvec.rng.EnvRandom.normal`'s transform, computed in float64 and rounded once."""
    out = np.empty((w.shape[0], n), dtype)
    _box_muller_kernel(np.ascontiguousarray(w, dtype=np.uint64), out)
    return out
