"""Test-wide settings: headless GL for rendering tests, before anything imports mujoco's GL, a
scratch working directory (MuJoCo appends its warnings to MUJOCO_LOG.TXT in the working directory;
tests that make simulations diverge on purpose must not leave that file in the repository; a test
that starts a process gives it a scratch cwd too), SB3's log folder (without SB3_LOGDIR every
``model.learn()`` makes an SB3-<date> folder in the system temp folder) in the session's scratch
space, and the warp device of the device tests.

`pytest_sessionfinish` checks both: a session that wrote MUJOCO_LOG.TXT in the repository root
fails, naming it; SB3-* folders that appeared in the temp folder during the session are named in a
note, not a failure (nothing ties such a folder to this session: any process running SB3 on the
machine makes them), and left alone for the same reason.

Device tests take the `warp_device` fixture: the warp device named by MJVEC_TEST_DEVICE ("cpu", the
default: warp's CPU device, with CUDA hidden so nothing initialises a GPU; benchmarks/gpu_run.sh sets
"cuda:0"). Each is marked `device` (a contract test parametrized over both backends only in its
Warp case), so ``MJVEC_TEST_DEVICE=cuda:0 pytest -m device`` runs exactly them on a GPU.

The backend contract suites take the `contract` fixture: a factory of backends of one kind (`kind`:
"cpu", then "warp" on the `warp_device`) and of their oracles (tests/backend_rig.py).
"""

import os
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

os.environ.setdefault("MUJOCO_GL", "osmesa")
os.environ.setdefault("PYOPENGL_PLATFORM", os.environ["MUJOCO_GL"])
TEST_DEVICE = os.environ.get("MJVEC_TEST_DEVICE", "cpu")
if TEST_DEVICE == "cpu":
    os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")


@pytest.fixture(scope="session")
def warp_device() -> str:
    """The warp device the device tests run on (MJVEC_TEST_DEVICE, default "cpu")."""
    return TEST_DEVICE


@pytest.fixture(params=["cpu", "warp"])
def kind(request: pytest.FixtureRequest) -> str:
    """The backend a contract test runs on."""
    return request.param


@pytest.fixture
def contract(kind: str, warp_device: str):
    """Builds `kind` backends and their oracles; closes the backends after the test."""
    from tests.backend_rig import Contract

    rig = Contract(kind, warp_device)
    yield rig
    for backend in rig.made:
        backend.close()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        if "warp_device" in getattr(item, "fixturenames", ()) and params.get("kind") != "cpu":
            item.add_marker(pytest.mark.device)


@pytest.fixture(autouse=True, scope="session")
def _scratch_working_directory(tmp_path_factory):
    previous = os.getcwd()
    os.chdir(tmp_path_factory.mktemp("cwd"))
    yield
    os.chdir(previous)


@pytest.fixture(autouse=True, scope="session")
def _sb3_log_folder(tmp_path_factory):
    previous = os.environ.get("SB3_LOGDIR")
    os.environ["SB3_LOGDIR"] = str(tmp_path_factory.mktemp("sb3"))  # child processes inherit it
    yield
    if previous is None:
        os.environ.pop("SB3_LOGDIR", None)
    else:
        os.environ["SB3_LOGDIR"] = previous


_LEFT_BEHIND = pytest.StashKey[tuple[int | None, set[str]]]()  # (MUJOCO_LOG.TXT's mtime, SB3-* names) at start


def _mtime(path: Path) -> int | None:
    return path.stat().st_mtime_ns if path.exists() else None


def _sb3_folders() -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).glob("SB3-*")}


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[_LEFT_BEHIND] = (_mtime(ROOT / "MUJOCO_LOG.TXT"), _sb3_folders())


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    log_before, sb3_before = session.config.stash[_LEFT_BEHIND]
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    new = sorted(_sb3_folders() - sb3_before)
    if new and reporter is not None:
        reporter.write_line(f"note: SB3 log folders appeared in {tempfile.gettempdir()} during the session: {new} "
                            "(an SB3 logger configured without SB3_LOGDIR, here or in another process)", yellow=True)
    if _mtime(ROOT / "MUJOCO_LOG.TXT") != log_before:
        if reporter is not None:
            reporter.write_line(f"LEFT BEHIND: {ROOT / 'MUJOCO_LOG.TXT'} was written (a MuJoCo warning in a process "
                                "whose cwd was the repository: give subprocesses a scratch cwd)", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
