"""Test-wide settings: headless GL for rendering tests, before anything imports mujoco's GL, a
scratch working directory (MuJoCo appends its warnings to MUJOCO_LOG.TXT in the working directory;
tests that make simulations diverge on purpose must not leave that file in the repository), and the
warp device of the device tests.

Device tests take the `warp_device` fixture: the warp device named by MJVEC_TEST_DEVICE ("cpu", the
default: warp's CPU device, with CUDA hidden so nothing initialises a GPU; benchmarks/gpu_run.sh sets
"cuda:0"). Each is marked `device` (a contract test parametrized over both backends only in its
Warp case), so ``MJVEC_TEST_DEVICE=cuda:0 pytest -m device`` runs exactly them on a GPU.

The backend contract suites take the `contract` fixture: a factory of backends of one kind (`kind`:
"cpu", then "warp" on the `warp_device`) and of their oracles (tests/backend_rig.py).
"""

import os

import pytest

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
