"""What a pipelined step could gain: the batch as two halves stepped from two threads vs as one env.

A step is physics (the pool's threads, the GIL released) then serial host work on the calling
thread (the task layer, randomization draws, resets), during which the pool idles. Two envs, each
half of the batch (`env_id_offset` keeps the same global env ids, so the same tools, variants and
random streams), stepped at once from two Python threads, overlap one half's physics with the other
half's host work: the shape of a two-slice pipelined step, measured without changing `step`.

For each task and (num_envs, threads), one run interleaves, per repeat:

- whole: one env of num_envs envs on `threads` pool threads, stepped from the main thread;
- halves: two envs of num_envs / 2, each on its own pool of `threads` threads (cores are shared:
  on a machine with `threads` cores the two pools compete for them), stepped concurrently;
- halves-split: the same with each pool at threads / 2 (threads >= 2): the machine's cores split
  between the halves instead of oversubscribed;
- halves-barrier: the halves of halves-split stepped in lockstep, each step of one half on a helper
  thread while the main thread steps the other, joined after every step: the shape a synchronous
  `step()` of a pipelined env must have (it returns every env's row), unlike the free-running
  halves above, which is the shape of an asynchronous send/recv interface.

Printed: env-steps/s of each and the ratios to whole (medians over repeats). Every env is stepped
with uniform random actions (16 batches drawn once per env, cycled) and autoresets, as
`benchmarks.breakdown` steps it.

--policy puts a PPO rollout's inference in the loop instead (`Policy`: examples/ppo.py's actor and
critic MLPs, hidden 512-256-128 with ELU, on CPU torch): each env's next actions are sampled from
the observation its last step returned, so each half's inference can overlap the other half's
physics, as it would behind an asynchronous send/recv interface whose policy runs beside the
physics. torch runs with the same number of intra-op threads as the pool.

    python -m benchmarks.overlap [--tasks SimToolReal-v0] [--num-envs 64 256] [--threads 1 2] [--policy]
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import gymnasium as gym
import numpy as np
from tqdm import tqdm

import mjvec  # noqa: F401  (registers the tasks)
from benchmarks.breakdown import TASK_OPTIONS


class Policy:
    """A PPO rollout's inference per step, with examples/ppo.py's shapes: a Gaussian actor (mean MLP)
    on the policy observation and a critic MLP on the critic observation (the policy one when the
    space has no critic), hidden 512-256-128 with ELU, float32 on CPU torch. Weights and the action
    noise come from a torch.Generator seeded per policy (no global RNG); actions are clipped to
    the action space."""

    HIDDEN = (512, 256, 128)

    def __init__(self, observation_space: gym.Space, action_space: gym.spaces.Box, seed: int) -> None:
        import torch

        self.torch = torch
        self.generator = torch.Generator().manual_seed(seed)
        spaces = (observation_space.spaces if isinstance(observation_space, gym.spaces.Dict)
                  else {"policy": observation_space})
        dims = {k: int(np.prod(v.shape[1:])) for k, v in spaces.items()}  # batched spaces: (N, ...)
        act = int(np.prod(action_space.shape[1:]))
        self.actor = self._mlp(dims["policy"], act)
        self.critic = self._mlp(dims.get("critic", dims["policy"]), 1)
        self.low = torch.as_tensor(action_space.low, dtype=torch.float32)
        self.high = torch.as_tensor(action_space.high, dtype=torch.float32)
        self.dtype = action_space.dtype

    def _mlp(self, width: int, out: int) -> Any:
        nn = self.torch.nn
        layers = []
        for hidden in self.HIDDEN:
            layers += [nn.Linear(width, hidden), nn.ELU()]
            width = hidden
        net = nn.Sequential(*layers, nn.Linear(width, out))
        with self.torch.no_grad():
            for p in net.parameters():
                p.copy_(self.torch.randn(p.shape, generator=self.generator) / np.sqrt(max(1, p.shape[-1])))
        return net

    def __call__(self, obs: Any) -> np.ndarray:
        torch = self.torch
        policy, critic = (obs["policy"], obs["critic"]) if isinstance(obs, dict) else (obs, obs)
        with torch.no_grad():
            mean = self.actor(torch.as_tensor(policy, dtype=torch.float32))
            self.critic(torch.as_tensor(critic, dtype=torch.float32))
            sample = mean + 0.5 * torch.randn(mean.shape, generator=self.generator)
            actions = torch.minimum(torch.maximum(sample, self.low), self.high)
        return actions.numpy().astype(self.dtype, copy=False)


class Side:
    """Envs of one layout ((offset, num_envs, threads) each) stepped together, one thread per env;
    with `policy`, each env's actions come from its own `Policy` on its last observation."""

    def __init__(self, env_id: str, layout: list[tuple[int, int, int]], steps: int, barrier: bool = False,
                 policy: bool = False) -> None:
        self.barrier = ThreadPoolExecutor(max_workers=1) if barrier else None
        options = TASK_OPTIONS.get(env_id, {})
        self.envs = [gym.make_vec(env_id, num_envs=n, num_threads=t, env_id_offset=offset, **options)
                     for offset, n, t in layout]
        self.num_envs = sum(n for _, n, _ in layout)
        rng = np.random.default_rng(0)
        self.actions = []
        self.obs: list[Any] = []
        for env in self.envs:
            self.obs.append(env.reset(seed=0)[0])
            space = env.action_space
            self.actions.append([rng.uniform(space.low, space.high).astype(space.dtype) for _ in range(16)])
        self.policies = ([Policy(env.observation_space, env.action_space, seed=k) for k, env in enumerate(self.envs)]
                         if policy else None)
        self.steps = steps
        self.rates: list[float] = []

    def _step(self, k: int, i: int) -> None:
        """Env k's step i: its cycled random actions, or its policy's on its last observation."""
        cycled = self.actions[k]
        actions = cycled[i % len(cycled)] if self.policies is None else self.policies[k](self.obs[k])
        self.obs[k] = self.envs[k].step(actions)[0]

    def _loop(self, k: int) -> None:
        for i in range(self.steps):
            self._step(k, i)

    def _lockstep(self) -> None:
        """Two envs stepped together, each step of the first on the helper thread, joined every step."""
        for i in range(self.steps):
            pending = self.barrier.submit(self._step, 0, i)
            self._step(1, i)
            pending.result()

    def run(self) -> None:
        """One block: every env makes `steps` steps; records env-steps/s of the whole side."""
        if self.barrier is not None:
            start = time.perf_counter()
            self._lockstep()
            self.rates.append(self.num_envs * self.steps / (time.perf_counter() - start))
            return
        helpers = [threading.Thread(target=self._loop, args=(k,)) for k in range(1, len(self.envs))]
        start = time.perf_counter()
        for helper in helpers:
            helper.start()
        self._loop(0)
        for helper in helpers:
            helper.join()
        self.rates.append(self.num_envs * self.steps / (time.perf_counter() - start))

    def close(self) -> None:
        if self.barrier is not None:
            self.barrier.shutdown()
        for env in self.envs:
            env.close()


def sides(env_id: str, n: int, threads: int, steps: int, policy: bool = False) -> dict[str, Side]:
    """The sides measured for one (task, num_envs, threads)."""
    half = n // 2
    out = {"whole": Side(env_id, [(0, n, threads)], steps, policy=policy),
           "halves": Side(env_id, [(0, half, threads), (half, n - half, threads)], steps, policy=policy)}
    if threads >= 2:
        split = [(0, half, threads // 2), (half, n - half, threads - threads // 2)]
        out["halves-split"] = Side(env_id, split, steps, policy=policy)
        out["halves-barrier"] = Side(env_id, split, steps, barrier=True, policy=policy)
    return out


def main(argv: list[str] | None = None) -> dict[tuple[str, int, int], dict[str, Side]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", nargs="+", default=["SimToolReal-v0", "playground/Go1JoystickFlatTerrain-v0"])
    parser.add_argument("--num-envs", nargs="+", type=int, default=[64, 256])
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--steps", type=int, default=0, help="steps per block (0: about 20,000 env steps)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--policy", action="store_true", help="a PPO rollout's inference in the loop (see Policy)")
    args = parser.parse_args(argv)
    if args.policy:
        import torch

        torch.set_num_threads(max(args.threads))
    cases = {(task, n, t): sides(task, n, t, args.steps or max(4, 20_000 // n), args.policy)
             for task in args.tasks for n in args.num_envs for t in args.threads}
    every = [side for case in cases.values() for side in case.values()]
    for side in every:  # warm-up: first-call checks, caches, the first resets
        side.run()
        side.rates.clear()
    for _ in tqdm(range(args.repeats), desc="repeats", disable=None):
        for side in every:  # interleaved: a slow moment of the machine hits every side alike
            side.run()
    for (task, n, t), case in cases.items():
        print(report(task, n, t, case), flush=True)
    for side in every:
        side.close()
    return cases


def report(task: str, n: int, threads: int, case: dict[str, Side]) -> str:
    rate = {name: statistics.median(side.rates) for name, side in case.items()}
    parts = " | ".join(f"{name} {r:,.0f} env-steps/s ({r / rate['whole']:.2f}x)" for name, r in rate.items())
    return f"{task} num_envs={n} threads={threads}: {parts}"


if __name__ == "__main__":
    main()
