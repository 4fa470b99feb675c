"""PPO (Stable-Baselines3) on any mjvec task (SimToolReal-v0 by default) through `mjvec.integrations.sb3.SB3VecEnv`.

    python examples/train_sb3.py --num-envs 64 --total-timesteps 2000000
    python examples/train_sb3.py --env-id CubeRotate-v0 --randomization none
    python examples/train_sb3.py --env-id mjvec/HalfCheetah-v5 --randomization none   # Gymnasium's suite
    python examples/train_sb3.py --env-id mjvec/Hopper-v5 --randomization none --cameras depth --frame-stack 2
    python examples/train_sb3.py --help

With --cameras (depth on any backend; rgb, rgbd, segmentation on Warp) the observation is a Dict of
the task's vector ("policy") and the images, the policy SB3's MultiInputPolicy (a NatureCNN per
image, so --camera-size at least 36), and VecNormalize normalizes the "policy" vector only.

The env runs in SAME_STEP autoreset mode (what SB3 expects) under `VecNormalize`. With many envs,
keep `n_steps` small (16-64): one PPO iteration is num_envs x n_steps transitions. Everything goes
to --run-dir (default out/sb3_ppo/<time>):

- checkpoints/ppo_<steps>_steps.zip + ppo_vecnormalize_<steps>_steps.pkl, every --checkpoint-every env steps
- progress.csv: one row per PPO iteration: mean return, length and success of the episodes that
  ended in it, the mean return of the last 100 episodes (SB3's ep_rew_mean), env-steps/s over the
  iteration's wall time (rollout + update); learning_curve.png from it when matplotlib is installed
- tb/: TensorBoard (SB3's rollout/train scalars, plus rollout/success_rate per iteration)
- final_model.zip, vecnormalize.pkl, args.json
- eval.json: `evaluate_policy` of the final policy (deterministic) on held-out env ids, next to a
  uniformly random policy's return on the same envs
- policy.gif: the final policy on the first --video-envs eval envs, drawn from env.render_grid()
"""

from __future__ import annotations

import copy
import csv
import dataclasses
import json
import logging
import os
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

os.environ.setdefault("MUJOCO_GL", "osmesa")  # headless; set MUJOCO_GL=egl on a GPU machine

import gymnasium as gym
import numpy as np
from tqdm import TqdmExperimentalWarning, tqdm

import mjvec  # noqa: F401  (registers the tasks)
from mjvec.envs.cameras import CameraObs
from mjvec.errors import missing_extra
from mjvec.integrations.video import write_gif

try:  # the train extra: say how to install it rather than stop at a bare ModuleNotFoundError
    import torch
    import tyro
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback, CheckpointCallback
    from stable_baselines3.common.evaluation import evaluate_policy
    from stable_baselines3.common.vec_env import VecNormalize

    from mjvec.integrations.sb3 import SB3VecEnv
except ImportError as _error:
    print(missing_extra("train", _error, "examples/train_sb3.py"), file=sys.stderr)
    raise SystemExit(2) from None

log = logging.getLogger("train_sb3")
CSV_FIELDS = ("iteration", "timesteps", "episodes", "ep_return_mean", "ep_length_mean", "success_rate",
              "ep_return_mean_100", "env_steps_per_s", "elapsed_s")


@dataclass(frozen=True)
class Args:
    """PPO on an mjvec task with Stable-Baselines3."""

    env_id: str = "SimToolReal-v0"
    """the registered environment id (python -m mjvec list)"""
    num_envs: int = 64
    total_timesteps: int = 2_000_000
    time_limit_s: float | None = None
    """stop training after this many seconds (checked every env step)"""
    n_steps: int = 32
    """rollout length per env and iteration (small for many envs: 16-64)"""
    batch_size: int | None = None
    """minibatch size; None: a quarter of num_envs x n_steps"""
    n_epochs: int = 5
    learning_rate: float = 3e-4
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip_range: float = 0.2
    ent_coef: float = 0.0
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    net_arch: tuple[int, ...] = (256, 256)
    """hidden layers of the actor and (separately) of the critic"""
    activation: Literal["tanh", "relu"] = "tanh"
    """hidden-layer activation (SB3's default tanh; rl-baselines3-zoo's MuJoCo settings use relu)"""
    ortho_init: bool = True
    """orthogonal weight initialization (SB3's default)"""
    log_std_init: float = 0.0
    """initial log standard deviation of the Gaussian policy"""
    num_tools: int | None = None
    """SimToolReal-v0: tools in use (None: the task's 600)"""
    randomization: Literal["paper", "locomotion", "none"] = "paper"
    """a preset of the task ("paper": SimToolReal-v0's and CubeRotate-v0's; "locomotion": the
    Gymnasium MuJoCo suite's), or the bare task"""
    max_episode_steps: int | None = None
    """None: the task's (SimToolReal: 599 control steps)"""
    num_threads: int | None = None
    cameras: Literal["none", "depth", "rgb", "rgbd", "segmentation"] = "none"
    """camera observations over the task's own cameras (mjvec.envs.cameras)"""
    camera_size: int = 36
    """side of every camera image, pixels"""
    frame_stack: int = 1
    render_every: int = 1
    seed: int = 0
    device: str = "cpu"
    """torch device of the policy"""
    torch_threads: int | None = 1
    """torch intra-op threads (None: torch's default); the simulator has its own thread pool, and
    torch's spinning worker threads would compete with it for the cores"""
    checkpoint_every: int = 200_000
    """env steps between checkpoints"""
    eval_envs: int = 4
    eval_episodes: int = 8
    video_envs: int = 4
    video_steps: int = 200
    video_every: int = 2
    """record every k-th control step"""
    render_size: tuple[int, int] = (180, 240)
    run_dir: Path | None = None
    progress_bar: bool = True


class CsvProgress(BaseCallback):
    """One CSV row per PPO iteration with the episodes that ended during its rollout."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        self.rows: list[dict[str, Any]] = []
        self._episodes: list[tuple[float, int, bool]] = []
        self._t0 = self._t_iter = time.perf_counter()
        self._steps_iter = 0

    def _on_training_start(self) -> None:
        with self.path.open("w", newline="") as f:
            csv.writer(f).writerow(CSV_FIELDS)
        self._t0 = self._t_iter = time.perf_counter()
        self._steps_iter = self.model.num_timesteps

    def _on_step(self) -> bool:
        for info in self.locals["infos"]:
            episode = info.get("episode")
            if episode is not None:
                self._episodes.append((episode["r"], episode["l"], bool(info.get("is_success", False))))
        return True

    def _on_rollout_end(self) -> None:
        now = time.perf_counter()
        eps = np.array(self._episodes, dtype=np.float64).reshape(-1, 3)
        row = {
            "iteration": len(self.rows) + 1,
            "timesteps": self.model.num_timesteps,
            "episodes": len(eps),
            "ep_return_mean": float(eps[:, 0].mean()) if len(eps) else float("nan"),
            "ep_length_mean": float(eps[:, 1].mean()) if len(eps) else float("nan"),
            "success_rate": float(eps[:, 2].mean()) if len(eps) else float("nan"),
            # SB3's ep_rew_mean: the last 100 episodes, whichever iteration they ended in.
            "ep_return_mean_100": (float(np.mean([e["r"] for e in self.model.ep_info_buffer]))
                                   if self.model.ep_info_buffer else float("nan")),
            "env_steps_per_s": (self.model.num_timesteps - self._steps_iter) / max(now - self._t_iter, 1e-9),
            "elapsed_s": now - self._t0,
        }
        self.rows.append(row)
        if len(eps):
            self.logger.record("rollout/success_rate", row["success_rate"])
        with self.path.open("a", newline="") as f:
            csv.DictWriter(f, CSV_FIELDS).writerow(row)
        self._episodes.clear()
        self._t_iter, self._steps_iter = now, self.model.num_timesteps


class TimeLimit(BaseCallback):
    """Stops `learn` once `limit_s` seconds have passed since training started."""

    def __init__(self, limit_s: float) -> None:
        super().__init__()
        self.limit_s, self._t0 = limit_s, time.perf_counter()

    def _on_training_start(self) -> None:
        self._t0 = time.perf_counter()

    def _on_step(self) -> bool:
        return time.perf_counter() - self._t0 < self.limit_s


def make_env(args: Args, num_envs: int, *, env_id_offset: int = 0, render: bool = False) -> SB3VecEnv:
    extra = {} if args.num_tools is None else {"num_tools": args.num_tools}  # only for tasks that have it
    if args.cameras != "none":
        extra.update(cameras=CameraObs(args.cameras, size=(args.camera_size, args.camera_size)),
                     frame_stack=args.frame_stack, render_every=args.render_every)
    env = gym.make_vec(
        args.env_id, num_envs=num_envs, num_threads=args.num_threads,
        randomization=None if args.randomization == "none" else args.randomization,
        max_episode_steps=args.max_episode_steps, autoreset_mode="same_step", env_id_offset=env_id_offset,
        render_mode="rgb_array" if render else None, render_size=args.render_size, **extra,
    )
    return SB3VecEnv(env)


def plot_learning_curve(rows: list[dict[str, Any]], path: Path, title: str = "SimToolReal-v0") -> Path | None:
    """Mean episode return per iteration vs env steps; None (with a note) without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log.info("matplotlib is not installed: skipped %s (pip install matplotlib; the data is in progress.csv)",
                 path.name)
        return None
    steps = np.array([r["timesteps"] for r in rows])
    per_iter = np.array([r["ep_return_mean"] for r in rows])
    rolling = np.array([r["ep_return_mean_100"] for r in rows])
    fig, ax = plt.subplots(figsize=(6, 4))
    seen = np.isfinite(per_iter)
    ax.plot(steps[seen], per_iter[seen], ".", alpha=0.5, label="episodes ended in the iteration")
    ax.plot(steps, rolling, "-", label="last 100 episodes")
    ax.legend()
    ax.set_xlabel("env steps")
    ax.set_ylabel("mean episode return")
    ax.set_title(f"PPO on {title}")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def record_video(model: PPO, env: VecNormalize, args: Args, path: Path) -> Path:
    """The deterministic policy on the first video_envs envs of `env`, as a GIF."""
    base = env.venv.env.unwrapped
    ids = np.arange(min(args.video_envs, env.num_envs))
    obs = env.reset()
    frames = [base.render_grid(ids)]
    steps = tqdm(range(1, args.video_steps + 1), desc=f"recording {path.name}", unit="step", leave=False,
                 disable=not args.progress_bar)
    for t in steps:
        action, _ = model.predict(obs, deterministic=True)
        obs, *_ = env.step(action)
        if t % args.video_every == 0:
            frames.append(base.render_grid(ids))
    return write_gif(path, frames, fps=base.metadata["render_fps"] / args.video_every)


def random_policy_returns(env: VecNormalize, episodes: int, seed: int) -> list[float]:
    """Returns of `episodes` episodes of uniformly random actions on `env` (its unnormalized rewards)."""
    rng = np.random.default_rng(seed)
    space = env.action_space
    env.reset()
    returns, running = [], np.zeros(env.num_envs)
    while len(returns) < episodes:
        _, _, dones, _ = env.step(rng.uniform(space.low, space.high, (env.num_envs, *space.shape)))
        running += env.get_original_reward()
        for i in np.flatnonzero(dones):
            returns.append(float(running[i]))
            running[i] = 0.0
    return returns[:episodes]


def main(args: Args) -> dict[str, Any]:
    if args.torch_threads:
        torch.set_num_threads(args.torch_threads)
    run_dir = args.run_dir or Path("out/sb3_ppo") / time.strftime("%Y%m%d-%H%M%S")
    (run_dir / "checkpoints").mkdir(parents=True, exist_ok=True)
    (run_dir / "args.json").write_text(json.dumps(dataclasses.asdict(args), default=str, indent=2))
    images = args.cameras != "none"
    keys = {"norm_obs_keys": ["policy"]} if images else {}  # images are not normalized: NatureCNN scales them
    env = VecNormalize(make_env(args, args.num_envs), gamma=args.gamma, **keys)
    batch_size = args.batch_size or max(2, args.num_envs * args.n_steps // 4)
    model = PPO(
        "MultiInputPolicy" if images else "MlpPolicy", env, n_steps=args.n_steps, batch_size=batch_size,
        n_epochs=args.n_epochs,
        learning_rate=args.learning_rate, gamma=args.gamma, gae_lambda=args.gae_lambda, clip_range=args.clip_range,
        ent_coef=args.ent_coef, vf_coef=args.vf_coef, max_grad_norm=args.max_grad_norm,
        policy_kwargs={"net_arch": list(args.net_arch), "log_std_init": args.log_std_init,
                       "activation_fn": {"tanh": torch.nn.Tanh, "relu": torch.nn.ReLU}[args.activation],
                       "ortho_init": args.ortho_init},
        seed=args.seed, device=args.device, tensorboard_log=str(run_dir / "tb"),
    )
    progress = CsvProgress(run_dir / "progress.csv")
    checkpoints = CheckpointCallback(
        save_freq=max(1, args.checkpoint_every // args.num_envs), save_path=str(run_dir / "checkpoints"),
        name_prefix="ppo", save_vecnormalize=True,
    )
    log.info("training PPO: %d envs x %d steps per iteration, %d env steps -> %s",
             args.num_envs, args.n_steps, args.total_timesteps, run_dir)
    t0 = time.perf_counter()
    callbacks: list[BaseCallback] = [checkpoints, progress]
    if args.time_limit_s is not None:
        callbacks.append(TimeLimit(args.time_limit_s))
    model.learn(args.total_timesteps, callback=callbacks, progress_bar=args.progress_bar)
    train_s = time.perf_counter() - t0
    model.save(run_dir / "final_model.zip")
    env.save(str(run_dir / "vecnormalize.pkl"))
    curve = plot_learning_curve(progress.rows, run_dir / "learning_curve.png", args.env_id)

    # Held-out env ids (their own tools and random streams), the training normalization, frozen.
    eval_env = VecNormalize(make_env(args, args.eval_envs, env_id_offset=args.num_envs, render=True),
                            training=False, norm_reward=False, **keys)
    eval_env.obs_rms = copy.deepcopy(env.obs_rms)
    eval_env.seed(args.seed + 1)
    log.info("evaluating the final policy: %d episodes on %d held-out envs", args.eval_episodes, args.eval_envs)
    with tqdm(total=args.eval_episodes, desc="evaluation", unit="episode", leave=False,
              disable=not args.progress_bar) as bar:
        def count_episodes(local: dict[str, Any], _: dict[str, Any]) -> None:
            bar.update(int(np.sum(local["episode_counts"])) - bar.n)

        returns, lengths = evaluate_policy(model, eval_env, n_eval_episodes=args.eval_episodes, deterministic=True,
                                           return_episode_rewards=True, callback=count_episodes)
    random_returns = random_policy_returns(eval_env, args.eval_episodes, args.seed)
    evaluation = {"episodes": len(returns), "return_mean": float(np.mean(returns)),
                  "return_std": float(np.std(returns)), "length_mean": float(np.mean(lengths)),
                  "returns": [float(r) for r in returns], "lengths": [int(n) for n in lengths],
                  "random_return_mean": float(np.mean(random_returns)),
                  "random_returns": [float(r) for r in random_returns]}
    (run_dir / "eval.json").write_text(json.dumps(evaluation, indent=2))
    log.info("recording policy.gif: %d steps of the first %d eval envs", args.video_steps,
             min(args.video_envs, args.eval_envs))
    video = record_video(model, eval_env, args, run_dir / "policy.gif")
    env.close()
    eval_env.close()
    print(f"trained {model.num_timesteps} env steps in {train_s:.1f} s ({model.num_timesteps / train_s:,.0f} "
          f"env-steps/s incl. updates); eval return {evaluation['return_mean']:.2f} +- "
          f"{evaluation['return_std']:.2f} over {evaluation['episodes']} episodes (a random policy: "
          f"{evaluation['random_return_mean']:.2f})")
    print(f"run dir: {run_dir} (final_model.zip, vecnormalize.pkl, progress.csv, eval.json, {video.name}"
          f"{', ' + curve.name if curve else ''})")
    return {"run_dir": run_dir, "eval": evaluation, "video": video, "curve": curve}


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    warnings.filterwarnings("ignore", category=TqdmExperimentalWarning)
    main(tyro.cli(Args))
