#!/usr/bin/env bash
# Install (scripts/setup.sh with the dev extra), lint, and run the whole test suite. Extra
# arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh dev
.venv/bin/ruff check mjvec tests examples benchmarks
MUJOCO_GL=${MUJOCO_GL:-osmesa} .venv/bin/python -m pytest -q "$@"
