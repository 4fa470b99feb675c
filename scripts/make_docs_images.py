"""Regenerate the README's images that the main command draws, or check that they are current.

    python scripts/make_docs_images.py           # rewrite docs/rollout_grid.png
    python scripts/make_docs_images.py --check   # exit 1 if the committed image is stale

docs/rollout_grid.png is exactly what the README's main command (`examples/rollout.py` with its
defaults) writes to out/rollout_grid.png: the run is seeded and its trajectories do not depend on
the thread count, so the image is deterministic on one machine. Software GL drivers of other
versions may shade a few edge pixels differently, so --check allows that much: at most
`MAX_CHANGED` of the pixels may differ by more than `TOLERANCE` levels in a channel (a stale image
differs in whole regions: the envs are in other poses). tests/test_first_contact.py runs --check.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
IMAGE = ROOT / "docs" / "rollout_grid.png"
TOLERANCE = 16
MAX_CHANGED = 0.005


def draw(out: Path) -> None:
    """Run the main command's rollout (its defaults) in a fresh process, writing the grid to `out`."""
    env = {**os.environ, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "osmesa")}
    subprocess.run([sys.executable, str(ROOT / "examples" / "rollout.py"), "--out", str(out)], check=True, env=env,
                   cwd=out.parent)


def changed_fraction(a: np.ndarray, b: np.ndarray) -> float:
    """Fraction of pixels differing by more than TOLERANCE in some channel (1.0 for other sizes)."""
    if a.shape != b.shape:
        return 1.0
    return float((np.abs(a.astype(np.int16) - b.astype(np.int16)).max(axis=-1) > TOLERANCE).mean())


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="compare with the committed image instead of writing it")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        fresh = Path(tmp) / "rollout_grid.png"
        draw(fresh)
        if not args.check:
            IMAGE.write_bytes(fresh.read_bytes())
            print(f"wrote {IMAGE.relative_to(ROOT)}")  # noqa: T201
            return 0
        now, committed = (np.asarray(Image.open(path).convert("RGB")) for path in (fresh, IMAGE))
        frac = changed_fraction(now, committed)
    if frac > MAX_CHANGED:
        stale = (f"{IMAGE.relative_to(ROOT)} is stale: {frac:.1%} of its pixels differ from what examples/rollout.py "
                 f"draws now (allowed {MAX_CHANGED:.1%}); run: python scripts/make_docs_images.py")
        print(stale)  # noqa: T201
        return 1
    print(f"{IMAGE.relative_to(ROOT)} is current ({frac:.2%} of pixels differ, allowed {MAX_CHANGED:.1%})")  # noqa: T201
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
