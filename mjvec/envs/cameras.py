"""Camera observations: what a user asks for (`CameraObs`), checked against what the task declares.

Any task gets image observations with one option::

    gym.make_vec("CubeRotate-v0", num_envs=64, cameras="depth")                 # the task's cameras
    gym.make_vec("SimToolReal-v0", num_envs=64, backend="warp", cameras="rgbd", frame_stack=2)
    gym.make_vec("mjvec/Hopper-v5", num_envs=64, cameras=CameraObs(
        "depth", cameras=(CameraSpec("side", pos=(0, -3, 1), look_at=(0, 0, 1)),), depth_format="float32"))

A task declares its cameras with `MjVecEnv.task_cameras(options)` (a tuple of
`mjvec.assets.cameras.CameraSpec`); ``CameraObs.cameras`` picks some of them by name, replaces
one (a `CameraSpec` of the same name: another size, pose or range) or adds new ones. The cameras
(and, for depth, one camera-attached rangefinder each) are added to every variant's MjSpec before
it is compiled (`CameraSetup.make_variant`), so each env's own model holds them: its own tool is in
its images.

Modes (`IMAGE_MODES`): "depth" (every backend: MuJoCo's camera rangefinders), "rgb",
"segmentation" and "rgbd" (rgb + depth) on a backend with a batch renderer (Warp); another backend
is refused before anything is built, naming the Warp backend. Observations become a `Dict`: the
task's own observation under "policy" (or its own keys, when it already is a Dict), plus one key
per camera and image kind (`CameraSetup.keys`: "depth", "rgb", "segmentation" with one camera;
"<kind>_<camera>" with several), channel-first:

- depth: (k, H, W), uint8 (near..far of the camera's ``depth_range`` mapped linearly onto
  0..255, rounded half to even; a miss reads as far) or float16 / float32 metres (clipped to the
  range; a miss reads as far);
- rgb: (3k, H, W) uint8, frames oldest first, each R, G, B;
- segmentation: (k, H, W) uint8: the canonical geom id of the geom each pixel sees, 255 for none
  (so a model may have at most 255 geoms).

k is ``frame_stack`` (the k most recent frames, oldest first); ``render_every=n`` renders a new
frame every n control steps of each env (counted from its reset, where it always gets a fresh one)
and repeats the last frame between. `mjvec.envs.camera_images` runs them.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import mujoco
import numpy as np

from mjvec.assets.cameras import MAX_SIDE, CameraSpec, add_cameras
from mjvec.errors import ConfigError, allowed
from mjvec.validate import require_int

__all__ = ["DEPTH_FORMATS", "IMAGE_MODES", "CameraObs", "CameraSetup", "camera_setup"]

IMAGE_MODES: dict[str, tuple[str, ...]] = {
    "depth": ("depth",),
    "rgb": ("rgb",),
    "rgbd": ("rgb", "depth"),
    "segmentation": ("segmentation",),
}
DEPTH_FORMATS = {"uint8": np.uint8, "float16": np.float16, "float32": np.float32}
CHANNELS = {"depth": 1, "rgb": 3, "segmentation": 1}
MAX_SEGMENTATION_GEOMS = 255  # uint8 labels, 255 = nothing hit


@dataclass(frozen=True)
class CameraObs:
    """The camera observations asked for (see the module docstring).

    mode: a key of `IMAGE_MODES`.
    cameras: None (every camera the task declares), or names of the task's cameras and/or
        `CameraSpec`s (a name the task declares replaces its camera; a new name adds one).
    size: (height, width) for every camera (None: each camera's own).
    depth_format: "uint8", "float16" or "float32" (see the module docstring).
    """

    mode: str = "depth"
    cameras: tuple[str | CameraSpec, ...] | None = None
    size: tuple[int, int] | None = None
    depth_format: str = "uint8"

    def __post_init__(self) -> None:
        if not isinstance(self.mode, str) or self.mode not in IMAGE_MODES:
            raise ConfigError(f"CameraObs.mode {self.mode!r} is not one of {allowed(IMAGE_MODES)}")
        if self.depth_format not in DEPTH_FORMATS:
            raise ConfigError(f"CameraObs.depth_format {self.depth_format!r} is not one of {allowed(DEPTH_FORMATS)}")
        if self.cameras is not None:
            if isinstance(self.cameras, (str, CameraSpec)):
                raise ConfigError(
                    f"CameraObs.cameras must be a tuple of camera names or CameraSpecs, got {self.cameras!r}; "
                    f"write cameras=({self.cameras!r},)"
                )
            cameras = tuple(self.cameras)
            bad = [c for c in cameras if not isinstance(c, (str, CameraSpec))]
            if bad or not cameras:
                raise ConfigError(
                    f"CameraObs.cameras must be a non-empty tuple of names or CameraSpecs, got {bad or cameras}")
            object.__setattr__(self, "cameras", cameras)
        if self.size is not None:
            if not isinstance(self.size, (tuple, list)) or len(self.size) != 2:
                raise ConfigError(f"CameraObs.size must be (height, width), got {self.size!r}")
            object.__setattr__(self, "size", tuple(require_int(v, f"CameraObs.size[{i}]", low=1, high=MAX_SIDE)
                                                   for i, v in enumerate(self.size)))

    @property
    def kinds(self) -> tuple[str, ...]:
        return IMAGE_MODES[self.mode]


def parse_camera_options(cameras: Any, frame_stack: Any, render_every: Any, backend_images: frozenset[str],
                         backend: str) -> CameraObs | None:
    """`TaskOptions`' camera keywords, checked (before anything is built): the request, or None."""
    for label, value in (("frame_stack", frame_stack), ("render_every", render_every)):
        require_int(value, label, low=1)
    if cameras is None:
        if frame_stack != 1 or render_every != 1:
            raise ConfigError(
                f"frame_stack={frame_stack} / render_every={render_every} apply to camera observations, and none "
                f"were asked for; add cameras= one of {allowed(IMAGE_MODES)} (or a CameraObs)"
            )
        return None
    request = CameraObs(cameras) if isinstance(cameras, str) else cameras
    if not isinstance(request, CameraObs):
        raise ConfigError(f"cameras must be None, one of {allowed(IMAGE_MODES)} or a CameraObs, got {cameras!r}")
    missing = sorted(set(request.kinds) - set(backend_images))
    if missing:
        raise ConfigError(
            f"cameras={request.mode!r} needs {missing} images, which backend={backend!r} does not make (it makes "
            f"{sorted(backend_images)}): rgb and segmentation come from mujoco-warp's batch renderer; use "
            "backend='warp' (device='cpu' runs it without a GPU), or cameras='depth'"
        )
    return request


@dataclass(frozen=True)
class CameraSetup:
    """A camera request resolved against the task's cameras: what every variant gets and what the
    env observes (see the module docstring)."""

    cameras: tuple[CameraSpec, ...]
    kinds: tuple[str, ...]
    depth_format: str = "uint8"
    frame_stack: int = 1
    render_every: int = 1

    @property
    def depth(self) -> bool:
        return "depth" in self.kinds

    @property
    def rendered(self) -> frozenset[str]:
        """The kinds a batch renderer makes (all but depth)."""
        return frozenset(self.kinds) - {"depth"}

    def keys(self) -> tuple[tuple[str, CameraSpec, str], ...]:
        """(observation key, camera, kind) of every image, cameras in order, kinds in mode order."""
        single = len(self.cameras) == 1
        return tuple((kind if single else f"{kind}_{cam.name}", cam, kind)
                     for cam in self.cameras for kind in self.kinds)

    def make_variant(self, make: Callable[[int], mujoco.MjSpec]) -> Callable[[int], mujoco.MjSpec]:
        """`make` with these cameras added to every variant it builds."""
        return functools.partial(_with_cameras, make, self.cameras, self.depth)

    def dtype(self, kind: str) -> np.dtype:
        return np.dtype(DEPTH_FORMATS[self.depth_format] if kind == "depth" else np.uint8)

    @property
    def bound_fields(self) -> tuple[str, ...]:
        """The MjData fields the image path binds."""
        return ("sensordata",) if self.depth else ()

    def bytes_per_env(self) -> int:
        """Bytes one env's images take besides the backend's sensordata row: the frame ring (k frames),
        the observation gathered from it and its output copy (k frames each), one new frame as float32,
        and the renderer's buffers (packed RGBA and the rgb copy; the (id, type) pair and the id copy)."""
        total = 0
        for _, cam, kind in self.keys():
            pixels = cam.width * cam.height
            frame = CHANNELS[kind] * pixels
            total += 3 * self.frame_stack * frame * self.dtype(kind).itemsize + 4 * frame
            total += {"rgb": 4 + 3, "segmentation": 8 + 4}.get(kind, 0) * pixels
        return total


def _with_cameras(make: Callable[[int], mujoco.MjSpec], cameras: tuple[CameraSpec, ...], depth: bool,
                  v: int) -> mujoco.MjSpec:
    spec = make(v)
    if isinstance(spec, mujoco.MjSpec):  # else the registry names what make_variant returned
        add_cameras(spec, cameras, depth=depth)
    return spec


def camera_setup(env_id: str, declared: Sequence[CameraSpec], request: CameraObs | None, *, frame_stack: int = 1,
                 render_every: int = 1) -> CameraSetup | None:
    """The `CameraSetup` of `request` over the task's `declared` cameras (None: no cameras asked for)."""
    if request is None:
        return None
    declared = tuple(declared)
    by_name = {cam.name: cam for cam in declared}
    if len(by_name) != len(declared) or not all(isinstance(c, CameraSpec) for c in declared):
        raise ConfigError(f"{env_id}.task_cameras must return CameraSpecs with distinct names, got {declared!r}")
    if request.cameras is None:
        if not declared:
            raise ConfigError(
                f"{env_id} declares no cameras; add one: cameras=CameraObs({request.mode!r}, cameras=(CameraSpec("
                "'name', pos=..., look_at=...),))"
            )
        chosen = list(declared)
    else:
        chosen = []
        for item in request.cameras:
            if isinstance(item, str):
                if item not in by_name:
                    raise ConfigError(
                        f"{env_id} has no camera {item!r}; its cameras are {allowed(by_name)}; add a new one with a "
                        "CameraSpec"
                    )
                item = by_name[item]
            chosen.append(item)
    names = [cam.name for cam in chosen]
    if len(set(names)) != len(names):
        raise ConfigError(f"cameras {names} name a camera twice; each camera once")
    if request.size is not None:
        chosen = [dataclasses.replace(cam, height=request.size[0], width=request.size[1]) for cam in chosen]
    return CameraSetup(tuple(chosen), request.kinds, request.depth_format, int(frame_stack), int(render_every))
