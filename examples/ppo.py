"""CleanRL-style PPO for any mjvec task (SimToolReal-v0 by default), one file, torch-native,
single process or torchrun.

    python examples/ppo.py --num-envs 64 --num-tools 6 --total-timesteps 1000000
    torchrun --standalone --nproc_per_node=2 examples/ppo.py --num-envs 64      # 2 shards
    python examples/ppo.py --asymmetric --randomization none                    # critic on privileged state
    python examples/ppo.py --env-id CubeRotate-v0 --randomization none          # the hand spins a cube
    python examples/ppo.py --env-id mjvec/HalfCheetah-v5 --randomization none   # Gymnasium's suite
    python examples/ppo.py --config mjvec/tasks/go1_joystick/agents/ppo.yaml --num-envs 256  # a task's settings

Evidence that CubeRotate-v0 learns on 2 CPU cores in 20 minutes: docs/cube_rotate.md ("Evidence that it learns"),
docs/cube_rotate_ppo.{csv,png}.

Evidence that it learns: docs/ppo_learning_curve.{csv,png}, 14 minutes on 2 CPU cores with
``--num-envs 256 --num-tools 600 --asymmetric --hidden 256 128 64 --time-limit-s 840``.

What it does, top to bottom (the SimToolReal authors train with SAPG on rl_games' PPO; the shared
pieces follow their settings where noted):

- Env: ``gym.make_vec(env_id, autoreset_mode="same_step", array_backend="torch",
  record_episode_statistics=True)``; SimToolReal-v0's own options (``--num-tools``,
  ``--asymmetric``, ``--curriculum-interval``) are passed only when given. Under torchrun, rank r
  builds envs with global ids ``r*num_envs .. (r+1)*num_envs-1`` (``env_id_offset``), so variant
  (tool, cube) ids and random streams stay those of one big run of ``world_size*num_envs`` envs.
  Everyone resets with the same seed: the streams are keyed by global env id. SimToolReal's
  success-tolerance curriculum is made global: each rank's env gets a reducer that all-reduces the
  curriculum's statistic (`SimToolRealEnv.set_curriculum_reducer`), so every rank tightens the
  tolerance at the same step, on the mean over all ranks' envs.
- Timeouts: a truncated (not terminated) env's reward is bootstrapped with V(``info["final_obs"]``),
  the clean terminal observation the env returns beside the reset one (`compute_advantages`).
- Agent: Gaussian MLP actor (state-independent log-std) on the "policy" observation; MLP critic on
  the same, or with ``--asymmetric`` on the 162-D "critic" state. Inputs are normalized by running
  statistics frozen during an iteration and updated (from every rank's batch) after it.
- Update: rewards x ``reward_scale`` (SimToolReal: 0.01 as the source), GAE, clipped PPO, rl_games' bounds loss
  on the action mean, gradients averaged over ranks (``torch.distributed``, gloo on CPU, nccl on
  GPU), global-norm clipping, KL-adaptive learning rate (rl_games' rule) by default.
- Output (rank 0 only): ``<out-dir>/progress.csv`` (one row per iteration: global_step,
  mean_return, mean_success, sps, losses, mean per-step reward terms) and the same values as
  TensorBoard scalars in ``<out-dir>/tb`` (when tensorboard is installed), ``<out-dir>/checkpoint.pt``
  at the end (and ``checkpoint_<iteration>.pt`` every ``--save-interval`` iterations), a tqdm bar.
  ``--shard-report`` makes every rank write ``rank<r>.json`` (its env ids and a digest of its final
  parameters) so a test can check the shards and the parameter sync.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import hashlib
import json
import math
import os
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import gymnasium as gym
import numpy as np
from tqdm import tqdm

import mjvec  # noqa: F401  (registers the tasks)
from mjvec.errors import missing_extra
from mjvec.tasks.simtoolreal.config import SimToolRealConfig

try:  # the train extra: say how to install it rather than stop at a bare ModuleNotFoundError
    import torch
    import torch.distributed as dist
    import tyro
    from torch import nn
except ImportError as _error:
    print(missing_extra("train", _error, "examples/ppo.py"), file=sys.stderr)
    raise SystemExit(2) from None

# The reward scale each task trains with when --reward-scale is not given (else 1): SimToolReal's
# rewards are in the hundreds, as in the source, which trains with 0.01.
TASK_REWARD_SCALE = {"SimToolReal-v0": 0.01}
# Per-step info entries logged as progress.csv columns mean_<key> when the task reports them.
LOGGED_INFO = ("lifted", "cube_angvel_z")


@dataclass
class Args:
    """Command-line options (tyro): every field is a --flag, e.g. --num-envs 256 --asymmetric."""

    config: Path | None = None
    """a YAML file of these options (a task's agents/ppo.yaml); flags given beside it override it"""
    env_id: str = "SimToolReal-v0"
    """the registered environment id (python -m mjvec list)"""
    num_envs: int = 64
    """envs per process; the run has world_size * num_envs envs"""
    num_tools: int | None = None
    """SimToolReal-v0: tools in use, env with global id g holds tool g % num_tools (None: the task's 600)"""
    randomization: Literal["paper", "locomotion", "none"] = "paper"
    """a preset of the task ("paper": SimToolReal's delays, noise and pushes, CubeRotate's; "locomotion":
    the Gymnasium MuJoCo suite's dynamics randomization), or the bare task"""
    asymmetric: bool = False
    """SimToolReal-v0: actor on obs["policy"], critic on the privileged obs["critic"]"""
    max_episode_steps: int | None = None
    """episode limit in control steps (None: the task's)"""
    backend: str = "cpu"
    """simulation backend ("cpu" or "warp")"""
    num_threads: int | None = None
    """CPU backend worker threads (None: all cores this process may use)"""
    curriculum_interval: int | None = None
    """SimToolReal-v0: control steps between tolerance-curriculum checks (None: the task's 3,000)"""

    total_timesteps: int = 2_000_000
    """env steps over all ranks"""
    num_steps: int = 16
    """rollout horizon per iteration (the source's 16)"""
    learning_rate: float = 3e-4
    """initial Adam learning rate"""
    lr_schedule: Literal["adaptive", "linear", "constant"] = "adaptive"
    """adaptive: rl_games' KL rule toward kl_target; linear: anneal to 0"""
    kl_target: float = 0.016
    """KL target of the adaptive schedule (the source's)"""
    gamma: float = 0.99
    """discount"""
    gae_lambda: float = 0.95
    """GAE lambda"""
    num_minibatches: int = 4
    """minibatches per epoch; must divide num_envs * num_steps"""
    update_epochs: int = 4
    """passes over each rollout"""
    clip_coef: float = 0.2
    """PPO ratio clip"""
    ent_coef: float = 0.0
    """entropy bonus weight (the source's 0)"""
    vf_coef: float = 2.0
    """value-loss weight (rl_games: 0.5 x critic_coef 4)"""
    bounds_loss_coef: float = 1e-4
    """weight of the penalty on action means outside [-1.1, 1.1]"""
    max_grad_norm: float = 1.0
    """global gradient-norm clip"""
    reward_scale: float | None = None
    """rewards are multiplied by this for learning (logged returns are raw); None: the task's
    (0.01 for SimToolReal-v0, as the source, else 1)"""
    norm_obs: bool = True
    """running mean/std normalization of actor and critic inputs"""
    norm_adv: bool = True
    """normalize advantages per minibatch"""
    hidden: tuple[int, ...] = (512, 256, 128)
    """hidden layer widths of actor and critic MLPs"""
    init_log_std: float = 0.0
    """initial log standard deviation of the Gaussian policy"""
    min_log_std: float | None = None
    """lower bound of the policy's log standard deviation (rsl_rl's ``std_range``), so exploration
    never falls below exp(min_log_std); None: unbounded"""

    seed: int = 1
    """seed of the env streams (keyed by global env id) and of torch"""
    device: str = "cpu"
    """"cpu" or "cuda" (each rank uses cuda:<local rank>)"""
    torch_threads: int | None = 1
    """torch intra-op threads (None: torch's default); the simulator has its own thread pool"""
    time_limit_s: float | None = None
    """stop after this many seconds of training (all ranks stop together)"""
    out_dir: Path = Path("out/ppo")
    """where progress.csv and checkpoint.pt go"""
    save_interval: int = 0
    """also write checkpoint_<iteration>.pt every this many iterations (0: only checkpoint.pt at the end)"""
    progress: bool = True
    """show a tqdm progress bar (rank 0)"""
    shard_report: bool = False
    """every rank writes rank<r>.json: its env ids, tool ids and parameter digests"""


def check_args(args: Args) -> None:
    """Raise ValueError for settings that cannot run or would silently drop samples."""
    for name in ("num_envs", "num_steps", "num_minibatches", "update_epochs", "total_timesteps"):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    batch = args.num_envs * args.num_steps
    if batch % args.num_minibatches:
        fits = [k for k in range(1, min(batch, 64) + 1) if batch % k == 0]
        raise ValueError(
            f"num_envs * num_steps = {batch} is not divisible by num_minibatches={args.num_minibatches}; "
            f"use one of {fits} or change --num-envs/--num-steps"
        )
    if args.save_interval < 0:
        raise ValueError(f"--save-interval must be >= 0 (0: only the final checkpoint), got {args.save_interval}")


# ---- distributed helpers (a no-op without torchrun) ------------------------------------------
def init_distributed(device: str) -> tuple[int, int, torch.device]:
    """(rank, world_size, device); joins the torchrun process group when WORLD_SIZE is set."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if device == "cuda":
        torch.cuda.set_device(local_rank)
        dev = torch.device("cuda", local_rank)
    else:
        dev = torch.device(device)
    if world > 1:
        dist.init_process_group(backend="nccl" if dev.type == "cuda" else "gloo")
    return rank, world, dev


def all_reduce_(tensor: torch.Tensor, op: Any = None) -> torch.Tensor:
    """Sum (or `op`) `tensor` over ranks in place; identity in a single process."""
    if dist.is_initialized():
        dist.all_reduce(tensor, op=dist.ReduceOp.SUM if op is None else op)
    return tensor


def average_gradients(params: list[nn.Parameter], world: int) -> None:
    """Replace every gradient by its mean over ranks (one flat all-reduce)."""
    if world == 1:
        return
    grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in params]
    flat = torch.cat([g.reshape(-1) for g in grads])
    all_reduce_(flat).div_(world)
    offset = 0
    for p, g in zip(params, grads, strict=True):
        p.grad = flat[offset:offset + g.numel()].view_as(g).clone()
        offset += g.numel()


# ---- agent -----------------------------------------------------------------------------------
class RunningMeanStd(nn.Module):
    """Running mean/variance of observations (Chan's parallel update); saved in the state dict."""

    def __init__(self, dim: int, clip: float = 5.0) -> None:
        super().__init__()
        self.register_buffer("mean", torch.zeros(dim))
        self.register_buffer("var", torch.ones(dim))
        self.register_buffer("count", torch.tensor(1e-4))
        self.clip = clip

    @torch.no_grad()
    def update(self, x: torch.Tensor) -> None:
        """Fold in the batch `x` (..., dim), pooled over all ranks so every rank stays identical."""
        x = x.reshape(-1, x.shape[-1]).double()
        moments = torch.cat([x.sum(0), (x * x).sum(0), torch.tensor([x.shape[0]], dtype=x.dtype, device=x.device)])
        all_reduce_(moments)
        dim = x.shape[1]
        n = moments[-1]
        mean = moments[:dim] / n
        var = (moments[dim:2 * dim] / n - mean * mean).clamp_min(0.0)
        delta = mean - self.mean.double()
        total = self.count.double() + n
        m2 = self.var.double() * self.count + var * n + delta * delta * self.count * n / total
        self.mean.copy_(self.mean + delta * n / total)
        self.var.copy_(m2 / total)
        self.count.copy_(total)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ((x - self.mean) / torch.sqrt(self.var + 1e-8)).clamp(-self.clip, self.clip)


def mlp(in_dim: int, hidden: tuple[int, ...], out_dim: int, out_gain: float) -> nn.Sequential:
    layers: list[nn.Module] = []
    for width in hidden:
        linear = nn.Linear(in_dim, width)
        nn.init.orthogonal_(linear.weight, math.sqrt(2))
        nn.init.zeros_(linear.bias)
        layers += [linear, nn.ELU()]
        in_dim = width
    head = nn.Linear(in_dim, out_dim)
    nn.init.orthogonal_(head.weight, out_gain)
    nn.init.zeros_(head.bias)
    return nn.Sequential(*layers, head)


class Agent(nn.Module):
    """Gaussian actor on policy obs (Dp,), critic on critic obs (Dc,); inputs normalized inside."""

    def __init__(self, policy_dim: int, critic_dim: int, action_dim: int, args: Args) -> None:
        super().__init__()
        self.norm_obs = args.norm_obs
        self.policy_norm = RunningMeanStd(policy_dim)
        self.critic_norm = RunningMeanStd(critic_dim)
        self.actor_mean = mlp(policy_dim, args.hidden, action_dim, out_gain=0.01)
        self.actor_logstd = nn.Parameter(torch.full((action_dim,), args.init_log_std))
        self.min_log_std = args.min_log_std
        self.critic = mlp(critic_dim, args.hidden, 1, out_gain=1.0)

    def value(self, critic_obs: torch.Tensor) -> torch.Tensor:
        x = self.critic_norm(critic_obs) if self.norm_obs else critic_obs
        return self.critic(x).squeeze(-1)

    def distribution(self, policy_obs: torch.Tensor) -> torch.distributions.Normal:
        x = self.policy_norm(policy_obs) if self.norm_obs else policy_obs
        mean = self.actor_mean(x)
        log_std = self.actor_logstd if self.min_log_std is None else self.actor_logstd.clamp(min=self.min_log_std)
        return torch.distributions.Normal(mean, log_std.expand_as(mean).exp())


# ---- advantages with timeout bootstrap -------------------------------------------------------
def compute_advantages(
    rewards: torch.Tensor,
    values: torch.Tensor,
    terminated: torch.Tensor,
    truncated: torch.Tensor,
    final_values: torch.Tensor,
    last_value: torch.Tensor,
    gamma: float,
    gae_lambda: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """GAE over a SAME_STEP rollout; returns (advantages, returns), each (T, N).

    Step t: the agent saw s_t (value ``values[t]``), got ``rewards[t]`` and the flags of that step.
    An env done at t was reset in the same step, so ``values[t+1]`` (or ``last_value`` at t = T-1)
    belongs to the NEXT episode and is never used across the boundary. A truncated, not terminated,
    env is bootstrapped instead with ``final_values[t]`` = V(final_obs_t), the terminal state's value;
    a terminated one with 0. ``final_values`` rows of other envs are ignored.
    """
    done = (terminated | truncated).to(rewards.dtype)
    bootstrap = (truncated & ~terminated).to(rewards.dtype)
    advantages = torch.zeros_like(rewards)
    running = torch.zeros_like(last_value)
    for t in reversed(range(rewards.shape[0])):
        next_value = last_value if t == rewards.shape[0] - 1 else values[t + 1]
        target = rewards[t] + gamma * (next_value * (1.0 - done[t]) + final_values[t] * bootstrap[t])
        running = target - values[t] + gamma * gae_lambda * (1.0 - done[t]) * running
        advantages[t] = running
    return advantages, advantages + values


# ---- rollout ---------------------------------------------------------------------------------
def split_obs(obs: Any, asymmetric: bool, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """(policy obs, critic obs) as float32 tensors on `device` (numpy final_obs too)."""
    if asymmetric:
        policy, critic = obs["policy"], obs["critic"]
    else:
        policy = critic = obs
    policy = torch.as_tensor(policy, device=device, dtype=torch.float32)
    critic = torch.as_tensor(critic, device=device, dtype=torch.float32)
    return policy, critic


class Rollout:
    """(T, N, ...) storage of one iteration, plus episode and reward-term sums for logging."""

    def __init__(self, t: int, n: int, policy_dim: int, critic_dim: int, action_dim: int, dev: torch.device) -> None:
        def z(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
            return torch.zeros(shape, device=dev, dtype=dtype)

        self.policy_obs, self.critic_obs = z(t, n, policy_dim), z(t, n, critic_dim)
        self.actions, self.logprobs = z(t, n, action_dim), z(t, n)
        self.rewards, self.values, self.final_values = z(t, n), z(t, n), z(t, n)
        self.terminated, self.truncated = z(t, n, dtype=torch.bool), z(t, n, dtype=torch.bool)
        self.dev = dev
        self.stats: dict[str, torch.Tensor] = {}

    def reset_stats(self) -> None:
        self.stats = {k: torch.zeros((), dtype=torch.float64, device=self.dev)
                      for k in ("reward", "episodes", "return", "length", "success")}

    def add_stat(self, name: str, value: Any, where: torch.Tensor | None = None) -> None:
        """Add the sum of `value` (rows `where` only, if given) on the device: no host read-back,
        so a device-resident env's step never waits (the sums are read once per iteration)."""
        value = torch.as_tensor(value).to(self.dev, torch.float64)
        if where is not None:
            value = torch.where(where, value, 0.0)
        self.stats[name] = self.stats.get(name, torch.zeros((), dtype=torch.float64, device=self.dev)) + value.sum()


def collect(envs: gym.vector.VectorEnv, agent: Agent, buf: Rollout, obs: Any, args: Args,
            dev: torch.device) -> Any:
    """Fill `buf` with args.num_steps env steps starting from `obs`; returns the next obs."""
    for t in range(args.num_steps):
        policy, critic = split_obs(obs, args.asymmetric, dev)
        with torch.no_grad():
            pi = agent.distribution(policy)
            action = pi.sample()
            buf.logprobs[t] = pi.log_prob(action).sum(-1)
            buf.values[t] = agent.value(critic)
        buf.policy_obs[t], buf.critic_obs[t], buf.actions[t] = policy, critic, action
        obs, reward, terminated, truncated, info = envs.step(action)
        buf.rewards[t] = torch.as_tensor(reward, device=dev, dtype=torch.float32) * reward_scale(args)
        buf.terminated[t] = torch.as_tensor(terminated, device=dev)
        buf.truncated[t] = torch.as_tensor(truncated, device=dev)
        buf.add_stat("reward", reward)
        for name, value in info.get("reward_terms", {}).items():
            if not name.startswith("_"):
                buf.add_stat(f"r_{name}", value)
        for key in LOGGED_INFO:
            if key in info:
                buf.add_stat(key, info[key])
        buf.final_values[t] = 0.0
        if "final_obs" in info:  # (a device-resident env has it every step, rows valid where done)
            boot = buf.truncated[t] & ~buf.terminated[t]
            _, final_critic = split_obs(info["final_obs"], args.asymmetric, dev)
            with torch.no_grad():
                buf.final_values[t] = torch.where(boot, agent.value(final_critic), 0.0)
        if "episode" in info:
            done = torch.as_tensor(info["_episode"]).to(dev, torch.bool)
            buf.add_stat("episodes", done)
            for key, name in (("r", "return"), ("l", "length"), ("success", "success")):
                if key in info["episode"]:
                    buf.add_stat(name, info["episode"][key], where=done)
    return obs


# ---- update ----------------------------------------------------------------------------------
def ppo_update(agent: Agent, optimizer: torch.optim.Optimizer, buf: Rollout, advantages: torch.Tensor,
               returns: torch.Tensor, args: Args, world: int) -> dict[str, float]:
    """Clipped-PPO epochs over the flattened rollout; every rank takes the same optimizer steps."""
    flat = {
        "policy": buf.policy_obs.flatten(0, 1), "critic": buf.critic_obs.flatten(0, 1),
        "actions": buf.actions.flatten(0, 1), "logprobs": buf.logprobs.flatten(0, 1),
        "advantages": advantages.flatten(), "returns": returns.flatten(),
    }
    batch = flat["returns"].shape[0]
    mb_size = batch // args.num_minibatches
    params = list(agent.parameters())
    sums: dict[str, float] = {}
    for _ in range(args.update_epochs):
        perm = torch.randperm(batch, device=returns.device)
        epoch_kl = torch.zeros((), device=returns.device)
        for k in range(args.num_minibatches):
            mb = {key: value[perm[k * mb_size:(k + 1) * mb_size]] for key, value in flat.items()}
            pi = agent.distribution(mb["policy"])
            logratio = pi.log_prob(mb["actions"]).sum(-1) - mb["logprobs"]
            ratio = logratio.exp()
            adv = mb["advantages"]
            if args.norm_adv:
                adv = (adv - adv.mean()) / (adv.std() + 1e-8)
            pg_loss = torch.max(-adv * ratio, -adv * ratio.clamp(1 - args.clip_coef, 1 + args.clip_coef)).mean()
            v_loss = 0.5 * ((agent.value(mb["critic"]) - mb["returns"]) ** 2).mean()
            entropy = pi.entropy().sum(-1).mean()
            # rl_games' bounds loss: keep the action mean inside the (soft) action range.
            mu = pi.mean
            b_loss = ((mu - 1.1).clamp_min(0) ** 2 + (mu + 1.1).clamp_max(0) ** 2).sum(-1).mean()
            loss = pg_loss - args.ent_coef * entropy + args.vf_coef * v_loss + args.bounds_loss_coef * b_loss
            optimizer.zero_grad(set_to_none=False)
            loss.backward()
            average_gradients(params, world)
            nn.utils.clip_grad_norm_(params, args.max_grad_norm)
            optimizer.step()
            with torch.no_grad():
                kl = ((ratio - 1) - logratio).mean()
                epoch_kl += kl / args.num_minibatches
                clipfrac = ((ratio - 1).abs() > args.clip_coef).float().mean()
                for name, value in (("policy_loss", pg_loss), ("value_loss", v_loss), ("entropy", entropy),
                                    ("approx_kl", kl), ("clipfrac", clipfrac)):
                    sums[name] = sums.get(name, 0.0) + float(value)
        if args.lr_schedule == "adaptive":
            adapt_lr(optimizer, float(all_reduce_(epoch_kl) / world), args.kl_target)
    n = args.update_epochs * args.num_minibatches
    return {name: value / n for name, value in sums.items()}


def adapt_lr(optimizer: torch.optim.Optimizer, kl: float, target: float) -> None:
    """rl_games' KL-adaptive rule: /1.5 above 2x target, x1.5 below target/2, within [1e-6, 1e-2]."""
    for group in optimizer.param_groups:
        if kl > 2.0 * target:
            group["lr"] = max(group["lr"] / 1.5, 1e-6)
        elif kl < 0.5 * target:
            group["lr"] = min(group["lr"] * 1.5, 1e-2)


# ---- bookkeeping -----------------------------------------------------------------------------
def reduce_stats(stats: dict[str, torch.Tensor], dev: torch.device) -> dict[str, float]:
    """Sum the rollout statistics over ranks (every rank has the same keys: same env type); the
    one host read-back of an iteration's statistics."""
    keys = sorted(stats)
    total = all_reduce_(torch.stack([stats[k].to(dev, torch.float64) for k in keys]))
    return dict(zip(keys, total.tolist(), strict=True))


def log_row(it: int, global_step: int, elapsed: float, stats: dict[str, float], losses: dict[str, float],
            lr: float, steps_per_iter: int) -> dict[str, float]:
    """One CSV row: episode means over the episodes finished this iteration (NaN if none; the CSV
    and the progress bar show those as an empty field and "-")."""
    episodes = stats.pop("episodes")
    sums = {k: stats.pop(k) for k in ("return", "success", "length")}
    per_ep = {k: v / episodes if episodes else math.nan for k, v in sums.items()}
    row: dict[str, float] = {
        "iteration": it, "global_step": global_step, "mean_return": per_ep["return"],
        "mean_success": per_ep["success"], "mean_length": per_ep["length"], "episodes": episodes,
        "sps": global_step / elapsed, "time_s": elapsed, "lr": lr, **losses,
    }
    row.update({f"mean_{k}": v / steps_per_iter for k, v in sorted(stats.items())})
    return row


class CsvLog:
    """progress.csv with the columns of the first row, and each row's values as TensorBoard scalars
    (``tb/``, at the row's global_step; skipped when tensorboard is not installed)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = path.open("w", newline="")
        self._writer: csv.DictWriter | None = None
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError:  # the train extra brings tensorboard; the CSV is the record either way
            self._tb = None
        else:
            self._tb = SummaryWriter(str(path.parent / "tb"))

    def write(self, row: dict[str, float]) -> None:
        """Append `row`; a NaN (a mean over no episodes) is written as an empty field."""
        if self._writer is None:
            self._writer = csv.DictWriter(self._file, fieldnames=list(row))
            self._writer.writeheader()
        self._writer.writerow({k: "" if isinstance(v, float) and math.isnan(v) else v for k, v in row.items()})
        self._file.flush()
        if self._tb is not None:
            for key, value in row.items():
                if key not in ("iteration", "global_step") and not math.isnan(value):
                    self._tb.add_scalar(f"ppo/{key}", value, int(row["global_step"]))

    def close(self) -> None:
        self._file.close()
        if self._tb is not None:
            self._tb.close()


def progress_postfix(row: dict[str, float]) -> dict[str, str]:
    """The progress bar's fields: "-" for means over no finished episode."""
    def fmt(value: float, spec: str) -> str:
        return "-" if math.isnan(value) else format(value, spec)

    return {"ret": fmt(row["mean_return"], ".1f"), "succ": fmt(row["mean_success"], ".2f"),
            "sps": format(row["sps"], ".0f")}


def param_digest(agent: Agent) -> str:
    """sha256 of every parameter and buffer, in state-dict order."""
    h = hashlib.sha256()
    for name, tensor in agent.state_dict().items():
        h.update(name.encode())
        h.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


class CurriculumReducer:
    """reducer(sum, count) -> (sum, count) over all ranks (an all-reduce); counts its calls."""

    def __init__(self, dev: torch.device) -> None:
        self.dev, self.calls = dev, 0

    def __call__(self, total: Any, count: int) -> tuple[Any, Any]:
        self.calls += 1
        if isinstance(total, torch.Tensor):  # the env's task runs on a device: stay there, no read-back
            stat = all_reduce_(torch.stack([total.to(self.dev, torch.float64),
                                            torch.tensor(float(count), dtype=torch.float64, device=self.dev)]))
            return stat[0].to(total.device), stat[1].to(total.device)
        stat = all_reduce_(torch.tensor([total, float(count)], dtype=torch.float64, device=self.dev))
        return float(stat[0]), round(float(stat[1]))


def reward_scale(args: Args) -> float:
    return TASK_REWARD_SCALE.get(args.env_id, 1.0) if args.reward_scale is None else args.reward_scale


def task_options(args: Args) -> dict[str, Any]:
    """The task-specific env options the flags set: only those given, so any task accepts the
    defaults (a task without such an option refuses it by name)."""
    extra: dict[str, Any] = {}
    if args.num_tools is not None:
        extra["num_tools"] = args.num_tools
    if args.asymmetric:
        extra["obs_mode"] = "asymmetric"
    if args.curriculum_interval is not None:
        extra["config"] = dataclasses.replace(SimToolRealConfig(), curriculum_interval=args.curriculum_interval)
    return extra


def make_envs(args: Args, rank: int, dev: torch.device, reducer: CurriculumReducer | None) -> gym.vector.VectorEnv:
    envs = gym.make_vec(
        args.env_id, num_envs=args.num_envs, backend=args.backend,
        num_threads=args.num_threads, max_episode_steps=args.max_episode_steps,
        randomization=None if args.randomization == "none" else args.randomization,
        autoreset_mode="same_step", env_id_offset=rank * args.num_envs, array_backend="torch", device=str(dev),
        record_episode_statistics=True, **task_options(args),
    )
    if reducer is not None and hasattr(envs.unwrapped, "set_curriculum_reducer"):
        # One curriculum over all ranks; every rank steps in lockstep, as it needs.
        envs.unwrapped.set_curriculum_reducer(reducer)
    return envs


# ---- main ------------------------------------------------------------------------------------
def main(args: Args) -> None:
    check_args(args)
    rank, world, dev = init_distributed(args.device)
    if args.torch_threads:
        torch.set_num_threads(args.torch_threads)
    reducer = CurriculumReducer(dev) if world > 1 else None
    envs = make_envs(args, rank, dev, reducer)
    space = envs.single_observation_space
    policy_dim = space["policy"].shape[0] if args.asymmetric else space.shape[0]
    critic_dim = space["critic"].shape[0] if args.asymmetric else policy_dim
    action_dim = envs.single_action_space.shape[0]

    torch.manual_seed(args.seed)  # same initial weights everywhere; rank 0's are broadcast anyway
    agent = Agent(policy_dim, critic_dim, action_dim, args).to(dev)
    if world > 1:
        for tensor in agent.state_dict().values():
            dist.broadcast(tensor, src=0)
    init_digest = param_digest(agent)
    torch.manual_seed(args.seed + 1 + rank)  # independent action noise per rank
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)
    steps_per_iter = world * args.num_envs * args.num_steps
    num_iterations = max(1, args.total_timesteps // steps_per_iter)
    log = CsvLog(args.out_dir / "progress.csv") if rank == 0 else None
    bar = tqdm(range(1, num_iterations + 1), desc="PPO", disable=rank != 0 or not args.progress)

    obs, _ = envs.reset(seed=args.seed)
    buf = Rollout(args.num_steps, args.num_envs, policy_dim, critic_dim, action_dim, dev)
    start, global_step = time.perf_counter(), 0
    for it in bar:
        if args.lr_schedule == "linear":
            optimizer.param_groups[0]["lr"] = args.learning_rate * (1.0 - (it - 1) / num_iterations)
        buf.reset_stats()
        obs = collect(envs, agent, buf, obs, args, dev)
        global_step += steps_per_iter
        with torch.no_grad():
            last_value = agent.value(split_obs(obs, args.asymmetric, dev)[1])
        advantages, returns = compute_advantages(buf.rewards, buf.values, buf.terminated, buf.truncated,
                                                 buf.final_values, last_value, args.gamma, args.gae_lambda)
        losses = ppo_update(agent, optimizer, buf, advantages, returns, args, world)
        if args.norm_obs:  # after the update: the rollout and its update used the same statistics
            agent.policy_norm.update(buf.policy_obs)
            agent.critic_norm.update(buf.critic_obs)
        elapsed = time.perf_counter() - start
        row = log_row(it, global_step, elapsed, reduce_stats(buf.stats, dev), losses,
                      optimizer.param_groups[0]["lr"], steps_per_iter)
        if log is not None:
            log.write(row)
            bar.set_postfix(progress_postfix(row))
        if rank == 0 and args.save_interval and it % args.save_interval == 0:
            save_checkpoint(args, agent, optimizer, global_step, world, args.out_dir / f"checkpoint_{it}.pt")
        over = float(args.time_limit_s is not None and elapsed > args.time_limit_s)
        if all_reduce_(torch.tensor(over, device=dev), dist.ReduceOp.MAX if world > 1 else None).item() > 0:
            break
    finish(args, agent, optimizer, envs, rank, world, global_step, log, init_digest, reducer)


def save_checkpoint(args: Args, agent: Agent, optimizer: torch.optim.Optimizer, global_step: int, world: int,
                    path: Path) -> None:
    """The agent, the optimizer, the run's options and its step count (what the evaluators load)."""
    config = json.loads(json.dumps(asdict(args), default=str))
    torch.save({"agent": agent.state_dict(), "optimizer": optimizer.state_dict(), "args": config,
                "global_step": global_step, "world_size": world}, path)


def finish(args: Args, agent: Agent, optimizer: torch.optim.Optimizer, envs: gym.vector.VectorEnv, rank: int,
           world: int, global_step: int, log: CsvLog | None, init_digest: str,
           reducer: CurriculumReducer | None) -> None:
    """Checkpoint and shard report; close everything."""
    if rank == 0:
        assert log is not None
        log.close()
        save_checkpoint(args, agent, optimizer, global_step, world, args.out_dir / "checkpoint.pt")
        print(f"wrote {args.out_dir / 'progress.csv'} and {args.out_dir / 'checkpoint.pt'} ({global_step} steps)")
    if args.shard_report:
        base = envs.unwrapped
        args.out_dir.mkdir(parents=True, exist_ok=True)
        report = {"rank": rank, "world_size": world, "num_envs": base.num_envs,
                  "env_id_offset": int(base.backend.env_id_offset), "global_env_ids": base.global_env_ids.tolist(),
                  "variant_ids": np.asarray(base.backend.variant_of_env).tolist(), "param_digest": param_digest(agent),
                  "init_param_digest": init_digest, "global_step": global_step,
                  "curriculum_reductions": 0 if reducer is None else reducer.calls}
        if hasattr(base, "curriculum"):  # SimToolReal-v0
            report.update({"tool_ids": np.asarray(base.tool_ids).tolist(), "tolerance": float(base.tolerance),
                           "curriculum_steps": int(base.curriculum.steps)})
        (args.out_dir / f"rank{rank}.json").write_text(json.dumps(report))
    envs.close()
    if dist.is_initialized():
        # Every rank leaves together: a rank that tears gloo down while its peer still writes the
        # checkpoint can abort in gloo's threads ("terminate called without an active exception").
        dist.barrier()
        dist.destroy_process_group()


def parse_args(argv: list[str] | None = None) -> Args:
    """The options from the command line, starting from ``--config``'s file when one is given."""
    import yaml

    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--config", type=Path)
    known, _ = pre.parse_known_args(argv)
    if known.config is None:
        return tyro.cli(Args, args=argv)
    values = yaml.safe_load(known.config.read_text()) or {}
    unknown = sorted(set(values) - {f.name for f in dataclasses.fields(Args)})
    if unknown:
        raise SystemExit(f"{known.config}: unknown options {unknown}; the options are ppo.py's flags (see --help)")
    if "hidden" in values:
        values["hidden"] = tuple(values["hidden"])
    return tyro.cli(Args, default=Args(**{**values, "config": known.config}), args=argv)


if __name__ == "__main__":
    main(parse_args())
