#!/usr/bin/env bash
# Create .venv (Python 3.11) and install mjvec with every extra, CPU torch pinned.
# Idempotent: a second run only checks what is installed.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null 2>&1 || PY=python3
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q -c constraints/cpu.txt -e ".[dev]"
# Headless rendering (MUJOCO_GL=osmesa) needs libOSMesa.
if ! ldconfig -p 2>/dev/null | grep -q libOSMesa; then
  if [ "$(id -u)" = "0" ]; then
    (apt-get update -qq && apt-get install -y -qq libosmesa6 >/dev/null) || echo "warning: could not install libosmesa6" >&2
  else
    echo "note: install libosmesa6 (Debian/Ubuntu) for headless rendering" >&2
  fi
fi
