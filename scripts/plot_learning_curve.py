"""Plot a learning-curve PNG from a progress.csv of examples/ppo.py (any task).

    python scripts/plot_learning_curve.py progress.csv out.png "title" [window]

Left: mean episode return per iteration and its episode-weighted moving mean over `window`
iterations (default 38: one 600-step SimToolReal episode at 16 steps per iteration). Right: the
moving means of the per-step reward terms the CSV has (mean_r_*), the total, and, when the task
reports it, the cube's angular velocity about z (CubeRotate-v0, on its own axis).
"""
import csv
import sys

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt

src, out, title = sys.argv[1], sys.argv[2], sys.argv[3]
w = int(sys.argv[4]) if len(sys.argv) > 4 else 38
rows = list(csv.DictReader(open(src)))


def col(k):
    return np.array([float(r[k]) if r[k] not in ("", "nan") else np.nan for r in rows])


step, ret, eps = col("global_step"), col("mean_return"), col("episodes")


def binned(y, weights=None):
    """Trailing moving average over w iterations (episode-weighted for returns)."""
    ww = np.ones_like(y) if weights is None else weights.copy()
    ok = ~np.isnan(y) & (ww > 0)
    num = np.convolve(np.where(ok, y * ww, 0.0), np.ones(w), "valid")
    den = np.convolve(np.where(ok, ww, 0.0), np.ones(w), "valid")
    return step[w - 1:], num / np.maximum(den, 1e-12)


fig, (a, b) = plt.subplots(1, 2, figsize=(13, 4.2))
ok = ~np.isnan(ret)
a.plot(step[ok], ret[ok], ".", alpha=0.25, color="C0", label="per iteration (episodes finished in it)")
x, y = binned(ret, eps)
a.plot(x, y, "-", color="C0", lw=2, label=f"episode-weighted moving mean, {w} iterations")
a.set(title="mean episode return (raw reward)", xlabel="env steps",
      ylim=(np.nanpercentile(ret, 1) - 1, np.nanpercentile(ret, 99) + 1))
a.axhline(0, color="gray", lw=0.5)
a.legend(fontsize=8)
terms = ["mean_reward", *sorted(k for k in rows[0] if k.startswith("mean_r_"))]
for i, k in enumerate(terms):
    x, y = binned(col(k))
    b.plot(x, y, color="k" if i == 0 else f"C{i}", label=k.replace("mean_r_", "").replace("mean_reward", "total"))
b.axhline(0, color="gray", lw=0.5)
b.set(title=f"mean reward per env step (raw; moving mean, {w} iterations)", xlabel="env steps")
b.legend(fontsize=8, loc="upper left")
if "mean_cube_angvel_z" in rows[0]:
    c = b.twinx()
    x, y = binned(col("mean_cube_angvel_z"))
    c.plot(x, y, "--", color="C9", lw=2, label="cube angular velocity about z (rad/s, right axis)")
    c.set_ylabel("rad/s")
    c.legend(fontsize=8, loc="lower right")
fig.suptitle(title, fontsize=10)
fig.tight_layout()
fig.savefig(out, dpi=110)
print(out)  # noqa: T201
