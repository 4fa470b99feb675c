"""RL libraries hold the default `make_vec` stack (paper randomization on) unmodified: skrl, torchrl,
tianshou (through the documented adapter), CleanRL's gymnasium-1.x PPO pattern. Each run is checked
against the env itself: what the library recorded equals what a twin env returns for the same seed
and actions, or a hand sum of the rewards."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import mjvec
from mjvec.vector_api import VectorEnvAPI

SMALL = {"num_tools": 6, "num_threads": 1, "max_episode_steps": 6}


def make(num_envs: int = 2, **kw) -> gym.vector.VectorEnv:
    return gym.make_vec(mjvec.ENV_ID, num_envs=num_envs, **{**SMALL, **kw})


class Recorder(VectorEnvAPI, gym.vector.VectorWrapper):
    """Records what the env returned, as the oracle of what a library says it saw."""

    def __init__(self, env):
        super().__init__(env)
        self.resets, self.steps = [], []

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        self.resets.append((len(self.steps), obs.copy(), kwargs.get("options")))
        return obs, info

    def step(self, actions):
        out = self.env.step(actions)
        self.steps.append((np.array(actions, copy=True), *out))
        return out


# ---- skrl -----------------------------------------------------------------------------------------
def test_skrl_wrap_env_and_a_short_ppo_run(tmp_path) -> None:
    torch = pytest.importorskip("torch")
    pytest.importorskip("skrl")
    from skrl.agents.torch.ppo import PPO
    from skrl.envs.wrappers.torch import wrap_env
    from skrl.memories.torch import RandomMemory
    from skrl.models.torch import DeterministicMixin, GaussianMixin, Model
    from skrl.trainers.torch import SequentialTrainer

    class Policy(GaussianMixin, Model):
        def __init__(self, observation_space, action_space, device):
            Model.__init__(self, observation_space=observation_space, action_space=action_space, device=device)
            GaussianMixin.__init__(self, clip_actions=True)
            self.net = torch.nn.Linear(self.num_observations, self.num_actions)
            self.log_std = torch.nn.Parameter(torch.full((self.num_actions,), -1.0))

        def compute(self, inputs, role=""):
            return torch.tanh(self.net(inputs["observations"])), {"log_std": self.log_std}

    class Value(DeterministicMixin, Model):
        def __init__(self, observation_space, action_space, device):
            Model.__init__(self, observation_space=observation_space, action_space=action_space, device=device)
            DeterministicMixin.__init__(self)
            self.net = torch.nn.Linear(self.num_observations, 1)

        def compute(self, inputs, role=""):
            return self.net(inputs["observations"]), {}

    for bare in (make(randomization=None), make()):  # auto-detected as Gymnasium, with or without wrappers
        assert type(wrap_env(bare)).__name__ == "GymnasiumWrapper"
        bare.close()
    recorder = Recorder(make(autoreset_mode="same_step", render_mode="rgb_array", render_size=(16, 16)))
    env = wrap_env(recorder)
    assert env.num_envs == 2 and env.observation_space.shape == (140,)
    frames = env.render()  # skrl renders a vector env through env.call("render")
    assert len(frames) == 2 and frames[0].shape == (16, 16, 3)
    models = {"policy": Policy(env.observation_space, env.action_space, env.device),
              "value": Value(env.observation_space, env.action_space, env.device)}
    memory = RandomMemory(memory_size=8, num_envs=env.num_envs, device=env.device)
    agent = PPO(models=models, memory=memory, observation_space=env.observation_space,
                action_space=env.action_space, device=env.device,
                cfg={"rollouts": 8, "learning_epochs": 1, "mini_batches": 1,
                     "experiment": {"directory": str(tmp_path), "write_interval": 0, "checkpoint_interval": 0}})
    before = models["policy"].net.weight.detach().clone()
    SequentialTrainer(env=env, agents=agent, cfg={"timesteps": 16, "headless": True, "disable_progressbar": True,
                                                  "close_environment_at_exit": False}).train()
    assert not torch.equal(before, models["policy"].net.weight)  # two PPO updates ran
    # The memory of the last rollout holds exactly the env's last 8 steps.
    assert len(recorder.steps) == 16
    last = recorder.steps[-8:]
    for name, column in (("rewards", 2), ("terminated", 3), ("truncated", 4)):
        stored = memory.get_tensor_by_name(name)[..., 0].numpy()
        np.testing.assert_array_equal(stored, np.stack([step[column] for step in last]).astype(stored.dtype))
    np.testing.assert_array_equal(memory.get_tensor_by_name("actions").numpy(), np.stack([s[0] for s in last]))
    env.close()
    assert env.unwrapped.closed and not any(env.unwrapped.hook_registrations().values())


# ---- torchrl --------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["same_step", "disabled"])
def test_torchrl_gym_wrapper_check_env_specs_and_rollout(mode: str) -> None:
    torch = pytest.importorskip("torch")
    pytest.importorskip("torchrl")
    from torchrl.envs import GymWrapper
    from torchrl.envs.utils import check_env_specs

    from mjvec.integrations.adapters import FlattenInfo

    recorder = Recorder(make(autoreset_mode=mode))
    # torchrl 0.14's SAME_STEP terminal-obs reader fails on nested info dicts (gymnasium's own
    # SyncVectorEnv too); FlattenInfo gives it flat keys. DISABLED needs nothing.
    env = GymWrapper(FlattenInfo(recorder) if mode == "same_step" else recorder)
    assert env.batch_size == torch.Size([2])
    check_env_specs(env)
    recorder.steps.clear()
    td = env.rollout(14, break_when_any_done=False)
    assert td.batch_size == torch.Size([2, 14]) and len(recorder.steps) == 14
    done = td["next", "done"].squeeze(-1).numpy()
    assert done.any(), "episodes of 6 steps must end inside 14 steps"
    for t, (actions, obs, reward, term, trunc, info) in enumerate(recorder.steps):
        np.testing.assert_array_equal(td["action"][:, t].numpy(), actions)
        np.testing.assert_array_equal(td["next", "reward"][:, t, 0].numpy(), reward.astype(np.float32))
        np.testing.assert_array_equal(done[:, t], term | trunc)
        # "next" holds what the policy saw after the action: the terminal obs where done.
        seen = np.where((term | trunc)[:, None], info["final_obs"], obs) if "final_obs" in info else obs
        np.testing.assert_array_equal(td["next", "observation"][:, t].numpy(), seen)
    if mode == "disabled":  # torchrl resets the done envs by mask between steps
        assert any(options is not None and "reset_mask" in options for _, _, options in recorder.resets)
    env.close()




def test_torchrl_gym_env_by_id_gets_frameskip_refused_and_runs() -> None:
    """torchrl's GymEnv passes frameskip= to gym.make and drops it on the TypeError it expects."""
    pytest.importorskip("torchrl")
    from torchrl.envs import GymEnv

    env = GymEnv(mjvec.ENV_ID, **SMALL)
    env.set_seed(5)
    td = env.rollout(8, break_when_any_done=False)
    # Oracle: the single env torchrl built, replayed by hand: reseeded, reset again, stepped, reset when done.
    twin = gym.make(mjvec.ENV_ID, **SMALL)
    twin.reset(seed=5)
    obs, _ = twin.reset()
    np.testing.assert_array_equal(td["observation"][0].numpy(), obs)
    for t in range(8):
        obs, reward, term, trunc, _ = twin.step(td["action"][t].numpy())
        np.testing.assert_array_equal(td["next", "observation"][t].numpy(), obs)
        assert td["next", "reward"][t].item() == np.float32(reward) and td["next", "done"][t].item() == (term or trunc)
        if term or trunc:
            obs, _ = twin.reset()
            np.testing.assert_array_equal(td["observation"][t + 1].numpy(), obs)
    assert td["next", "done"].any()
    env.close()


# ---- tianshou -------------------------------------------------------------------------------------
@pytest.mark.filterwarnings("ignore:n_episode=1 should be larger")
def test_tianshou_collector_through_the_adapter() -> None:
    pytest.importorskip("tianshou")
    from tianshou.algorithm.algorithm_base import RandomActionPolicy
    from tianshou.data import Collector, VectorReplayBuffer

    from mjvec.errors import ConfigError
    from mjvec.integrations.adapters import TianshouVecEnv

    recorder = Recorder(make(autoreset_mode="disabled"))
    venv = TianshouVecEnv(recorder)
    buffer = VectorReplayBuffer(64, len(venv))
    collector = Collector(RandomActionPolicy(recorder.single_action_space), venv, buffer)
    collector.reset(gym_reset_kwargs={"seed": 3})
    recorder.steps.clear()
    stats = collector.collect(n_step=20)
    assert stats.n_collected_steps == 20 and stats.n_collected_episodes == 2  # 10 steps per env, 6 per episode
    # Oracle: env i's transitions sit in order in sub-buffer i and are exactly what the env returned.
    size = buffer.maxsize // 2
    for i in range(2):
        rows = slice(i * size, i * size + 10)
        np.testing.assert_array_equal(buffer.rew[rows], [step[2][i] for step in recorder.steps])
        np.testing.assert_array_equal(buffer.act[rows], [step[0][i] for step in recorder.steps])
        np.testing.assert_array_equal(buffer.obs_next[rows], [step[1][i] for step in recorder.steps])
        np.testing.assert_array_equal(buffer.truncated[rows], [step[4][i] for step in recorder.steps])
    # The done envs were reset (by id) after step 6, and the next transition starts from that reset's obs.
    after = [(t, obs) for t, obs, _ in recorder.resets if t > 0]
    assert [t for t, _ in after] == [6]
    for i in range(2):
        np.testing.assert_array_equal(buffer.obs[i * size + 6], after[0][1][i])
    with pytest.raises(ConfigError, match=r"steps all 2 envs at once .* got ready env ids \[0\]; collect with "
                                          r"Collector.collect\(n_step=...\)"):
        collector.collect(n_episode=1, reset_before_collect=True)
    with pytest.raises(ConfigError, match="TianshouVecEnv needs autoreset_mode DISABLED"):
        TianshouVecEnv(make())
    venv.close()


# ---- CleanRL's gymnasium-1.x PPO pattern ----------------------------------------------------------
def test_cleanrl_same_step_ppo_pattern_final_info_and_final_obs_bootstrap() -> None:
    torch = pytest.importorskip("torch")
    envs = make(autoreset_mode="same_step", record_episode_statistics=True)
    n, steps, gamma = envs.num_envs, 8, 0.99
    torch.manual_seed(0)
    actor = torch.nn.Linear(140, 29)
    critic = torch.nn.Linear(140, 1)
    log_std = torch.nn.Parameter(torch.full((29,), -1.0))
    optimizer = torch.optim.Adam([*actor.parameters(), *critic.parameters(), log_std], lr=1e-3)
    next_obs, _ = envs.reset(seed=1)
    running, episodes = np.zeros(n), 0
    for _ in range(2):  # two PPO iterations
        obs_buf, act_buf, logp_buf, rew_buf, done_buf, val_buf = [], [], [], [], [], []
        for _ in range(steps):
            obs_t = torch.as_tensor(next_obs)
            with torch.no_grad():
                dist = torch.distributions.Normal(actor(obs_t), log_std.exp())
                action = dist.sample().clamp(-1, 1)
                value = critic(obs_t)[:, 0]
            next_obs, reward, term, trunc, infos = envs.step(action.numpy())
            done = term | trunc
            running += reward
            reward = reward.copy()
            if "final_info" in infos:  # CleanRL's gymnasium-1.x episode logging
                ended = infos["_final_info"]
                np.testing.assert_allclose(infos["final_info"]["episode"]["r"][ended], running[ended], rtol=1e-12)
                np.testing.assert_array_equal(infos["final_info"]["_episode"], ended)
                # Truncation bootstrap from the true final observation.
                with torch.no_grad():
                    v_final = critic(torch.as_tensor(infos["final_obs"]))[:, 0].numpy()
                reward[trunc & ~term] += gamma * v_final[trunc & ~term]
                running[ended], episodes = 0.0, episodes + int(ended.sum())
            obs_buf.append(obs_t)
            act_buf.append(action)
            logp_buf.append(dist.log_prob(action).sum(-1))
            rew_buf.append(torch.as_tensor(reward, dtype=torch.float32))
            done_buf.append(torch.as_tensor(done, dtype=torch.float32))
            val_buf.append(value)
        with torch.no_grad():
            next_value = critic(torch.as_tensor(next_obs))[:, 0]
        returns, ret = [], next_value
        for t in reversed(range(steps)):
            ret = rew_buf[t] + gamma * ret * (1.0 - done_buf[t])
            returns.insert(0, ret)
        obs_b, act_b = torch.cat(obs_buf), torch.cat(act_buf)
        ret_b, logp_old = torch.cat(returns), torch.cat(logp_buf)
        adv = ret_b - torch.cat(val_buf)
        logp = torch.distributions.Normal(actor(obs_b), log_std.exp()).log_prob(act_b).sum(-1)
        ratio = (logp - logp_old).exp()
        value_loss = 0.5 * (critic(obs_b)[:, 0] - ret_b).pow(2).mean()
        loss = -torch.min(ratio * adv, ratio.clamp(0.8, 1.2) * adv).mean() + value_loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        assert torch.isfinite(loss)
    assert episodes == 4  # 16 steps, episodes of 6 steps, 2 envs
    envs.close()
