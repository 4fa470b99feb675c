"""Every Python block of the README and of docs/*.md runs as written (each in its own process, in a
temporary folder), but the docs' blocks that say in their first line that they are sketches (a GPU
or a trained checkpoint), and the README opens with the two commands of the project."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
SKETCH = "# A sketch, not run as written:"


def _blocks() -> list[tuple[str, str]]:
    """(id, code) of every Python block to run: the README's, then each docs page's."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    found = []
    for page in pages:
        for k, code in enumerate(re.findall(r"```python\n(.*?)```", page.read_text(), flags=re.S)):
            if not code.startswith(SKETCH):
                found.append((f"{page.stem}-block{k}", code))
    return found


BLOCKS = _blocks()


def test_the_readme_opens_with_the_main_job_and_the_test_command() -> None:
    first = re.search(r"```bash\n(.*?)```", README, flags=re.S)
    assert first is not None
    assert first.group(1).strip().splitlines() == [
        "bash scripts/setup.sh && .venv/bin/python examples/rollout.py", "bash scripts/test.sh"]


def test_the_docs_have_blocks_to_run_and_sketches_say_why() -> None:
    assert sum(name.startswith("README-") for name, _ in BLOCKS) >= 5
    assert {name.split("-block")[0] for name, _ in BLOCKS} >= {"usage", "backends", "randomization", "tasks", "deploy"}
    for page in (ROOT / "docs").glob("*.md"):
        for code in re.findall(r"```python\n(.*?)```", page.read_text(), flags=re.S):
            if code.startswith(SKETCH):
                assert len(code.splitlines()[0]) > len(SKETCH) + 10, f"{page.name}: a sketch says what it needs"


@pytest.mark.parametrize("index", range(len(BLOCKS)), ids=[name for name, _ in BLOCKS])
def test_readme_python_block_runs_as_written(index: int, tmp_path: Path) -> None:
    name, code = BLOCKS[index]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MUJOCO_GL": os.environ.get("MUJOCO_GL", "osmesa")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, cwd=tmp_path,
                         env=env)
    assert out.returncode == 0, f"{name}:\n{code}\n--- stderr ---\n{out.stderr[-3000:]}"
