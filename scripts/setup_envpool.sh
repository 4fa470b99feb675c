#!/usr/bin/env bash
# Create .venv-envpool: EnvPool 1.2.5, the C++ ports mjvec's playground/ tasks are compared with
# (tests/test_{go1,leap,panda}_envpool.py) and benchmarked against (benchmarks/playground.py --envpool-python
# .venv-envpool/bin/python).
#   bash scripts/setup_envpool.sh        (scripts/test.sh runs it before the tests)
# EnvPool is never a dependency of mjvec: it gets an environment of its own (nothing of mjvec is
# installed there; the tests and the benchmark drive it from a subprocess). mujoco 3.6.0 is the
# MuJoCo EnvPool 1.2.5 links into its extension; it is installed beside it only for the benchmark's
# raw-engine comparison (plain mj_step under 3.6.0 vs mjvec's 4.0). Idempotent: pip runs only when a
# pinned package is missing (the stamp is the pins' installed versions).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.venv-envpool
PINS=("envpool==1.2.5" "mujoco==3.6.0")
source scripts/pinned_venv.sh
pinned_venv setup_envpool.sh "$VENV" "${PINS[@]}"
"$VENV/bin/python" -c "
import envpool
spec = envpool.make_spec('MuJoCoPlayground/Go1JoystickFlatTerrain-v1')
assert spec.config.task_name == 'Go1JoystickFlatTerrain', spec.config
"
