"""`CameraImages`: an env's image observations, a ring of frames per image, where the state lives.

The env (`MjVecEnv`) calls three things (`mjvec.envs.cameras` states what is observed):

- `after_step()`, right after the physics step: every env due a frame this step (its
  ``render_every``-th control step since its last frame) gets one from what the step computed,
  pushed into its ring; the others keep theirs. Depth is the camera rangefinders' sensordata; rgb
  and segmentation a batch render of every env (`Backend.image_renderer`).
- `after_reset(rows)`, after the task reset those envs: each gets a fresh frame (from the reset's
  forward, which computed its sensors) in every slot of its ring, and its cadence restarts.
- `observe(task_obs)`: the task's observation with every image (the k frames of each ring, oldest
  first), fresh arrays. A pure function of the rings: calling it twice gives the same.

After each of the first two it tells the backend which envs need a frame after the next step
(`Backend.sense`), so the camera rangefinders run once per control step (at its last substep, the
state the task's other derived quantities describe) and only for those envs; a device backend
senses every env (its mask is not read back), and the cadence then only selects.

The rings are (N, k, C, H, W) arrays of the observation's dtype, in the state's namespace and on
its device, with a per-env write slot: a push writes one frame per env due, a reset fills one
env's k slots, and nothing is shifted. On a device every operation runs on all rows under masks,
so no step reads a device value back.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from mjvec.assets.cameras import CameraSpec, depth_sensor_name
from mjvec.envs.cameras import CHANNELS, MAX_SEGMENTATION_GEOMS, CameraSetup
from mjvec.errors import ConfigError
from mjvec.xp import Rows, is_numpy, namespace_of

__all__ = ["POLICY_KEY", "CameraImages"]

POLICY_KEY = "policy"  # where a Box task observation goes in the Dict


class CameraImages:
    """The image observations of one env (see the module docstring).

    backend: the env's backend (its `sensordata` view, `image_renderer`, `sense`).
    setup: the resolved `CameraSetup`.
    """

    def __init__(self, backend: Any, setup: CameraSetup) -> None:
        self.setup = setup
        self._backend = backend
        model = backend.model
        like = backend.qpos
        self.xp = namespace_of(like)
        self._host = is_numpy(self.xp)
        self._device = None if self._host else like.device
        n = self.num_envs = int(backend.num_envs)
        if "segmentation" in setup.kinds and model.ngeom > MAX_SEGMENTATION_GEOMS:
            raise ConfigError(
                f"segmentation images label pixels with uint8 geom ids, and this model has {model.ngeom} geoms (at "
                f"most {MAX_SEGMENTATION_GEOMS}); use cameras='rgb' or 'depth', or a scene with fewer geoms"
            )
        self._depth_adr: dict[str, int] = {}
        if setup.depth:
            self._sensordata = backend.bind("sensordata")
            for cam in setup.cameras:
                self._depth_adr[cam.name] = int(model.sensor_adr[model.sensor(depth_sensor_name(cam.name)).id])
        self._renderer = backend.image_renderer([c.name for c in setup.cameras], setup.rendered) \
            if setup.rendered else None
        self._camera_index = {cam.name: i for i, cam in enumerate(setup.cameras)}
        k = setup.frame_stack
        self._rings = {key: self._zeros((k, CHANNELS[kind], cam.height, cam.width), setup.dtype(kind))
                       for key, cam, kind in setup.keys()}
        self._slot = self._zeros((), np.int64)  # each env's newest frame in its ring
        self._age = self._zeros((), np.int64)  # control steps since each env's last frame
        self._arange = self.xp.arange(n, device=self._device)
        self._order = self.xp.arange(k, device=self._device)
        # Other sensors would read stale where an env is not sensed: then every env senses.
        self._per_env = self._host and model.nsensor == (len(setup.cameras) if setup.depth else 0)
        self._sensing_all = False
        self.num_frames = 0  # frames made so far, summed over envs (host path only; for tests and benchmarks)

    # ---- spaces ----------------------------------------------------------------------------
    def space(self, task_space: gym.Space) -> gym.spaces.Dict:
        """The observation space: the task's (under "policy", or its own Dict keys) plus the images."""
        spaces = dict(task_space.spaces) if isinstance(task_space, gym.spaces.Dict) else {POLICY_KEY: task_space}
        k = self.setup.frame_stack
        for key, cam, kind in self.setup.keys():
            if key in spaces:
                raise ConfigError(f"the task's observation already has a key {key!r}; rename camera {cam.name!r}")
            shape = (k * CHANNELS[kind], cam.height, cam.width)
            dtype = self.setup.dtype(kind)
            if dtype == np.uint8:
                spaces[key] = gym.spaces.Box(0, 255, shape, np.uint8)
            else:
                near, far = cam.depth_range
                spaces[key] = gym.spaces.Box(near, far, shape, dtype)
        return gym.spaces.Dict(spaces)

    # ---- the env's three calls --------------------------------------------------------------
    def after_step(self) -> None:
        """Push this step's frames for the envs due one (see the module docstring)."""
        xp = self.xp
        self._age += 1
        due = self._age >= self.setup.render_every
        rows = Rows.of_mask(due)
        if rows.any():
            frames = self._frames(rows)
            k = self.setup.frame_stack
            if rows.dense:
                slot = xp.where(due, (self._slot + 1) % k, self._slot)
                for key, frame in frames.items():
                    ring = self._rings[key]
                    current = ring[self._arange, slot]
                    ring[self._arange, slot] = xp.where(_rows(due, frame), frame, current)
                self._slot = slot
            else:
                ids = rows.ids
                slot = (self._slot[ids] + 1) % k
                for key, frame in frames.items():
                    self._rings[key][ids, slot] = frame
                self._slot[ids] = slot
                self.num_frames += int(ids.size)
            self._age = xp.where(due, 0, self._age)
        self._schedule()

    def after_reset(self, rows: Rows) -> None:
        """Fill the reset envs' rings with a fresh frame each and restart their cadence."""
        if not rows.any():
            return
        frames = self._frames(rows)
        for key, frame in frames.items():
            ring = self._rings[key]
            rows.put(ring, self.xp.stack([frame] * self.setup.frame_stack, axis=1))
        rows.put(self._slot, 0)
        rows.put(self._age, 0)
        if not rows.dense:
            self.num_frames += int(rows.size)
        self._schedule()

    def observe(self, task_obs: Any) -> dict[str, Any]:
        """The task's observation plus every image stack (fresh arrays; oldest frame first)."""
        obs = dict(task_obs) if isinstance(task_obs, dict) else {POLICY_KEY: task_obs}
        k = self.setup.frame_stack
        index = (self._slot[:, None] + 1 + self._order[None, :]) % k
        for key, ring in self._rings.items():
            stacked = ring[self._arange[:, None], index]  # (N, k, C, H, W), a copy
            obs[key] = self.xp.reshape(stacked, (self.num_envs, -1, *ring.shape[3:]))
        return obs

    # ---- frames ----------------------------------------------------------------------------
    def raw_depth(self, camera: str) -> Any:
        """(N, H, W) the camera's rangefinder depth in metres as the backend computed it last (-1: no
        hit); rows of envs not sensed in the last step are unspecified (see `Backend.sense`). A copy."""
        cam = self.setup.cameras[self._camera_index[camera]]
        adr = self._depth_adr[camera]
        raw = self._sensordata[:, adr:adr + cam.width * cam.height]
        return self.xp.reshape(raw, (self.num_envs, cam.height, cam.width)) + 0

    def _frames(self, rows: Rows) -> dict[str, Any]:
        """{key: (rows, C, H, W)} new frames for the rows (all N rows on a device)."""
        rendered = self._renderer.render() if self._renderer is not None else {}
        out = {}
        for key, cam, kind in self.setup.keys():
            if kind == "depth":
                adr = self._depth_adr[cam.name]
                raw = rows.take(self._sensordata)[:, adr:adr + cam.width * cam.height]
                out[key] = self._depth_image(raw, cam)
            elif kind == "rgb":
                image = rows.take(rendered["rgb"][self._camera_index[cam.name]])
                out[key] = self.xp.permute_dims(image, (0, 3, 1, 2))
            else:
                labels = rows.take(rendered["segmentation"][self._camera_index[cam.name]])
                ids = self.xp.where(labels < 0, MAX_SEGMENTATION_GEOMS, labels)
                out[key] = self.xp.astype(ids, self.xp.uint8)[:, None]
        return out

    def _depth_image(self, raw: Any, cam: CameraSpec) -> Any:
        """(R, 1, H, W) of the observation's dtype from (R, H*W) rangefinder depths."""
        xp = self.xp
        near, far = cam.depth_range
        depth = xp.where(raw < 0, far, xp.clip(raw, near, far))
        if self.setup.depth_format == "uint8":
            depth = xp.round((depth - near) * (255.0 / (far - near)))
        image = xp.astype(depth, _xp_dtype(xp, self.setup.dtype("depth")))
        return xp.reshape(image, (image.shape[0], 1, cam.height, cam.width))

    def _schedule(self) -> None:
        """Tell the backend which envs need a frame after the next step."""
        if self._per_env:
            self._backend.sense(self._age + 1 >= self.setup.render_every)
        elif not self._sensing_all:
            self._backend.sense(None)
            self._sensing_all = True

    def _zeros(self, tail: tuple[int, ...], dtype: Any) -> Any:
        return self.xp.zeros((self.num_envs, *tail), dtype=_xp_dtype(self.xp, dtype), device=self._device)

    def close(self) -> None:
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None


def _rows(mask: Any, like: Any) -> Any:
    """`mask` (N,) shaped to broadcast over `like` (N, ...)."""
    return mask.reshape(-1, *([1] * (like.ndim - 1)))


def _xp_dtype(xp: Any, dtype: Any) -> Any:
    """numpy dtype `dtype` as namespace `xp`'s."""
    return getattr(xp, np.dtype(dtype).name)
