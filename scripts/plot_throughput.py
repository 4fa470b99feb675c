"""Plot docs/throughput.png from the --csv table of `python -m benchmarks.throughput`.

    python scripts/plot_throughput.py docs/throughput.csv docs/throughput.png
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

src, out = sys.argv[1], sys.argv[2]
with open(src) as f:
    rows = list(csv.DictReader(f))
fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4.2))
for threads, color in (("1", "C0"), ("2", "C1")):
    sel = [r for r in rows if r["threads"] == threads]
    n = [int(r["num_envs"]) for r in sel]
    rate = [float(r["env_steps_per_s"]) for r in sel]
    limit = [int(threads) * float(r["r1"]) / 2 for r in sel]
    a.plot(n, rate, "o-", color=color, label=f"SimToolReal-v0 end-to-end, {threads} thread(s)")
    a.plot(n, limit, "--", color=color, alpha=0.6, label=f"L_cpu = {threads} x r1 / 2")
    b.plot(n, [float(r["e2e_vs_L_cpu"]) for r in sel], "o-", color=color, label=f"end-to-end / L_cpu, {threads} thr")
    b.plot(n, [float(r["physics_vs_limit"]) for r in sel], "s:", color=color, alpha=0.6,
           label=f"backend physics / (threads x r1), {threads} thr")
a.set(xscale="log", xlabel="num_envs", ylabel="env-steps/s", title="throughput, 600 tools, paper randomization")
b.axhline(0.85, color="gray", lw=1, ls="--", label="target 0.85")
b.set(xscale="log", xlabel="num_envs", ylabel="ratio", ylim=(0, 1.3), title="efficiency vs the physics limit")
for ax in (a, b):
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
fig.tight_layout()
fig.savefig(out, dpi=110)
