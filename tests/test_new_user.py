"""What a new user meets after the README's first command: examples that need an install extra say
which one (one install hint, the same everywhere), a quiet Warp build, a warning for more threads
than cores, progress where a script makes the user wait, and a test session that leaves nothing behind.

Oracles: each example run in its own process with torch hidden (its exit status and stderr),
`mjvec.errors.install_hint` (the one hint), warp's own output with and without MJVEC_WARP_VERBOSE,
os.sched_getaffinity, and a child pytest session that leaks on purpose.
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from mjvec.backends import registry
from mjvec.backends.base import Scene
from mjvec.backends.cpu.backend import CpuBackend, default_num_threads
from mjvec.errors import PerformanceWarning, install_hint
from tests.scenes import make_scene
from tests.subprocesses import ROOT, checkout_env

# Run an example as `python examples/NAME.py` does (its folder first on sys.path), torch hidden.
WITHOUT_TORCH = ("import runpy, sys; sys.modules['torch'] = None; path = sys.argv[1]; "
                 "sys.path.insert(0, path.rsplit('/', 1)[0]); sys.argv = sys.argv[1:]; "
                 "runpy.run_path(path, run_name='__main__')")


@pytest.mark.parametrize(("name", "args", "extra"), [
    ("ppo.py", [], "train"),
    ("train_sb3.py", [], "train"),
    ("evaluate_cube_rotate.py", ["--policy", "random"], "train"),
    ("evaluate_go1.py", ["--policy", "zero"], "train"),
    ("evaluate_return.py", [], "train"),
    ("train_rsl_rl.py", [], "train"),
    ("train_rl_games.py", [], "rl_games"),
])
def test_an_example_without_its_extra_says_which_to_install(name: str, args: list[str], extra: str) -> None:
    out = subprocess.run([sys.executable, "-c", WITHOUT_TORCH, str(ROOT / "examples" / name), *args],
                         capture_output=True, text=True, timeout=120, env=checkout_env())
    assert out.returncode == 2, out.stderr[-2000:]
    assert out.stderr.strip().splitlines() == [
        f"examples/{name} needs the '{extra}' extra, which is not installed (import of torch halted; None in "
        f"sys.modules); fix: {install_hint(extra)}"]


def test_the_install_hint_is_one_for_a_clone_and_a_gpu_user(monkeypatch: pytest.MonkeyPatch) -> None:
    """`python -m mjvec info` and the Warp import error give the same hint (see also
    tests/test_backend_warp.py::test_missing_warp_extra_says_what_to_install)."""
    hint = install_hint("warp")
    assert hint.startswith("pip install -e '.[warp]' in the mjvec checkout")  # mjvec is on no index
    assert "-c constraints/cpu.txt" in hint and "GPU" in hint  # CPU torch here, CUDA torch on a GPU machine
    monkeypatch.setattr(registry, "_installed", lambda dist: dist != "mujoco-warp")
    assert registry.backend_status()["warp"] == f"missing mujoco-warp (fix: {hint})"


WARP_BUILD = """
import gymnasium as gym
import mjvec
env = gym.make_vec("CubeRotate-v0", num_envs=2, backend="warp", device="cpu")
env.reset(seed=0)
env.step(env.action_space.sample())
env.close()
print("built")
"""


def test_a_warp_build_keeps_warp_quiet_unless_asked() -> None:
    quiet = subprocess.run([sys.executable, "-c", WARP_BUILD], capture_output=True, text=True, timeout=300,
                           env=checkout_env(CUDA_VISIBLE_DEVICES=""))
    assert quiet.returncode == 0 and quiet.stdout.strip() == "built", quiet.stderr[-2000:]
    printed = (quiet.stdout + quiet.stderr).splitlines()
    assert not [line for line in printed if "Module " in line or "initialized" in line]
    # Asked for (MJVEC_WARP_VERBOSE=1), warp prints what it prints without mjvec: its banner at init.
    code = "import mjvec.backends.warp, warp; warp.init()"
    loud = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env=checkout_env(CUDA_VISIBLE_DEVICES="", MJVEC_WARP_VERBOSE="1"))
    assert loud.returncode == 0 and f"Warp {__import__('warp').__version__} initialized" in loud.stdout, loud.stderr


def test_more_threads_than_cores_warns_once_naming_both() -> None:
    cores = default_num_threads()
    assert cores == len(os.sched_getaffinity(0))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("default")  # Python's own: each distinct warning once
        for threads in (cores, np.int64(cores + 3), cores + 3):
            CpuBackend(Scene(num_variants=1, make_variant=make_scene, num_envs=2), num_threads=threads,
                       progress=False).close()
    assert [(w.category, str(w.message)) for w in seen] == [(PerformanceWarning, (
        f"num_threads={cores + 3} is more than the {cores} CPU cores this process may use (os.sched_getaffinity): "
        f"the extra threads share cores and the envs step slower; pass num_threads={cores} or leave it None "
        "(the core count)"))]


def test_evaluate_cube_rotate_shows_progress_over_the_episodes(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "evaluate_cube_rotate.py"), "--policy", "random",
                          "--episodes", "3", "--json", str(tmp_path / "r.json")], capture_output=True, text=True,
                         timeout=300, env=checkout_env())
    assert out.returncode == 0, out.stderr[-2000:]
    final = out.stderr.replace("\r", "\n").splitlines()
    bars = [line for line in final if line.startswith("episodes finished")]
    assert bars and "3/3" in bars[-1], out.stderr[-2000:]
    import json

    assert json.loads((tmp_path / "r.json").read_text())["episodes"] == 3


LEAKY = '''
import os
import mujoco, numpy as np


def test_leaks():
    from stable_baselines3.common.logger import configure
    inside = configure(format_strings=[""]).dir  # what learn(verbose=0) does, in the session's folder
    assert inside.startswith(os.environ["SB3_LOGDIR"]), inside
    os.environ.pop("SB3_LOGDIR")
    print("SB3 FOLDER", configure(format_strings=[""]).dir)  # without it: an SB3-<date> folder in the temp folder
    os.chdir(os.environ["MJVEC_LEAK_ROOT"])  # a MuJoCo warning with the repository as the cwd
    xml = "<mujoco><worldbody><body><freejoint/><geom size='.1'/></body></worldbody></mujoco>"
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    d.qpos[0] = np.nan
    mujoco.mj_step(m, d)
'''


def test_a_session_that_leaves_a_mujoco_log_behind_fails_and_names_sb3_folders(tmp_path: Path) -> None:
    """tests/conftest.py's session check, on a child session that leaks both on purpose, in a copy
    of the repository's tests folder (its root: tmp_path): a MuJoCo warning with the root as the cwd
    fails the session; an SB3 folder made without SB3_LOGDIR is named (SB3_LOGDIR keeps them out)."""
    import re
    import shutil

    (tmp_path / "tests").mkdir()
    shutil.copy(ROOT / "tests" / "conftest.py", tmp_path / "tests" / "conftest.py")
    (tmp_path / "tests" / "test_leaky.py").write_text(LEAKY)
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", "tests/test_leaky.py"],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path,
                         env=checkout_env(MJVEC_LEAK_ROOT=str(tmp_path)))
    made = re.search(r"SB3 FOLDER (\S+)", out.stdout)
    if made:
        Path(made.group(1)).rmdir()  # the child's own, empty
    assert out.returncode == 1 and "1 passed" in out.stdout, out.stdout[-3000:]
    assert f"LEFT BEHIND: {tmp_path / 'MUJOCO_LOG.TXT'} was written" in out.stdout
    assert made and f"note: SB3 log folders appeared in {Path(made.group(1)).parent}" in out.stdout
    assert Path(made.group(1)).name in out.stdout.split("note:")[1]


RENDER_WITHOUT_CLOSE = """
import gymnasium as gym
import mjvec
env = gym.make_vec("CubeRotate-v0", num_envs=2, render_mode="rgb_array", num_threads=1)
env.reset(seed=0)
grid = env.unwrapped.render_grid([0, 1])
frame = env.render()[1]
print(grid.shape, frame.shape, int(frame.max()) > 0)
"""


def test_a_script_that_renders_and_exits_without_close_exits_silently() -> None:
    """No "Exception ignored in Renderer.__del__" traceback at interpreter exit (OSMesa's bindings are
    torn down before the renderer's __del__ runs): the open renderers are closed at exit."""
    out = subprocess.run([sys.executable, "-c", RENDER_WITHOUT_CLOSE], capture_output=True, text=True, timeout=120,
                         env=checkout_env(MUJOCO_GL="osmesa", PYOPENGL_PLATFORM="osmesa"))
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "(240, 640, 3) (240, 320, 3) True"
    # stderr holds the compile progress bar (tqdm, redrawn with \r, cleared at its end) and nothing else.
    rest = [line for line in out.stderr.replace("\r", "\n").splitlines()
            if line.strip() and not line.startswith("compiling CubeRotate-v0 variants:")]
    assert rest == [], out.stderr


PIP_SHIM = """#!/bin/sh
# .venv/bin/python of the test: pip calls are recorded, not run; everything else is Python.
if [ "$1" = "-m" ] && [ "$2" = "pip" ]; then echo "$*" >> "$PIP_LOG"; exit 0; fi
exec "$(dirname "$0")/python3" "$@"
"""


def _fake_checkout(tmp: Path) -> Path:
    """A checkout (pyproject, constraints, setup.sh) whose .venv sees this environment's packages (a
    .pth file) and holds an mjvec dist-info editable from the checkout, as `pip install -e` leaves."""
    import shutil
    import sysconfig
    from importlib import metadata

    root = tmp / "checkout"
    (root / "scripts").mkdir(parents=True)
    for name in ("pyproject.toml", "constraints/cpu.txt", "scripts/setup.sh"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, root / name)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / ".venv")], check=True)
    site = root / ".venv" / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    (site / "env.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    info = site / "mjvec-0.1.0.dist-info"
    info.mkdir()
    installed = next(metadata.distributions(name="mjvec", path=[sysconfig.get_paths()["purelib"]]))
    (info / "METADATA").write_text(installed.read_text("METADATA"))
    (info / "direct_url.json").write_text(f'{{"dir_info": {{"editable": true}}, "url": "file://{root}"}}')
    (root / "mjvec.egg-info").mkdir()  # what the editable build leaves in the checkout: not the install
    (root / "mjvec.egg-info" / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: mjvec\nVersion: 0.1.0\n")
    python = root / ".venv" / "bin" / "python"
    python.unlink()
    python.write_text(PIP_SHIM)
    python.chmod(0o755)
    return root


def test_setup_sh_run_again_only_checks(tmp_path: Path) -> None:
    """scripts/setup.sh dev: installs where nothing was stamped (a fresh clone's .venv), then only
    checks (no pip at all: no editable rebuild, no setuptools banner) until pyproject.toml changes or
    mjvec is no longer editable from this checkout. Oracle: the pip calls themselves."""
    root = _fake_checkout(tmp_path)
    log = tmp_path / "pip.log"

    def setup() -> tuple[list[str], str]:
        log.unlink(missing_ok=True)
        out = subprocess.run(["bash", "scripts/setup.sh", "dev"], cwd=root, capture_output=True, text=True,
                             timeout=120, env={**os.environ, "PIP_LOG": str(log), "MJVEC_NO_APT": "1",
                                                  "MJVEC_TORCH_CPU_INDEX": f"file://{tmp_path}/no-index"})
        assert out.returncode == 0, out.stderr
        return (log.read_text().splitlines() if log.exists() else []), out.stderr

    install = ["-m pip install -q --upgrade pip", "-m pip install -q -c constraints/cpu.txt -e .[dev]"]
    calls, _ = setup()
    assert calls == install  # nothing stamped yet: install
    calls, err = setup()
    assert calls == [] and "setup.sh: .venv is up to date (mjvec editable from this checkout, the [dev] extra); " \
        "nothing to install" in err, err
    with (root / "pyproject.toml").open("a") as f:
        f.write("\n# changed\n")
    calls, err = setup()
    assert calls == install and "reinstalling: pyproject.toml or constraints changed" in err, err
    assert setup()[0] == []
    url = root / ".venv" / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages" / \
        "mjvec-0.1.0.dist-info" / "direct_url.json"
    url.write_text('{"dir_info": {"editable": true}, "url": "file:///elsewhere"}')
    calls, err = setup()
    assert calls == install and f"mjvec is installed from file:///elsewhere, not editable from {root}" in err, err
