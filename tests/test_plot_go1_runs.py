"""scripts/plot_go1_runs.py: its ppo.py reader against the CSV's own columns, a ppo-only plot, and
its refusals (nothing to plot; an rsl_rl CSV without an rsl_rl run)."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.subprocesses import ROOT, checkout_env

SCRIPT = ROOT / "scripts" / "plot_go1_runs.py"
COLUMNS = ("iteration", "global_step", "mean_length", "mean_r_tracking_lin_vel", "mean_r_tracking_ang_vel", "time_s")


def _write_progress(path: Path) -> np.ndarray:
    """A ppo.py-shaped progress.csv; one iteration where no episode ended (empty mean_length)."""
    rows = np.array([[1, 4096, 20.0, 0.15, 0.16, 10.0], [2, 8192, np.nan, 0.2, 0.18, 20.0],
                     [3, 12288, 950.0, 0.9, 0.41, 30.0]])
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(COLUMNS)
        for row in rows:
            writer.writerow(["" if np.isnan(v) else repr(float(v)) for v in row])
    return rows


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                          env=checkout_env(MPLBACKEND="Agg"), timeout=300)


def test_ppo_reader_returns_the_csv_columns(tmp_path: Path) -> None:
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import plot_go1_runs
    finally:
        sys.path.remove(str(SCRIPT.parent))
    rows = _write_progress(tmp_path / "progress.csv")
    curves = plot_go1_runs.ppo_curves(tmp_path / "progress.csv")
    for key, col in (("step", 1), ("length", 2), ("lin", 3), ("ang", 4), ("time_s", 5)):
        np.testing.assert_array_equal(curves[key], rows[:, col])
    smoothed = plot_go1_runs.smooth(curves["length"])
    np.testing.assert_allclose(smoothed, [20.0, 20.0, 485.0])


def test_a_ppo_run_alone_is_plotted(tmp_path: Path) -> None:
    _write_progress(tmp_path / "progress.csv")
    out = tmp_path / "curves.png"
    done = _run("--ppo", str(tmp_path / "progress.csv"), "--out", str(out), "--title", "one run")
    assert done.returncode == 0, done.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_nothing_to_plot_is_refused(tmp_path: Path) -> None:
    done = _run("--out", str(tmp_path / "curves.png"))
    assert done.returncode == 2
    assert "nothing to plot: give --ppo RUN/progress.csv, --rsl-rl LOG_DIR, or both" in done.stderr
    assert not (tmp_path / "curves.png").exists()


@pytest.mark.parametrize("with_ppo", [False, True])
def test_an_rsl_rl_csv_without_an_rsl_rl_run_is_refused(tmp_path: Path, with_ppo: bool) -> None:
    _write_progress(tmp_path / "progress.csv")
    ppo = ["--ppo", str(tmp_path / "progress.csv")] if with_ppo else []
    done = _run(*ppo, "--rsl-rl-csv", str(tmp_path / "rsl.csv"), "--out", str(tmp_path / "curves.png"))
    assert done.returncode == 2
    expected = ("--rsl-rl-csv writes the --rsl-rl run's scalars: give --rsl-rl LOG_DIR too" if with_ppo
                else "nothing to plot")
    assert expected in done.stderr
    assert not (tmp_path / "rsl.csv").exists()
