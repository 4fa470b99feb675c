"""Small trained-policy files of each kind mjvec loads (examples/ppo.py, SB3, rsl_rl), made in a
test's tmp dir, with the in-process policy each library itself runs (the oracle exports and
``python -m mjvec eval`` are compared against)."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import sys
from collections.abc import Callable
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch

import mjvec  # noqa: F401

ROOT = Path(__file__).resolve().parents[1]
CUBE = {"num_cubes": 2, "randomization": None}


def example_module(filename: str, name: str):
    """examples/<filename> loaded afresh as the module `name` (registered in sys.modules, which
    dataclasses and tyro need to resolve its classes)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / filename)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def ppo_module():
    """examples/ppo.py as a module (its Agent is what ppo checkpoints hold)."""
    if "ppo_example" not in sys.modules:
        example_module("ppo.py", "ppo_example")
    return sys.modules["ppo_example"]


def observations(env_id: str, n: int = 1000, **options) -> dict | np.ndarray:
    """n observations of `env_id` under random actions (8 envs x n/8 steps), stacked."""
    env = gym.make_vec(env_id, num_envs=8, autoreset_mode="same_step", **options)
    rng = np.random.default_rng(0)
    obs, _ = env.reset(seed=0)
    rows = []
    for _ in range(n // 8):
        rows.append(obs)
        obs, *_ = env.step(rng.uniform(-1, 1, env.action_space.shape).astype(np.float32))
    env.close()
    if isinstance(rows[0], dict):
        return {k: np.concatenate([r[k] for r in rows]) for k in rows[0]}
    return np.concatenate(rows)


def ppo_checkpoint(tmp: Path, env_id: str = "SimToolReal-v0", asymmetric: bool = True,
                   **env_args) -> tuple[Path, Callable[[np.ndarray], np.ndarray]]:
    """An examples/ppo.py checkpoint with non-trivial observation statistics, and its in-process
    deterministic action (what examples/evaluate_cube_rotate.py runs): the mean, clipped."""
    ppo = ppo_module()
    args = ppo.Args(env_id=env_id, hidden=(32, 16), asymmetric=asymmetric, **env_args)
    env = gym.make_vec(env_id, num_envs=1, **({"obs_mode": "asymmetric"} if asymmetric else {}),
                       **({"num_tools": args.num_tools} if args.num_tools else {}))
    space = env.single_observation_space
    env.close()
    policy_dim = space["policy"].shape[0] if asymmetric else space.shape[0]
    critic_dim = space["critic"].shape[0] if asymmetric else policy_dim
    torch.manual_seed(0)
    agent = ppo.Agent(policy_dim, critic_dim, 29 if env_id == "SimToolReal-v0" else 22, args)
    agent.policy_norm.update(torch.randn(500, policy_dim) * 2 + 1)
    with torch.no_grad():  # ppo.py's head starts at gain 0.01: make the actions span the range (and clip)
        agent.actor_mean[-1].weight.mul_(100.0)
    path = tmp / "ppo" / "checkpoint.pt"
    path.parent.mkdir(parents=True)
    torch.save({"agent": agent.state_dict(), "args": json.loads(json.dumps(dataclasses.asdict(args), default=str)),
                "global_step": 0, "world_size": 1}, path)

    def act(obs: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return agent.distribution(torch.as_tensor(obs)).mean.clamp(-1, 1).numpy()

    return path, act


def sb3_checkpoint(tmp: Path) -> tuple[Path, Callable[[np.ndarray], np.ndarray]]:
    """An SB3 PPO model on CubeRotate-v0 trained for two iterations under VecNormalize, and
    ``model.predict(vecnormalize.normalize_obs(obs), deterministic=True)``."""
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import VecNormalize

    from mjvec.integrations.sb3 import SB3VecEnv

    venv = VecNormalize(SB3VecEnv(gym.make_vec("CubeRotate-v0", num_envs=4, autoreset_mode="same_step", **CUBE)))
    model = PPO("MlpPolicy", venv, n_steps=16, batch_size=32, n_epochs=1, seed=0, device="cpu",
                policy_kwargs={"net_arch": [32, 16]})
    model.learn(128)
    with torch.no_grad():  # SB3's action head starts at gain 0.01: make the actions span the range (and clip)
        model.policy.action_net.weight.mul_(100.0)
    run = tmp / "sb3"
    run.mkdir(parents=True)
    model.save(run / "final_model.zip")
    venv.save(str(run / "vecnormalize.pkl"))
    venv.training = False

    def act(obs: np.ndarray) -> np.ndarray:
        return model.predict(venv.normalize_obs(obs), deterministic=True)[0]

    venv.close()
    return run / "final_model.zip", act


def rsl_rl_checkpoint(tmp: Path) -> tuple[Path, Callable[[np.ndarray], np.ndarray]]:
    """An rsl_rl run on CubeRotate-v0 (2 iterations, obs normalization on) with its params/agent.json,
    and ``runner.get_inference_policy()`` on a TensorDict of the observation, clipped."""
    from rsl_rl.runners import OnPolicyRunner
    from tensordict import TensorDict

    from mjvec.integrations.rsl_rl import RslRlVecEnv, save_run_config

    options = {**CUBE, "max_episode_steps": 20}
    venv = RslRlVecEnv(gym.make_vec("CubeRotate-v0", num_envs=4, autoreset_mode="same_step", **options), seed=0)
    cfg = {"num_steps_per_env": 8, "save_interval": 1000, "obs_groups": {"actor": ["policy"], "critic": ["policy"]},
           "algorithm": {"class_name": "PPO", "num_learning_epochs": 1, "num_mini_batches": 2},
           "actor": {"class_name": "MLPModel", "hidden_dims": [32, 16], "activation": "elu", "obs_normalization": True,
                     "distribution_cfg": {"class_name": "GaussianDistribution", "init_std": 1.0}},
           "critic": {"class_name": "MLPModel", "hidden_dims": [16], "activation": "elu"}}
    log_dir = tmp / "rsl_rl"
    torch.manual_seed(0)
    runner = OnPolicyRunner(venv, cfg, log_dir=str(log_dir), device="cpu")
    save_run_config(log_dir, venv, runner.cfg, options)
    runner.learn(2)
    policy = runner.get_inference_policy()
    venv.close()

    def act(obs: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            td = TensorDict({"policy": torch.as_tensor(obs)}, batch_size=[len(obs)])
            return policy(td).clamp(-1, 1).numpy()

    return log_dir / "model_1.pt", act


def mlp_policy(env_id: str, seed: int = 0, **options):
    """A random MLP actor with non-trivial observation statistics for any env (an examples/ppo.py-style
    `Policy` recording `env_id` and `options`), for export and deployment tests."""
    from torch import nn

    from mjvec.integrations.actors import Actor, Normalizer
    from mjvec.integrations.policies import Policy

    env = gym.make_vec(env_id, num_envs=1, **options)
    obs_space, act_space = env.single_observation_space, env.single_action_space
    env.close()
    obs_dim, action_dim = int(obs_space.shape[0]), int(act_space.shape[0])
    torch.manual_seed(seed)
    body = nn.Sequential(nn.Linear(obs_dim, 32), nn.ELU(), nn.Linear(32, action_dim))
    normalizer = Normalizer(torch.randn(obs_dim, dtype=torch.float64), torch.rand(obs_dim, dtype=torch.float64) + 0.5,
                            1e-8, 5.0)
    actor = Actor(normalizer, body, act_space.low, act_space.high).eval()

    def run(obs: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return actor(torch.from_numpy(obs)).numpy()

    meta = {"kind": "ppo", "obs_keys": None, "obs_dim": obs_dim, "action_dim": action_dim, "env_id": env_id,
            "env_options": options, "source": "tests.policy_files.mlp_policy"}
    return Policy("ppo", None, obs_dim, action_dim, run, actor, meta)
