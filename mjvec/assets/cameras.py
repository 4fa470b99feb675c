"""Cameras on a scene's MjSpec, and the camera-attached rangefinders that make their depth images.

A `CameraSpec` names one camera: its image size, field of view, and where it is (a fixed camera on
a static mount of its own, or riding on a body of the scene), or an `existing` camera of the scene
(Gymnasium's "track" cameras). `add_cameras(spec, cameras, depth=True)` adds them to a variant's
spec before it is compiled, so every env's own model (its own tool) holds them, and with `depth`
one camera-attached rangefinder per camera (MuJoCo's `<rangefinder camera=... data="depth"/>`):
a sensor that casts one ray per pixel inside the physics step and writes the image into
``sensordata``, row-major from the top-left pixel.

Depth, as MuJoCo defines it (``mjRAYDATA_DEPTH``): the hit point's distance along the camera's
optical axis (what a depth camera reports, and what an OpenGL depth buffer linearises to), not the
length of the ray; -1 where a ray hits nothing. A rangefinder never sees the geoms of the body its
camera rides on (MuJoCo excludes that body): a palm camera does not see the palm, a tracking camera
on a torso does not see the torso. Fixed cameras ride on a mount body without geoms, so they see
everything. The mount is massless and welded to the world: it changes no dynamics, and its
subtree centre of mass is its own origin, so the camera's derived frames (``cam_poscom0``) are the
same for every variant (a camera on the world body would have them differ per tool, and break
the batching of variants).

Invisible geoms (alpha 0, or a material with alpha 0) are not seen; every geom group is.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import mujoco
import numpy as np

from mjvec.errors import ConfigError, allowed
from mjvec.validate import require_bool, require_int

__all__ = ["CAMERA_MODES", "DEPTH_SENSOR_SUFFIX", "CameraSpec", "add_cameras", "depth_sensor_name", "look_at_quat"]

CAMERA_MODES = {
    "fixed": mujoco.mjtCamLight.mjCAMLIGHT_FIXED,
    "track": mujoco.mjtCamLight.mjCAMLIGHT_TRACK,
    "trackcom": mujoco.mjtCamLight.mjCAMLIGHT_TRACKCOM,
}
DEPTH_SENSOR_SUFFIX = "_depth"
DEFAULT_FOVY = 45.0
MAX_SIDE = 1024  # pixels per side: a 1024x1024 rangefinder is a million rays per frame and env


def depth_sensor_name(camera: str) -> str:
    """The name of the rangefinder that makes `camera`'s depth image."""
    return f"{camera}{DEPTH_SENSOR_SUFFIX}"


def _vector(label: str, value: object, size: int) -> tuple[float, ...] | None:
    if value is None:
        return None
    try:
        out = tuple(float(v) for v in value)  # type: ignore[union-attr]
    except (TypeError, ValueError):
        raise ConfigError(f"CameraSpec.{label} must be {size} finite floats, got {value!r}") from None
    if len(out) != size or not all(math.isfinite(v) for v in out):
        raise ConfigError(f"CameraSpec.{label} must be {size} finite floats, got {value!r}")
    return out


@dataclass(frozen=True)
class CameraSpec:
    """One camera of a scene (see the module docstring).

    name: the camera's name in the model (and its image's name in observations).
    width, height: the image size in pixels (MuJoCo's ``camera/resolution``).
    fovy: vertical field of view, degrees (None: 45, or an existing camera's own).
    body: the body the camera rides on (pos/quat/look_at are then in its frame); None: a fixed
        camera on a static mount body "<name>_mount" at the world origin (pos/quat in the world frame).
    pos: the camera's position (m). quat: its orientation (w, x, y, z); a MuJoCo camera looks
        along its -z with +y up. look_at: instead of quat, a point of the same frame to look at
        (with that frame's +z up).
    mode: "fixed" (rigidly on its body), "track" or "trackcom" (MuJoCo's tracking modes: follow the
        body, or its subtree's centre of mass, at a fixed world orientation).
    existing: the scene already has this camera: only its resolution (and fovy, when given) are set.
    depth_range: (near, far) in metres. Depth observations are clipped to it; as uint8, near maps to
        0 and far to 255, and a ray that hits nothing (or beyond far) reads as far.
    """

    name: str
    width: int = 64
    height: int = 64
    fovy: float | None = None
    body: str | None = None
    pos: tuple[float, float, float] = (0.0, 0.0, 0.0)
    quat: tuple[float, float, float, float] | None = None
    look_at: tuple[float, float, float] | None = None
    mode: str = "fixed"
    existing: bool = False
    depth_range: tuple[float, float] = (0.0, 2.0)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ConfigError(f"CameraSpec.name must be a non-empty str, got {self.name!r}")
        label = f"CameraSpec({self.name!r})"
        for what in ("width", "height"):
            object.__setattr__(self, what, require_int(getattr(self, what), f"{label}.{what}", low=1, high=MAX_SIDE))
        object.__setattr__(self, "existing", require_bool(self.existing, f"{label}.existing"))
        if self.fovy is not None:
            fovy = _vector("fovy", (self.fovy,), 1)
            if fovy is None or not 0.0 < fovy[0] < 180.0:
                raise ConfigError(f"{label}.fovy must be in (0, 180) degrees, got {self.fovy!r}")
            object.__setattr__(self, "fovy", fovy[0])
        if self.mode not in CAMERA_MODES:
            raise ConfigError(f"{label}.mode {self.mode!r} is not one of {allowed(CAMERA_MODES)}")
        if self.body is not None and (not isinstance(self.body, str) or not self.body):
            raise ConfigError(f"{label}.body must be None or a body name, got {self.body!r}")
        object.__setattr__(self, "pos", _vector("pos", self.pos, 3))
        object.__setattr__(self, "quat", _vector("quat", self.quat, 4))
        object.__setattr__(self, "look_at", _vector("look_at", self.look_at, 3))
        if self.quat is not None and self.look_at is not None:
            raise ConfigError(f"{label}: give quat or look_at, not both")
        if self.quat is not None and sum(v * v for v in self.quat) < 1e-12:
            raise ConfigError(f"{label}.quat must be a non-zero quaternion (w, x, y, z), got {self.quat}")
        if self.existing and (self.body is not None or self.quat is not None or self.look_at is not None
                              or self.pos != (0.0, 0.0, 0.0) or self.mode != "fixed"):
            raise ConfigError(
                f"{label}: an existing camera keeps the scene's pose and mode; give only width, height, fovy "
                "and depth_range (or existing=False to add a new camera)"
            )
        near_far = _vector("depth_range", self.depth_range, 2)
        if near_far is None or not 0.0 <= near_far[0] < near_far[1]:
            raise ConfigError(f"{label}.depth_range must be (near, far) metres with 0 <= near < far, got "
                              f"{self.depth_range!r}")
        object.__setattr__(self, "depth_range", near_far)

    @property
    def shape(self) -> tuple[int, int]:
        """(height, width) of its images."""
        return self.height, self.width

    def orientation(self) -> tuple[float, float, float, float] | None:
        """The camera's quaternion (w, x, y, z) in its parent frame, or None (the identity / existing)."""
        if self.look_at is not None:
            return look_at_quat(self.pos, self.look_at)
        return self.quat


def look_at_quat(pos: Sequence[float], target: Sequence[float],
                 up: Sequence[float] = (0.0, 0.0, 1.0)) -> tuple[float, float, float, float]:
    """The quaternion (w, x, y, z) of a camera at `pos` looking at `target`, its image's up as close
    to `up` as the view allows (a camera looking along `up` takes +y of the frame as up instead)."""
    forward = np.asarray(target, np.float64) - np.asarray(pos, np.float64)
    norm = float(np.sqrt((forward * forward).sum()))
    if norm < 1e-9:
        raise ConfigError(f"look_at {tuple(target)} is the camera's own position {tuple(pos)}; look at another point")
    forward /= norm
    up = np.asarray(up, np.float64)
    right = np.cross(forward, up)
    if float(np.sqrt((right * right).sum())) < 1e-6:
        right = np.cross(forward, np.array([0.0, 1.0, 0.0]))
    right /= np.sqrt((right * right).sum())
    true_up = np.cross(right, forward)
    # Columns: camera x (right), y (up), z (backwards: the camera looks along -z).
    matrix = np.stack([right, true_up, -forward], axis=1)
    quat = np.zeros(4)
    mujoco.mju_mat2Quat(quat, matrix.reshape(-1))
    return tuple(float(v) for v in quat)


def _names(spec: mujoco.MjSpec, elements: Sequence) -> list[str]:
    return [e.name for e in elements if e.name]


def add_cameras(spec: mujoco.MjSpec, cameras: Sequence[CameraSpec], *, depth: bool) -> None:
    """Add `cameras` to `spec` (in place; see the module docstring), with a depth rangefinder each
    when `depth`. Raises ConfigError for a body or an existing camera the scene lacks, or a camera
    name the scene already uses."""
    for cam in cameras:
        found = spec.camera(cam.name)
        if cam.existing:
            if found is None:
                raise ConfigError(
                    f"CameraSpec({cam.name!r}, existing=True): the scene has no camera {cam.name!r}; its cameras are "
                    f"{allowed(_names(spec, spec.cameras))}. Give existing=False and a pose to add one"
                )
            camera = found
        else:
            if found is not None:
                raise ConfigError(
                    f"CameraSpec({cam.name!r}): the scene already has a camera {cam.name!r}; pick another name, or "
                    "give existing=True to use the scene's own camera"
                )
            camera = _parent(spec, cam).add_camera(name=cam.name, pos=list(cam.pos))
            quat = cam.orientation()
            if quat is not None:
                camera.quat = list(quat)
            camera.mode = CAMERA_MODES[cam.mode]
            camera.fovy = DEFAULT_FOVY if cam.fovy is None else cam.fovy
        if cam.existing and cam.fovy is not None:
            camera.fovy = cam.fovy
        camera.resolution = [cam.width, cam.height]
        if depth:
            sensor = spec.add_sensor(name=depth_sensor_name(cam.name), type=mujoco.mjtSensor.mjSENS_RANGEFINDER,
                                     objtype=mujoco.mjtObj.mjOBJ_CAMERA, objname=cam.name)
            sensor.intprm[0] = 1 << int(mujoco.mjtRayDataField.mjRAYDATA_DEPTH)


def _parent(spec: mujoco.MjSpec, cam: CameraSpec) -> mujoco.MjsBody:
    if cam.body is None:
        mount = f"{cam.name}_mount"
        if spec.body(mount) is not None:
            raise ConfigError(f"CameraSpec({cam.name!r}): the scene already has a body {mount!r}; rename the camera")
        return spec.worldbody.add_body(name=mount)
    body = spec.body(cam.body)
    if body is None:
        raise ConfigError(
            f"CameraSpec({cam.name!r}).body={cam.body!r} is not a body of the scene; its bodies are "
            f"{allowed(_names(spec, spec.bodies), limit=48)}"
        )
    return body
