"""Elementary functions that give the same bits on every CPU, in numpy and in torch.

numpy's `sin`, `log`, `arctan2` ... are not one function: numpy picks an implementation per CPU at
import (its own AVX-512 or AVX2 kernels, or the C library's), torch picks another, and their last
bits differ (numpy's AVX-512 `arctan2` and `log` disagree with its AVX2 ones on about 1 input in
100). A random draw or a task term computed with them repeats bit for bit only on CPUs that take
the same branch. The functions here use IEEE-754 basic operations only (+, -, *, /, floor,
comparisons and bit views), which every CPU, SIMD width and device rounds the same way, so their
results depend on the input alone: the same bits on any CPU, in numpy or torch, on the host or a
GPU. (`hypot` and `asin` end in the namespace's sqrt, correctly rounded in numpy and CUDA, not in
torch 2.13's CPU kernel.)

Every function takes an array of either namespace (`mjvec.xp`: numpy, or torch through
array_api_compat), a numpy scalar or a Python float, and returns the same kind of value with the
input's float dtype: float32 inputs are computed in float64 and rounded once at the end. Accuracy
against 120-bit references (tests/test_portable.py), float64: `log` and `exp` within 1 ulp (most
results correctly rounded), `sin`/`cos`/`sincos` within 1 ulp for |x| <= 100 and 2 ulp up to 1e5,
`atan2`, `asin` and `tanh` within 2 ulp; `fma` is exact (one rounding). Domains: `log` any non-negative input (0 ->
-inf, negatives -> nan), `exp` any input (overflow -> inf, underflow -> 0), `sin`/`cos` |x| <=
2**19 pi / 2 (larger arguments keep their determinism and lose accuracy), `atan2` finite inputs
(signed zeros as numpy), `hypot` |x|, |y| below 1e150, `asin` [-1, 1], `tanh` any input.

The constants (`mjvec._portable_constants`) are derived from pi's and ln 2's decimal expansions
(Python's `decimal`); the polynomials are Taylor series on reduced ranges, truncated where the next
term is below 2**-60 of the result. Each function is written once for any namespace; on numpy,
`log`, `exp`, `sincos`, `atan2`, `hypot` and `fma` run `mjvec._portable_host`'s kernels instead:
the same operations in the same order compiled into one pass (`mjvec._jit`), the same bits for
less time per call, where every input is inside the kernel's range (elsewhere the call runs the
generic formula).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from mjvec import _portable_host as host
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
    _TANH,
    _TANH_SERIES,
    _TINY,
    _TWO_OVER_PI,
)
from mjvec.xp import namespace_of

__all__ = ["asin", "atan2", "cos", "each", "exp", "fma", "hypot", "log", "sin", "sincos", "tanh"]

Array = Any


def _quiet(function: Any) -> Any:
    """Run `function` with numpy's floating-point warnings off (inf, 0 and nan are the documented
    answers at the domains' edges) and large numpy inputs in blocks of `_BLOCK` elements: the
    formulas make a few dozen temporaries, which stay in the cache at that size (the same bits)."""

    @functools.wraps(function)
    def wrapper(*args: Any) -> Any:
        with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
            if not all(isinstance(a, (np.ndarray, np.generic, float, int)) for a in args):
                return function(*args)
            arrays = np.broadcast_arrays(*(np.asarray(a) for a in args))
            if arrays[0].size <= _BLOCK:
                return function(*args)
            flat = [a.reshape(-1) for a in arrays]
            blocks = [function(*(f[i:i + _BLOCK] for f in flat)) for i in range(0, flat[0].size, _BLOCK)]
            if isinstance(blocks[0], tuple):
                return tuple(np.concatenate(part).reshape(arrays[0].shape) for part in zip(*blocks, strict=True))
            return np.concatenate(blocks).reshape(arrays[0].shape)

    return wrapper


_BLOCK = 4096


def _horner(z: Array, coefficients: list[float]) -> Array:
    """c0 + z (c1 + z (c2 + ...))."""
    acc = coefficients[-2] + z * coefficients[-1]
    for c in reversed(coefficients[:-2]):
        acc = c + z * acc
    return acc


def _prepare(x: Any) -> tuple[Any, Array, Any]:
    """(namespace, x as a float64 array, a function that returns a result like x)."""
    if isinstance(x, np.ndarray):
        dtype = x.dtype if x.dtype in (np.float32, np.float64) else np.float64
        return np, np.asarray(x, dtype=np.float64), lambda r: r.astype(dtype, copy=False)
    if isinstance(x, (float, int, np.generic)):
        dtype = x.dtype if isinstance(x, np.floating) and x.dtype in (np.float32, np.float64) else np.float64
        return np, np.asarray(x, dtype=np.float64), lambda r: r.astype(dtype)[()]
    xp = namespace_of(x)
    dtype = x.dtype if x.dtype in (xp.float32, xp.float64) else xp.float64
    return xp, xp.astype(x, xp.float64), lambda r: xp.astype(r, dtype)


def _float64_arrays(*arrays: Any) -> bool:
    """Every one a float64 numpy array (not a subclass), all of one shape: where the elementwise
    kernels of several inputs (`host.atan2`, `host.hypot`, `host.fma`) may run."""
    first = arrays[0]
    return all(type(a) is np.ndarray and a.dtype == np.float64 and a.shape == first.shape for a in arrays)


def _compiled_or(x: Any, compiled: Any, generic: Any) -> Any:
    """compiled(x) for a float64 numpy array in the host kernel's domain (one call, no wrapper; the
    kernel answers None outside it), else generic(x)."""
    if type(x) is np.ndarray and x.dtype == np.float64:
        out = compiled(x)
        if out is not None:
            return out
    return generic(x)


def _pow2(xp: Any, k: Array) -> Array:
    """2.0**k for int64 k in [-1022, 1023], from the exponent bits."""
    return ((k + 1023) << 52).view(xp.float64)


def _sign_bit(xp: Any, a: Array) -> Array:
    """True where a's sign bit is set (negative numbers and -0.0)."""
    return a.view(xp.int64) < 0


def log(x: Array) -> Array:
    """Natural logarithm: x = 2^e m with m in [sqrt(1/2), sqrt(2)), log m = 2 atanh(s),
    s = (m - 1) / (m + 1), and e ln 2 in two parts (the high part's product with e is exact).
    Subnormal inputs are scaled into the normal range first."""
    return _compiled_or(x, host.log, _log)


@_quiet
def _log(x: Array) -> Array:
    xp, a, back = _prepare(x)
    out = host.log(a) if xp is np else None
    return back(_log64(xp, a) if out is None else out)


def _log64(xp: Any, a: Array) -> Array:
    subnormal = a < _TINY
    scaled = a * (1.0 + xp.astype(subnormal, xp.float64) * (2.0**54 - 1.0))
    bits = scaled.view(xp.int64)
    e = ((bits >> 52) & 0x7FF) - 1023 - 54 * xp.astype(subnormal, xp.int64)
    m = ((bits & 0xFFFFFFFFFFFFF) | (1023 << 52)).view(xp.float64)
    big = m > _SQRT2
    m = xp.where(big, m * 0.5, m)
    e = e + xp.astype(big, xp.int64)
    f = m - 1.0  # exact (Sterbenz)
    s = f / (2.0 + f)
    z = s * s
    r = z * _horner(z, _LOG)
    ef = xp.astype(e, xp.float64)
    out = ef * _LN2_HI + ((f - s * (f - r)) + ef * _LN2_LO)
    out = xp.where(a == math.inf, math.inf, out)
    out = xp.where(a > 0.0, out, xp.where(a == 0.0, -math.inf, math.nan))
    return xp.where(a != a, a, out)


def exp(x: Array) -> Array:
    """e^x = 2^k e^r with k = round(x / ln 2), r = x - k ln 2 (two-part ln 2), |r| <= ln 2 / 2;
    2^k applied as two factors so that results in the subnormal range round once."""
    return _compiled_or(x, host.exp, _exp)


@_quiet
def _exp(x: Array) -> Array:
    xp, a, back = _prepare(x)
    out = host.exp(a) if xp is np else None
    return back(_exp64(xp, a) if out is None else out)


def _exp64(xp: Any, a: Array) -> Array:
    clipped = xp.clip(a, -746.0, 710.0)
    kf = xp.floor(clipped * _INV_LN2 + 0.5)
    r = (clipped - kf * _LN2_HI) - kf * _LN2_LO
    p = r * (1.0 + r * _horner(r, _EXP))
    k = xp.astype(kf, xp.int64)
    half = k >> 1
    out = (1.0 + p) * _pow2(xp, half) * _pow2(xp, k - half)
    out = xp.where(a > _EXP_MAX, math.inf, xp.where(a < _EXP_MIN, 0.0, out))
    return xp.where(a != a, a, out)


def _sincos64(xp: Any, a: Array) -> tuple[Array, Array]:
    kf = xp.floor(a * _TWO_OVER_PI + 0.5)
    r = ((a - kf * _PIO2_1) - kf * _PIO2_2) - kf * _PIO2_3  # |r| <= pi / 4 (Cody-Waite)
    z = r * r
    s = r + r * z * _horner(z, _SIN)
    hz = 0.5 * z
    w = 1.0 - hz
    c = w + (((1.0 - w) - hz) + z * z * _horner(z, _COS))  # (1 - w) - hz: the rounding of w, exactly
    q = xp.astype(kf, xp.int64) & 3
    odd = (q & 1) == 1
    sin_out = xp.where(odd, c, s)
    cos_out = xp.where(odd, s, c)
    sin_out = xp.where((q & 2) == 2, -sin_out, sin_out)
    cos_out = xp.where(((q + 1) & 2) == 2, -cos_out, cos_out)
    return sin_out, cos_out


def sincos(x: Array) -> tuple[Array, Array]:
    """(sin x, cos x) from one argument reduction: x = k pi/2 + r, pi/2 in three parts."""
    return _compiled_or(x, host.sincos, _sincos)


@_quiet
def _sincos(x: Array) -> tuple[Array, Array]:
    xp, a, back = _prepare(x)
    out = host.sincos(a) if xp is np else None
    s, c = _sincos64(xp, a) if out is None else out
    return back(s), back(c)


def sin(x: Array) -> Array:
    """Sine (see `sincos`)."""
    return sincos(x)[0]


def cos(x: Array) -> Array:
    """Cosine (see `sincos`)."""
    return sincos(x)[1]


_ATAN_TABLES: dict[Any, tuple[Array, Array]] = {}


def _atan_table(xp: Any, like: Array) -> tuple[Array, Array]:
    """atan(j / 8), j = 0..8, in two parts, on like's device (made once per device: no per-call copy)."""
    key = None if xp is np else like.device
    table = _ATAN_TABLES.get(key)
    if table is None:
        extra = {} if xp is np else {"device": like.device}
        table = _ATAN_TABLES[key] = tuple(xp.asarray(list(part), dtype=xp.float64, **extra)
                                          for part in zip(*_ATAN_EIGHTHS, strict=True))
    return table


def atan2(y: Array, x: Array) -> Array:
    """The angle of (x, y) in [-pi, pi], like numpy's arctan2 for finite inputs (signed zeros too).

    a = min(|x|, |y|) / max(|x|, |y|) in [0, 1]; atan a = atan c + atan t with c = a rounded to
    eighths and t = (a - c) / (1 + a c), |t| <= 1/16; then the octant and the signs.
    """
    if _float64_arrays(y, x):
        out = host.atan2(y, x)  # every element finite: one compiled pass, the same operations
        if out is not None:
            return out
    return _atan2(y, x)


@_quiet
def _atan2(y: Array, x: Array) -> Array:
    xp, ya, back = _prepare(y)
    xa = _prepare(x)[1]
    ax, ay = xp.abs(xa), xp.abs(ya)
    hi, lo = xp.maximum(ax, ay), xp.minimum(ax, ay)
    a = lo / xp.where(hi > 0.0, hi, 1.0)
    jf = xp.floor(a * 8.0 + 0.5)
    c = jf * 0.125
    t = (a - c) / (1.0 + a * c)
    z = t * t
    table_hi, table_lo = _atan_table(xp, a)
    j = xp.astype(jf, xp.int64)
    small = (t + t * z * _horner(z, _ATAN)) + table_lo[j]  # atan a = table_hi[j] + small
    # The octant: angle = base + sign * atan a, with base in {0, pi/2, pi} in two parts, summed
    # high parts first so that one rounding carries the result.
    steep = ay > ax
    reflect = _sign_bit(xp, xa) & ((xa != 0.0) | (ay == 0.0))  # x < 0 (and -0.0 when y = 0 too)
    # (0/1 masks times the constants, not where() of two Python floats: torch would make those float32.)
    half_turn, flat_reflect = xp.astype(steep, xp.float64), xp.astype(reflect & ~steep, xp.float64)
    base_hi = half_turn * _PIO2_HI + flat_reflect * _PI_HI
    base_lo = half_turn * _PIO2_LO + flat_reflect * _PI_LO
    sign = 1.0 - 2.0 * xp.astype(steep != reflect, xp.float64)
    angle = (base_hi + sign * table_hi[j]) + (sign * small + base_lo)
    return back(xp.where(_sign_bit(xp, ya), -angle, angle))


def hypot(x: Array, y: Array) -> Array:
    """sqrt(x^2 + y^2) from correctly rounded operations (no scaling: |x|, |y| below 1e150)."""
    if _float64_arrays(x, y):
        return host.hypot(x, y)  # the same operations in one compiled pass (no numpy warnings to silence)
    return _hypot(x, y)


@_quiet
def _hypot(x: Array, y: Array) -> Array:
    xp, xa, back = _prepare(x)
    ya = _prepare(y)[1]
    return back(xp.sqrt(xa * xa + ya * ya))




@_quiet
def tanh(x: Array) -> Array:
    """Hyperbolic tangent: sign(x) (1 - t) / (1 + t) with t = `exp`(-2|x|), and its Taylor series
    below |x| = 1/4, where 1 - t would cancel."""
    xp, a, back = _prepare(x)
    ax = xp.abs(a)
    t = exp(-2.0 * ax)
    far = (1.0 - t) / (1.0 + t)
    z = ax * ax
    near = ax + ax * z * _horner(z, _TANH)
    out = xp.where(ax < _TANH_SERIES, near, far)
    out = xp.where(_sign_bit(xp, a), -out, out)
    return back(xp.where(a != a, a, out))


@_quiet
def asin(x: Array) -> Array:
    """Arcsine on [-1, 1] (nan outside, and for nan): `atan2`(x, sqrt((1 - x)(1 + x))), the
    product form keeping 1 - x^2 accurate near |x| = 1. It ends in the namespace's sqrt, as `hypot`."""
    xp, a, back = _prepare(x)
    inside = xp.abs(a) <= 1.0  # False for nan too
    c = xp.where(inside, a, 0.0)
    out = atan2(c, xp.sqrt((1.0 - c) * (1.0 + c)))
    return back(xp.where(inside, out, math.nan))


def _two_sum(xp: Any, a: Array, b: Array) -> tuple[Array, Array]:
    """s + e = a + b exactly, s = fl(a + b) (Knuth)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _two_product(a: Array, b: Array) -> tuple[Array, Array]:
    """p + e = a b exactly, p = fl(a b) (Dekker, with Veltkamp's splitting)."""
    p = a * b
    ca, cb = _SPLITTER * a, _SPLITTER * b
    ah, bh = ca - (ca - a), cb - (cb - b)
    al, bl = a - ah, b - bh
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def fma(a: Array, b: Array, c: Array) -> Array:
    """a b + c with one rounding, as a fused multiply-add instruction computes it.

    Boldo and Melquiond's emulation: the exact product uh + ul, th + tl = c + uh exactly, then
    th + RO(tl + ul), where RO rounds to odd (of the two neighbours of the exact sum, the one with
    an odd last bit). Exact for float64 inputs whose products and sums neither overflow nor fall
    into the subnormal range (|a b|, |c| in about [1e-290, 1e290]); float32 inputs are computed in
    float64, exactly, then rounded once.
    """
    if _float64_arrays(a, b, c):
        return host.fma(a, b, c)  # the same operations in one compiled pass (no numpy warnings to silence)
    return _fma(a, b, c)


@_quiet
def _fma(a: Array, b: Array, c: Array) -> Array:
    xp, aa, back = _prepare(a)
    return back(_fma64(xp, aa, _prepare(b)[1], _prepare(c)[1]))


def _fma64(xp: Any, a: Array, b: Array, c: Array) -> Array:
    """`fma` of float64 arrays in namespace xp (the generic formula)."""
    uh, ul = _two_product(a, b)
    th, tl = _two_sum(xp, c, uh)
    s, e = _two_sum(xp, tl, ul)
    # s = RN(tl + ul) and e its exact error: s is RO(tl + ul) unless inexact with an even last bit,
    # then RO is the other neighbour, one step toward the exact sum.
    even = (s.view(xp.int64) & 1) == 0
    toward = s.view(xp.int64) + xp.where((e > 0.0) == (s > 0.0), 1, -1)
    v = xp.where((e != 0.0) & even, toward.view(xp.float64), s)
    return th + v


def each(function: Any, *arrays: Array) -> tuple[Any, ...]:
    """(function(a) for a in arrays), computed as ONE call on their stack where the arrays share a
    type, shape and dtype (else one call each): the same bits either way, since these functions
    are elementwise, for one call's fixed cost (a few dozen numpy or torch calls on small arrays)
    instead of one per array. function: one of `log`, `exp`, `sin`, `cos`, `sincos`, `tanh`,
    `asin`; a `sincos` result is a (sin, cos) pair per array."""
    if function not in _ONE_INPUT:
        raise TypeError(f"portable.each takes a one-input function of mjvec.portable "
                        f"({', '.join(sorted(f.__name__ for f in _ONE_INPUT))}), got {function!r}")
    first = arrays[0] if arrays else None
    if len(arrays) < 2 or not all(type(a) is type(first) and getattr(a, "shape", None) == first.shape
                                  and getattr(a, "dtype", None) == first.dtype for a in arrays):
        return tuple(function(a) for a in arrays)
    out = function(namespace_of(first).stack(arrays))
    if isinstance(out, tuple):
        return tuple(tuple(part[i] for part in out) for i in range(len(arrays)))
    return tuple(out[i] for i in range(len(arrays)))


_ONE_INPUT = frozenset({log, exp, sin, cos, sincos, tanh, asin})

