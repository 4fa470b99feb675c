"""Per-env counter-based random streams, keyed by (seed, global env id, stream name).

Every random draw in mjvec comes from here. A draw for env e on stream s is a pure function of
(seed of e, global id of e, s, how many draws e has made on s before), so a trajectory does not
depend on num_envs, thread count, shard layout or which other envs reset. Draws for many envs are
one vectorized computation (no per-env Python loop).

The streams live where the env's state lives (`like=`: numpy on the host, torch on a device).
The same integer hash runs in both: numpy in uint64, torch in int64 with wrapping products and
logical shifts. So for the same seed, global id, stream and counter, the host and the device draw
the SAME 64-bit words, uniforms and integers. The float transforms (normals, quaternions) use only
IEEE-754 basic operations and `mjvec.portable`'s functions: on the host they are the same on every
CPU (whatever numpy's SIMD dispatch or the C library picks), and on a device the same bits as on
the host wherever the device's sqrt is correctly rounded (CUDA's is; torch 2.13's CPU kernel is
1 ulp off on about 1 input in 80). On a device, a draw for `Rows` (a mask) computes the
words of every env and advances the counters of the masked ones only: an env's numbers never
depend on which others were selected.

Draw-ahead. A stream drawn for every env with the same request at consecutive calls (the per-step
noise of a randomization wrapper) is served from a block: one call computes the next k requests'
numbers at once (the same words, so the same numbers, since a number depends only on its counter)
and the following calls hand them out. On the host a request for some of the envs (a step where
others autoreset, a reset stream) forms and takes blocks too: a block then holds every env's next
requests and counts per env, each selected env taking its own next numbers. Any other use of that
stream first moves its counters back (per env) to what the served calls consumed, and `seed` does
so for every stream, so what any call returns, and every counter a later call starts from, are
those of drawing one request at a time. Blocks
exist where arrays are small (k x envs x words per request <= `AHEAD_WORDS`), where a numpy call's
fixed cost dominates: there they cut the per-step cost of the draws' float transforms.

The generator is splitmix64 over a 64-bit key and a per-(env, stream) counter: statistically
adequate for simulation noise (it passes BigCrush as a counter-mode generator) and not
cryptographic.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import math
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from mjvec import _portable_host, portable
from mjvec._portable_host import _TURN_PER_WORD, _TWO_POW_M32, _TWO_POW_M53
from mjvec._portable_host import GOLDEN as _GOLDEN
from mjvec._portable_host import M1 as _M1
from mjvec._portable_host import M2 as _M2
from mjvec.errors import ConfigError
from mjvec.xp import Rows, namespace_of
from mjvec.xp import copy_array as _copy  # a served value is a copy: a caller may write into it

# Words per draw-ahead block at most (all envs, all requests of the block), and requests per block
# at most: beyond that size a numpy call's fixed cost no longer matters.
AHEAD_WORDS = 1 << 16
AHEAD_REQUESTS = 32


def _signed(value: np.uint64) -> int:
    """A uint64 constant as the int64 with the same bits (the device path's arithmetic)."""
    value = int(value)
    return value - (1 << 64) if value >= 1 << 63 else value


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer, elementwise on uint64 (wrapping arithmetic is intended)."""
    x = (x ^ (x >> np.uint64(30))) * _M1
    x = (x ^ (x >> np.uint64(27))) * _M2
    return x ^ (x >> np.uint64(31))


def _shr(x: Any, k: int) -> Any:
    """Logical right shift of an int64 tensor (torch's >> is arithmetic)."""
    return (x >> k) & ((1 << (64 - k)) - 1)


def _mix_signed(x: Any) -> Any:
    """`_mix` on int64 tensors: the same bits as the uint64 computation."""
    x = (x ^ _shr(x, 30)) * _signed(_M1)
    x = (x ^ _shr(x, 27)) * _signed(_M2)
    return x ^ _shr(x, 31)


@functools.lru_cache(maxsize=64)
def _golden_steps(count: int) -> np.ndarray:
    """(count,) uint64 k * golden for k < count (the counter increments of one draw), read-only."""
    with np.errstate(over="ignore"):
        steps = np.arange(count, dtype=np.uint64) * _GOLDEN
    steps.setflags(write=False)
    return steps


@functools.lru_cache(maxsize=1024)
def _stream_tag(stream: str) -> np.uint64:
    digest = hashlib.blake2b(stream.encode(), digest_size=8).digest()
    return np.uint64(int.from_bytes(digest, "little"))


def _as_seed(value: object, what: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or not 0 <= value < 2**64:
        raise ConfigError(f"{what} must be a non-negative int below 2**64 (keys are 64-bit), got {value!r}")
    return int(value)


def _size(shape: tuple[int, ...]) -> int:
    return math.prod(int(d) for d in shape)  # not np.prod: a draw's shape is short, and np.prod costs microseconds


class EnvRandom:
    """Random streams for `len(global_ids)` envs.

    global_ids: (N,) the global ids of this process's envs (local env i has global_ids[i]).
    like: an array whose namespace and device the streams live in (None: numpy on the host).
    Each stream is named by a string; the same name always means the same stream. Draws take the
    envs concerned as `Rows` (or host ids) and return arrays with a leading axis of the selection's
    rows (see `mjvec.xp.Rows`); each call advances the counters of exactly those envs on that stream.
    """

    def __init__(self, global_ids: np.ndarray, seed: int | Sequence[int] | None = None, *, like: Any = None) -> None:
        self._global_ids = np.asarray(global_ids, dtype=np.uint64).reshape(-1)
        self._host = like is None or isinstance(like, np.ndarray)
        self._xp = namespace_of(like) if not self._host else None
        self._device = None if self._host else like.device
        self._keys: Any = self._zeros()
        self._counters: dict[str, Any] = {}
        self._device_steps: dict[int, Any] = {}
        self._refusal: str | None = None
        self._blocks: dict[str, _Block] = {}  # draw-ahead: a stream's next requests
        self._last: dict[str, tuple | None] = {}  # each stream's last blockable request key, else None
        self._every = Rows.all(self.num_envs)  # the host selection a block of some envs' request draws
        self.seed(seed)

    @contextlib.contextmanager
    def refused(self, why: str) -> Iterator[None]:
        """Inside this block every draw raises ConfigError(why) before any counter moves (the env
        refuses draws where a draw would break its promises, e.g. in a task's `_observe`)."""
        previous, self._refusal = self._refusal, why
        try:
            yield
        finally:
            self._refusal = previous

    @contextlib.contextmanager
    def permitted(self) -> Iterator[None]:
        """Draws are allowed again inside this block (a wrapper's hook source called from a task's
        `_observe` draws for the envs it concerns itself)."""
        previous, self._refusal = self._refusal, None
        try:
            yield
        finally:
            self._refusal = previous

    @property
    def num_envs(self) -> int:
        return int(self._global_ids.size)

    def _zeros(self) -> Any:
        if self._host:
            return np.zeros(self.num_envs, dtype=np.uint64)
        return self._xp.zeros(self.num_envs, dtype=self._xp.int64, device=self._device)

    def seed(self, seed: int | Sequence[int] | None, env_ids: np.ndarray | None = None) -> None:
        """(Re)key the streams of host ids `env_ids` (all envs if None) and zero their counters.

        seed: one int for every env (env e is keyed by (seed, global id of e)), a sequence with
        one int per selected env, or None for fresh OS entropy.
        """
        ids = np.arange(self.num_envs) if env_ids is None else np.asarray(env_ids, dtype=np.int64)
        for stream in list(self._blocks):  # the other envs' counters must be their true ones
            self._rewind(stream)
        if seed is None:
            seeds = np.full(ids.size, np.random.SeedSequence().entropy % (1 << 63), dtype=np.uint64)
        elif isinstance(seed, (int, np.integer)) and not isinstance(seed, (bool, np.bool_)):
            seeds = np.full(ids.size, _as_seed(seed, "seed"), dtype=np.uint64)
        else:
            values = list(seed)  # type: ignore[arg-type]
            if len(values) != ids.size:
                raise ConfigError(
                    f"seed list has {len(values)} entries; expected one per env ({ids.size})"
                )
            seeds = np.array([_as_seed(v, f"seed[{i}]") for i, v in enumerate(values)], dtype=np.uint64)
        with np.errstate(over="ignore"):
            keys = _mix(_mix(seeds * _GOLDEN + np.uint64(1)) ^ self._global_ids[ids])
        if self._host:
            self._keys[ids] = keys
            for counters in self._counters.values():
                counters[ids] = 0
            return
        index = self._xp.asarray(ids, device=self._device)
        self._keys[index] = self._xp.asarray(keys.view(np.int64), device=self._device)
        for counters in self._counters.values():
            counters[index] = 0

    def _rows(self, rows: Rows | np.ndarray) -> Rows:
        return rows if isinstance(rows, Rows) else Rows.of_ids(rows, self.num_envs)

    # ---- draw-ahead (see the module docstring) --------------------------------------------------
    def _rewind(self, stream: str) -> None:
        """Drop `stream`'s block: its counters go back to what the served requests consumed."""
        block = self._blocks.pop(stream, None)
        if block is None:
            return
        counters = self._counters[stream]
        if block.per_env is not None:  # host only: each env's own served count
            counters -= (block.size - block.per_env).astype(np.uint64) * np.uint64(block.words)
        elif block.used < block.size:
            unused = (block.size - block.used) * block.words
            counters -= np.uint64(unused) if self._host else unused

    def _draw(self, rows: Rows | np.ndarray, stream: str, key: tuple | None, words: int,
              compute: Any) -> Any:
        """One request's numbers, from `stream`'s block where one serves it. compute(rows, k):
        (rows, k, ...) the numbers of k consecutive requests (counters advanced by k x words);
        key: what the request's numbers depend on besides the counter (None: never blocked)."""
        if self._refusal is not None:
            raise ConfigError(self._refusal)
        rows = self._rows(rows)
        every = rows.everything and key is not None
        block = self._blocks.get(stream)
        if block is not None:
            served = self._serve(block, rows, key, every)
            if served is not None:
                return served
            self._rewind(stream)
        # On the host a request of some envs forms a block too (of every env's next requests),
        # which then counts per env: the per-step streams of steps with resets, the reset streams.
        blockable = every or (key is not None and self._host and not rows.dense)
        size = min(AHEAD_REQUESTS, AHEAD_WORDS // max(1, self.num_envs * words)) if blockable else 1
        if size > 1 and self._last.get(stream) == key:
            values = compute(rows if every else self._every, size)
            if self._host:  # request-major: each request one contiguous slab, read after the physics evicted it
                values = np.ascontiguousarray(np.swapaxes(values, 0, 1))
            block = self._blocks[stream] = _Block(key, values, words, size)
            return self._serve(block, rows, key, every)
        self._last[stream] = key if blockable else None
        return compute(rows, 1)[:, 0]

    def _serve(self, block: _Block, rows: Rows, key: tuple | None, every: bool) -> Any:
        """The request's numbers from `block` if it holds them, else None. A request of every env
        takes the block's next request; on the host a request of some envs (a step where others
        reset) takes each selected env's own next one, the block then counting per env."""
        if key is None or block.key != key:
            return None
        if block.per_env is None:
            if every:
                if block.used >= block.size:
                    return None
                block.used += 1
                return _copy(block.values[block.used - 1] if self._host else block.values[:, block.used - 1])
            if not self._host:
                return None
            block.per_env = np.full(self.num_envs, block.used, np.int64)
        ids = rows.host_ids()
        used = block.per_env[ids]
        if used.size and int(used.max()) >= block.size:
            return None
        block.per_env[ids] = used + 1
        return block.values[used, ids]  # host blocks are request-major; a gather: a copy

    # ---- draws --------------------------------------------------------------------------------
    def bits(self, rows: Rows | np.ndarray, stream: str, count: int) -> Any:
        """(rows, count) raw random words (uint64 on the host, int64 with the same bits on a device);
        advances each selected env's counter on `stream` by count."""
        return self._draw(rows, stream, None, count, lambda r, k: self._words(r, stream, count, k))

    def _words(self, rows: Rows, stream: str, count: int, k: int = 1,
               uniform: tuple[float, float] | None = None) -> Any:
        """(rows, k, count): the words of k consecutive requests of `count` words; on the host with
        uniform=(low, span), their uniforms low + span u instead (`_portable_host.words`)."""
        counters = self._counters.get(stream)
        if counters is None:
            counters = self._counters[stream] = self._zeros()
        total = k * count
        if self._host:  # splitmix64 of (key + counter * golden), compiled: the numpy `_mix` formula's bits
            return _portable_host.words(self._keys, rows.host_ids(), _stream_tag(stream), counters, total,
                                        uniform).reshape(-1, k, count)
        xp = self._xp
        steps = self._device_steps.get(total)
        if steps is None:
            steps = self._device_steps[total] = xp.asarray(_golden_steps(total).view(np.int64).copy(),
                                                           device=self._device)
        if rows.dense:
            base = (self._keys ^ _signed(_stream_tag(stream))) + counters * _signed(_GOLDEN)
            counters += xp.astype(rows.mask, xp.int64) * total
        else:
            index = xp.asarray(rows.ids, device=self._device)
            start = counters[index]
            base = (self._keys[index] ^ _signed(_stream_tag(stream))) + start * _signed(_GOLDEN)
            counters[index] = start + total
        return xp.reshape(_mix_signed(base[:, None] + steps[None, :]), (-1, k, count))

    def uniform(self, rows: Rows | np.ndarray, stream: str, low: Any = 0.0, high: Any = 1.0,
                shape: tuple[int, ...] = ()) -> Any:
        """(rows, *shape) float64 uniform in [low, high); low/high broadcast against shape."""
        key = ("uniform", shape, float(low), float(high)) if _scalar(low) and _scalar(high) else None
        return self._draw(rows, stream, key, _size(shape), lambda r, k: self._uniforms(r, stream, low, high, shape, k))

    def _uniforms(self, rows: Rows, stream: str, low: Any, high: Any, shape: tuple[int, ...], k: int) -> Any:
        # One request (k = 1) keeps its own shape while low/high broadcast against it: they may
        # be per-row arrays; a block (k > 1) has scalar bounds.
        tail = (-1, k, *shape) if k > 1 else (-1, *shape)
        if self._host and _scalar(low) and _scalar(high):  # the words and the transform in one compiled pass
            span = float(np.asarray(high) - np.asarray(low))
            return self._words(rows, stream, _size(shape), k, uniform=(float(low), span)).reshape(
                tail if k > 1 else (-1, 1, *shape))
        w = self._words(rows, stream, _size(shape), k)
        if self._host:
            u = ((w >> np.uint64(11)).astype(np.float64) * _TWO_POW_M53).reshape(tail)
            out = np.asarray(low) + (np.asarray(high) - np.asarray(low)) * u
        else:
            xp = self._xp
            u = xp.reshape(xp.astype(_shr(w, 11), xp.float64) * _TWO_POW_M53, tail)
            low, high = (xp.asarray(v, dtype=xp.float64, device=self._device) for v in (low, high))
            out = low + (high - low) * u
        return out if k > 1 else out[:, None]

    def log_uniform(self, rows: Rows | np.ndarray, stream: str, low: float, high: float,
                    shape: tuple[int, ...] = ()) -> Any:
        """(rows, *shape) float64 exp(U(log low, log high)), 0 < low <= high (`mjvec.portable`'s
        log and exp: the same bits on every CPU)."""
        return portable.exp(self.uniform(rows, stream, portable.log(float(low)), portable.log(float(high)), shape))

    def normal(self, rows: Rows | np.ndarray, stream: str, shape: tuple[int, ...] = (),
               dtype: Any = np.float64) -> Any:
        """(rows, *shape) standard normal: Box-Muller, both outputs of each pair.

        Each 64-bit word gives two 32-bit uniforms (u1 in (0, 1], u2 in [0, 1)) and so two
        normals, r cos(2 pi u2) and r sin(2 pi u2) with r = sqrt(-2 ln u1). The 32-bit u1 bounds
        |z| by sqrt(64 ln 2) (about 6.7 sigma), far in the tail for simulation noise. The
        transforms run in float64 with `mjvec.portable`'s log and sincos (the same bits on every
        CPU and in both namespaces); dtype np.float32 rounds the result once.
        """
        words = (_size(shape) + 1) // 2
        key = ("normal", shape, np.dtype(dtype).str)
        return self._draw(rows, stream, key, words, lambda r, k: self._normals(r, stream, shape, dtype, k))

    def _normals(self, rows: Rows, stream: str, shape: tuple[int, ...], dtype: Any, k: int) -> Any:
        n = _size(shape)
        words = (n + 1) // 2
        if self._host:
            return self._host_normals(self._words(rows, stream, words, k).reshape(-1, words), n, k, shape, dtype)
        xp = self._xp
        out_dtype = xp.float32 if np.dtype(dtype) == np.float32 else xp.float64
        w = xp.reshape(self._words(rows, stream, words, k), (-1, words))
        u1 = (xp.astype(_shr(w, 32), xp.float64) + 1.0) * _TWO_POW_M32
        angle = xp.astype(w & 0xFFFFFFFF, xp.float64) * _TURN_PER_WORD
        r = xp.sqrt(-2.0 * portable.log(u1))
        sin, cos = portable.sincos(angle)
        z = xp.concat([r * cos, r * sin], axis=1)[:, :n]  # each request's pairs, as one request draws them
        return xp.reshape(xp.astype(z, out_dtype), (-1, k, *shape))

    @staticmethod
    def _host_normals(w: np.ndarray, n: int, k: int, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        """`_normals`' transform of (rows, words) uint64 words on the host: `mjvec._portable_host`'s
        compiled Box-Muller, the same operations on the same values as the namespace-generic lines
        (so the same bits), in one pass."""
        return _portable_host.box_muller(w, n, np.dtype(dtype)).reshape(-1, k, *shape)

    def integers(self, rows: Rows | np.ndarray, stream: str, low: int, high: int,
                 shape: tuple[int, ...] = ()) -> Any:
        """(rows, *shape) int64 uniform in [low, high)."""
        if high <= low:
            raise ConfigError(f"integers needs high > low, got low={low}, high={high}")
        span = high - low
        if span > 1 << 11:
            u = self.uniform(rows, stream, 0.0, 1.0, shape)
            if self._host:
                return np.minimum(low + np.floor(u * span).astype(np.int64), high - 1)
            xp = self._xp
            return xp.clip(low + xp.astype(xp.floor(u * span), xp.int64), max=high - 1)
        key = ("integers", shape, int(low), int(high))
        return self._draw(rows, stream, key, _size(shape), lambda r, k: self._integers(r, stream, low, span, shape, k))

    def _integers(self, rows: Rows, stream: str, low: int, span: int, shape: tuple[int, ...], k: int) -> Any:
        # floor(u * span) with u = the word's top 53 bits / 2^53, in exact integer arithmetic (the
        # product stays below 2^64): the float path's numbers in fewer passes.
        w = self._words(rows, stream, _size(shape), k)
        if self._host:
            w >>= np.uint64(11)
            w *= np.uint64(span)
            w >>= np.uint64(53)
            return (w.astype(np.int64) + low).reshape(-1, k, *shape)
        return self._xp.reshape(_shr(_shr(w, 11) * span, 53) + low, (-1, k, *shape))

    def quaternion(self, rows: Rows | np.ndarray, stream: str) -> Any:
        """(rows, 4) uniformly random unit quaternions, wxyz (Shoemake's method)."""
        u = self.uniform(rows, stream, 0.0, 1.0, (3,))
        xp = np if self._host else self._xp
        a, b, c = u[:, 0], u[:, 1], u[:, 2]
        sin_b, cos_b = portable.sincos(2 * np.pi * b)
        sin_c, cos_c = portable.sincos(2 * np.pi * c)
        root_a, root_1a = xp.sqrt(a), xp.sqrt(1 - a)
        return xp.stack([root_a * cos_c, root_1a * sin_b, root_1a * cos_b, root_a * sin_c], axis=1)


class _Block:
    """A stream's drawn-ahead requests: values (size, rows, ...) on the host (request-major: a request
    is one contiguous slab) and (rows, size, ...) on a device, `used` of them served to every env;
    per_env (N,) counts each env's served requests instead once a request of some envs was served
    from the block or formed it (host only; None before)."""

    __slots__ = ("key", "per_env", "size", "used", "values", "words")

    def __init__(self, key: tuple, values: Any, words: int, size: int) -> None:
        self.key, self.values, self.words, self.size, self.used = key, values, words, size, 0
        self.per_env: np.ndarray | None = None


def _scalar(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


def words_as_uint64(words: Any) -> np.ndarray:
    """Host uint64 view of `bits` output from either namespace (for tests and comparisons)."""
    if isinstance(words, np.ndarray):
        return words
    return words.detach().cpu().numpy().view(np.uint64)


__all__ = ["EnvRandom", "words_as_uint64"]
