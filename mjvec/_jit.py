"""How mjvec compiles its host kernels: numba's nopython mode with options that keep IEEE-754 results.

A kernel is a plain Python function over numpy arrays and scalars; `kernel` compiles it on first
use (cached on disk next to its module, or in numba's user cache where that is read-only). The
options matter for the results, not only the speed:

- no fast-math: LLVM may then neither reassociate nor contract a product and a sum into one fused
  multiply-add, so each `+`, `-`, `*`, `/` and `sqrt` rounds once, as numpy's does, on every CPU
  (vectorized or not). A kernel that writes `a * b + c` gets numpy's `a * b + c`, bit for bit.
- numpy's error model: a division by zero gives inf or nan as numpy's does, instead of raising.

What a kernel does NOT share with numpy by itself: numpy's pairwise summation (a kernel sums in
the order it is written; `pairwise_sum` is numpy's order, for kernels that stand in for `xp.sum`)
and its transcendental functions (kernels use `mjvec.portable`'s formulas, never `math.sin` or
`math.log`, whose bits follow the C library). Each kernel's tests compare it bit for bit with the
numpy formulas it replaces.

numba keys a kernel's cache entry on its own module's source file: a kernel that inlines a helper
of another module (this one's, `mjvec._portable_host`'s) keeps its cached code after that helper
changes, until its own module changes. CI runs on a clean clone; locally,
`find mjvec -name '*.nb[ic]' -delete` clears the cache.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

import numba
import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

F = TypeVar("F", bound=Callable[..., Any])
log = logging.getLogger(__name__)


def kernel(function: F) -> F:
    """`function` compiled by numba in nopython mode, cached, without fast-math (see the module).

    Where numba finds no writable cache location (neither beside the module nor its user-wide
    one), the kernel compiles in each process instead (the same code, seconds more at the first
    step), and this is logged once, with the fix: point NUMBA_CACHE_DIR at a writable folder."""
    options = {"nogil": True, "error_model": "numpy", "fastmath": False}
    try:
        return numba.njit(cache=True, **options)(function)
    except RuntimeError as error:  # numba: "cannot cache function ...: no locator available"
        global _UNCACHED_LOGGED
        if not _UNCACHED_LOGGED:
            _UNCACHED_LOGGED = True
            log.warning("mjvec's compiled kernels cannot be cached (%s): each process compiles them on first "
                        "use; set NUMBA_CACHE_DIR to a writable folder to keep them", error)
        return numba.njit(cache=False, **options)(function)


_UNCACHED_LOGGED = False


def host_arrays(arrays: tuple[Any, ...], dtypes: tuple[Any, ...]) -> bool:
    """True where every one of `arrays` is a numpy array of one of `dtypes`: where a kernel may stand
    in for the namespace-generic function (torch arrays and other dtypes take the generic one)."""
    return all(isinstance(a, np.ndarray) and a.dtype in dtypes for a in arrays)


def inline(function: F) -> F:
    """A scalar helper of kernels, inlined into each kernel that calls it (no call per element)."""
    return numba.njit(inline="always", error_model="numpy", fastmath=False)(function)


@inline
def sequential_sum(a: np.ndarray) -> float:
    """np.sum(..., axis=-1) of one row `a` where numpy's reduction runs across rows (an array whose
    rows are not contiguous, as a fancy index on the last axis makes): from +0.0, one by one."""
    total = 0.0
    for i in range(a.shape[0]):
        total += a[i]
    return total


# numpy's pairwise summation works in blocks of this many elements; kernels sum fewer.
PAIRWISE_BLOCK = 128


@inline
def pairwise_sum(a: np.ndarray) -> float:
    """np.sum(..., axis=-1) of one row `a` (1-D float64, at most PAIRWISE_BLOCK elements) in numpy's
    order: from +0.0 (the reduction's start, so zeros sum to +0.0), one by one below 8 elements;
    else 8 running sums over whole blocks of 8, combined as a tree, then the rest one by one
    (numpy's `pairwise_sum`), added to that start."""
    n = a.shape[0]
    if n < 8:
        total = 0.0
        for i in range(n):
            total += a[i]
        return total
    r0, r1, r2, r3, r4, r5, r6, r7 = a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]
    i = 8
    while i < n - n % 8:
        r0 += a[i]
        r1 += a[i + 1]
        r2 += a[i + 2]
        r3 += a[i + 3]
        r4 += a[i + 4]
        r5 += a[i + 5]
        r6 += a[i + 6]
        r7 += a[i + 7]
        i += 8
    total = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        total += a[i]
        i += 1
    return 0.0 + total  # not folded away: without fast-math, 0.0 + -0.0 stays +0.0


@inline
def clip(x: float, low: float, high: float) -> float:
    """np.clip of one value: low where x < low, high where x > high, else x itself (a nan, and a
    zero against a bound of the other sign, pass through as numpy's do)."""
    if x < low:
        x = low
    if x > high:
        x = high
    return x


@inline
def minimum(x: float, y: float) -> float:
    """np.minimum of two values: x where x < y or x is nan, else y (so y for +-0 against -+0)."""
    return x if (x != x or x < y) else y


@inline
def maximum(x: float, y: float) -> float:
    """np.maximum of two values: x where x > y or x is nan, else y (so y for +-0 against -+0)."""
    return x if (x != x or x > y) else y


@intrinsic
def float_bits(typingctx: Any, x: Any) -> Any:
    """The int64 with float64 x's bits (numpy's ``x.view(np.int64)`` of one value), for kernels: a
    bit cast, not a conversion, so that loops that take a float apart stay free of calls and vectorize."""
    if x != types.float64:
        return None

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.bitcast(args[0], ir.IntType(64))

    return types.int64(types.float64), codegen


@intrinsic
def bits_float(typingctx: Any, x: Any) -> Any:
    """The float64 with int64 x's bits (numpy's ``x.view(np.float64)`` of one value), for kernels."""
    if x != types.int64:
        return None

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.bitcast(args[0], ir.DoubleType())

    return types.float64(types.int64), codegen
