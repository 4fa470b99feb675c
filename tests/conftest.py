"""Test-wide settings: headless GL for rendering tests, before anything imports mujoco's GL, and a
scratch working directory (MuJoCo appends its warnings to MUJOCO_LOG.TXT in the working directory;
tests that make simulations diverge on purpose must not leave that file in the repository)."""

import os

import pytest

os.environ.setdefault("MUJOCO_GL", "osmesa")
os.environ.setdefault("PYOPENGL_PLATFORM", os.environ["MUJOCO_GL"])


@pytest.fixture(autouse=True, scope="session")
def _scratch_working_directory(tmp_path_factory):
    previous = os.getcwd()
    os.chdir(tmp_path_factory.mktemp("cwd"))
    yield
    os.chdir(previous)
