"""`mjvec.integrations.sb3.SB3VecEnv` against oracles: a NEXT_STEP twin env stepped with the same seed and
actions (its done step returns the true terminal obs, its next step the reset obs), the env's own
episode statistics, and SB3's algorithms, VecNormalize and evaluate_policy run through it.
"""

from __future__ import annotations

import csv
import dataclasses
import importlib
import importlib.util
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, VectorEnv, VectorWrapper
from gymnasium.wrappers.vector import RecordEpisodeStatistics
from PIL import Image
from stable_baselines3 import PPO, SAC
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import VecNormalize

import mjvec  # noqa: F401  (registers SimToolReal-v0)
from mjvec.errors import ConfigError, InstallError
from mjvec.integrations.sb3 import SB3VecEnv, _sb3_space
from mjvec.randomization import ObservationNoise
from mjvec.tasks.simtoolreal.config import SimToolRealConfig
from mjvec.tasks.simtoolreal.registration import ENV_ID

N, EP = 4, 8
TINY = {"num_envs": N, "num_tools": 3, "randomization": None, "num_threads": 1, "max_episode_steps": EP}


def make(autoreset_mode: str = "same_step", **kw) -> VectorEnv:
    return gym.make_vec(ENV_ID, **{**TINY, "autoreset_mode": autoreset_mode, **kw})


def actions(steps: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1, 1, (steps, N, 29)).astype(np.float32)


def rows(obs, i):
    return {k: v[i] for k, v in obs.items()} if isinstance(obs, dict) else obs[i]


def assert_obs_equal(a, b):
    if isinstance(b, dict):
        assert set(a) == set(b)
        for k in b:
            np.testing.assert_array_equal(a[k], b[k])
    else:
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("obs_mode", ["policy", "asymmetric"])
def test_terminal_obs_reset_obs_and_episode_match_next_step_oracle(obs_mode):
    venv = SB3VecEnv(make(obs_mode=obs_mode))
    oracle = make("next_step", obs_mode=obs_mode)
    venv.seed(11)
    obs = venv.reset()
    ref, _ = oracle.reset(seed=11)
    assert_obs_equal(obs, ref)
    acts = actions(EP + 1)
    ref_return = np.zeros(N)
    for t in range(EP):
        obs, rew, dones, infos = venv.step(acts[t])
        ref, ref_rew, term, trunc, _ = oracle.step(acts[t])
        ref_return += ref_rew
        assert rew.dtype == np.float32
        np.testing.assert_allclose(rew, ref_rew.astype(np.float32))
        np.testing.assert_array_equal(dones, term | trunc)
        if t < EP - 1:
            assert_obs_equal(obs, ref)
            assert infos == [{}] * N  # nothing on envs that are not done
    assert dones.all() and trunc.all() and not term.any()
    for i, info in enumerate(infos):
        assert set(info) == {"terminal_observation", "TimeLimit.truncated", "episode", "is_success"}
        assert_obs_equal(info["terminal_observation"], rows(ref, i))  # the true pre-reset obs
        assert info["TimeLimit.truncated"] is True
        assert info["episode"]["l"] == EP
        assert info["episode"]["r"] == pytest.approx(ref_return[i], rel=1e-12)
        assert info["is_success"] is False
    # The oracle resets one step later (its action is ignored): that obs is the adapter's reset obs.
    ref, ref_rew, *_ = oracle.step(acts[EP])
    assert_obs_equal(obs, ref)
    assert not ref_rew.any()
    space = venv.observation_space
    if obs_mode == "asymmetric":
        assert isinstance(space, gym.spaces.Dict) and obs["critic"].shape == (N, 162)
        assert all(v.dtype == np.float32 for v in obs.values())
    else:
        assert space.shape == (140,) and obs.dtype == np.float32
    venv.close()
    oracle.close()


def test_termination_is_not_a_time_limit():
    # fall_z above the table: every env terminates at its first step.
    venv = SB3VecEnv(make(config=SimToolRealConfig(fall_z=10.0)))
    venv.reset()
    _, _, dones, infos = venv.step(actions(1)[0])
    assert dones.all()
    assert [i["TimeLimit.truncated"] for i in infos] == [False] * N
    assert [i["episode"]["l"] for i in infos] == [1] * N
    venv.close()


def test_native_and_tracked_episode_stats_and_success():
    # A huge tolerance with one success step: a goal is reached every step, and the episode
    # terminates after max_consecutive_successes goals.
    cfg = dataclasses.replace(SimToolRealConfig(), tolerance_start=10.0, success_steps=1, max_consecutive_successes=3)
    tracked = SB3VecEnv(make(config=cfg, max_episode_steps=None))
    native = SB3VecEnv(make(config=cfg, max_episode_steps=None, record_episode_statistics=True))
    for venv in (tracked, native):
        venv.seed(3)
        venv.reset()
    for t, a in enumerate(actions(6), start=1):  # two episodes of 3 steps
        (_, _, dones, infos), (_, _, native_dones, native_infos) = tracked.step(a), native.step(a)
        assert dones.tolist() == native_dones.tolist() == [t % 3 == 0] * N
        for i, b in zip(infos, native_infos, strict=True):
            assert i.keys() == b.keys()
            if t % 3:
                continue
            assert i["is_success"] is True and b["is_success"] is True
            assert i["TimeLimit.truncated"] is False
            assert i["episode"]["l"] == b["episode"]["l"] == 3
            assert i["episode"]["r"] == pytest.approx(b["episode"]["r"], rel=1e-12)
    tracked.close()
    native.close()


class FlagAtStep(VectorWrapper):
    """Adds info["hit"] (+ mask), True for env i only at global step number hits[i]."""

    def __init__(self, env, hits):
        super().__init__(env)
        self.hits, self.t = np.asarray(hits), 0

    def step(self, actions):
        obs, rew, term, trunc, info = self.env.step(actions)
        self.t += 1
        info["hit"], info["_hit"] = self.hits == self.t, np.ones(N, bool)
        return obs, rew, term, trunc, info


def test_tracked_success_is_any_over_the_episode():
    # Env 0 hits in episode 1 (steps 1..8), env 1 in episode 2 (steps 9..16), env 2 at the last
    # step of episode 1, env 3 never.
    venv = SB3VecEnv(FlagAtStep(make(), [2, 12, EP, 0]), success_key="hit")
    venv.reset()
    got = []
    for a in actions(2 * EP):
        _, _, dones, infos = venv.step(a)
        if dones.any():
            got.append([i["is_success"] for i in infos])
    assert got == [[True, False, True, False], [False, True, False, False]]
    venv.close()
    venv = SB3VecEnv(make(), success_key=None)
    venv.reset()
    for a in actions(EP):
        _, _, dones, infos = venv.step(a)
    assert dones.all() and not any("is_success" in i for i in infos)
    venv.close()


def test_native_stats_with_desynchronized_episodes():
    # Env 0 is reset behind the adapter's back: its episode ends 3 steps after the others'.
    env = make(record_episode_statistics=True)
    venv = SB3VecEnv(env)
    venv.reset()
    acts = actions(EP + 3)
    for t in range(EP + 3):
        if t == 3:
            env.reset(options={"reset_mask": np.eye(N, dtype=bool)[0]})
        _, _, dones, infos = venv.step(acts[t])
        expected = [t == EP + 2] + [t == EP - 1] * (N - 1)
        assert dones.tolist() == expected
        assert ["episode" in i for i in infos] == expected
        assert ["is_success" in i for i in infos] == expected
        assert [i["episode"]["l"] for i in infos if "episode" in i] == [EP] * sum(expected)
    venv.close()


def test_gymnasium_record_episode_statistics_is_used():
    venv = SB3VecEnv(RecordEpisodeStatistics(make()))
    venv.reset()
    for a in actions(EP):
        _, _, dones, infos = venv.step(a)
    assert dones.all() and all(i["episode"]["l"] == EP for i in infos)
    venv.close()


def test_seeding_is_reproducible():
    a, b = SB3VecEnv(make()), SB3VecEnv(make())
    assert a.seed(7) == [7] * N
    b.seed(7)
    obs_a, obs_b = a.reset(), b.reset()
    np.testing.assert_array_equal(obs_a, obs_b)
    for act in actions(EP + 2):  # across an autoreset
        obs_a, *_ = a.step(act)
        obs_b, *_ = b.step(act)
        np.testing.assert_array_equal(obs_a, obs_b)
    b.seed(8)
    assert not np.array_equal(a.reset(), b.reset())
    fresh = make()
    ref_obs = fresh.reset(seed=8)[0]
    fresh.close()
    a.seed(8)
    np.testing.assert_array_equal(a.reset(), ref_obs)
    # seed() is consumed by one reset: the next reset does not reseed.
    assert not np.array_equal(a.reset(), ref_obs)
    with pytest.raises(ConfigError, match="non-negative int"):
        a.seed(-1)
    a.close()
    b.close()


def test_attributes_methods_and_wrappers():
    venv = SB3VecEnv(make(randomization="paper"))
    base = venv.env.unwrapped
    assert venv.get_attr("num_envs") == [N] * N
    tools = venv.get_attr("tool_ids", indices=[1, 2])
    assert len(tools) == 2 and all(np.array_equal(t, base.tool_ids) for t in tools)
    assert venv.has_attr("tool_ids") and not venv.has_attr("no_such_attr")
    with pytest.raises(AttributeError, match="no_such_attr"):
        venv.get_attr("no_such_attr")
    venv.set_attr("my_fn", lambda x: x + 1)
    assert venv.env_method("my_fn", 2) == [3] * N
    venv.set_attr("frame_skip", base.frame_skip)  # an attribute of the unwrapped env is set there
    assert venv.get_attr("frame_skip") == [base.frame_skip] * N
    results = venv.env_method("reset", seed=5)  # called once, its result repeated per env
    fresh = make(randomization="paper")
    assert len(results) == N and results[0] is results[3]
    np.testing.assert_array_equal(results[0][0], fresh.reset(seed=5)[0])
    fresh.close()
    with pytest.raises(ConfigError, match="indices=None"):
        venv.set_attr("my_fn", None, indices=[0])
    with pytest.raises(ConfigError, match="indices=None"):
        venv.env_method("my_fn", 1, indices=0)
    with pytest.raises(ConfigError, match=r"out of range; allowed ints in \[0, 4\)"):
        venv.get_attr("num_envs", indices=[4])
    assert venv.env_is_wrapped(Monitor) == [True] * N
    assert venv.env_is_wrapped(ObservationNoise, indices=[0]) == [True]
    assert venv.env_is_wrapped(RecordEpisodeStatistics) == [False] * N
    assert venv.render_mode is None
    venv.close()
    assert base.closed


def test_images_are_the_envs_frames():
    venv = SB3VecEnv(make(render_mode="rgb_array", render_size=(24, 32)))
    venv.reset()
    frames = venv.get_images()
    assert len(frames) == N and frames[0].shape == (24, 32, 3)
    grid = venv.render()  # SB3 tiles get_images() 2 x 2
    top, bottom = np.hstack([frames[0], frames[1]]), np.hstack([frames[2], frames[3]])
    np.testing.assert_array_equal(grid, np.vstack([top, bottom]))
    assert grid.any()
    venv.close()


def test_reset_infos_options_info_keys_and_torch_output():
    venv = SB3VecEnv(make(array_backend="torch"), info_keys=("success", "reward_terms"))
    obs = venv.reset()
    assert isinstance(obs, np.ndarray) and obs.dtype == np.float32
    # Each env's reset info row: its own tool and the shared success tolerance.
    tools = venv.env.unwrapped.tool_ids
    assert venv.reset_infos == [{"tool_id": tools[i], "tolerance": venv.env.unwrapped.tolerance} for i in range(N)]
    _, rew, dones, infos = venv.step(actions(1)[0])
    assert isinstance(rew, np.ndarray) and isinstance(dones, np.ndarray) and dones.dtype == bool
    assert all(set(i) == {"success", "reward_terms"} for i in infos)
    assert set(infos[0]["reward_terms"]) == {"approach", "lift", "lift_bonus", "keypoint", "success_bonus",
                                             "arm_speed", "hand_speed"}
    venv.set_options([{}, {"reset_mask": None}, {}, {}])
    with pytest.raises(ConfigError, match="one options dict"):
        venv.reset()
    venv.set_options({"reset_mask": np.eye(N, dtype=bool)[1]})  # passed through to env.reset
    venv.reset()
    venv.close()


def test_construction_and_protocol_errors():
    with pytest.raises(ConfigError, match=r"autoreset_mode='same_step'"):
        SB3VecEnv(make("next_step"))
    with pytest.raises(ConfigError, match=r"gymnasium\.vector\.VectorEnv"):
        SB3VecEnv(object())
    with pytest.raises(ConfigError, match="info_keys must be a sequence of str"):
        SB3VecEnv(make(), info_keys="success")
    venv = SB3VecEnv(make())
    venv.reset()
    with pytest.raises(ConfigError, match="step_async"):
        venv.step_wait()
    venv.close()

    class Discrete(VectorEnv):
        def __init__(self):
            self.num_envs = N
            self.metadata = {"autoreset_mode": AutoresetMode.SAME_STEP}
            self.single_action_space = gym.spaces.Discrete(2)
            self.single_observation_space = gym.spaces.Box(-1, 1, (2,))

    with pytest.raises(ConfigError, match="Box action spaces"):
        SB3VecEnv(Discrete())

    class DropFinalObs(VectorWrapper):
        def step(self, actions):
            obs, rew, term, trunc, info = self.env.step(actions)
            info.pop("final_obs", None)
            return obs, rew, term, trunc, info

    venv = SB3VecEnv(DropFinalObs(make(config=SimToolRealConfig(fall_z=10.0))))
    venv.reset()
    with pytest.raises(ConfigError, match="no 'final_obs' rows"):
        venv.step(actions(1)[0])
    venv.close()


def test_float_spaces_become_float32():
    box64 = gym.spaces.Box(-1.0, 1.0, (3,), np.float64)
    assert _sb3_space(box64).dtype == np.float32
    d = _sb3_space(gym.spaces.Dict({"a": box64, "b": gym.spaces.Box(0, 255, (2,), np.uint8)}))
    assert d["a"].dtype == np.float32 and d["b"].dtype == np.uint8


@pytest.mark.filterwarnings("ignore::tqdm.TqdmExperimentalWarning")
def test_ppo_vecnormalize_evaluate_policy():
    venv = VecNormalize(SB3VecEnv(make()))
    model = PPO("MlpPolicy", venv, n_steps=16, batch_size=32, n_epochs=1, seed=0,
                policy_kwargs={"net_arch": [32, 32]})
    model.learn(256, progress_bar=True)
    assert model.num_timesteps == 256
    # 64 steps per env, episodes of EP steps: every finished episode reached ep_info_buffer.
    assert len(model.ep_info_buffer) == 256 // EP
    assert all(e["l"] == EP and np.isfinite(e["r"]) for e in model.ep_info_buffer)
    assert len(model.ep_success_buffer) == 256 // EP
    assert all(np.isfinite(p.detach().numpy()).all() for p in model.policy.parameters())
    venv.training, venv.norm_reward = False, False
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "not wrapped with a Monitor" warning
        returns, lengths = evaluate_policy(model, venv, n_eval_episodes=N, return_episode_rewards=True)
    assert lengths == [EP] * N and np.isfinite(returns).all()
    mean, std = evaluate_policy(model, venv, n_eval_episodes=N)
    assert np.isfinite(mean) and np.isfinite(std)
    venv.close()


def test_sac_and_dict_obs_ppo():
    venv = SB3VecEnv(make())
    sac = SAC("MlpPolicy", venv, learning_starts=32, batch_size=32, seed=0, policy_kwargs={"net_arch": [32, 32]})
    sac.learn(64)
    assert sac.num_timesteps == 64 and len(sac.ep_info_buffer) == 64 // EP
    assert all(e["l"] == EP for e in sac.ep_info_buffer)
    venv.close()
    venv = VecNormalize(SB3VecEnv(make(obs_mode="asymmetric", randomization="paper")))
    ppo = PPO("MultiInputPolicy", venv, n_steps=16, batch_size=32, n_epochs=1, seed=0,
              policy_kwargs={"net_arch": [32, 32]})
    ppo.learn(64)
    assert ppo.num_timesteps == 64 and len(ppo.ep_info_buffer) == 64 // EP
    venv.close()


def test_missing_stable_baselines3_raises_install_error(monkeypatch):
    for name in [m for m in sys.modules if m == "stable_baselines3" or m.startswith("stable_baselines3.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.delitem(sys.modules, "mjvec.integrations.sb3")
    with pytest.raises(InstallError, match=r"pip install -e '\.\[train\]' in the mjvec checkout"):
        importlib.import_module("mjvec.integrations.sb3")
    monkeypatch.undo()
    assert importlib.import_module("mjvec.integrations.sb3").SB3VecEnv is SB3VecEnv


def test_import_mjvec_does_not_import_stable_baselines3():
    code = "import sys, mjvec; assert 'stable_baselines3' not in sys.modules, 'imported'"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_train_sb3_example_smoke(tmp_path):
    run_dir = tmp_path / "run"
    root = Path(__file__).resolve().parents[1]
    argv = ["--num-envs", "4", "--total-timesteps", "128", "--n-steps", "16", "--num-tools", "3",
            "--randomization", "none", "--max-episode-steps", "8", "--checkpoint-every", "64", "--eval-envs", "2",
            "--eval-episodes", "2", "--video-envs", "2", "--video-steps", "6", "--render-size", "24", "32",
            "--net-arch", "16", "--run-dir", str(run_dir)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH")) if p)}
    out = subprocess.run([sys.executable, str(root / "examples" / "train_sb3.py"), *argv], capture_output=True,
                         text=True, timeout=300, env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    # No silent stretch after training: the evaluation and the GIF announce themselves.
    assert "evaluating the final policy: 2 episodes on 2 held-out envs" in out.stderr
    assert "recording policy.gif: 6 steps of the first 2 eval envs" in out.stderr
    for name in ("ppo_64_steps.zip", "ppo_vecnormalize_64_steps.pkl", "ppo_128_steps.zip"):
        assert (run_dir / "checkpoints" / name).is_file()
    assert PPO.load(run_dir / "final_model.zip", device="cpu").num_timesteps == 128
    assert (run_dir / "vecnormalize.pkl").is_file()
    with open(run_dir / "progress.csv") as f:
        rows = list(csv.DictReader(f))
    # 2 iterations of 4 envs x 16 steps; episodes of 8 steps: 8 end in each iteration.
    assert [int(r["timesteps"]) for r in rows] == [64, 128]
    assert [int(r["episodes"]) for r in rows] == [8, 8]
    assert all(float(r["ep_length_mean"]) == EP and np.isfinite(float(r["ep_return_mean"])) for r in rows)
    evaluation = json.loads((run_dir / "eval.json").read_text())
    assert evaluation["episodes"] == 2 and evaluation["lengths"] == [EP, EP]
    assert evaluation["return_mean"] == pytest.approx(np.mean(evaluation["returns"]))
    with Image.open(run_dir / "policy.gif") as gif:
        assert gif.n_frames == 1 + 6 // 2 and gif.size == (2 * 32, 24)
    has_matplotlib = importlib.util.find_spec("matplotlib") is not None
    assert (run_dir / "learning_curve.png").is_file() == has_matplotlib
