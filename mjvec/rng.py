"""Per-env counter-based random streams, keyed by (seed, global env id, stream name).

Every random draw in mjvec comes from here. A draw for env e on stream s is a pure function of
(seed of e, global id of e, s, how many draws e has made on s before), so a trajectory does not
depend on num_envs, thread count, shard layout or which other envs reset. Draws for many envs are
one vectorized numpy computation (no per-env Python loop), which is what lets per-step noise and
pushes stay cheap at thousands of envs.

The generator is splitmix64 over a 64-bit key and a per-(env, stream) counter: statistically
adequate for simulation noise (it passes BigCrush as a counter-mode generator) and not
cryptographic.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence

import numpy as np

from mjvec.errors import ConfigError

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_TWO_POW_M53 = 1.0 / 9007199254740992.0
_TWO_POW_M32 = 1.0 / 4294967296.0


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer, elementwise on uint64 (wrapping arithmetic is intended)."""
    x = (x ^ (x >> np.uint64(30))) * _M1
    x = (x ^ (x >> np.uint64(27))) * _M2
    return x ^ (x >> np.uint64(31))


def _mix_inplace(x: np.ndarray) -> np.ndarray:
    """`_mix` on a fresh array, in place: no temporaries of the array's size beyond one shift."""
    x ^= x >> np.uint64(30)
    x *= _M1
    x ^= x >> np.uint64(27)
    x *= _M2
    x ^= x >> np.uint64(31)
    return x


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


class EnvRandom:
    """Random streams for `len(global_ids)` envs.

    global_ids: (N,) the global ids of this process's envs (local env i has global_ids[i]).
    Each stream is named by a string; the same name always means the same stream. Methods take
    local env ids (K,) and return arrays with a leading K axis; each call advances the counters of
    exactly those envs on that stream.
    """

    def __init__(self, global_ids: np.ndarray, seed: int | Sequence[int] | None = None) -> None:
        self._global_ids = np.asarray(global_ids, dtype=np.uint64).reshape(-1)
        self._keys = np.zeros(self._global_ids.size, dtype=np.uint64)
        self._counters: dict[str, np.ndarray] = {}
        self.seed(seed)

    @property
    def num_envs(self) -> int:
        return int(self._global_ids.size)

    def seed(self, seed: int | Sequence[int] | None, env_ids: np.ndarray | None = None) -> None:
        """(Re)key the streams of `env_ids` (all envs if None) and zero their counters.

        seed: one int for every env (env e is keyed by (seed, global id of e)), a sequence with
        one int per selected env, or None for fresh OS entropy.
        """
        ids = np.arange(self.num_envs) if env_ids is None else np.asarray(env_ids, dtype=np.int64)
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
            self._keys[ids] = _mix(_mix(seeds * _GOLDEN + np.uint64(1)) ^ self._global_ids[ids])
        for counters in self._counters.values():
            counters[ids] = 0

    def bits(self, env_ids: np.ndarray, stream: str, count: int) -> np.ndarray:
        """(K, count) uint64 raw random words; advances each env's counter on `stream` by count."""
        ids = np.asarray(env_ids, dtype=np.int64).reshape(-1)
        counters = self._counters.get(stream)
        if counters is None:
            counters = self._counters[stream] = np.zeros(self.num_envs, dtype=np.uint64)
        start = counters[ids]
        counters[ids] = start + np.uint64(count)
        with np.errstate(over="ignore"):
            # splitmix64 of (key + counter * golden): the state at this env's first counter, plus
            # the per-word increments, then the finalizer in place.
            base = (self._keys[ids] ^ _stream_tag(stream)) + start * _GOLDEN
            return _mix_inplace(base[:, None] + _golden_steps(count)[None, :])

    def uniform(
        self,
        env_ids: np.ndarray,
        stream: str,
        low: float | np.ndarray = 0.0,
        high: float | np.ndarray = 1.0,
        shape: tuple[int, ...] = (),
    ) -> np.ndarray:
        """(K, *shape) float64 uniform in [low, high); low/high broadcast against shape."""
        n = int(np.prod(shape, dtype=np.int64)) if shape else 1
        u = (self.bits(env_ids, stream, n) >> np.uint64(11)).astype(np.float64) * _TWO_POW_M53
        u = u.reshape(-1, *shape)
        return np.asarray(low) + (np.asarray(high) - np.asarray(low)) * u

    def normal(self, env_ids: np.ndarray, stream: str, shape: tuple[int, ...] = (),
               dtype: type = np.float64) -> np.ndarray:
        """(K, *shape) standard normal: Box-Muller, both outputs of each pair.

        Each 64-bit word gives two 32-bit uniforms (u1 in (0, 1], u2 in [0, 1)) and so two
        normals, r cos(2 pi u2) and r sin(2 pi u2) with r = sqrt(-2 ln u1). The 32-bit u1 bounds
        |z| by sqrt(64 ln 2) (about 6.7 sigma), far in the tail for simulation noise. dtype
        np.float32 computes the transforms in single precision (for float32 observation noise).
        """
        n = int(np.prod(shape, dtype=np.int64)) if shape else 1
        pairs = (n + 1) // 2
        w = self.bits(env_ids, stream, pairs)
        scale = dtype(_TWO_POW_M32)
        u1 = ((w >> np.uint64(32)).astype(dtype) + dtype(1.0)) * scale
        angle = (w & np.uint64(0xFFFFFFFF)).astype(dtype) * (dtype(2.0 * np.pi) * scale)
        r = np.sqrt(dtype(-2.0) * np.log(u1))
        z = np.concatenate([r * np.cos(angle), r * np.sin(angle)], axis=1)[:, :n]
        return z.reshape(-1, *shape)

    def integers(
        self, env_ids: np.ndarray, stream: str, low: int, high: int, shape: tuple[int, ...] = ()
    ) -> np.ndarray:
        """(K, *shape) int64 uniform in [low, high)."""
        if high <= low:
            raise ConfigError(f"integers needs high > low, got low={low}, high={high}")
        span = high - low
        if span <= 1 << 11:
            # floor(u * span) with u = the word's top 53 bits / 2^53, in exact integer arithmetic
            # (the product stays below 2^64): the float path's numbers in fewer passes.
            n = int(np.prod(shape, dtype=np.int64)) if shape else 1
            w = self.bits(env_ids, stream, n)
            w >>= np.uint64(11)
            w *= np.uint64(span)
            w >>= np.uint64(53)
            return (w.astype(np.int64) + low).reshape(-1, *shape)
        u = self.uniform(env_ids, stream, 0.0, 1.0, shape)
        return np.minimum(low + np.floor(u * span).astype(np.int64), high - 1)

    def quaternion(self, env_ids: np.ndarray, stream: str) -> np.ndarray:
        """(K, 4) uniformly random unit quaternions, wxyz (Shoemake's method)."""
        u = self.uniform(env_ids, stream, 0.0, 1.0, (3,))
        a, b, c = u[:, 0], u[:, 1], u[:, 2]
        q = np.stack(
            [
                np.sqrt(a) * np.cos(2 * np.pi * c),
                np.sqrt(1 - a) * np.sin(2 * np.pi * b),
                np.sqrt(1 - a) * np.cos(2 * np.pi * b),
                np.sqrt(a) * np.sin(2 * np.pi * c),
            ],
            axis=1,
        )
        return q
