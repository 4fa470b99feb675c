"""The hooks `SimToolRealEnv` declares for the randomization wrappers (a mixin).

They implement `mjvec.contract`: `ObjectPoseHooks`, `ObjectScaleHooks`, `PushHooks`,
`PushReferenceMassHooks` and `GoalSegmentHooks` (`EnvHooks` and `PolicyLayoutHooks` come from `MjVecEnv` and the class).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from mjvec.assets.tools import source_env0_tool
from mjvec.xp import copy_array


class SimToolRealHooks:
    """Object pose/scale slots, push targets and the goal-segment counter of `SimToolRealEnv`."""

    backend: Any
    _slots: Any
    _obj_qpos: int
    object_body_id: int
    object_mass: np.ndarray
    object_scales: np.ndarray
    lifted: np.ndarray
    progress: np.ndarray

    def true_object_pose(self) -> tuple[Any, Any]:
        """(pos (N, 3), quat (N, 4) wxyz) of the object from qpos (current), copies in the state's namespace."""
        q = self.backend.qpos
        pos, quat = q[:, self._obj_qpos:self._obj_qpos + 3], q[:, self._obj_qpos + 3:self._obj_qpos + 7]
        if isinstance(q, np.ndarray):
            return pos.copy(), quat.copy()
        return pos.clone(), quat.clone()

    def set_object_pose_source(self, source: Callable[[], tuple[np.ndarray, np.ndarray]]) -> Callable[[], None]:
        """The policy's object pose becomes `source()` ((N, 3), (N, 4) wxyz); returns the release.

        One source at a time (a second raises ConfigError). The critic and the reward keep the true pose.
        """
        return self._slots.fill("object_pose", source)

    def set_object_scale_source(self, source: Callable[[], np.ndarray]) -> Callable[[], None]:
        """The observed grasp-box scales become `source()` ((N, 3)); returns the release (one at a time)."""
        return self._slots.fill("object_scales", source)

    def observed_object_pose(self) -> tuple[np.ndarray, np.ndarray]:
        """The object pose the POLICY sees now: the slot's source, or the true pose."""
        source = self._slots.get("object_pose")
        return self.true_object_pose() if source is None else source()

    def observed_object_scales(self) -> np.ndarray:
        """(N, 3) grasp-box scales the policy sees (and obs keypoints use): the slot's source, or the true ones."""
        source = self._slots.get("object_scales")
        return self.object_scales if source is None else source()

    @property
    def push_body_id(self) -> int:
        """The body random pushes act on: the object."""
        return self.object_body_id

    @property
    def push_mass(self) -> np.ndarray:
        """(N,) the pushed body's mass per env: the tool's catalog mass."""
        return self.object_mass

    @property
    def push_reference_mass(self) -> float:
        """The one mass the paper's run scales every env's push by: its env 0's tool, which is tool 0
        of the source's 1,200-tool pool (not of this 600-tool catalog). The same in every shard."""
        return float(source_env0_tool().mass)

    def goal_segment_steps(self) -> Any:
        """(N,) int: control steps since the current goal segment began (the reset or the last
        success); 0 after a reset and in the step that reached a goal (the source's progress)."""
        return copy_array(self.progress)

    def push_allowed(self) -> Any:
        """(N,) bool: a push may start where the object is lifted."""
        return copy_array(self.lifted)
