"""The runnable examples at the top of `mjvec.envs.base` (a task subclass) and `mjvec.contract` (a
wrapper) run as written, each in its own process, and do what their comments say."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import mjvec.contract
import mjvec.envs.base

REPO = Path(__file__).resolve().parents[1]


def example(module) -> str:
    """The first ``::`` block of a module docstring, dedented."""
    doc = module.__doc__
    block = doc[doc.index("::\n") + 3:]
    lines = []
    for line in block.splitlines():
        if line and not line.startswith("    "):
            break
        lines.append(line)
    return textwrap.dedent("\n".join(lines))


CHECKS = {
    "base": (mjvec.envs.base, "env = gym.make_vec('Slide-v0', num_envs=8)\n"
                              "obs, info = env.reset(seed=0)\n"
                              "assert obs.shape == (8, 2) and abs(obs[:, 0]).max() <= 0.5\n"
                              "obs, reward, term, trunc, info = env.step(np.zeros((8, 1), np.float32))\n"
                              "assert np.array_equal(reward, -abs(obs[:, 0]))\n"
                              "print('ok', type(env.unwrapped).__name__)"),
    "contract": (mjvec.contract, "assert env.unwrapped.hook_registrations()['action_transforms'] == 1\n"
                                 "env.close()\n"
                                 "assert env.unwrapped.hook_registrations()['action_transforms'] == 0\n"
                                 "print('ok', type(env).__name__)"),
}


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_the_module_example_runs_as_written(name: str) -> None:
    module, check = CHECKS[name]
    code = example(module) + "\n" + check
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300,
                            env={"PYTHONPATH": str(REPO), "MUJOCO_GL": "osmesa", "PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, f"{code}\n--- stderr ---\n{result.stderr[-3000:]}"
    assert result.stdout.split()[0] == "ok"
    assert len(example(module).splitlines()) <= 25
