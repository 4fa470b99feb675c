"""``python -m mjvec``: see `mjvec.cli`.

MuJoCo picks its OpenGL backend from ``MUJOCO_GL`` when it is first imported, which has already
happened by the time this module runs (``import mjvec`` imports mujoco). So a `rollout` or `eval`
(the commands that render) on a headless Linux machine without ``MUJOCO_GL`` re-executes itself once
with ``MUJOCO_GL=osmesa``; set ``MUJOCO_GL=egl`` yourself to render on a GPU.
"""

import os
import sys

from mjvec.cli import main


def _headless_rerun_needed() -> bool:
    return (
        sys.argv[1:2] in (["rollout"], ["eval"])
        and sys.platform.startswith("linux")
        and "MUJOCO_GL" not in os.environ
        and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    )


if _headless_rerun_needed():
    env = {**os.environ, "MUJOCO_GL": "osmesa"}
    env.setdefault("PYOPENGL_PLATFORM", "osmesa")
    os.execve(sys.executable, [sys.executable, "-m", "mjvec", *sys.argv[1:]], env)

raise SystemExit(main())
