"""Test-wide settings: headless GL for rendering tests, before anything imports mujoco's GL."""

import os

os.environ.setdefault("MUJOCO_GL", "osmesa")
os.environ.setdefault("PYOPENGL_PLATFORM", os.environ["MUJOCO_GL"])
