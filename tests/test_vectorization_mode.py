"""gym.make_vec(mjvec_id, vectorization_mode="async") is refused, before any worker process starts.

Gymnasium would build an AsyncVectorEnv: one process per env, each running a one-env mjvec batch,
the opposite of what mjvec is for. The refusal comes from the single-env entry point, built first
in this process by AsyncVectorEnv to read the spaces; it names what each mode gives. Oracles: the
default and "vector_entry_point" modes give the same batched MjVecEnv-based env, "sync" gives
Gymnasium's SyncVectorEnv of one-env batches (still allowed), whose first env steps like env 0 of
the batch (the same global id).
"""

from __future__ import annotations

import multiprocessing

import gymnasium as gym
import numpy as np
import pytest

import mjvec  # noqa: F401  (registers the mjvec ids)
from mjvec.envs.base import MjVecEnv
from mjvec.errors import ConfigError

ID = "mjvec/Hopper-v5"


@pytest.mark.parametrize("mode", ["async", gym.VectorizeMode.ASYNC])
def test_async_vectorization_is_refused_naming_the_modes(mode):
    before = len(multiprocessing.active_children())
    message = (r"vectorization_mode='async'.*one process per env.*vectorization_mode='vector_entry_point' \(the "
               r"default for mjvec ids: leave it out\).*'sync' gives Gymnasium's SyncVectorEnv")
    with pytest.raises(ConfigError, match=message):
        gym.make_vec(ID, num_envs=2, vectorization_mode=mode)
    assert len(multiprocessing.active_children()) == before  # no worker was started


def test_the_other_modes_still_build():
    default = gym.make_vec(ID, num_envs=2)
    entry = gym.make_vec(ID, num_envs=2, vectorization_mode="vector_entry_point")
    sync = gym.make_vec(ID, num_envs=2, vectorization_mode="sync")
    try:
        assert isinstance(default.unwrapped, MjVecEnv) and isinstance(entry.unwrapped, MjVecEnv)
        assert isinstance(sync, gym.vector.SyncVectorEnv)
        a, b = default.reset(seed=3)[0], sync.reset(seed=3)[0]
        np.testing.assert_array_equal(a[0], b[0])  # env 0 of both: global id 0, the same stream
    finally:
        for env in (default, entry, sync):
            env.close()
