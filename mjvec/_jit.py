"""How mjvec compiles its host kernels: numba's nopython mode with options that keep IEEE-754 results.

A kernel is a plain Python function over numpy arrays and scalars; `kernel` compiles it on first
use (cached on disk next to its module, or in numba's user cache where that is read-only). The
options matter for the results, not only the speed:

- no fast-math: LLVM may then neither reassociate nor contract a product and a sum into one fused
  multiply-add, so each `+`, `-`, `*`, `/` and `sqrt` rounds once, as numpy's does, on every CPU
  (vectorized or not). A kernel that writes `a * b + c` gets numpy's `a * b + c`, bit for bit.
- numpy's error model: a division by zero gives inf or nan as numpy's does, instead of raising.

What a kernel does NOT share with numpy: numpy's pairwise summation (a kernel sums in the order it
is written) and its transcendental functions (kernels use `mjvec.portable`'s formulas, never
`math.sin` or `math.log`, whose bits follow the C library). Each kernel's tests compare it bit for
bit with the numpy formulas it replaces.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import numba

F = TypeVar("F", bound=Callable[..., Any])


def kernel(function: F) -> F:
    """`function` compiled by numba in nopython mode, cached, without fast-math (see the module)."""
    return numba.njit(cache=True, nogil=True, error_model="numpy", fastmath=False)(function)


def inline(function: F) -> F:
    """A scalar helper of kernels, inlined into each kernel that calls it (no call per element)."""
    return numba.njit(inline="always", error_model="numpy", fastmath=False)(function)
