#!/usr/bin/env bash
# Stage the wheels a lent GPU machine lacks (it has Python 3.12, CUDA torch, pytest, numpy, etils,
# tqdm, absl-py, ... but no mujoco, warp, mujoco-warp or gymnasium, and no package index), in parts
# that fit one `run` call each (64 MiB with the working tree), and dry-run the same install here
# with Python 3.12.
#
#   bash benchmarks/gpu_stage.sh          (from the project root, any checkout or git worktree)
#
# Writes .gpu/ (git-ignored: .gitignore, and the checkout's info/exclude): part1/ part2/ part3/,
# each at most 56 MiB, each with collect.sh; part3/ also holds on_device.sh. Then, on the machine,
# three calls back to back (it stays warm about 30 s between calls):
#   carry [".gpu/part1"]  bash .gpu/part1/collect.sh
#   carry [".gpu/part2"]  bash .gpu/part2/collect.sh
#   carry [".gpu/part3"]  bash .gpu/part3/collect.sh && bash .gpu/part3/on_device.sh "bash benchmarks/gpu_run.sh"
# collect.sh copies its part into a stage folder in the machine's temp dir; on_device.sh joins the
# split wheel, installs every wheel without an index into a site folder there, puts it on
# PYTHONPATH, sets MUJOCO_GL=egl and a warp kernel cache kept while the machine stays warm, prints
# versions and nvidia-smi, and runs its argument from the project root. A rerun on a warm machine
# needs only the last call (carry [".gpu/part3"], on_device.sh "...").
#
# The versions are the ones this checkout's environment installed (VENV_PY, default .venv/bin/python):
# the wheels are its exact versions, built for CPython 3.12 manylinux x86-64.
set -euo pipefail
top=$(git rev-parse --show-toplevel); cd "$top"
# In a git worktree .git is a file: ask git where info/exclude is instead of assuming .git/info/.
exclude=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$exclude")"
grep -qx '/.gpu/' "$exclude" 2>/dev/null || echo '/.gpu/' >> "$exclude"
git check-ignore -q .gpu/x || { echo "gpu_stage.sh: .gpu/ is not git-ignored here; refusing to stage wheels"; exit 2; }
venv_py=${VENV_PY:-.venv/bin/python}
[ -x "$venv_py" ] || { echo "gpu_stage.sh: set VENV_PY to the python of an environment made by scripts/setup.sh dev (no $venv_py)"; exit 2; }
rm -rf .gpu && mkdir -p .gpu/all .gpu/part1 .gpu/part2 .gpu/part3
# What mjvec[warp] needs that the machine's image lacks (mujoco: the meta package, so its metadata
# matches mjvec's pin), or holds at another version (etils, tqdm: staged anyway, so the installed
# versions are this checkout's).
pkgs=$("$venv_py" - <<'PY'
import importlib.metadata as m
names = ("mujoco", "mujoco-core", "mujoco-warp", "warp-lang", "gymnasium", "farama-notifications", "array-api-compat",
         "etils", "tqdm")
print(" ".join(f"{n}=={m.version(n)}" for n in names))
PY
)
echo "gpu_stage.sh: downloading cp312 manylinux wheels: $pkgs"
# shellcheck disable=SC2086  # a list of requirements
"$venv_py" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d .gpu/all $pkgs
"$venv_py" -m pip wheel -q --no-deps -w .gpu/all .
# One wheel (warp-lang) is larger than a part: split whatever is over 52 MiB into 52 MiB pieces.
for f in .gpu/all/*.whl; do
  if [ "$(stat -c %s "$f")" -gt $((52 * 1024 * 1024)) ]; then split -b 52M -d "$f" "$f.piece-" && rm "$f"; fi
done
for f in $(ls -S .gpu/all); do  # largest first, each into the first part it fits in
  placed=""
  for i in 1 2 3; do
    used=$(du -sb ".gpu/part$i" | cut -f1); size=$(stat -c %s ".gpu/all/$f")
    if [ $((used + size)) -le $((56 * 1024 * 1024)) ]; then mv ".gpu/all/$f" ".gpu/part$i/"; placed=1; break; fi
  done
  [ -n "$placed" ] || { echo "gpu_stage.sh: $f does not fit in 3 parts of 56 MiB"; exit 1; }
done
rmdir .gpu/all
for k in 1 2 3; do
  cat > ".gpu/part$k/collect.sh" <<'SH'
#!/usr/bin/env bash
# Copy this part into the stage folder in the machine's temp dir (kept while the machine stays warm).
set -e; st=$(python3 -c "import tempfile; print(tempfile.gettempdir())")/stage
mkdir -p "$st"; cp "$(dirname "$0")"/* "$st/"; ls -la "$st" | tail -n +2
SH
done
cat > .gpu/part3/on_device.sh <<'SH'
#!/usr/bin/env bash
# On the GPU machine, after the three collect.sh calls: join the split wheel, install every wheel
# into a site folder without an index, then run the command given, from the project root.
#   bash .gpu/part3/on_device.sh "bash benchmarks/gpu_run.sh"
set -eo pipefail
tmp=$(python3 -c "import tempfile; print(tempfile.gettempdir())")
stage=${STAGE:-$tmp/stage}; site=${SITE:-$tmp/site}; pyi=${PYI:-python3}
(
  cd "$stage"
  for first in *.piece-00; do
    [ -e "$first" ] || continue
    whl=${first%.piece-00}; cat "$whl".piece-* > "$whl"; rm -f "$whl".piece-*
  done
)
# torch comes from the machine's image (a CUDA build); never from here.
"$pyi" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" "$stage"/*.whl
export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 MUJOCO_GL=${MUJOCO_GL:-egl}
export WARP_CACHE_PATH=${WARP_CACHE_PATH:-$tmp/warp-cache}
[ -n "${PYI:-}" ] || nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || true
"$pyi" - <<'PY' || true
import importlib.metadata as m
for p in ("mjvec", "mujoco-core", "mujoco-warp", "warp-lang", "gymnasium", "array-api-compat", "torch", "numpy"):
    try:
        print(p, m.version(p))
    except m.PackageNotFoundError as e:
        print(p, "missing:", e)
PY
eval "$1"
SH
du -sh .gpu/part1 .gpu/part2 .gpu/part3
ls -la .gpu/part1 .gpu/part2 .gpu/part3 | grep -v "^total\|^d"
# Dry run here: the same install with Python 3.12 into a scratch folder over what the machine's image
# has (numpy, cloudpickle, typing-extensions, absl-py, fsspec, zipp, importlib-resources), then
# imports, the Warp backend's install check, and a CPU-backend step, so a missing wheel shows
# before any device time is spent. (No torch for 3.12 is installed here: the Warp env itself is not
# built in the dry run.)
py312=""
for c in "${PY312:-}" python3.12 $(ls -d "$(pyenv root 2>/dev/null || echo /nonexistent)"/versions/3.12*/bin/python3.12 2>/dev/null); do
  [ -n "$c" ] && "$c" --version >/dev/null 2>&1 && { py312=$c; break; }
done
if [ -z "$py312" ] || [ -n "${NO_DRY_RUN:-}" ]; then
  echo "gpu_stage.sh: no Python 3.12 here (set PY312=...) or NO_DRY_RUN set: dry run skipped"; exit 0
fi
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
mkdir -p "$t/stage"; cp .gpu/part*/*.whl* "$t/stage/"
"$py312" -m pip install -q --target "$t/base" numpy cloudpickle typing-extensions absl-py fsspec zipp importlib-resources
check="import gymnasium as gym, mjvec, warp, mujoco_warp
from mjvec.backends.registry import backend_status
e = gym.make_vec('SimToolReal-v0', num_envs=2, num_tools=2, randomization=None)
e.reset(seed=0); e.step(e.action_space.sample()); warp.init()
print('dry run: imports, backend_status', backend_status(), 'and a CPU step ok')"
if PYTHONPATH="$t/base" STAGE="$t/stage" SITE="$t/site" PYI="$py312" bash .gpu/part3/on_device.sh "$py312 -c \"$check\""; then
  echo "gpu_stage.sh: dry run passed ($("$py312" --version))"
else
  echo "gpu_stage.sh: dry run FAILED (see above)"; exit 1
fi
