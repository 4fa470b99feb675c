"""The rollout command's outputs and Warp buffer flags: every failure is one line and exit 2.

- A disk that is full when the frames are written (a link to ``/dev/full``: every write fails with ENOSPC,
  although opening it succeeds, so the check made before the rollout passes) names the flag, the
  path and the reason, instead of a traceback after the whole rollout ran.
- ``--nconmax`` / ``--njmax`` reach make_vec (refused there on the CPU backend, whose buffers grow,
  with make_vec's own message), and ``--option nconmax=...`` points to the flag.
"""

from __future__ import annotations

import pytest

from mjvec.cli import commands as cli

TINY = ["--option", "num_tools=3", "--option", "randomization=none", "--option", "max_episode_steps=8",
        "--num-envs", "2", "--steps", "2", "--render-size", "32", "32"]


def _one_line(capsys, status: int) -> str:
    """The error line (the last of stderr; the progress lines of a rollout that ran come before it)."""
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]
    assert status == 2 and "error: " in last and "Traceback" not in err, (status, err)
    return last


@pytest.mark.parametrize("flag", ["--grid", "--gif"])
def test_a_full_disk_at_write_time_is_one_line_naming_the_path(flag, capsys, tmp_path):
    full = tmp_path / f"out.{flag[2:].replace('grid', 'png')}"
    full.symlink_to("/dev/full")  # a file name with the image's extension, on a disk with no space
    err = _one_line(capsys, cli.main(["rollout", *TINY, flag, str(full)]))
    assert f"{flag} '{full}' could not be written (No space left on device); free space" in err, err


def test_buffer_size_flags_reach_make_vec(capsys):
    err = _one_line(capsys, cli.main(["rollout", *TINY, "--nconmax", "64"]))
    assert "nconmax/njmax (got nconmax=64, njmax=None) size the fixed contact and constraint buffers" in err, err
    assert "backend='cpu' grows its buffers as needed: drop them" in err
    err = _one_line(capsys, cli.main(["rollout", *TINY, "--option", "njmax=64"]))
    assert "--option njmax=64 collides with what rollout sets itself: use --njmax" in err, err
    err = _one_line(capsys, cli.main(["rollout", *TINY, "--njmax", "0"]))
    assert "argument --njmax: must be an int >= 1, got 0" in err, err
