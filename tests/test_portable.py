"""mjvec.portable: accuracy against 120-bit references (mpmath), exactness of the emulated FMA against
rational arithmetic, the same bits in numpy and torch (CPU), and the same bits whatever numpy's SIMD
dispatch (a recorded digest of its outputs, checked again under other dispatches in
tests/test_portability.py). Also: no module of mjvec calls a float function whose bits follow the
CPU (numpy's, torch's or the C library's transcendental functions, BLAS) outside mjvec.portable."""

from __future__ import annotations

import ast
import hashlib
from fractions import Fraction
from pathlib import Path

import mpmath
import numpy as np
import pytest
import torch

from mjvec import portable as P

mpmath.mp.prec = 120
REPO = Path(__file__).resolve().parents[1]


def _ulps(got: np.ndarray, ref: np.ndarray) -> np.ndarray:
    return np.abs(got - ref) / np.spacing(np.abs(ref))


def _golden(n: int, lo: float, hi: float) -> np.ndarray:
    """n fixed, evenly spread values in [lo, hi) (no random generator needed)."""
    return lo + (hi - lo) * ((np.arange(1, n + 1) * 0.6180339887498949) % 1.0)


def _reference(function, *columns: np.ndarray) -> np.ndarray:
    return np.array([float(function(*(mpmath.mpf(float(c)) for c in row))) for row in zip(*columns, strict=True)])


CASES = {
    "log": (P.log, mpmath.log, [np.concatenate([_golden(6000, 1e-6, 10.0), 2.0 ** _golden(3000, -1070, 1020),
                                                2.0**-32 * np.arange(1, 2001), [1.0, 2.0, 0.5, 5e-324]])],
            1.0),
    "exp": (P.exp, mpmath.exp, [np.concatenate([_golden(6000, -5, 5), _golden(3000, -745, 709.7)])], 1.0),
    "sin": (P.sin, mpmath.sin, [np.concatenate([_golden(8000, -100, 100), [0.0, np.pi, -np.pi / 2]])], 1.0),
    "cos": (P.cos, mpmath.cos, [np.concatenate([_golden(8000, -100, 100), [0.0, np.pi, -np.pi / 2]])], 1.0),
    "atan2": (P.atan2, mpmath.atan2, [_golden(8000, -5, 5), _golden(8000, -3, 7)[::-1]], 2.0),
    "tanh": (P.tanh, mpmath.tanh, [np.concatenate([_golden(8000, -6, 6), _golden(2000, -0.3, 0.3),
                                                 [0.0, 30.0, -30.0, 1e-300, 0.25, -0.25,
                                                  np.nextafter(0.25, 0)]])], 2.0),
    "asin": (P.asin, mpmath.asin, [np.concatenate([_golden(8000, -1, 1), 1 - 2.0 ** -np.arange(1, 50),
                                                 [0.0, 1.0, -1.0, 0.5]])], 2.0),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_within_one_ulp_of_a_120_bit_reference(name: str) -> None:
    ours, exact, columns, bound = CASES[name]
    ref = _reference(exact, *columns)
    got = ours(*columns)
    ulps = _ulps(got, ref)
    assert ulps.max() <= bound, (name, ulps.max(), columns[0][ulps.argmax()])
    assert np.mean(got == ref) > 0.6  # mostly correctly rounded, not merely close


def test_sin_cos_stay_within_two_ulps_up_to_1e5() -> None:
    x = _golden(4000, -1e5, 1e5)
    s, c = P.sincos(x)
    assert _ulps(s, _reference(mpmath.sin, x)).max() <= 2.0
    assert _ulps(c, _reference(mpmath.cos, x)).max() <= 2.0


def test_asin_and_tanh_at_the_edges_of_their_domains() -> None:
    np.testing.assert_array_equal(P.tanh(np.array([np.inf, -np.inf, -0.0, 800.0])), [1.0, -1.0, -0.0, 1.0])
    assert np.isnan(P.tanh(np.array([np.nan]))).all()
    np.testing.assert_array_equal(P.asin(np.array([1.0, -1.0, -0.0])), [np.pi / 2, -np.pi / 2, -0.0])
    assert np.isnan(P.asin(np.array([1.0 + 2**-52, -2.0, np.nan, np.inf]))).all()


def test_special_values_are_numpys() -> None:
    assert P.log(0.0) == -np.inf and P.log(np.inf) == np.inf
    assert np.isnan(P.log(-1.0)) and np.isnan(P.log(np.nan))
    assert P.exp(1000.0) == np.inf and P.exp(-1000.0) == 0.0 and np.isnan(P.exp(np.nan))
    signed = [(0.0, -0.0), (-0.0, -0.0), (-0.0, 1.0), (0.0, 0.0), (1.0, -0.0), (-1.0, 0.0), (2.0, 2.0), (-3.0, -3.0)]
    for y, x in signed:
        ours, theirs = P.atan2(np.float64(y), np.float64(x)), np.arctan2(y, x)
        assert ours == theirs and np.signbit(ours) == np.signbit(theirs), (y, x)


def test_fma_is_one_rounding_of_the_exact_value() -> None:
    a = _golden(20000, -3, 3) * 2.0 ** np.floor(_golden(20000, -30, 30))
    b = _golden(20000, -2, 5)[::-1] * 2.0 ** np.floor(_golden(20000, -30, 30)[::-1])
    p = a * b
    cases = {
        "cancelling": -p,
        "near a tie": -(p + np.spacing(p) / 2 * np.where(np.arange(a.size) % 2 == 0, 1.0, -1.0)),
        "one ulp off": np.nextafter(-p, 0.0),
        "spread": _golden(20000, -1, 1) * np.abs(p) * 2.0 ** np.floor(_golden(20000, -60, 60)),
    }
    for name, c in cases.items():
        ref = np.array([float(Fraction(x) * Fraction(y) + Fraction(z)) for x, y, z in zip(a, b, c, strict=True)])
        np.testing.assert_array_equal(P.fma(a, b, c), ref, err_msg=name)
    # Where plain arithmetic rounds twice, the fused result differs (so the test above can fail).
    assert np.any(P.fma(a, b, cases["spread"]) != a * b + cases["spread"])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_numpy_and_torch_give_the_same_bits(dtype) -> None:
    """hypot is left out: it ends in the namespace's own sqrt, and torch 2.13's CPU sqrt is not
    correctly rounded (1 ulp off on about 1 input in 80; CUDA's is)."""
    x = _golden(10000, -20, 20).astype(dtype)
    y = _golden(10000, -3, 3).astype(dtype)[::-1].copy()
    for name, function, args in [("log", P.log, (np.abs(x) + dtype(1e-3),)), ("exp", P.exp, (x,)),
                                 ("sin", P.sin, (x,)), ("cos", P.cos, (x,)), ("atan2", P.atan2, (y, x)),
                                 ("fma", P.fma, (x, y, x)), ("tanh", P.tanh, (x,))]:
        host = function(*args)
        device = function(*(torch.from_numpy(a) for a in args)).numpy()
        assert host.dtype == device.dtype == dtype, name
        np.testing.assert_array_equal(host, device, err_msg=name)


def test_blocks_give_the_bits_of_one_pass() -> None:
    x = _golden(3 * P._BLOCK + 17, -4, 4).reshape(-1, 1)
    whole = P.sin(x)
    pieces = np.concatenate([P.sin(x[i:i + 100]) for i in range(0, x.shape[0], 100)])
    np.testing.assert_array_equal(whole, pieces)
    assert whole.shape == x.shape


def outputs_digest() -> str:
    """A hash of every function's outputs on fixed inputs: the same on every CPU and dispatch."""
    x = _golden(50000, -50, 50)
    digest = hashlib.blake2b(digest_size=16)
    for out in (P.log(np.abs(x) + 1e-9), P.exp(x / 10), *P.sincos(x), P.atan2(x, x[::-1]), P.hypot(x, x[::-1]),
                P.fma(x, x[::-1], x)):
        digest.update(np.ascontiguousarray(out).tobytes())
    return digest.hexdigest()


OUTPUTS_DIGEST = "f178febbc97b7b3e1825dd3582183ea5"


def test_outputs_equal_the_recorded_digest() -> None:
    assert outputs_digest() == OUTPUTS_DIGEST


# Calls whose bits follow the CPU (numpy's SIMD dispatch, torch's kernels, the C library, BLAS).
_CPU_DEPENDENT = {"sin", "cos", "tan", "arcsin", "arccos", "arctan", "arctan2", "asin", "acos", "atan", "atan2",
                  "sinh", "cosh", "tanh", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "power", "pow",
                  "hypot", "cbrt", "einsum", "dot", "vdot", "inner", "matmul", "tensordot"}
# module -> calls it may make, and why they do not reach a trajectory through the CPU's arithmetic.
_ALLOWED = {
    # Reproduces Gymnasium's norm by asking this process's BLAS (the probe and the row-wise fallback).
    "mjvec/tasks/gym_mujoco/terms.py": {"np.dot"},
    # The Warp backend's host-side geometry for its own float32 tolerance checks, not a trajectory.
    "mjvec/backends/warp/geometry.py": {"np.einsum"},
    # The deployment loop's perception noise (a random rotation about a random axis): reproduced in
    # distribution, never bit for bit, and the package may not import mjvec.portable (it runs alone).
    "mjvec/deploy/_math.py": {"np.sin", "np.cos"},
}


def _calls(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _CPU_DEPENDENT:
            owner = node.func.value
            if isinstance(owner, ast.Name) and owner.id in {"np", "xp", "math", "torch", "numpy"}:
                found.add(f"{owner.id}.{node.func.attr}")
    return found


def test_no_module_calls_a_cpu_dependent_float_function() -> None:
    offenders = {}
    for path in sorted((REPO / "mjvec").rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        if rel == "mjvec/portable.py":
            continue
        calls = _calls(path) - _ALLOWED.get(rel, set())
        if calls:
            offenders[rel] = sorted(calls)
    assert offenders == {}, f"use mjvec.portable instead of: {offenders}"


def test_the_scan_finds_such_a_call(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("import numpy as np\n\ndef f(x, xp):\n    return np.arctan2(x, x) + xp.log(x) + x.sum()\n")
    assert _calls(module) == {"np.arctan2", "xp.log"}


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float64).view(np.int64)


def _random_doubles(low: float, high: float, n: int, seed: int) -> np.ndarray:
    """n doubles with uniformly random bit patterns between those of low and high (0 <= low <= high):
    every binade equally often, so the edges of each formula's ranges are reached."""
    lo, hi = _bits(np.array([low]))[0], _bits(np.array([high]))[0]
    return np.random.default_rng(seed).integers(lo, hi, n, endpoint=True).view(np.float64)


def test_numpy_kernels_give_the_generic_formulas_bits() -> None:
    """mjvec._portable_host's compiled kernels against the namespace-generic formulas (run on numpy
    here; torch runs them on devices), bit for bit, on their domains: random bit patterns across
    every binade, the range's edges and the values where a formula's branches meet."""
    from mjvec import _portable_host as host

    rng = np.random.default_rng(7)
    sqrt2 = np.sqrt(2.0)
    log_in = np.concatenate([_random_doubles(P._TINY, np.finfo(np.float64).max, 20000, 1),
                             (rng.integers(0, 2**32, 5000) + 1.0) * 2.0**-32,
                             [P._TINY, np.finfo(np.float64).max, 1.0, 2.0, 0.5, sqrt2, np.nextafter(sqrt2, 0),
                              np.nextafter(sqrt2, 2), np.nextafter(1.0, 0), np.nextafter(1.0, 2)]])
    exp_in = np.concatenate([rng.uniform(P._EXP_MIN, P._EXP_MAX, 20000), rng.uniform(-1, 1, 5000),
                             _random_doubles(0.0, 700.0, 5000, 2), -_random_doubles(0.0, 745.0, 5000, 3),
                             [P._EXP_MIN, P._EXP_MAX, 0.0, -0.0, np.log(2) / 2, -1022 * np.log(2)]])
    angles = rng.integers(0, 2**32, 5000) * (2 * np.pi / 2**32)
    any_bits = np.random.default_rng(4).integers(-(2**63), 2**63 - 1, 20000, dtype=np.int64).view(np.float64)
    sincos_in = np.concatenate([angles, rng.uniform(-100, 100, 5000), any_bits, np.arange(-16, 17) * np.pi / 4,
                                [0.0, -0.0, host.SINCOS_MAX, -host.SINCOS_MAX, 1e15, -1e15]])
    sincos_in = sincos_in[np.abs(sincos_in) <= host.SINCOS_MAX]  # finite and inside: the kernel's domain
    assert sincos_in.size > 20000
    with np.errstate(all="ignore"):
        pairs = [("log", host.log(log_in), P._log64(np, log_in)), ("exp", host.exp(exp_in), P._exp64(np, exp_in))]
        for name, got, want in zip(("sin", "cos"), host.sincos(sincos_in), P._sincos64(np, sincos_in), strict=True):
            pairs.append((name, got, want))
    for name, got, want in pairs:
        np.testing.assert_array_equal(_bits(got), _bits(want), err_msg=name)
    # 0-d inputs run as (1,) arrays and come back 0-d.
    assert host.log(np.array(2.0)).shape == () and host.sincos(np.array(1.0))[0].shape == ()


def test_the_fma_kernel_gives_the_generic_formulas_bits_on_every_input() -> None:
    """mjvec._portable_host.fma runs `fma`'s emulation op for op, so its bits equal the generic
    formula's on ANY float64 input (no domain), a nan's payload aside (which payload an operation on
    two nans keeps follows the instructions the compiler picks for the CPU): random bit patterns, a
    grid of special values (zeros, infinities, nan, subnormals, extremes) and strided column views,
    as Gymnasium's distance_from_origin passes them."""
    from mjvec import _portable_host as host

    def any_bits(seed: int, n: int) -> np.ndarray:
        return np.random.default_rng(seed).integers(-(2**63), 2**63 - 1, n, dtype=np.int64).view(np.float64)

    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -5e-324, 1e-300, 1e300, 1.0, -1.0,
                        np.finfo(np.float64).tiny, np.finfo(np.float64).max, 1.0 + 2.0**-52, 3.0])
    grid = np.array(np.meshgrid(special, special, special)).reshape(3, -1)
    rng = np.random.default_rng(5)
    columns = rng.uniform(-3, 3, (5000, 4))
    cases = [(any_bits(1, 50000), any_bits(2, 50000), any_bits(3, 50000)), tuple(grid),
             (rng.uniform(-3, 3, 50000), rng.uniform(-3, 3, 50000), rng.uniform(-9, 9, 50000)),
             (columns[:, 1], columns[:, 1], columns[:, 0] * columns[:, 0])]
    with np.errstate(all="ignore"):
        for a, b, c in cases:
            want = P._fma64(np, a, b, c)
            for got in (host.fma(a, b, c), P.fma(a, b, c)):
                np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
                numbers = ~np.isnan(want)
                np.testing.assert_array_equal(_bits(got[numbers]), _bits(want[numbers]))
    assert P.fma(np.float32(3.0), np.float32(2.0), np.float32(1.0)).dtype == np.float32  # float32: generic


def test_the_atan2_kernel_gives_the_generic_formulas_bits() -> None:
    """mjvec._portable_host.atan2 against the generic formula, bit for bit, on finite inputs: random
    bit patterns (every binade, both signs), the eighths' rounding edges (ratios j/8 +- 1/16 and
    their neighbours), every octant's edges (|y| = |x|, zeros of both signs, subnormals, extremes)
    and strided column views; one non-finite element sends the whole call to the generic formula."""
    from mjvec import _portable_host as host

    bits = np.random.default_rng(11).integers(-(2**63), 2**63 - 1, 60000, dtype=np.int64).view(np.float64)
    bits = bits[np.isfinite(bits)]
    y_any, x_any = bits[: bits.size // 2], bits[bits.size // 2: 2 * (bits.size // 2)]
    edges = np.array([(j + 0.5) / 8 for j in range(8)] + [j / 8 for j in range(9)])
    ratios = np.concatenate([edges, np.nextafter(edges, 0), np.nextafter(edges, 2)])
    signs = np.array([[1, 1], [1, -1], [-1, 1], [-1, -1]], float)
    ry = np.concatenate([ratios * sy for sy, _ in signs] + [np.ones(ratios.size) * sx for _, sx in signs])
    rx = np.concatenate([np.ones(ratios.size) * sx for _, sx in signs] + [ratios * sy for sy, _ in signs])
    special = np.array([0.0, -0.0, 5e-324, -5e-324, 1e-300, -1e300, 1.0, -1.0, np.finfo(np.float64).max,
                        -np.finfo(np.float64).max, np.finfo(np.float64).tiny, 3.0, -3.0])
    gy, gx = (g.reshape(-1) for g in np.meshgrid(special, special))
    rng = np.random.default_rng(12)
    quat = rng.normal(size=(5000, 4))
    cases = [(y_any, x_any), (ry, rx), (ry * 1e-310, rx * 1e-310), (gy, gx),
             (rng.uniform(-3, 3, 50000), rng.uniform(-3, 3, 50000)), (quat[:, 1], quat[:, 0])]
    with np.errstate(all="ignore"):
        for y, x in cases:
            want = P._atan2(y, x)
            for got in (host.atan2(y, x), P.atan2(y, x)):
                np.testing.assert_array_equal(_bits(got), _bits(want))
        for extra in (np.inf, -np.inf, np.nan):
            assert host.atan2(np.array([1.0, extra]), np.array([2.0, 1.0])) is None
            assert host.atan2(np.array([1.0, 2.0]), np.array([extra, 1.0])) is None
        y, x = np.array([np.inf, 1.0]), np.array([1.0, -np.inf])
        np.testing.assert_array_equal(_bits(P.atan2(y, x)), _bits(P._atan2(y, x)))  # the generic formula's answer
    assert P.atan2(np.float64(1.0), np.float64(-2.0)) == P._atan2(np.float64(1.0), np.float64(-2.0))


def test_the_hypot_kernel_gives_the_generic_formulas_bits_on_every_input() -> None:
    """mjvec._portable_host.hypot (no domain) against the generic formula on random bit patterns,
    special values and strided columns, nan payloads aside; float32 and mixed shapes take the
    generic formula."""
    from mjvec import _portable_host as host

    bits = np.random.default_rng(13).integers(-(2**63), 2**63 - 1, (2, 40000), dtype=np.int64).view(np.float64)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, 1e-160, 1e154, 1e160, 1.0, -3.0])
    grid = np.array(np.meshgrid(special, special)).reshape(2, -1)
    columns = np.random.default_rng(14).uniform(-0.2, 0.2, (3000, 3))
    with np.errstate(all="ignore"):
        for x, y in ((bits[0], bits[1]), tuple(grid), (columns[:, 0], columns[:, 1])):
            want = P._hypot(x, y)
            for got in (host.hypot(x, y), P.hypot(x, y)):
                np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
                numbers = ~np.isnan(want)
                np.testing.assert_array_equal(_bits(got[numbers]), _bits(want[numbers]))
    assert P.hypot(np.float32(3.0), np.float32(4.0)).dtype == np.float32
    np.testing.assert_array_equal(P.hypot(columns[:, 0], 0.5), P._hypot(columns[:, 0], 0.5))


def test_inputs_outside_a_kernels_domain_take_the_generic_formula() -> None:
    """One subnormal, zero, negative, inf or nan (log), one value beyond the exponent range (exp), or
    one non-finite value or one beyond the exact reduction count (sincos) sends the whole call to
    the generic formula: the results keep its bits and special values."""
    base = _golden(100, 0.1, 10.0)
    for extra in (5e-324, 0.0, -1.0, np.inf, np.nan):
        x = np.append(base, extra)
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(_bits(P.log(x)), _bits(P._log64(np, x)), err_msg=str(extra))
    for extra in (-800.0, 800.0, np.nan, -np.inf):
        x = np.append(base, extra)
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(_bits(P.exp(x)), _bits(P._exp64(np, x)), err_msg=str(extra))
    for extra in (np.inf, -np.inf, np.nan, -np.nan, 1e300, np.nextafter(2.0**52, np.inf)):
        x = np.append(base, extra)
        with np.errstate(all="ignore"):
            for got, want in zip(P.sincos(x), P._sincos64(np, x), strict=True):
                np.testing.assert_array_equal(_bits(got), _bits(want), err_msg=str(extra))
    assert P.log(np.array([0.0, -1.0]))[0] == -np.inf and np.isnan(P.log(np.array([-1.0]))[0])
    assert P.exp(np.array([800.0, -800.0])).tolist() == [np.inf, 0.0]


def _result_bits(value: object) -> np.ndarray:
    parts = value if isinstance(value, tuple) else (value,)
    return np.stack([np.asarray(p.numpy() if isinstance(p, torch.Tensor) else p) for p in parts]).view(np.uint8)


@pytest.mark.parametrize("namespace", ["numpy", "torch"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["log", "exp", "sin", "cos", "sincos", "tanh", "asin"])
def test_each_is_one_call_per_array_bit_for_bit(name: str, dtype: type, namespace: str, monkeypatch) -> None:
    """portable.each(f, a, b, c) against f(a), f(b), f(c): the same bits and dtypes, in one call on
    their stack when they share a type, shape and dtype (counted)."""
    function = getattr(P, name)
    rng = np.random.default_rng(11)
    low = 1e-3 if name == "log" else -1.0 if name == "asin" else -30.0
    high = 1.0 if name == "asin" else 30.0
    arrays = [rng.uniform(low, high, (5, 7)).astype(dtype) for _ in range(3)]
    arrays[1][0, :3] = [low, high, 0.5]  # the domain's ends too
    if namespace == "torch":
        arrays = [torch.from_numpy(a) for a in arrays]
    calls: list[tuple] = []

    def counted(x: object) -> object:
        calls.append(tuple(x.shape))
        return function(x)

    monkeypatch.setattr(P, "_ONE_INPUT", P._ONE_INPUT | {counted})
    got = P.each(counted, *arrays)
    assert calls == [(3, 5, 7)]  # one call, on the stack
    assert len(got) == 3
    for result, array in zip(got, arrays, strict=True):
        want = function(array)
        np.testing.assert_array_equal(_result_bits(result), _result_bits(want))
        first = result[0] if isinstance(result, tuple) else result
        assert type(first) is type(array) and first.dtype == array.dtype and tuple(first.shape) == (5, 7)


def test_each_calls_once_per_array_when_they_do_not_stack(monkeypatch) -> None:
    """Arrays of other shapes, dtypes or types are not stacked (float32 stays float32, not promoted
    by a stack with float64): one call each, with each call's own result."""
    rng = np.random.default_rng(12)
    a, b = rng.uniform(-3, 3, 4), rng.uniform(-3, 3, 5)
    c = rng.uniform(-3, 3, 4).astype(np.float32)
    calls: list[tuple] = []

    def counted(x: object) -> object:
        calls.append(tuple(np.shape(x)))
        return P.exp(x)

    monkeypatch.setattr(P, "_ONE_INPUT", P._ONE_INPUT | {counted})
    for arrays in ((a, b), (a, c), (a, torch.from_numpy(a.copy())), (a,)):
        calls.clear()
        got = P.each(counted, *arrays)
        assert len(calls) == len(arrays)
        for result, array in zip(got, arrays, strict=True):
            np.testing.assert_array_equal(_result_bits(result), _result_bits(P.exp(array)))
    assert P.each(P.exp) == ()


def test_each_refuses_a_function_that_is_not_a_one_input_portable_function() -> None:
    x = np.ones(3)
    for function in (P.atan2, P.hypot, P.fma, np.exp, abs):
        with pytest.raises(TypeError, match=r"portable.each takes a one-input function of mjvec.portable \(asin, "
                                            r"cos, exp, log, sin, sincos, tanh\), got"):
            P.each(function, x, x)
