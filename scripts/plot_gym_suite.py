"""Plot docs/gym_suite.png from the --csv table of `python -m benchmarks.gym_suite` (or
docs/go1_joystick_bench.png from `python -m benchmarks.playground`'s, which has no Sync column).

    python scripts/plot_gym_suite.py docs/gym_suite.csv docs/gym_suite.png

Only ratios are plotted: each num_envs runs at its own time of a shared machine, so absolute
rates of different rows are not comparable; the sides of one row ran interleaved.
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

src, out = sys.argv[1], sys.argv[2]
with open(src) as f:
    rows = list(csv.DictReader(f))
tasks = list(dict.fromkeys(r["task"] for r in rows))
fig, axes = plt.subplots(1, len(tasks), figsize=(6 * len(tasks), 4.2), squeeze=False)
for ax, task in zip(axes[0], tasks, strict=True):
    for threads, color in (("1", "C0"), ("2", "C1")):
        sel = [r for r in rows if r["task"] == task and r["threads"] == threads]
        n = [int(r["num_envs"]) for r in sel]
        with_envpool = [r for r in sel if r["mjvec_vs_envpool"]]  # EnvPool may be skipped at some sizes
        if with_envpool:
            ax.plot([int(r["num_envs"]) for r in with_envpool], [float(r["mjvec_vs_envpool"]) for r in with_envpool],
                    "o-", color=color, label=f"mjvec / EnvPool 1.2.5, {threads} thread(s)")
        if sel and "mjvec_vs_sync" in sel[0]:
            ax.plot(n, [float(r["mjvec_vs_sync"]) for r in sel], "^:", color=color, alpha=0.7,
                    label=f"mjvec / Gymnasium SyncVectorEnv, {threads} thread(s)")
    ax.axhline(1.0, color="gray", lw=1, ls="--")
    sizes = sorted({int(r["num_envs"]) for r in rows if r["task"] == task})
    ax.set(xscale="log", xlabel="num_envs", ylabel="env-steps/s ratio", ylim=(0, None))
    ax.set_title(f"{task.split('/')[-1]}: ratios within one interleaved run", fontsize=10)
    ax.set_xticks(sizes, [str(s) for s in sizes])
    ax.minorticks_off()
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
fig.tight_layout()
fig.savefig(out, dpi=110)
