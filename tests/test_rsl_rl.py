"""rsl_rl (rsl-rl-lib 5.x) trains on mjvec envs through `RslRlVecEnv`, unmodified.

Oracle: a twin env (same options, numpy output) replaying the actions rsl_rl sent reproduces
exactly what rsl_rl stored in its `RolloutStorage` (observations of every group, actions, dones,
and rewards with rsl_rl's time-out bootstrap computed from the twin's time-outs), and the
episode-length values rsl_rl wrote with ``init_at_random_ep_len=True`` time out each env after
exactly ``max_episode_length - written`` steps.
"""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("rsl_rl")
from rsl_rl.runners import OnPolicyRunner  # noqa: E402

import mjvec  # noqa: E402, F401
from mjvec.errors import ConfigError  # noqa: E402
from mjvec.integrations import RslRlVecEnv  # noqa: E402

LIMIT, HORIZON, ITERATIONS, SEED = 10, 8, 2, 3
TASKS = {
    "SimToolReal-v0": {"num_tools": 3, "randomization": None, "obs_mode": "asymmetric"},
    "CubeRotate-v0": {"num_cubes": 2, "randomization": None},
    "playground/Go1JoystickFlatTerrain-v0": {"randomization": None, "obs_mode": "asymmetric"},
}


def train_cfg(asymmetric: bool) -> dict:
    groups = {"actor": ["policy"], "critic": ["critic" if asymmetric else "policy"]}
    return {
        "num_steps_per_env": HORIZON, "save_interval": 1000, "obs_groups": groups,
        "algorithm": {"class_name": "PPO", "num_learning_epochs": 1, "num_mini_batches": 2, "learning_rate": 1e-3},
        "actor": {"class_name": "MLPModel", "hidden_dims": [16], "activation": "elu", "obs_normalization": True,
                  "distribution_cfg": {"class_name": "GaussianDistribution", "init_std": 1.0}},
        "critic": {"class_name": "MLPModel", "hidden_dims": [16], "activation": "elu", "obs_normalization": True},
    }


def make(env_id: str, backend: str, array_backend: str, num_envs: int = 4):
    extra = {"device": "cpu"} if backend == "warp" else {}
    return gym.make_vec(env_id, num_envs=num_envs, backend=backend, autoreset_mode="same_step",
                        max_episode_steps=LIMIT, array_backend=array_backend, **extra, **TASKS[env_id])


# The Go1 task's Warp case is in the slow set (its CPU case and the other tasks' Warp cases are fast).
CASES = [pytest.param(env_id, backend, marks=pytest.mark.slow if env_id.startswith("playground/") and backend == "warp"
                      else ()) for env_id in sorted(TASKS) for backend in ("cpu", "warp")]


@pytest.mark.parametrize(("env_id", "backend"), CASES)
def test_rsl_rl_storage_equals_a_numpy_twin_replaying_its_actions(env_id, backend, tmp_path, monkeypatch):
    if backend == "warp":
        pytest.importorskip("mujoco_warp")
    torch.manual_seed(0)
    # The device path on Warp: torch output. CubeRotate-v0 runs its task on host views there.
    array_backend = "torch" if backend == "warp" and env_id != "CubeRotate-v0" else "numpy"
    venv = RslRlVecEnv(make(env_id, backend, array_backend), seed=SEED)
    sent, written = [], []
    step = venv.step
    monkeypatch.setattr(venv, "step", lambda a: (sent.append(a.detach().clone()), step(a))[1])
    setter = type(venv).episode_length_buf.fset
    monkeypatch.setattr(type(venv), "episode_length_buf", property(
        type(venv).episode_length_buf.fget, lambda self, v: (written.append(v.clone()), setter(self, v))))
    runner = OnPolicyRunner(venv, train_cfg("critic" in venv.get_observations().keys()), log_dir=str(tmp_path),
                            device="cpu")
    before = [p.detach().clone() for p in runner.alg.actor.parameters()]
    runner.learn(ITERATIONS, init_at_random_ep_len=True)
    assert any(not torch.equal(a, p) for a, p in zip(before, runner.alg.actor.parameters(), strict=True))
    assert len(sent) == ITERATIONS * HORIZON and len(written) == 1
    assert (tmp_path / f"model_{ITERATIONS - 1}.pt").is_file() and list(tmp_path.glob("events.out.tfevents*"))

    twin = make(env_id, backend, "numpy")
    obs, _ = twin.reset(seed=SEED)
    twin.unwrapped.episode_steps = written[0].numpy()
    rows = []
    for actions in sent:
        before_obs = obs
        obs, reward, term, trunc, _ = twin.step(actions.numpy())
        rows.append((before_obs, reward, term, trunc))
    storage, gamma = runner.alg.storage, runner.alg.gamma
    last = rows[-HORIZON:]
    for group in storage.observations.keys():
        want = np.stack([r[0][group] if isinstance(r[0], dict) else r[0] for r in last])
        np.testing.assert_array_equal(storage.observations[group].numpy(), want, err_msg=group)
    torch.testing.assert_close(storage.actions, torch.stack(sent[-HORIZON:]), rtol=0, atol=0)
    term = torch.as_tensor(np.stack([r[2] for r in last]))
    trunc = torch.as_tensor(np.stack([r[3] for r in last]))
    np.testing.assert_array_equal(storage.dones[..., 0].numpy(), (term | trunc).numpy())
    time_outs = (trunc & ~term).float()
    reward = torch.as_tensor(np.stack([r[1] for r in last]), dtype=torch.float32)
    want = reward + gamma * (storage.values * time_outs.unsqueeze(-1)).squeeze(-1)  # rsl_rl's bootstrap
    torch.testing.assert_close(storage.rewards[..., 0], want, rtol=0, atol=0)

    # init_at_random_ep_len: env i times out after exactly LIMIT - written[i] steps (unless it ended first).
    all_term = np.stack([r[2] for r in rows])
    all_trunc = np.stack([r[3] for r in rows])
    first_done = np.argmax(all_term | all_trunc, axis=0) + 1
    expected = LIMIT - written[0].numpy()
    timed_out = ~all_term[first_done - 1, np.arange(len(first_done))]
    np.testing.assert_array_equal(first_done[timed_out], expected[timed_out])
    assert (first_done[~timed_out] < expected[~timed_out]).all()
    if env_id == "SimToolReal-v0":
        assert timed_out.all() and len(set(expected.tolist())) > 1  # staggered, none ends otherwise here
    venv.close()
    twin.close()


def test_episode_length_buf_is_the_envs_live_counter():
    venv = RslRlVecEnv(make("CubeRotate-v0", "cpu", "numpy", num_envs=3), seed=0)
    buf = venv.episode_length_buf
    assert buf.dtype == torch.int64 and buf.shape == (3,) and venv.max_episode_length == LIMIT
    buf[1] = 7  # in place, as a torch tensor
    np.testing.assert_array_equal(venv.unwrapped.episode_steps, [0, 7, 0])
    venv.episode_length_buf = torch.tensor([2, 0, 9])
    obs, rew, dones, extras = venv.step(torch.zeros(3, venv.num_actions))
    np.testing.assert_array_equal(venv.unwrapped.episode_steps, [3, 1, 0])  # env 2 timed out and reset
    assert dones.tolist() == [0, 0, 1] and extras["time_outs"].tolist() == [False, False, True]
    assert set(obs.keys()) == {"policy"} and obs["policy"].shape == (3, 95) and rew.dtype == torch.float32
    assert extras["log"]["Episode_Reward/rotation"].shape == (1,)  # one episode ended
    venv.close()


def test_reward_scale_multiplies_what_rsl_rl_sees_and_must_be_positive():
    venv = RslRlVecEnv(make("CubeRotate-v0", "cpu", "numpy", num_envs=2), seed=4, reward_scale=0.01)
    twin = make("CubeRotate-v0", "cpu", "numpy", num_envs=2)
    twin.reset(seed=4)
    _, rewards, _, _ = venv.step(torch.zeros(2, venv.num_actions))
    _, want, *_ = twin.step(np.zeros((2, venv.num_actions), np.float32))
    torch.testing.assert_close(rewards, torch.as_tensor(want, dtype=torch.float32) * 0.01, rtol=0, atol=0)
    with pytest.raises(ConfigError, match=r"reward_scale must be a finite number > 0.0, got 0"):
        RslRlVecEnv(twin, reward_scale=0)
    venv.close()
    twin.close()


def test_next_step_env_is_refused():
    env = gym.make_vec("CubeRotate-v0", num_envs=2, num_cubes=1, randomization=None)
    with pytest.raises(ConfigError, match=r"RslRlVecEnv needs an env with autoreset_mode SAME_STEP .* "
                                          r"fix: gym.make_vec\(\.\.\., autoreset_mode='same_step'\)"):
        RslRlVecEnv(env)
    env.close()


def test_env_without_a_time_limit_is_refused():
    from tests.toy_env import ToyPendulumEnv

    env = ToyPendulumEnv(2, autoreset_mode="same_step")
    with pytest.raises(ConfigError, match=r"RslRlVecEnv needs an env with a time limit .* max_episode_steps=None"):
        RslRlVecEnv(env)
    env.close()


def test_device_state_with_numpy_output_is_refused():
    pytest.importorskip("mujoco_warp")
    env = make("SimToolReal-v0", "warp", "numpy", num_envs=1)
    with pytest.raises(ConfigError, match=r"outputs numpy.*fix: gym.make_vec\(\.\.\., array_backend='torch'\)"):
        RslRlVecEnv(env)
    env.close()


def test_train_rsl_rl_example_writes_a_checkpoint_that_mjvec_eval_runs(tmp_path, capsys):
    import json

    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from mjvec.cli import main as cli
    from tests.policy_files import example_module

    module = example_module("train_rsl_rl.py", "train_rsl_rl")
    last = module.main(module.Args(env_id="CubeRotate-v0", num_envs=8, max_iterations=2, num_steps_per_env=8,
                                   option=["num_cubes=2", "max_episode_steps=6"], log_dir=tmp_path))
    assert last == tmp_path / "model_1.pt" and (tmp_path / "params" / "agent.json").is_file()
    events = EventAccumulator(str(next(tmp_path.glob("events.out.tfevents*"))))
    events.Reload()
    assert {"Train/mean_reward", "Episode_Reward/rotation", "Metrics/cube_angvel_z"} <= set(events.Tags()["scalars"])
    capsys.readouterr()
    assert cli(["eval", "--checkpoint", str(last), "--num-envs", "4", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["policy"] == "rsl_rl" and summary["env_id"] == "CubeRotate-v0"
    assert summary["length_mean"] <= 6 and summary["options"]["num_cubes"] == "2"  # the run's own options


def test_train_rsl_rl_knows_a_config_beside_every_task_that_ships_one():
    """Every task folder with an agents/rsl_rl_ppo.yaml is one the example maps an id to (and back):
    the configs live beside their tasks, and a moved or new one is found or this fails."""

    import yaml

    from tests.policy_files import ROOT, example_module

    module = example_module("train_rsl_rl.py", "train_rsl_rl_configs")
    shipped = {path.parents[1].name for path in (ROOT / "mjvec" / "tasks").glob("*/agents/rsl_rl_ppo.yaml")}
    assert set(module.TASK_FOLDER.values()) == shipped
    for env_id, path in module.TASK_CONFIG.items():
        assert path.is_file(), env_id
        assert "train" in yaml.safe_load(path.read_text()), path
    assert set(module.TASK_CONFIG) <= set(gym.registry)


def test_train_rsl_rl_time_limit_stops_after_a_chunk_and_init_std_sets_the_policy_spread(tmp_path):
    """--time-limit-s 0: one chunk of CHUNK iterations runs, then the loop stops (max_iterations
    would allow more); --init-std: the first checkpoint's policy std (one update after the start)
    is near that value, not the config's."""

    import torch

    from tests.policy_files import example_module

    module = example_module("train_rsl_rl.py", "train_rsl_rl_limit")
    last = module.main(module.Args(env_id="CubeRotate-v0", num_envs=8, max_iterations=50, num_steps_per_env=4,
                                   option=["num_cubes=2"], log_dir=tmp_path, time_limit_s=0.0, init_std=0.25))
    assert last == tmp_path / f"model_{module.CHUNK - 1}.pt"
    assert not (tmp_path / f"model_{module.CHUNK}.pt").exists()
    first = torch.load(tmp_path / "model_0.pt", map_location="cpu", weights_only=False)
    std = first["actor_state_dict"]["distribution.std_param"]
    assert torch.allclose(std, torch.full_like(std, 0.25), rtol=0.1)


def test_train_rsl_rl_min_std_floors_the_policy_spread(tmp_path):
    """--min-std: rsl_rl's std_range floor; a std parameter set below it samples at the floor."""

    import torch

    from tests.policy_files import example_module

    module = example_module("train_rsl_rl.py", "train_rsl_rl_min_std")
    last = module.main(module.Args(env_id="CubeRotate-v0", num_envs=8, max_iterations=1, num_steps_per_env=4,
                                   option=["num_cubes=2"], log_dir=tmp_path, init_std=0.5, min_std=0.3))
    agent = json.loads((tmp_path / "params" / "agent.json").read_text())
    std_range = tuple(agent["train_cfg"]["actor"]["distribution_cfg"]["std_range"])
    assert std_range[0] == 0.3
    checkpoint = torch.load(last, map_location="cpu", weights_only=False)
    assert checkpoint["actor_state_dict"]["distribution.std_param"].min() > 0.3
    from rsl_rl.modules.distribution import GaussianDistribution

    floored = GaussianDistribution(2, init_std=0.1, std_range=std_range)
    floored.update(torch.zeros(1, 2))
    torch.testing.assert_close(floored.std, torch.full((1, 2), 0.3))


def test_train_rsl_rl_resume_continues_the_checkpoints_iterations_and_weights(tmp_path):
    """--resume: the run goes on from the checkpoint's next iteration with its networks (the policy
    std is the checkpoint's) and its optimizer state; --resume with --init-std sets the std anew."""

    import torch

    from tests.policy_files import example_module

    module = example_module("train_rsl_rl.py", "train_rsl_rl_resume")
    common = {"env_id": "CubeRotate-v0", "num_envs": 8, "num_steps_per_env": 4, "option": ["num_cubes=2"]}
    first = module.main(module.Args(**common, max_iterations=2, log_dir=tmp_path / "a", init_std=0.25))
    assert first == tmp_path / "a" / "model_1.pt"
    last = module.main(module.Args(**common, max_iterations=1, log_dir=tmp_path / "b", resume=first))
    assert last == tmp_path / "b" / "model_2.pt" and not (tmp_path / "b" / "model_1.pt").exists()
    before = torch.load(first, map_location="cpu", weights_only=False)
    after = torch.load(last, map_location="cpu", weights_only=False)
    std = after["actor_state_dict"]["distribution.std_param"]
    assert torch.allclose(std, before["actor_state_dict"]["distribution.std_param"], rtol=0.1)
    assert not torch.allclose(std, torch.ones_like(std), rtol=0.3)
    def steps(checkpoint: dict) -> list[float]:
        return [float(s["step"]) for s in checkpoint["optimizer_state_dict"]["state"].values()]

    assert min(steps(after)) > max(steps(before))  # Adam's counters went on from the checkpoint's
    reset = module.main(module.Args(**common, max_iterations=1, log_dir=tmp_path / "c", init_std=1.0, resume=first))
    std = torch.load(reset, map_location="cpu", weights_only=False)["actor_state_dict"]["distribution.std_param"]
    assert torch.allclose(std, torch.ones_like(std), rtol=0.1)  # one update after the reset to 1.0
