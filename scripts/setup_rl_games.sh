#!/usr/bin/env bash
# Create .venv-rl-games: rl-games (the `rl_games` extra) in its own environment, layered over .venv.
#   bash scripts/setup_rl_games.sh        (scripts/test.sh runs it, then tests/test_rl_games.py in it)
# rl-games 1.6.5 pins psutil<6 while the dev environment's ipython needs psutil>=7, so they cannot
# share one environment. .venv-rl-games holds only what rl-games adds (rl-games, psutil 5, pygame-ce,
# tensorboardX, setproctitle, watchdog) and sees everything else (mjvec, torch, mujoco, warp,
# gymnasium) through a .pth file naming .venv's site-packages, which come after its own on sys.path,
# so its psutil 5 wins there and .venv keeps psutil 7. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || bash scripts/setup.sh dev
if [ ! -x .venv-rl-games/bin/python ]; then
  base=$(.venv/bin/python -c 'import sys; print(sys._base_executable)')
  echo "setup_rl_games.sh: creating .venv-rl-games over .venv with $("$base" --version 2>&1)" >&2
  "$base" -m venv .venv-rl-games
fi
dev_site=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
own_site=$(.venv-rl-games/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "$dev_site" > "$own_site/zz_mjvec_dev_venv.pth"
.venv-rl-games/bin/python -m pip install -q --upgrade pip >/dev/null
echo "setup_rl_games.sh: installing mjvec (editable) with the [rl_games] extra into .venv-rl-games" >&2
.venv-rl-games/bin/python -m pip install -q -c constraints/cpu.txt -e ".[rl_games]" 2>&1 \
  | grep -v -e "dependency conflicts" -e "ipython .* requires psutil" -e "does not currently take into account" >&2 || true
.venv-rl-games/bin/python -c "import psutil, rl_games, torch, mjvec; assert psutil.version_info < (6,), psutil.__version__"
