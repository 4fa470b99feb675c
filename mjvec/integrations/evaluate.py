"""Evaluate a policy on held-out envs: one full episode in each of `num_envs` envs whose global
ids start at `env_id_offset` (ids training never used), from ``reset(seed)``.

Reported (`evaluate` returns a dict; ``python -m mjvec eval`` prints it):

- ``success_rate``: the fraction of episodes that succeeded. Success is the env's own episode
  success when the task defines one (``info["episode"]["success"]``; SimToolReal-v0: at least one
  goal reached); for a task without one (CubeRotate-v0) an episode succeeds when it ran to its time
  limit (truncated, not terminated: the cube was not dropped). ``success_definition`` says which.
- ``return_mean`` / ``return_std``, ``length_mean`` (control steps);
- ``per_variant``: for each variant (tool, cube) held by some env, its episodes and successes;
  ``failing_variants``: the variants none of whose episodes succeeded; ``per_category`` for
  variants that name a category (SimToolReal-v0's tools: hammer, marker, ...).
- with `gif` / `grid`: a GIF of the first `video_envs` envs over the first `video_steps` steps and
  a PNG of their last frame.

The env runs in DISABLED autoreset mode: an env that finished is reset (so the batch keeps
stepping) and its later steps are not counted. Before the first step the policy's contract is
checked against the env's (`mjvec.integrations.contract_check.check_policy_env`); ``contract`` in
the summary says how it went ("matches", "allowed mismatch: <first difference>", "none").
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from tqdm import tqdm

from mjvec.envs.arrays import to_numpy
from mjvec.errors import ConfigError
from mjvec.integrations.contract_check import check_policy_env
from mjvec.integrations.policies import Policy

__all__ = ["evaluate"]

# Options `evaluate` sets itself.
FIXED = ("num_envs", "env_id_offset", "autoreset_mode", "record_episode_statistics", "render_mode", "render_size")


def evaluate(policy: Policy, env_id: str, *, num_envs: int = 64, env_id_offset: int = 100_000, seed: int = 12345,
             options: dict[str, Any] | None = None, gif: str | Path | None = None, grid: str | Path | None = None,
             video_envs: int = 4, video_steps: int = 120, render_size: tuple[int, int] = (180, 240),
             progress: bool = True, allow_mismatch: bool = False) -> dict[str, Any]:
    """Run `policy` for one episode in each env (see the module docstring); returns the summary.
    Raises `ContractMismatchError` for a policy whose contract differs from the env's, unless
    `allow_mismatch`."""
    options = dict(options or {})
    clash = sorted(set(options) & set(FIXED))
    if clash:
        raise ConfigError(f"evaluate sets {clash} itself; remove them from the env options")
    if num_envs < 1 or env_id_offset < 0:
        raise ConfigError(f"num_envs must be >= 1 and env_id_offset >= 0, got {num_envs} and {env_id_offset}")
    render = gif is not None or grid is not None
    env = gym.make_vec(env_id, num_envs=num_envs, env_id_offset=env_id_offset, autoreset_mode="disabled",
                       record_episode_statistics=True, render_mode="rgb_array" if render else None,
                       render_size=render_size, **options)
    try:
        differences = check_policy_env(policy, env, allow_mismatch=allow_mismatch)
        result, frames = _run(env, policy, seed, video_envs if render else 0, video_steps, progress)
        result["contract"] = (f"allowed mismatch: {differences[0].describe()}" if differences
                              else "matches" if policy.contract is not None else "none")
        ids = np.arange(min(video_envs, num_envs))
        if frames:
            from mjvec.integrations.video import write_gif, write_png

            if gif is not None:
                result["gif"] = str(write_gif(gif, frames, fps=env.metadata["render_fps"]))
            if grid is not None:
                result["grid"] = str(write_png(grid, frames[-1]))
        elif grid is not None:
            result["grid"] = str(_write_grid(env, ids, grid))
    finally:
        env.close()
    result.update({"env_id": env_id, "num_envs": num_envs, "env_id_offset": env_id_offset, "seed": seed,
                   "options": {k: repr(v) for k, v in options.items()}, "policy": policy.kind})
    return result


def _write_grid(env: Any, ids: np.ndarray, path: str | Path) -> Path:
    from mjvec.integrations.video import write_png

    return write_png(path, env.unwrapped.render_grid(ids))


def _run(env: Any, policy: Policy, seed: int, video_envs: int, video_steps: int,
         progress: bool) -> tuple[dict[str, Any], list[np.ndarray]]:
    n, base = env.num_envs, env.unwrapped
    obs, _ = env.reset(seed=seed)
    policy.flatten(obs)  # refuses a policy trained on other observations before any step
    running = np.ones(n, bool)
    returns, lengths, success = np.zeros(n), np.zeros(n, np.int64), np.zeros(n, bool)
    own_success = None
    ids = np.arange(min(video_envs, n))
    frames = [base.render_grid(ids)] if video_envs else []
    bar = tqdm(total=n, desc="eval episodes", unit="ep", disable=not progress, leave=False)
    t = 0
    while running.any():
        obs, _, term, trunc, info = env.step(policy(obs))
        t += 1
        term, trunc = np.asarray(to_numpy(term), bool), np.asarray(to_numpy(trunc), bool)
        done = running & (term | trunc)
        if done.any():
            episode = {k: np.asarray(to_numpy(v)) for k, v in info["episode"].items()}
            own_success = "success" in episode if own_success is None else own_success
            returns[done], lengths[done] = episode["r"][done], episode["l"][done]
            success[done] = episode["success"][done] if own_success else (trunc & ~term)[done]
            running &= ~done
            bar.update(int(done.sum()))
        if video_envs and t <= video_steps:
            frames.append(base.render_grid(ids))
        if (term | trunc).any():
            obs, _ = env.reset(options={"reset_mask": term | trunc})
    bar.close()
    return _summary(base, returns, lengths, success, bool(own_success)), frames


def _summary(base: Any, returns: np.ndarray, lengths: np.ndarray, success: np.ndarray,
             own_success: bool) -> dict[str, Any]:
    variants = np.asarray(base.backend.variant_of_env, np.int64)
    per_variant: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for v, ok in zip(variants.tolist(), success.tolist(), strict=True):
        per_variant[v][0] += 1
        per_variant[v][1] += int(ok)
    catalog = getattr(base, "catalog", None)
    per_category: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for v, (episodes, wins) in per_variant.items():
        category = getattr(catalog[v], "category", None) if catalog is not None else None
        if category is not None:
            per_category[category][0] += episodes
            per_category[category][1] += wins
    return {
        "episodes": int(success.size),
        "success_rate": float(success.mean()),
        "success_definition": "the env's episode success" if own_success else "reached the time limit (not terminated)",
        "return_mean": float(returns.mean()), "return_std": float(returns.std()),
        "length_mean": float(lengths.mean()),
        "per_variant": {int(v): {"episodes": e, "successes": s} for v, (e, s) in sorted(per_variant.items())},
        "failing_variants": sorted(int(v) for v, (_, s) in per_variant.items() if s == 0),
        "per_category": {c: {"episodes": e, "successes": s, "success_rate": s / e}
                         for c, (e, s) in sorted(per_category.items())},
    }
