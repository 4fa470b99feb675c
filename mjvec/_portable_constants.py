"""The constants of `mjvec.portable`: pi, ln 2 and the arctangent table derived from decimal
expansions (Python's `decimal`), and the Taylor coefficients, each rounded once from an exact
fraction. Split parts (`_split`) keep only the leading bits of all but the last part, so that a
product with a small integer is exact (Cody-Waite reduction)."""

from __future__ import annotations

import math
from decimal import Decimal, localcontext
from fractions import Fraction
from typing import Any

import numpy as np

_PI = Decimal("3.14159265358979323846264338327950288419716939937510582097494459230781640628620899863")


def _truncated(value: Decimal, bits: int) -> float:
    """`value` as a double that keeps only its leading `bits` significant bits (the rest zero), so
    that a product with an integer of up to 53 - bits bits is exact."""
    mantissa, exponent = math.frexp(float(value))
    scale = 2.0**bits
    return math.ldexp(math.floor(mantissa * scale) / scale, exponent)


def _split(value: Decimal, bits: int, parts: int) -> tuple[float, ...]:
    out = []
    with localcontext() as ctx:
        ctx.prec = 80
        rest = value
        for i in range(parts):
            piece = float(rest) if i == parts - 1 else _truncated(rest, bits)
            out.append(piece)
            rest = rest - Decimal(piece)
    return tuple(out)


def _constants() -> dict[str, Any]:
    with localcontext() as ctx:
        ctx.prec = 80
        ln2 = Decimal(2).ln()
        pio2 = _PI / 2
        atans = []
        for j in range(9):
            atans.append(_split(_atan_decimal(Decimal(j) / 8), 53, 2))
        return {
            "ln2": _split(ln2, 42, 2),
            "inv_ln2": float(1 / ln2),
            "pio2_reduction": _split(pio2, 33, 3),
            "pio2": _split(pio2, 53, 2),
            "two_over_pi": float(2 / _PI),
            "sqrt2": float(Decimal(2).sqrt()),
            "atan_eighths": atans,
            "pi": _split(_PI, 53, 2),
            "exp_max": float(Decimal(float(np.finfo(np.float64).max)).ln()),
            "exp_min": float(-1075 * ln2),
        }


def _atan_decimal(c: Decimal) -> Decimal:
    """atan(c) for 0 <= c <= 1 to the context's precision: halve the argument until it is small,
    atan(c) = 2 atan(c / (1 + sqrt(1 + c^2))), then sum the alternating series."""
    halvings = 0
    while c > Decimal("0.01"):
        c = c / (1 + (1 + c * c).sqrt())
        halvings += 1
    total, term, k, c2 = Decimal(0), c, 0, c * c
    while abs(term) > Decimal(10) ** -70:
        total += term / (2 * k + 1) * (-1 if k % 2 else 1)
        term *= c2
        k += 1
    return total * (2**halvings)


_C = _constants()
_LN2_HI, _LN2_LO = _C["ln2"]
_INV_LN2 = _C["inv_ln2"]
_PIO2_1, _PIO2_2, _PIO2_3 = _C["pio2_reduction"]
_PIO2_HI, _PIO2_LO = _C["pio2"]
_PI_HI, _PI_LO = _C["pi"]
_TWO_OVER_PI = _C["two_over_pi"]
_SQRT2 = _C["sqrt2"]
_ATAN_EIGHTHS = _C["atan_eighths"]
_TINY = float(np.finfo(np.float64).tiny)  # the smallest normal double
_EXP_MAX = _C["exp_max"]  # above: e^x overflows
_EXP_MIN = _C["exp_min"]  # below: e^x rounds to zero (under half the smallest subnormal)
# Taylor coefficients, each rounded once from an exact fraction.
_EXP = [float(Fraction(1, math.factorial(n))) for n in range(2, 14)]  # r^n / n!, n = 2..13
_SIN = [float(Fraction((-1) ** k, math.factorial(2 * k + 1))) for k in range(1, 10)]  # r^(2k+1)
_COS = [float(Fraction((-1) ** k, math.factorial(2 * k))) for k in range(2, 10)]  # r^(2k), k >= 2
_LOG = [float(Fraction(2, 2 * k + 1)) for k in range(1, 11)]  # 2 atanh(s) = 2s + s * sum(2 z^k / (2k+1))
_ATAN = [float(Fraction((-1) ** k, 2 * k + 1)) for k in range(1, 9)]  # t^(2k+1) / (2k+1), alternating


def _bernoulli(n: int) -> list[Fraction]:
    """B_0 .. B_n (B_1 = -1/2), by the Akiyama-Tanigawa recurrence's equivalent sum."""
    b = [Fraction(1)]
    for m in range(1, n + 1):
        b.append(-sum(math.comb(m + 1, k) * b[k] for k in range(m)) / (m + 1))
    return b


# tanh x = x (1 + sum c_k x^(2k)), c_k from the Bernoulli numbers; used for |x| < _TANH_SERIES,
# where 1 - e^(-2|x|) would cancel (the terms fall by about (x / (pi/2))^2 each).
_TANH_SERIES = 0.25
_TANH = [float(Fraction(2 ** (2 * n) * (2 ** (2 * n) - 1), math.factorial(2 * n)) * _bernoulli(2 * n)[2 * n])
         for n in range(2, 15)]

_SPLITTER = 134217729.0  # 2^27 + 1: Veltkamp's split of a double into two 26-bit halves
