"""The small records `MjVecEnv` is built from, each made once in its constructor and never replaced:

- `ArraySpace`: where the env's state lives (numpy on the host, torch on a device) and how to make
  arrays and env selections there.
- `ActionSpec`: what an action batch must be (shape, bounds), and its check.
- `Output`: what ``reset``/``step`` return (numpy, or torch on a device) and the conversion to it.
- `Episodes`: the per-env episode counters, the envs that must be reset, the time limit and the
  opt-in episode statistics.

A task subclass reads them (``self.arrays.device``, ``self.arrays.like``, ...) instead of the base's
internals; `mjvec.envs.base` lists what else it may use.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np

from mjvec.envs.arrays import check_actions, check_device_actions, resolve_output, to_output
from mjvec.envs.episodes import EpisodeStats
from mjvec.xp import Rows, is_numpy, namespace_of

__all__ = ["ActionSpec", "ArraySpace", "Episodes", "Output"]


@dataclass(frozen=True, eq=False)
class ArraySpace:
    """The namespace and device of an env's state.

    xp: numpy on the host, array_api_compat's torch on a device. num_envs: N. like: an array of the
    state on its device (None on the host), the template of device draws (`EnvRandom(like=)`).
    all_rows / no_rows: the `Rows` of every env / of none; on a device each is a mask of its own,
    never aliased to a buffer that gets written.
    """

    xp: Any
    num_envs: int
    like: Any = None
    all_rows: Rows = field(init=False)
    no_rows: Rows = field(init=False)

    @classmethod
    def of_state(cls, view: Any, num_envs: int) -> ArraySpace:
        """The space of a backend state view (its ``qpos``)."""
        xp = namespace_of(view)
        return cls(xp, num_envs, None if is_numpy(xp) else view)

    def __post_init__(self) -> None:
        object.__setattr__(self, "all_rows", Rows.all(self.num_envs, self.like))
        none = Rows.of_ids([], self.num_envs) if self.host else Rows.of_mask(self.zeros((), self.xp.bool))
        object.__setattr__(self, "no_rows", none)

    @property
    def host(self) -> bool:
        """Whether the state is host numpy (selections are id lists) rather than device tensors (masks)."""
        return self.like is None

    @property
    def device(self) -> Any:
        """The state's device (None on the host)."""
        return None if self.like is None else self.like.device

    def zeros(self, tail: tuple[int, ...], dtype: Any) -> Any:
        """A (num_envs, *tail) zero array in the state's namespace and device."""
        return self.xp.zeros((self.num_envs, *tail), dtype=dtype, device=self.device)

    def asarray(self, value: Any, dtype: Any = None) -> Any:
        """`value` (host data) as an array in the state's namespace and on its device."""
        if self.host:
            return np.asarray(value, dtype=dtype)
        if isinstance(value, np.ndarray) and not value.flags.writeable:
            value = value.copy()  # torch refuses to wrap read-only host memory
        return self.xp.asarray(value, dtype=dtype, device=self.device)

    def rows_of_host_mask(self, mask: np.ndarray) -> Rows:
        """The envs of a host bool mask, as this space's rows (a device mask for device state)."""
        return Rows.of_mask(mask if self.host else self.asarray(mask, self.xp.bool))

    def maybe(self, mask: Any) -> bool:
        """Whether `mask` may have a True entry: its value on the host; always True on a device
        (asking would wait for the device)."""
        return bool(mask.any()) if self.host else True


@dataclass(frozen=True, eq=False)
class ActionSpec:
    """An action batch: shape (N, A), bounds low/high (A,) in the state's namespace and dtype."""

    shape: tuple[int, int]
    low: Any
    high: Any
    host: bool

    @classmethod
    def of(cls, space: gym.spaces.Box, arrays: ArraySpace, dtype: Any) -> ActionSpec:
        def bound(value: np.ndarray) -> Any:
            return arrays.asarray(np.asarray(value, np.float64), dtype)

        return cls((arrays.num_envs, int(space.shape[0])), bound(space.low), bound(space.high), arrays.host)

    def check(self, actions: Any) -> tuple[Any, Any]:
        """(validated actions clipped to the bounds, in the state's namespace; on a device the (N,)
        rows that held a non-finite value, zeroed, else None). Raises `ActionError` /
        `ActionTypeError` before anything moves."""
        if self.host:
            return check_actions(actions, self.shape, self.low, self.high), None
        return check_device_actions(actions, self.shape, self.low, self.high)


@dataclass(frozen=True)
class Output:
    """What the env returns: numpy (torch None) or torch tensors on `device`.

    Observations, rewards, terminated and truncated convert to it; infos stay in the state's
    namespace unless the output is numpy and the state is on a device.
    """

    torch: Any
    device: Any
    state_on_host: bool

    @classmethod
    def resolve(cls, array_backend: str, device: str | None, backend_device: str, state_on_host: bool) -> Output:
        """The output of `array_backend` on `device` (default: the backend's), validated."""
        torch, torch_device = resolve_output(array_backend, device, backend_device)
        return cls(torch, torch_device, state_on_host)

    def __call__(self, value: Any) -> Any:
        """`value` (an array or a dict of them, the state's namespace) as the output kind."""
        return to_output(value, self.torch, self.device)

    def info(self, info: dict[str, Any]) -> dict[str, Any]:
        return info if self.state_on_host or self.torch is not None else to_output(info, None, None)


@dataclass(eq=False)
class Episodes:
    """Per-env episode bookkeeping, in the state's namespace.

    steps: (N,) int64, live: control steps of each env's current episode (zeroed at every reset,
        +1 for every env a step evaluates). needs_reset: (N,) bool, the envs a NEXT_STEP step will
        autoreset, or that DISABLED mode refuses to step. autoresetting: (N,) bool, the envs the
        running (or last) step autoresets instead of stepping. max_steps: the time limit (None: none).
    stats: the running statistics of ``record_episode_statistics`` (None when off).
    """

    steps: Any
    needs_reset: Any
    autoresetting: Any
    max_steps: int | None
    stats: EpisodeStats | None

    @classmethod
    def create(cls, arrays: ArraySpace, max_steps: int | None, record_statistics: bool) -> Episodes:
        stats = EpisodeStats.create(arrays.num_envs, arrays.like) if record_statistics else None
        return cls(arrays.zeros((), arrays.xp.int64), arrays.zeros((), arrays.xp.bool),
                   arrays.zeros((), arrays.xp.bool), None if max_steps is None else int(max_steps), stats)

    def restart(self, rows: Rows) -> None:
        """These envs have just been reset: their statistics restart and nothing is pending for them
        (their `steps` counter was zeroed before the task's reset, which may write it)."""
        if self.stats is not None:
            self.stats.restart(rows)
        rows.put(self.needs_reset, False)
