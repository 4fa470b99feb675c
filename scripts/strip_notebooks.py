"""Strip outputs from notebooks so they are committed clean (the tests check it).

    python scripts/strip_notebooks.py                 # strip examples/notebooks/*.ipynb in place
    python scripts/strip_notebooks.py --check a.ipynb # exit 1 if any would change

Removes code-cell outputs, execution counts and per-cell execution metadata; keeps sources, cell
ids and the notebook's kernelspec.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
CELL_METADATA_DROPPED = ("execution", "collapsed", "scrolled", "ExecuteTime")


def strip(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """`nb` without outputs, execution counts or execution metadata (modified in place)."""
    for cell in nb.cells:
        for key in CELL_METADATA_DROPPED:
            cell.metadata.pop(key, None)
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    nb.metadata.pop("widgets", None)
    return nb


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path)
    parser.add_argument("--check", action="store_true", help="report notebooks with outputs; change nothing")
    args = parser.parse_args()
    paths = args.paths or sorted((ROOT / "examples" / "notebooks").glob("*.ipynb"))
    dirty = []
    for path in paths:
        before = path.read_text()
        after = nbformat.writes(strip(nbformat.reads(before, as_version=4))) + "\n"
        if after != before:
            dirty.append(path)
            if not args.check:
                path.write_text(after)
    for path in dirty:
        sys.stdout.write(f"{'has outputs' if args.check else 'stripped'}: {path}\n")
    return 1 if args.check and dirty else 0


if __name__ == "__main__":
    sys.exit(main())
