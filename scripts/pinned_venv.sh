# Sourced by scripts/setup_envpool.sh and scripts/setup_playground.sh: one function that makes a
# virtual environment of its own for an oracle and keeps exact pins installed in it.
#   pinned_venv <who> <venv dir> <name==version>...
# The venv is made with $PYTHON (default python3.11, else python3) when it is missing; pip runs only
# when a pin is missing or another version is installed (the installed versions are the stamp).
pinned_venv() {
  local who=$1 venv=$2
  shift 2
  local py=${PYTHON:-python3.11}
  command -v "$py" >/dev/null 2>&1 || py=python3
  if [ ! -x "$venv/bin/python" ]; then
    echo "$who: creating $venv with $("$py" --version 2>&1)" >&2
    "$py" -m venv "$venv"
  fi
  if ! "$venv/bin/python" - "$@" <<'PY'
import importlib.metadata as md, sys
for pin in sys.argv[1:]:
    name, version = pin.split("==")
    try:
        assert md.version(name) == version
    except (md.PackageNotFoundError, AssertionError):
        sys.exit(1)
PY
  then
    echo "$who: installing $* into $venv" >&2
    "$venv/bin/python" -m pip install -q --disable-pip-version-check "$@"
  fi
}
