"""mujoco-warp's batch renderer behind the `ImageRenderer` contract (mjvec.backends.base).

One render context per variant group (`mujoco_warp.create_render_context` over the group's
template, one image per world and camera): `render()` places the cameras and lights from the
worlds' body poses (`camlight`), refits each group's bounding-volume hierarchy to their current
geom poses (`refit_bvh`), ray-casts every world's cameras in one
launch (`render`) and unpacks the results into `(num_envs, ...)` torch tensors on the device, in
env order. Everything stays on the device: nothing is read back to the host.

What each world is drawn with is its own model: the per-world rows of the group's Model (geom
sizes, mesh ids, colours, materials, lights, camera poses and fields of view, randomization
included), at the state its Data's kinematics describe (after a step: the last substep's start).
Rays are computed per render from each world's camera (`use_precomputed_rays=False`), so a
randomized field of view is honoured. The geom groups drawn are MuJoCo's default visible ones
(0, 1, 2); textures are used, shadows are not.

Output: "rgb" (num_envs, H, W, 3) uint8, from the renderer's packed pixels (byte order B, G, R,
A); "segmentation" (num_envs, H, W) int32, the canonical geom id of the nearest geom hit per pixel
(each group's own geom ids mapped back through its slot map), -1 where nothing is hit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import mujoco_warp as mjw
import numpy as np
import torch
import warp as wp

from mjvec.backends.variants import Routing
from mjvec.backends.warp import build as B
from mjvec.backends.warp.build import torch_to_warp, warp_to_torch

_GEOM_GROUPS = [0, 1, 2]  # MuJoCo's default visible geom groups (mjv_defaultOption)
_BGR = (2, 1, 0)  # the packed pixel's bytes, little-endian: B, G, R, A


class BatchRenderer:
    """Renders `cameras` (camera ids of the canonical model) of every world (see the module docstring).

    kinds: a subset of {"rgb", "segmentation"}.
    """

    def __init__(self, worlds: Sequence[B.Worlds], routing: Routing, device: Any, cameras: tuple[int, ...],
                 kinds: frozenset[str]) -> None:
        self.kinds = frozenset(kinds)
        self._worlds = list(worlds)
        self._device = device
        self._cameras = tuple(int(c) for c in cameras)
        self._single = routing.single
        model = self._worlds[0].template
        self._res = [tuple(int(v) for v in model.cam_resolution[c]) for c in self._cameras]
        rgb, seg = "rgb" in self.kinds, "segmentation" in self.kinds
        with wp.ScopedDevice(device):
            self._contexts = [
                mjw.create_render_context(
                    w.template, nworld=w.nworld, cam_res=None, render_rgb=[rgb] * len(self._cameras),
                    render_depth=[False] * len(self._cameras), render_seg=[seg] * len(self._cameras),
                    cam_active=list(self._cameras), use_textures=True, use_shadows=False,
                    use_precomputed_rays=False, enabled_geom_groups=_GEOM_GROUPS)
                for w in self._worlds
            ]
        # Where each camera's pixels start in a world's buffers: the same in every group (same cameras,
        # same resolutions); read once here, on the host.
        self._rgb_adr = self._contexts[0].rgb_adr.numpy().copy()
        self._seg_adr = self._contexts[0].seg_adr.numpy().copy()
        torch_device = wp.device_to_torch(device)
        self._index = [torch.as_tensor(w.env_ids, dtype=torch.long, device=torch_device) for w in self._worlds]
        # Per group: its geom id + 1 -> canonical geom id (index 0: the background, -1).
        self._canonical = [torch.as_tensor(_local_to_canonical(w.group.geom_map, w.template.ngeom),
                                           dtype=torch.int32, device=torch_device) for w in self._worlds]
        n = int(routing.group_of_env.size)
        self._out: dict[str, list[Any]] = {}
        if rgb:
            self._out["rgb"] = [torch.zeros((n, h, w, 3), dtype=torch.uint8, device=torch_device) for w, h in self._res]
        if seg:
            self._out["segmentation"] = [torch.full((n, h, w), -1, dtype=torch.int32, device=torch_device)
                                         for w, h in self._res]

    def render(self) -> dict[str, tuple[Any, ...]]:
        """Draw every world's cameras now; {kind: one (num_envs, ...) tensor per camera}."""
        torch_to_warp(self._device)
        with wp.ScopedDevice(self._device):
            for worlds, rc in zip(self._worlds, self._contexts, strict=True):
                # The cameras' poses from the bodies' (a masked reset that runs only the kinematics
                # stages leaves them as they were): as mj_camlight, from the same state.
                mjw.camlight(worlds.m, worlds.d)
                mjw.refit_bvh(worlds.m, worlds.d, rc)
                mjw.render(worlds.m, worlds.d, rc)
        warp_to_torch(self._device)
        for g, rc in enumerate(self._contexts):
            if "rgb" in self._out:
                packed = wp.to_torch(rc.rgb_data).view(torch.uint8).reshape(rc.rgb_data.shape[0], -1, 4)
                for c, (w, h) in enumerate(self._res):
                    start = int(self._rgb_adr[c])
                    pixels = packed[:, start:start + w * h, list(_BGR)].reshape(-1, h, w, 3)
                    self._put("rgb", c, g, pixels)
            if "segmentation" in self._out:
                labels = wp.to_torch(rc.seg_data).reshape(rc.seg_data.shape[0], -1, 2)[..., 0]
                for c, (w, h) in enumerate(self._res):
                    start = int(self._seg_adr[c])
                    local = labels[:, start:start + w * h].reshape(-1, h, w)
                    self._put("segmentation", c, g, self._canonical[g][(local + 1).long()])
        return {kind: tuple(arrays) for kind, arrays in self._out.items()}

    def _put(self, kind: str, camera: int, g: int, values: Any) -> None:
        out = self._out[kind][camera]
        if self._single:
            out.copy_(values)
        else:
            out.index_copy_(0, self._index[g], values)

    def close(self) -> None:
        self._contexts = []
        self._out = {}


def _local_to_canonical(geom_map: np.ndarray, ngeom: int) -> np.ndarray:
    """(ngeom + 1,) int: entry 0 is -1 (background), entry j + 1 the canonical slot of group geom j."""
    table = np.full(ngeom + 1, -1, np.int64)
    present = np.flatnonzero(geom_map >= 0)
    table[geom_map[present] + 1] = present
    return table

