"""rl_games (1.6.5) trains on mjvec envs through `RlGamesVecEnv` / `register_rl_games`, unmodified,
with the SimToolReal authors' network shape (LSTM actor, asymmetric central-value critic), shrunk.

rl-games pins psutil<6, so these tests run in their own environment: ``bash scripts/test.sh`` runs
``scripts/setup_rl_games.sh`` and then this file with ``.venv-rl-games/bin/python``; in the dev
environment they are skipped with that reason.

Oracle: a twin env (same options, numpy output) replaying the actions the env received
reproduces exactly rl_games' experience buffer of the last epoch: observations, critic states,
dones (rl_games stores the done flag that precedes each observation), and rewards as rl_games
shapes them (reward scale, plus gamma * V(s) on the twin's time-outs).
"""

from __future__ import annotations

import copy

import gymnasium as gym
import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("rl_games", reason="rl-games runs in .venv-rl-games: bash scripts/test.sh runs this file there")
from rl_games.torch_runner import Runner  # noqa: E402

import mjvec  # noqa: E402, F401
from mjvec.errors import ConfigError  # noqa: E402
from mjvec.integrations.rl_games import MjvecAlgoObserver, RlGamesVecEnv, register_rl_games  # noqa: E402

HORIZON, EPOCHS, SEED, NUM_ENVS, LIMIT = 8, 2, 7, 4, 6
TASKS = {
    "SimToolReal-v0": {"num_tools": 3, "randomization": None, "obs_mode": "asymmetric", "max_episode_steps": LIMIT},
    "CubeRotate-v0": {"num_cubes": 2, "randomization": None, "max_episode_steps": LIMIT},
}
MLP = {"activation": "elu", "d2rl": False, "initializer": {"name": "default"}, "regularizer": {"name": "None"}}


def params(env_config: dict, train_dir: str, asymmetric: bool) -> dict:
    config = {
        "name": "test", "env_name": "mjvec_test", "device": "cpu", "device_name": "cpu", "multi_gpu": False,
        "ppo": True, "mixed_precision": False, "normalize_input": True, "normalize_value": True,
        "normalize_advantage": True, "reward_shaper": {"scale_value": 0.01}, "num_actors": NUM_ENVS, "gamma": 0.99,
        "tau": 0.95, "learning_rate": 1e-4, "lr_schedule": "adaptive", "schedule_type": "standard",
        "kl_threshold": 0.016, "score_to_win": 1e9, "max_epochs": EPOCHS, "save_best_after": 1000,
        "save_frequency": 0, "print_stats": False, "grad_norm": 1.0, "entropy_coef": 0.0, "truncate_grads": True,
        "e_clip": 0.1, "minibatch_size": 16, "mini_epochs": 1, "critic_coef": 4.0, "clip_value": True,
        "horizon_length": HORIZON, "seq_length": 4, "bounds_loss_coef": 1e-4, "torch_compile": False,
        "train_dir": train_dir, "env_config": env_config,
    }
    if asymmetric:
        config["central_value_config"] = {
            "minibatch_size": 16, "mini_epochs": 1, "learning_rate": 1e-4, "kl_threshold": 0.016, "clip_value": True,
            "normalize_input": True, "truncate_grads": True,
            "network": {"name": "actor_critic", "central_value": True, "mlp": {"units": [16], **MLP}},
        }
    network = {
        "name": "actor_critic", "separate": False, "mlp": {"units": [16, 16], **MLP},
        "space": {"continuous": {"mu_activation": "None", "sigma_activation": "None", "mu_init": {"name": "default"},
                                 "sigma_init": {"name": "const_initializer", "val": 0}, "fixed_sigma": True}},
        "rnn": {"name": "lstm", "units": 16, "layers": 1, "before_mlp": True, "layer_norm": True},
    }
    return {"params": {"seed": SEED, "algo": {"name": "a2c_continuous"}, "model": {"name": "continuous_a2c_logstd"},
                       "network": network, "config": config}}


@pytest.mark.parametrize("backend", ["cpu", "warp"])
@pytest.mark.parametrize("env_id", sorted(TASKS))
def test_rl_games_experience_buffer_equals_a_numpy_twin_replaying_its_actions(env_id, backend, tmp_path):
    if backend == "warp":
        pytest.importorskip("mujoco_warp")
    torch.manual_seed(0)
    options = {**TASKS[env_id], "backend": backend}
    if backend == "warp":  # the device path: torch output (CubeRotate-v0's task runs on host views there)
        options.update(device="cpu", array_backend="torch" if env_id == "SimToolReal-v0" else "numpy")
    asymmetric = "obs_mode" in options
    register_rl_games("mjvec_test")
    runner = Runner(MjvecAlgoObserver())
    runner.load(params({"env_id": env_id, "adapter": {"log_keys": ["tolerance"]}, **options}, str(tmp_path),
                       asymmetric))
    agent = runner.algo_factory.create(runner.algo_name, base_name="run", params=copy.deepcopy(runner.params))
    venv = agent.vec_env
    assert isinstance(venv, RlGamesVecEnv) and venv.num_envs == NUM_ENVS
    assert (venv.get_env_info().get("state_space") is not None) == asymmetric and agent.has_central_value == asymmetric
    sent = []
    step = venv.step
    venv.step = lambda a: (sent.append(torch.as_tensor(a).clone()), step(a))[1]
    before = [p.detach().clone() for p in agent.model.parameters()]
    agent.train()
    assert any(not torch.equal(a, p) for a, p in zip(before, agent.model.parameters(), strict=True))
    assert len(sent) == EPOCHS * HORIZON and list((tmp_path).rglob("events.out.tfevents*"))

    twin = gym.make_vec(env_id, num_envs=NUM_ENVS, autoreset_mode="same_step",
                        **{**options, "array_backend": "numpy"})
    obs, _ = twin.reset(seed=SEED)  # the Runner's seed, passed through env_config
    rows, done = [], np.ones(NUM_ENVS, bool)
    for actions in sent:
        rows.append((obs, done))
        obs, reward, term, trunc, _ = twin.step(actions.numpy())
        done = term | trunc
        rows[-1] += (reward, trunc & ~term)
    buf, last = agent.experience_buffer.tensor_dict, rows[-HORIZON:]
    policy = [r[0]["policy"] if asymmetric else r[0] for r in last]
    np.testing.assert_array_equal(buf["obses"].numpy(), np.stack(policy))
    if asymmetric:
        np.testing.assert_array_equal(buf["states"].numpy(), np.stack([r[0]["critic"] for r in last]))
    np.testing.assert_array_equal(buf["dones"].numpy(), np.stack([r[1] for r in last]).astype(np.uint8))
    reward = torch.as_tensor(np.stack([r[2] for r in last]), dtype=torch.float32).unsqueeze(-1)
    time_outs = torch.as_tensor(np.stack([r[3] for r in last])).unsqueeze(-1).float()
    want = agent.rewards_shaper(reward) + agent.gamma * buf["values"] * time_outs  # rl_games' value_bootstrap
    torch.testing.assert_close(buf["rewards"], want, rtol=0, atol=0)
    assert np.stack([r[3] for r in rows]).any()  # some envs timed out, so the bootstrap was exercised
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    agent.writer.flush()
    events = EventAccumulator(str(next(tmp_path.rglob("events.out.tfevents*"))))
    events.Reload()
    term = "approach" if env_id == "SimToolReal-v0" else "rotation"
    assert {f"Episode_Reward/{term}", "rewards/step"} <= set(events.Tags()["scalars"])  # the observer's, rl_games'
    venv.close()
    twin.close()


def test_observations_states_and_env_info():
    env = gym.make_vec("SimToolReal-v0", num_envs=2, autoreset_mode="same_step", **TASKS["SimToolReal-v0"])
    venv = RlGamesVecEnv(env, seed=0)
    info = venv.get_env_info()
    assert info["observation_space"].shape == (140,) and info["state_space"].shape == (162,)
    assert info["action_space"].shape == (29,) and info["agents"] == 1
    obs = venv.reset()
    assert set(obs) == {"obs", "states"} and obs["obs"].dtype == torch.float32 and obs["states"].shape == (2, 162)
    obs, reward, dones, infos = venv.step(torch.zeros(2, 29))
    assert reward.shape == (2,) and dones.dtype == torch.uint8 and infos["time_outs"].dtype == torch.bool
    venv.close()


def test_next_step_env_and_a_bad_obs_key_are_refused():
    env = gym.make_vec("CubeRotate-v0", num_envs=2, num_cubes=1, randomization=None)
    with pytest.raises(ConfigError, match=r"RlGamesVecEnv needs an env with autoreset_mode SAME_STEP"):
        RlGamesVecEnv(env)
    env.close()
    env = gym.make_vec("SimToolReal-v0", num_envs=1, autoreset_mode="same_step", **TASKS["SimToolReal-v0"])
    with pytest.raises(ConfigError, match=r"obs_key='actor' is not a key of the observation; allowed: "
                                          r"\['critic', 'policy'\]"):
        RlGamesVecEnv(env, obs_key="actor")
    env.close()


def test_train_rl_games_example_keeps_the_authors_settings_and_trains(tmp_path):
    from tests.policy_files import ROOT, example_module

    module = example_module("train_rl_games.py", "train_rl_games")
    params = module.build_params(module.Args(num_envs=8, max_epochs=1, train_dir=tmp_path))["params"]
    net, cfg = params["network"], params["config"]
    # SimToolRealLSTMAsymmetricPPO: LSTM 1024 before an MLP [1024, 1024, 512, 512]; asymmetric critic.
    assert net["rnn"] == {"name": "lstm", "units": 1024, "layers": 1, "before_mlp": True, "layer_norm": True}
    assert net["mlp"]["units"] == cfg["central_value_config"]["network"]["mlp"]["units"] == [1024, 1024, 512, 512]
    assert (cfg["gamma"], cfg["tau"], cfg["learning_rate"], cfg["kl_threshold"], cfg["e_clip"]) == \
        (0.99, 0.95, 1e-4, 0.016, 0.1)
    assert (cfg["horizon_length"], cfg["seq_length"], cfg["mini_epochs"], cfg["critic_coef"]) == (16, 16, 2, 4.0)
    assert cfg["reward_shaper"]["scale_value"] == 0.01 and cfg["entropy_coef"] == 0.0
    assert cfg["minibatch_size"] == 8 * 16  # min(98,304, num_envs x horizon)
    assert cfg["mixed_precision"] is False and cfg["torch_compile"] is False  # on the CPU
    cube = module.Args(config=ROOT / "mjvec" / "tasks" / "cube_rotate" / "agents" / "rl_games_ppo.yaml", num_envs=8,
                       max_epochs=1, option=["num_cubes=2", "max_episode_steps=8"], train_dir=tmp_path)
    module.main(cube)
    assert list(tmp_path.rglob("*.pth")) and list(tmp_path.rglob("events.out.tfevents*"))
