#!/usr/bin/env bash
# Install (scripts/setup.sh with the dev extra), lint, and run the whole test suite. Extra
# arguments go to pytest; scripts/setup_playground.sh first makes MuJoCo Playground's environment
# (the oracle of the playground/ tasks) and scripts/setup_envpool.sh EnvPool's. Then the rl_games tests, which need their own environment (rl-games pins
# psutil<6): scripts/setup_rl_games.sh makes .venv-rl-games and tests/test_rl_games.py runs there
# (MJVEC_SKIP_RL_GAMES=1 skips that second run).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh dev
.venv/bin/ruff check mjvec tests examples benchmarks
# MuJoCo Playground's own code, the oracle of tests/test_go1_playground.py (MJVEC_SKIP_PLAYGROUND=1 skips it).
[ -n "${MJVEC_SKIP_PLAYGROUND:-}" ] || bash scripts/setup_playground.sh
# EnvPool 1.2.5's C++ ports of the Playground tasks, compared in tests/test_{go1,leap,panda}_envpool.py (MJVEC_SKIP_ENVPOOL=1 skips it).
[ -n "${MJVEC_SKIP_ENVPOOL:-}" ] || bash scripts/setup_envpool.sh
MUJOCO_GL=${MUJOCO_GL:-osmesa} .venv/bin/python -m pytest -q "$@"
if [ -z "${MJVEC_SKIP_RL_GAMES:-}" ]; then
  bash scripts/setup_rl_games.sh
  MUJOCO_GL=${MUJOCO_GL:-osmesa} .venv-rl-games/bin/python -m pytest -q -p no:cacheprovider tests/test_rl_games.py
fi
