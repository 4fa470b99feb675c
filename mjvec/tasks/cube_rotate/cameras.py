"""CubeRotate-v0's camera for camera observations (`CubeRotateEnv.task_cameras`).

"palm": fixed, above the palm (a little towards the wrist), looking down at the palm's centre:
the cube, its face markers and the fingertips on it are in view.
"""

from __future__ import annotations

from mjvec.assets.cameras import CameraSpec
from mjvec.tasks.cube_rotate.scene import PALM_CENTER

CAMERAS = (
    CameraSpec("palm", pos=(PALM_CENTER[0] - 0.06, PALM_CENTER[1], PALM_CENTER[2] + 0.24), look_at=PALM_CENTER,
               fovy=50.0, depth_range=(0.0, 0.5)),
)
