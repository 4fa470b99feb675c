"""Plot docs/ppo_learning_curve.png from a progress.csv of examples/ppo.py."""
import csv
import sys

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt

src, out, title = sys.argv[1], sys.argv[2], sys.argv[3]
rows = list(csv.DictReader(open(src)))


def col(k):
    return np.array([float(r[k]) if r[k] not in ("", "nan") else np.nan for r in rows])


step, ret, eps = col("global_step"), col("mean_return"), col("episodes")
w = 38  # iterations per window: one 600-step episode at 16 steps per iteration (episodes start in sync)
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
      ylim=(np.nanpercentile(ret, 1) - 10, np.nanpercentile(ret, 99)))
a.axhline(0, color="gray", lw=0.5)
a.legend(fontsize=8)
terms = (("mean_reward", "k"), ("mean_r_approach", "C1"), ("mean_r_lift", "C2"), ("mean_r_hand_speed", "C3"),
         ("mean_r_arm_speed", "C4"))
for k, c in terms:
    x, y = binned(col(k))
    b.plot(x, y, color=c, label=k.replace("mean_r_", "").replace("mean_reward", "total"))
b.axhline(0, color="gray", lw=0.5)
b.set(title=f"mean reward per env step (raw; moving mean, {w} iterations)", xlabel="env steps")
b.legend(fontsize=8)
fig.suptitle(title, fontsize=10)
fig.tight_layout()
fig.savefig(out, dpi=110)
print(out)  # noqa: T201
