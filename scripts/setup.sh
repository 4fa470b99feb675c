#!/usr/bin/env bash
# Create .venv (Python 3.11) and install mjvec editable with what the main job needs:
#   bash scripts/setup.sh            mjvec, its core dependencies and Pillow (examples/rollout.py)
#   bash scripts/setup.sh dev        + the dev extra: torch (CPU build), warp, SB3, notebooks, pytest, ruff
# scripts/test.sh runs the second form. Idempotent: a second run only checks what is installed.
# As root on Debian/Ubuntu it also apt-get installs libosmesa6 (see below); MJVEC_NO_APT=1 skips that.
set -euo pipefail
cd "$(dirname "$0")/.."
EXTRA=${1:-}
PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null 2>&1 || PY=python3
if [ ! -x .venv/bin/python ]; then
  echo "setup.sh: creating .venv with $("$PY" --version 2>&1)" >&2
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
if [ -z "$EXTRA" ]; then
  echo "setup.sh: installing mjvec (editable) and its core dependencies, plus Pillow for PNG output" >&2
  .venv/bin/python -m pip install -q -c constraints/cpu.txt -e . "pillow>=10"
else
  echo "setup.sh: installing mjvec (editable) with the [$EXTRA] extra" >&2
  .venv/bin/python -m pip install -q -c constraints/cpu.txt -e ".[$EXTRA]"
fi
# Headless rendering (MUJOCO_GL=osmesa, what examples/rollout.py uses without a display) needs the
# OSMesa library, a system package that pip cannot install.
if ! ldconfig -p 2>/dev/null | grep -q libOSMesa; then
  if [ "$(id -u)" = "0" ] && [ -z "${MJVEC_NO_APT:-}" ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup.sh: installing the system package libosmesa6 with apt-get (running as root): MuJoCo needs it" \
         "to render images without a display (MUJOCO_GL=osmesa). Set MJVEC_NO_APT=1 to skip this." >&2
    (apt-get update -qq && apt-get install -y -qq libosmesa6 >/dev/null) || echo "warning: could not install libosmesa6" >&2
  else
    echo "note: rendering without a display needs libOSMesa: install libosmesa6 (Debian/Ubuntu: sudo apt-get install" \
         "libosmesa6), or render on a GPU with MUJOCO_GL=egl" >&2
  fi
fi
