"""SimToolReal-v0's cameras for camera observations (`SimToolRealEnv.task_cameras`).

- "table": fixed, across the table from the robot, looking down at the table top where the tool
  lies and the goals are, as the source's real setup films the tool (its RGB-D camera faces the
  robot over the table; its exact pose is not published, so this one frames the table and the
  hand's working space above it).
- "wrist": on the palm, a little in front of its inner face, looking out of the palm with the
  fingers up in the image: the hand-eye view of the grasp. The palm's own geoms are not in its
  depth image (a rangefinder never sees its camera's body); the fingers and the tool are.
"""

from __future__ import annotations

from mjvec.assets._hand import PALM_BOX
from mjvec.assets.cameras import CameraSpec
from mjvec.assets.robot import HAND_BODY_NAME
from mjvec.tasks.simtoolreal.scene import TABLE_TOP_Z

# The palm frame's +x is the normal of its inner face, +z points along the fingers.
_WRIST_POS = (PALM_BOX[0][0] + PALM_BOX[1][0] + 0.01, PALM_BOX[0][1], PALM_BOX[0][2])

CAMERAS = (
    CameraSpec("table", pos=(0.0, -0.7, 1.0), look_at=(0.0, 0.1, TABLE_TOP_Z), fovy=55.0, depth_range=(0.0, 2.0)),
    CameraSpec("wrist", body=HAND_BODY_NAME, pos=_WRIST_POS,
               look_at=(_WRIST_POS[0] + 1.0, _WRIST_POS[1], _WRIST_POS[2]), fovy=80.0, depth_range=(0.0, 1.0)),
)
