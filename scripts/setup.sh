#!/usr/bin/env bash
# Create .venv (Python 3.11) and install mjvec editable with what the main job needs:
#   bash scripts/setup.sh            mjvec, its core dependencies and Pillow (examples/rollout.py)
#   bash scripts/setup.sh dev        + the dev extra: torch (CPU build), warp, SB3, notebooks, pytest, ruff
# scripts/test.sh runs the second form. Idempotent: a second run only checks what is installed
# (mjvec editable from this checkout, every requirement of the chosen extra present at an allowed
# version, pyproject.toml and constraints/cpu.txt unchanged since the install: the stamp file
# .venv/.mjvec-setup-<extra>) and runs pip only when something is missing or changed.
# As root on Debian/Ubuntu it also apt-get installs libosmesa6 (see below); MJVEC_NO_APT=1 skips that.
set -euo pipefail
cd "$(dirname "$0")/.."
EXTRA=${1:-}
PY=${PYTHON:-python3.11}
TORCH_CPU_INDEX=${MJVEC_TORCH_CPU_INDEX:-https://download.pytorch.org/whl/cpu}
command -v "$PY" >/dev/null 2>&1 || PY=python3
if [ ! -x .venv/bin/python ]; then
  echo "setup.sh: creating .venv with $("$PY" --version 2>&1)" >&2
  "$PY" -m venv .venv
fi
STAMP=".venv/.mjvec-setup-${EXTRA:-core}"
STATE="$(cat pyproject.toml constraints/cpu.txt | sha256sum | cut -d' ' -f1) $PWD"
# Exit status 0 when .venv already holds mjvec editable from this checkout and every requirement of
# the extra (recursing into mjvec[...] self-references; the core form adds Pillow), else a reason.
installed() {
  [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$STATE" ] || { echo "pyproject.toml or constraints changed"; return 1; }
  .venv/bin/python - "$EXTRA" "$PWD" <<'PY'
import importlib.metadata as md, json, os, sys
from pip._vendor.packaging.requirements import Requirement
extra, root = sys.argv[1], sys.argv[2]
# The checkout's own mjvec.egg-info (left by the editable build) is not the installed distribution.
sys.path[:] = [p for p in sys.path if p and os.path.abspath(p) != root]
try:
    url = json.loads(md.distribution("mjvec").read_text("direct_url.json") or "{}")
except md.PackageNotFoundError:
    sys.exit("mjvec is not installed")
if not url.get("dir_info", {}).get("editable") or url.get("url") != f"file://{root}":
    sys.exit(f"mjvec is installed from {url.get('url')}, not editable from {root}")
todo, seen = [Requirement(r) for r in md.requires("mjvec") or [] if "extra ==" not in r], set()
todo += [Requirement(f"mjvec[{extra}]")] if extra else [Requirement("pillow>=10")]
while todo:
    req = todo.pop()
    if req.name == "mjvec":
        for e in req.extras - seen:
            seen.add(e)
            todo += [r for r in map(Requirement, md.requires("mjvec") or []) if r.marker and r.marker.evaluate({"extra": e})]
        continue
    try:
        version = md.version(req.name)
    except md.PackageNotFoundError:
        sys.exit(f"{req.name} is not installed")
    if not req.specifier.contains(version, prereleases=True):
        sys.exit(f"{req.name} {version} does not satisfy {req}")
PY
}
if reason=$(installed 2>&1); then
  echo "setup.sh: .venv is up to date (mjvec editable from this checkout${EXTRA:+, the [$EXTRA] extra}); nothing to install" >&2
else
  [ -f "$STAMP" ] && echo "setup.sh: reinstalling: $reason" >&2
  rm -f "$STAMP"
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null
  if [ -z "$EXTRA" ]; then
    echo "setup.sh: installing mjvec (editable) and its core dependencies, plus Pillow for PNG output" >&2
    .venv/bin/python -m pip install -q -c constraints/cpu.txt -e . "pillow>=10"
  else
    echo "setup.sh: installing mjvec (editable) with the [$EXTRA] extra" >&2
    # PyPI's Linux torch wheel is the multi-GB CUDA build; PyTorch's CPU index has the same version
    # as +cpu, which pip prefers when it can reach that index (a machine whose pip already finds a
    # CPU wheel, as a local wheel folder, needs nothing more).
    TORCH_CPU=()
    if command -v curl >/dev/null 2>&1 && curl -fsS -m 5 -o /dev/null "$TORCH_CPU_INDEX/torch/" 2>/dev/null; then
      TORCH_CPU=(--extra-index-url "$TORCH_CPU_INDEX")
    fi
    .venv/bin/python -m pip install -q -c constraints/cpu.txt "${TORCH_CPU[@]}" -e ".[$EXTRA]"
  fi
  echo "$STATE" > "$STAMP"
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
