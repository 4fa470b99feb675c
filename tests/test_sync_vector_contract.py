"""Two corners of the Gymnasium vector contract, checked against Gymnasium's own behaviour:

- NEXT_STEP: the autoreset step's info holds the reset envs' reset info (with ``"_key"`` masks),
  exactly as `gymnasium.vector.SyncVectorEnv` over the single envs (``gym.make``) reports it.
- ``render()`` on an env made without a render mode returns None with Gymnasium's warning, as
  Gymnasium's own vector env (CartPole's) does.
"""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import SyncVectorEnv

import mjvec  # noqa: F401

CASES = {
    "CubeRotate-v0": ({"num_cubes": 3, "randomization": None}, ("cube_id",)),
    "SimToolReal-v0": ({"num_tools": 3, "randomization": None}, ("tool_id", "tolerance")),
}
LIMIT = 6


def _leaves(info, prefix=""):
    """{path: value} of every non-mask entry of a (nested) info dict, with its mask under path + '#mask'."""
    out = {}
    for key, value in info.items():
        if key.startswith("_"):
            continue
        if isinstance(value, dict):
            out.update(_leaves(value, f"{prefix}{key}/"))
        else:
            out[prefix + key] = np.asarray(value)
        out[f"{prefix}{key}#mask"] = np.asarray(info[f"_{key}"])
    return out


@pytest.mark.parametrize("env_id", sorted(CASES))
def test_next_step_autoreset_info_holds_the_reset_info_as_sync_vector_env_reports_it(env_id):
    options, reset_keys = CASES[env_id]
    n = 3
    batched = gym.make_vec(env_id, num_envs=n, max_episode_steps=LIMIT, **options)
    # Single env i holds global id i (its variant and random streams), exactly like batched env i, and
    # ends its first episode after LIMIT - i steps; batched env i does too, its counter written to i.
    sync = SyncVectorEnv([lambda i=i: gym.make(env_id, env_id_offset=i, max_episode_steps=LIMIT - i, **options)
                          for i in range(n)])
    assert sync.metadata["autoreset_mode"] == batched.metadata["autoreset_mode"] == gym.vector.AutoresetMode.NEXT_STEP
    obs_b, _ = batched.reset(seed=5)
    obs_s, _ = sync.reset(seed=[5] * n)  # every env seeded 5: both key env i by (5, global id i)
    batched.unwrapped.episode_steps = np.arange(n)
    np.testing.assert_array_equal(obs_b, obs_s)
    actions = np.random.default_rng(0).uniform(-0.3, 0.3, (LIMIT + 1, *batched.action_space.shape))
    autoreset = np.zeros(n, bool)
    mixed_steps = 0
    for t in range(LIMIT + 1):  # env 2 autoresets at step LIMIT - 1, env 1 at LIMIT, env 0 at LIMIT + 1
        obs_b, rew_b, term_b, trunc_b, info_b = batched.step(actions[t].astype(np.float32))
        obs_s, rew_s, term_s, trunc_s, info_s = sync.step(actions[t].astype(np.float32))
        np.testing.assert_array_equal(obs_b, obs_s)
        np.testing.assert_allclose(rew_b, rew_s, rtol=1e-12)  # float sums in another order
        np.testing.assert_array_equal(term_b, term_s)
        np.testing.assert_array_equal(trunc_b, trunc_s)
        leaves_b, leaves_s = _leaves(info_b), _leaves(info_s)
        for key in reset_keys:  # autoreset envs report their reset info, the others their step info
            np.testing.assert_array_equal(leaves_b[f"{key}#mask"], leaves_s[f"{key}#mask"], err_msg=f"{t} {key}")
            np.testing.assert_array_equal(leaves_b[key], leaves_s[key], err_msg=f"step {t}: {key}")
        for key in leaves_s:  # step-only keys: unset (mask False) exactly for the autoreset envs, in both
            if key.endswith("#mask") and not key.startswith("sim_error"):
                np.testing.assert_array_equal(leaves_b[key], leaves_s[key], err_msg=f"step {t}: {key}")
        assert leaves_b["sim_error#mask"].all()  # mjvec reports sim_error for every env at every step
        mixed_steps += bool(autoreset.any() and not autoreset.all())
        autoreset = term_b | trunc_b
    assert mixed_steps >= 2  # steps where some envs autoreset while the others stepped
    batched.close()
    sync.close()


def test_render_without_render_mode_returns_none_with_gymnasiums_warning():
    gym_env = gym.make_vec("CartPole-v1", num_envs=2, vectorization_mode="vector_entry_point")
    env = gym.make_vec("CubeRotate-v0", num_envs=2, num_cubes=1, randomization=None)
    for vector_env in (gym_env, env):
        vector_env.reset(seed=0)
        with pytest.warns(UserWarning, match="You are calling render method without specifying any render mode"):
            assert vector_env.render() is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        env.step(np.zeros(env.action_space.shape, np.float32))  # the env runs on
    single = gym.make("CubeRotate-v0", num_cubes=1, randomization=None)
    single.reset(seed=0)
    with pytest.warns(UserWarning, match="without specifying any render mode"):
        assert single.render() is None
    for e in (gym_env, env, single):
        e.close()
