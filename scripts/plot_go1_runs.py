"""Learning curves of Go1 joystick runs: examples/ppo.py's progress.csv and rsl_rl's TensorBoard log.

    python scripts/plot_go1_runs.py [--ppo RUN/progress.csv] [--rsl-rl RSL_LOG_DIR [RESUMED_DIR ...]] \\
        --out curves.png [--rsl-rl-csv rsl_rl.csv] [--num-envs 1024] [--title TITLE]

At least one of --ppo and --rsl-rl. Several --rsl-rl folders are one run and the runs that resumed
it (`examples/train_rsl_rl.py --resume`), in order: their iterations are concatenated, and a dotted
line marks each resume.

Three panels against env steps: the mean length of the episodes that ended (control steps), and
the two velocity-tracking terms per control step (weighted as in the reward: tracking_lin_vel x
1.0, tracking_ang_vel x 0.5). ppo.py logs the per-step mean of each term over all envs and steps of
an iteration; rsl_rl logs each ended episode's sum (``Episode_Reward/<term>``), divided here by
that iteration's mean episode length. --rsl-rl-csv writes those rsl_rl scalars as a CSV.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

TAGS = {"length": "Train/mean_episode_length", "lin": "Episode_Reward/tracking_lin_vel",
        "ang": "Episode_Reward/tracking_ang_vel", "reward": "Train/mean_reward"}


WINDOW = 10  # iterations in the plotted moving mean (the raw series is drawn faintly beneath)


def smooth(values: np.ndarray) -> np.ndarray:
    """The trailing mean over WINDOW iterations (NaNs, iterations where no episode ended, skipped)."""
    out = np.full(values.shape, np.nan)
    for i in range(values.size):
        window = values[max(0, i - WINDOW + 1):i + 1]
        if np.isfinite(window).any():
            out[i] = np.nanmean(window)
    return out


def ppo_curves(path: Path) -> dict[str, np.ndarray]:
    rows = list(csv.DictReader(path.open()))

    def col(key: str) -> np.ndarray:
        return np.array([float(r[key]) if r[key] not in ("", "nan") else np.nan for r in rows])

    return {"step": col("global_step"), "length": col("mean_length"), "lin": col("mean_r_tracking_lin_vel"),
            "ang": col("mean_r_tracking_ang_vel"), "time_s": col("time_s")}


def rsl_rl_curves(log_dirs: list[Path], num_envs: int, steps_per_env: int) -> dict[str, np.ndarray]:
    """The scalars of every iteration, in the order they were logged: train_rsl_rl.py's
    --time-limit-s runs one runner.learn per chunk, each with its own events file; the folders
    one after another. "resumes": the iteration index where each folder after the first begins."""
    records: dict[str, list[float]] = {key: [] for key in TAGS}
    resumes = []
    for i, log_dir in enumerate(log_dirs):
        if i:
            resumes.append(len(records["length"]))
        _read_rsl_rl(log_dir, records)
    length = np.array(records["length"])
    its = np.arange(length.size, dtype=float)
    out = {"iteration": its, "step": (its + 1) * num_envs * steps_per_env, "length": length,
           "reward": np.array(records["reward"]), "resumes": np.array(resumes, dtype=float)}
    for key in ("lin", "ang"):
        out[key] = np.array(records[key]) / np.maximum(length, 1.0)
    return out


def _read_rsl_rl(log_dir: Path, records: dict[str, list[float]]) -> None:
    files = sorted(log_dir.glob("events.out.tfevents*"), key=lambda f: int(f.name.split(".")[3]))
    for path in files:
        events = EventAccumulator(str(path), size_guidance={"scalars": 0})
        events.Reload()
        tags = set(events.Tags()["scalars"])
        if not set(TAGS.values()) <= tags:
            continue
        rows = [{e.step: e.value for e in events.Scalars(tag)} for tag in TAGS.values()]
        for it in sorted(set.intersection(*(set(r) for r in rows))):
            for key, row in zip(TAGS, rows, strict=True):
                records[key].append(row[it])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ppo", type=Path)
    parser.add_argument("--rsl-rl", type=Path, nargs="*", default=[])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--rsl-rl-csv", type=Path)
    parser.add_argument("--num-envs", type=int, default=1024)
    parser.add_argument("--rsl-rl-steps-per-env", type=int, default=24)
    parser.add_argument("--title", default="playground/Go1JoystickFlatTerrain-v0 on 2 CPU cores (one seed each)")
    args = parser.parse_args()
    if args.ppo is None and not args.rsl_rl:
        parser.error("nothing to plot: give --ppo RUN/progress.csv, --rsl-rl LOG_DIR, or both")
    if args.rsl_rl_csv is not None and not args.rsl_rl:
        parser.error("--rsl-rl-csv writes the --rsl-rl run's scalars: give --rsl-rl LOG_DIR too")
    ppo = None if args.ppo is None else ppo_curves(args.ppo)
    rsl = rsl_rl_curves(args.rsl_rl, args.num_envs, args.rsl_rl_steps_per_env) if args.rsl_rl else None
    if args.rsl_rl_csv is not None:  # the parser refused it without --rsl-rl: rsl is set
        keys = ("iteration", "step", "length", "reward", "lin", "ang")
        with args.rsl_rl_csv.open("w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["iteration", "global_step", "mean_episode_length", "mean_reward",
                             "tracking_lin_vel_per_step", "tracking_ang_vel_per_step"])
            writer.writerows(zip(*(rsl[k] for k in keys), strict=True))
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    titles = ("episode length (control steps)", "tracking_lin_vel per step (x 1.0)",
              "tracking_ang_vel per step (x 0.5)")
    for ax, key, title in zip(axes, ("length", "lin", "ang"), titles, strict=True):
        for run, label, color in ((ppo, "examples/ppo.py", "C0"), (rsl, "rsl_rl", "C1")):
            if run is None:
                continue
            ax.plot(run["step"] / 1e6, run[key], color=color, lw=0.6, alpha=0.35)
            ax.plot(run["step"] / 1e6, smooth(run[key]), color=color, lw=1.5, label=f"{label} (mean of {WINDOW})")
        for it in [] if rsl is None else rsl["resumes"]:
            ax.axvline((it + 1) * args.num_envs * args.rsl_rl_steps_per_env / 1e6, color="k", ls=":", lw=1,
                       label="rsl_rl resumed" if it == rsl["resumes"][0] else None)
        ax.set_title(title)
        ax.set_xlabel("env steps (millions)")
        ax.grid(alpha=0.3)
    axes[0].legend()
    fig.suptitle(args.title)
    fig.tight_layout()
    fig.savefig(args.out, dpi=90)


if __name__ == "__main__":
    main()
