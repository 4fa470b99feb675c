"""The camera oracle: a camera's depth image cast pixel by pixel with plain `mujoco.mj_ray`.

`ray_depth(model, data, camera)` computes, with Python floats in MuJoCo's own order of operations
(`mju_camIntrinsics`, `mju_camPixelRay`: the pixel centre's direction in the camera frame, rotated
by the camera's world orientation, normalised), one `mj_ray` per pixel from the camera's position,
excluding the camera's body as MuJoCo's rangefinder does, and the hit point's distance along the
optical axis (MuJoCo's ``mjRAYDATA_DEPTH``). Independent of the rangefinder sensor: it shares with
it only MuJoCo's ray-geom intersection.
"""

from __future__ import annotations

import math

import mujoco
import numpy as np


def pixel_rays(model: mujoco.MjModel, data: mujoco.MjData, cam: int) -> tuple[np.ndarray, list[tuple]]:
    """(camera position (3,), [(row, col, direction (3,))] row-major) of a fovy perspective camera."""
    width, height = (int(v) for v in model.cam_resolution[cam])
    fy = 0.5 / math.tan(float(model.cam_fovy[cam]) * math.pi / 360.0) * height
    fx = fy
    cx, cy = width / 2.0, height / 2.0
    mat = [float(v) for v in data.cam_xmat[cam]]
    rays = []
    for row in range(height):
        for col in range(width):
            px, py = col + 0.5 - cx, row + 0.5 - cy
            v = (px / fx, -py / fy, -1.0)
            d = [mat[3 * i] * v[0] + mat[3 * i + 1] * v[1] + mat[3 * i + 2] * v[2] for i in range(3)]
            inv = 1.0 / math.sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2])
            rays.append((row, col, np.array([d[0] * inv, d[1] * inv, d[2] * inv])))
    return np.array(data.cam_xpos[cam], np.float64), rays


def ray_depth(model: mujoco.MjModel, data: mujoco.MjData, camera: str) -> tuple[np.ndarray, np.ndarray]:
    """((H, W) depth along the optical axis, -1 for no hit; (H, W) geom id hit, -1 for none) of
    `camera` at `data`'s kinematics (call mj_forward or mj_kinematics + mj_camlight first)."""
    cam = model.camera(camera).id
    width, height = (int(v) for v in model.cam_resolution[cam])
    origin, rays = pixel_rays(model, data, cam)
    axis = [float(data.cam_xmat[cam][2]), float(data.cam_xmat[cam][5]), float(data.cam_xmat[cam][8])]
    depth = np.full((height, width), -1.0)
    geoms = np.full((height, width), -1, np.int64)
    geomid = np.zeros(1, np.int32)
    for row, col, direction in rays:
        dist = mujoco.mj_ray(model, data, origin, direction, None, 1, int(model.cam_bodyid[cam]), geomid)
        if dist >= 0:
            point = [float(origin[i]) + float(direction[i]) * dist for i in range(3)]
            delta = [point[i] - float(origin[i]) for i in range(3)]
            depth[row, col] = -(delta[0] * axis[0] + delta[1] * axis[1] + delta[2] * axis[2])
            geoms[row, col] = int(geomid[0])
    return depth, geoms
