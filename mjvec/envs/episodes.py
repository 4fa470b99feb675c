"""The opt-in native episode statistics of `MjVecEnv` (``info["episode"]``)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from mjvec.xp import Rows, namespace_of


@dataclass
class EpisodeStats:
    """Per-env running return, length and start time of the current episode (native statistics),
    in the env's array namespace.

    Counts the steps an env was actually stepped (a NEXT_STEP autoreset step is not part of any
    episode, as in gymnasium's RecordEpisodeStatistics).
    """

    returns: Any
    lengths: Any
    starts: Any

    @classmethod
    def create(cls, num_envs: int, like: Any = None) -> EpisodeStats:
        xp = namespace_of(like) if like is not None else np
        device = None if like is None else like.device
        zeros = xp.zeros(num_envs, dtype=xp.float64, device=device)
        return cls(zeros, xp.zeros(num_envs, dtype=xp.int64, device=device), zeros + time.perf_counter())

    def restart(self, rows: Rows) -> None:
        """Zero the running stats of these envs (they start a new episode)."""
        rows.put(self.returns, 0.0)
        rows.put(self.lengths, 0)
        rows.put(self.starts, time.perf_counter())

    def record(self, stepped: Any, rewards: Any, done: Any, success: Any) -> dict[str, Any] | None:
        """Add this step; return the ``info["episode"]`` dict for envs done now.

        r (float64), l (int64), t (float64 seconds since the episode's reset, rounded to 1 us),
        and success (bool, when the task provides one). Rows where `done` is False are 0. On the
        host None when no env is done (on a device the dict is always built: no host round trip).
        """
        xp = namespace_of(self.returns)
        self.returns += xp.where(stepped, xp.astype(rewards, xp.float64), 0.0)
        self.lengths += xp.astype(stepped, xp.int64)
        if xp is np and not done.any():
            return None
        elapsed = xp.round((time.perf_counter() - self.starts) * 1e6) / 1e6
        episode = {
            "r": xp.where(done, self.returns, 0.0),
            "l": xp.where(done, self.lengths, 0),
            "t": xp.where(done, elapsed, 0.0),
        }
        if success is not None:
            episode["success"] = xp.astype(success, xp.bool) & done
        return episode
