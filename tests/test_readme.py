"""Every Python block of the README runs as written (each in its own process, from the repository
root), and the README opens with the two commands of the project."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
BLOCKS = re.findall(r"```python\n(.*?)```", README, flags=re.S)


def test_the_readme_opens_with_the_main_job_and_the_test_command() -> None:
    first = re.search(r"```bash\n(.*?)```", README, flags=re.S)
    assert first is not None
    assert first.group(1).strip().splitlines() == [
        "bash scripts/setup.sh && .venv/bin/python examples/rollout.py", "bash scripts/test.sh"]


@pytest.mark.parametrize("index", range(len(BLOCKS)), ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_readme_python_block_runs_as_written(index: int, tmp_path: Path) -> None:
    code = BLOCKS[index]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MUJOCO_GL": os.environ.get("MUJOCO_GL", "osmesa")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, cwd=tmp_path,
                         env=env)
    assert out.returncode == 0, f"README block {index}:\n{code}\n--- stderr ---\n{out.stderr[-3000:]}"
