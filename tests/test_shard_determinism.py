"""What the README promises for shards (`env_id_offset`), per backend (docs/determinism.md,
"Shards and batch composition on Warp"): on the CPU an env's trajectory is bit-identical whatever num_envs or shard it
runs in; on Warp a shard keeps each env's tool and random streams but its float32 results depend on
which worlds share a batch, so it agrees within round-off, with `deterministic=True` as without.

Oracle: envs 4-7 of one 8-env run against a 4-env shard with env_id_offset=4, SimToolReal-v0 with
the paper preset and an autoreset every 8 steps, each env's actions a function of its global id.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import mjvec

STEPS = 20
# Warp (float32), envs 4-7 of 8 vs the shard: measured on warp's CPU device, largest observation
# difference 1.7e-5 over these 20 steps (0 until the first autoreset, at step 9); the same with
# deterministic=True. The tolerance leaves room for another device's rounding.
WARP_SHARD_ATOL = 1e-4


def _actions(global_ids: np.ndarray, t: int) -> np.ndarray:
    return np.sin(0.37 * global_ids[:, None] + 0.11 * t + np.arange(29)[None, :])


def _whole_and_shard(**kwargs) -> list[tuple[np.ndarray, ...]]:
    """Per step (reset first): (obs, reward, terminated, truncated) of envs 4-7 in the 8-env run and
    in the shard, stacked on a new first axis."""
    kw = {"num_tools": 600, "max_episode_steps": 8, "array_backend": "numpy", **kwargs}
    whole = gym.make_vec(mjvec.ENV_ID, num_envs=8, **kw)
    shard = gym.make_vec(mjvec.ENV_ID, num_envs=4, env_id_offset=4, **kw)
    try:
        rows = [(whole.reset(seed=3)[0][4:], shard.reset(seed=3)[0])]
        for t in range(STEPS):
            w, s = whole.step(_actions(np.arange(8), t)), shard.step(_actions(np.arange(4, 8), t))
            rows.append(tuple(np.stack([a[4:], b]) for a, b in zip(w[:4], s[:4], strict=True)))
        rows[0] = (np.stack(rows[0]),)
        return rows
    finally:
        whole.close()
        shard.close()


def test_a_cpu_shard_is_bit_identical_to_its_envs_in_the_whole_run() -> None:
    for row in _whole_and_shard(num_threads=1):
        for pair in row:
            np.testing.assert_array_equal(pair[0], pair[1])


@pytest.mark.parametrize("deterministic", [False, True])
def test_a_warp_shard_agrees_within_float32_round_off(warp_device: str, deterministic: bool) -> None:
    rows = _whole_and_shard(backend="warp", device=warp_device, deterministic=deterministic)
    for _, _, *ends in rows[1:]:  # terminated, truncated: the same episodes
        for pair in ends:
            np.testing.assert_array_equal(pair[0], pair[1])
    obs = np.stack([row[0] for row in rows])
    np.testing.assert_allclose(obs[:, 0], obs[:, 1], rtol=0, atol=WARP_SHARD_ATOL)
    # Not bit-identical (docs/determinism.md scopes the claim to the CPU backend); were it ever, say so there.
    assert np.abs(obs[:, 0] - obs[:, 1]).max() > 0
