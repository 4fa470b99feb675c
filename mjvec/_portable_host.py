"""numpy kernels of `mjvec.portable`'s log, exp and sincos: the SAME IEEE-754 operations, in the
same order, as the namespace-generic formulas there, written with in-place operations and integer
bit manipulation instead of temporaries and `where` selections. Every result is bit-identical to
the generic formula's (tests/test_portable.py compares them on special and random inputs, and
against torch, which runs the generic formulas); they only cost less per call, which is what a
step of a few hundred envs pays.

The identities used (each exact in IEEE-754): m * 0.5 for m in [1, 2) is m with its exponent
field one lower; a sign flip (-x) is an XOR of the sign bit; the order of two positive doubles is
the order of their bit patterns as int64; a + b == b + a and a * b == b * a bit for bit.

Preconditions are the caller's (`mjvec.portable` checks them and otherwise runs the generic
formula): `log` takes positive normal finite float64 inputs, `exp` float64 inputs in
[_EXP_MIN, _EXP_MAX] (no nan), `sincos` any float64 input. Inputs are never written.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from mjvec._portable_constants import (
    _COS,
    _EXP,
    _INV_LN2,
    _LN2_HI,
    _LN2_LO,
    _LOG,
    _PIO2_1,
    _PIO2_2,
    _PIO2_3,
    _SIN,
    _SQRT2,
    _TWO_OVER_PI,
)

_MANTISSA = np.int64(0xFFFFFFFFFFFFF)
_ONE = np.int64(1023 << 52)  # the bits of 1.0: exponent field 1023, mantissa 0
_EXPONENT_ONE = np.int64(1 << 52)  # one unit of the exponent field
_SQRT2_BITS = np.float64(_SQRT2).view(np.int64)
_SIGN_SHIFT = np.int64(62)  # (q & 2) << 62 is the sign bit when q & 2 == 2


def _one_d(kernel: Callable[[np.ndarray], Any]) -> Callable[[np.ndarray], Any]:
    """Run kernel on a 0-d input as a (1,) array: numpy's operators turn 0-d arrays into scalars,
    which take no `out=` and no in-place operation."""

    @functools.wraps(kernel)
    def wrapper(a: np.ndarray) -> Any:
        if a.ndim:
            return kernel(a)
        out = kernel(a.reshape(1))
        return tuple(o.reshape(()) for o in out) if isinstance(out, tuple) else out.reshape(())

    return wrapper


def _reduce(a: np.ndarray, inverse: float, parts: tuple[float, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(kf, r, scratch): kf = floor(a inverse + 0.5), the nearest multiple's count, and the Cody-Waite
    remainder r = ((a - kf p0) - kf p1) - ... of the constant given in parts; scratch is free."""
    kf = a * inverse
    kf += 0.5
    np.floor(kf, out=kf)
    r = kf * parts[0]
    np.subtract(a, r, out=r)
    scratch = np.empty_like(r)
    for part in parts[1:]:
        np.multiply(kf, part, out=scratch)
        r -= scratch
    return kf, r, scratch


def _horner(z: np.ndarray, coefficients: list[float], out: np.ndarray) -> np.ndarray:
    """c0 + z (c1 + z (c2 + ...)) into out, as `mjvec.portable._horner` evaluates it."""
    np.multiply(z, coefficients[-1], out=out)
    out += coefficients[-2]
    for c in reversed(coefficients[:-2]):
        out *= z
        out += c
    return out


@_one_d
def log(a: np.ndarray) -> np.ndarray:
    """Natural logarithm of positive normal finite float64 values (the generic formula's bits)."""
    bits = a.view(np.int64)
    m_bits = bits & _MANTISSA
    m_bits |= _ONE  # m in [1, 2)
    big = m_bits > _SQRT2_BITS  # m > sqrt(2)
    e = bits >> 52
    e -= 1023
    e += big
    m_bits -= big * _EXPONENT_ONE  # m * 0.5 where big
    f = m_bits.view(np.float64)
    f -= 1.0
    s = f + 2.0
    np.divide(f, s, out=s)
    z = s * s
    r = _horner(z, _LOG, np.empty_like(z))
    r *= z
    # ef * ln2_hi + ((f - s (f - r)) + ef * ln2_lo)
    np.subtract(f, r, out=r)
    r *= s
    np.subtract(f, r, out=r)
    ef = e.astype(np.float64)
    np.multiply(ef, _LN2_LO, out=z)
    r += z
    ef *= _LN2_HI
    ef += r
    return ef


@_one_d
def exp(a: np.ndarray) -> np.ndarray:
    """e^a for float64 a in [_EXP_MIN, _EXP_MAX] (no clipping needed; the generic formula's bits)."""
    kf, r, t = _reduce(a, _INV_LN2, (_LN2_HI, _LN2_LO))
    p = _horner(r, _EXP, t)
    p *= r
    p += 1.0
    p *= r  # r (1 + r horner(r))
    p += 1.0
    k = kf.astype(np.int64)
    half = k >> 1
    k -= half
    half += 1023
    half <<= 52
    k += 1023
    k <<= 52
    p *= half.view(np.float64)
    p *= k.view(np.float64)
    return p


@_one_d
def sincos(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sin a, cos a) for float64 a (the generic formula's bits, nan and inf included)."""
    kf, r, t = _reduce(a, _TWO_OVER_PI, (_PIO2_1, _PIO2_2, _PIO2_3))  # |r| <= pi / 4
    z = r * r
    s = _horner(z, _SIN, t)
    u = r * z
    s *= u
    s += r  # r + r z horner(z)
    hz = z * 0.5
    w = 1.0 - hz
    c = 1.0 - w
    c -= hz  # (1 - w) - hz
    g = _horner(z, _COS, u)
    z *= z
    g *= z
    c += g
    c += w  # w + (((1 - w) - hz) + z^2 horner(z))
    q = kf.astype(np.int64)
    odd = (q & 1).astype(bool)
    sin_out = np.where(odd, c, s)
    cos_out = np.where(odd, s, c)
    sin_out.view(np.int64)[...] ^= (q & 2) << _SIGN_SHIFT
    q += 1
    cos_out.view(np.int64)[...] ^= (q & 2) << _SIGN_SHIFT
    return sin_out, cos_out
