"""Rigid-frame helpers for turning URDF joint origins into MjSpec body frames.

Quaternions are MuJoCo's (w, x, y, z). URDF `rpy` is a fixed-axis roll-pitch-yaw, i.e. the rotation
Rz(yaw) @ Ry(pitch) @ Rx(roll).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mjvec import portable
from mjvec.rotations import quat_conj, quat_mul, quat_sandwich


def quat_rotate(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Rotate the 3-vector v by the unit quaternion q (as the product q (0, v) q^-1)."""
    return quat_sandwich(np.asarray(q, float), np.asarray(v, float))


def axis_angle_quat(axis: tuple[float, float, float], angle: float) -> np.ndarray:
    """Unit quaternion of a rotation by `angle` about the unit vector `axis`."""
    sin_half, cos_half = portable.sincos(0.5 * angle)
    return np.concatenate([[cos_half], sin_half * np.asarray(axis, float)])


def rpy_quat(rpy: tuple[float, float, float]) -> np.ndarray:
    """Quaternion of a URDF fixed-axis roll-pitch-yaw."""
    roll, pitch, yaw = rpy
    qx = axis_angle_quat((1.0, 0.0, 0.0), roll)
    qy = axis_angle_quat((0.0, 1.0, 0.0), pitch)
    qz = axis_angle_quat((0.0, 0.0, 1.0), yaw)
    return quat_mul(qz, quat_mul(qy, qx))


@dataclass(frozen=True)
class Frame:
    """A rigid transform: x_parent = pos + rotate(quat, x_child)."""

    pos: np.ndarray
    quat: np.ndarray

    @staticmethod
    def urdf(xyz: tuple[float, float, float], rpy: tuple[float, float, float] = (0.0, 0.0, 0.0)) -> Frame:
        return Frame(np.asarray(xyz, float), rpy_quat(rpy))

    def __matmul__(self, other: Frame) -> Frame:
        return Frame(self.pos + quat_rotate(self.quat, other.pos), quat_mul(self.quat, other.quat))

    def inverse(self) -> Frame:
        inv = quat_conj(self.quat)
        return Frame(-quat_rotate(inv, self.pos), inv)

    def apply(self, point: tuple[float, float, float] | np.ndarray) -> np.ndarray:
        return self.pos + quat_rotate(self.quat, np.asarray(point, float))
