"""The suite's pure per-step functions over (N, ...) numpy arrays, each written to give, row for
row, the same float64 bits as the Gymnasium v5 expression it names (``<task>_v5.py``): the same
operations in the same order (numpy's row reductions sum like its 1-D ones; the tests check it).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from mjvec import portable
from mjvec._jit import host_arrays, kernel

__all__ = [
    "ant_contact_cost",
    "ant_healthy",
    "control_cost",
    "ddot2_form",
    "distance_from_origin",
    "hopper_healthy",
    "humanoid_contact_cost",
    "humanoid_healthy",
    "mass_center",
    "walker_healthy",
]


def control_cost(weight: float, values: np.ndarray) -> np.ndarray:
    """``weight * np.sum(np.square(values))`` per row, in `values`' dtype (Gymnasium computes it on
    the float32 action for Ant, HalfCheetah, Hopper and Walker2d, on the float64 ctrl for Humanoid)."""
    return weight * np.sum(np.square(values), axis=1)


def ant_contact_cost(weight: float, cfrc_ext: np.ndarray, force_range: tuple[float, float]) -> np.ndarray:
    """Ant: ``weight * sum(square(clip(cfrc_ext, *force_range)))`` over every body, the world's included."""
    clipped = np.clip(cfrc_ext, force_range[0], force_range[1])
    return weight * np.sum(np.square(clipped).reshape(clipped.shape[0], -1), axis=1)


def humanoid_contact_cost(weight: float, cfrc_ext: np.ndarray, cost_range: tuple[float, float]) -> np.ndarray:
    """Humanoid: ``clip(weight * sum(square(cfrc_ext)), *cost_range)`` over every body."""
    total = weight * np.sum(np.square(cfrc_ext).reshape(cfrc_ext.shape[0], -1), axis=1)
    return np.clip(total, cost_range[0], cost_range[1])


def mass_center(body_mass: np.ndarray, xipos: np.ndarray, total: np.ndarray | None = None) -> np.ndarray:
    """Humanoid's ``mass_center``: the (N, 2) xy of the mass-weighted mean of the bodies' inertial frames.

    body_mass: (N, nbody) each env's own masses (randomized ones included); xipos: (N, nbody, 3);
    total: None, or ``body_mass.sum(axis=1, keepdims=True)`` kept from an earlier call (the masses
    change only when written). Gymnasium's ``np.sum(mass * xipos, axis=0)`` adds the bodies' rows
    one after another; so does the loop here (a reduction over the middle axis could take numpy's
    pairwise order instead), compiled for float64 host arrays (the same operations, so the same bits).
    """
    total = body_mass.sum(axis=1, keepdims=True) if total is None else total
    if host_arrays((body_mass, xipos, total), (np.float64,)):
        out = np.empty((body_mass.shape[0], 2))
        _mass_center_kernel(body_mass, xipos, total, out)
        return out
    num = body_mass[:, 0, None] * xipos[:, 0]
    for b in range(1, body_mass.shape[1]):
        num = num + body_mass[:, b, None] * xipos[:, b]
    return (num / total)[:, 0:2]


@kernel
def _mass_center_kernel(body_mass: np.ndarray, xipos: np.ndarray, total: np.ndarray, out: np.ndarray) -> None:
    for e in range(out.shape[0]):
        for k in range(2):
            num = body_mass[e, 0] * xipos[e, 0, k]
            for b in range(1, body_mass.shape[1]):
                num = num + body_mass[e, b] * xipos[e, b, k]
            out[e, k] = num / total[e, 0]


def distance_from_origin(qpos: np.ndarray) -> np.ndarray:
    """``np.linalg.norm(qpos[0:2], ord=2)`` per row, with the arithmetic of this process's BLAS.

    numpy's norm of a 1-D vector is ``sqrt(dot(x, x))``, a BLAS ``ddot``, and ``ddot``'s kernel
    follows the CPU: OpenBLAS's SkylakeX kernel fuses the second product (fma(x1, x1, x0 x0)), its
    Haswell and Zen kernels add two rounded products. `ddot2_form` finds out which one this process
    runs; the rows are then computed in that arithmetic (the fused form through the exact
    `mjvec.portable.fma`), or with one ``dot`` per row for a kernel that is neither.
    """
    x0, x1 = qpos[:, 0], qpos[:, 1]
    form = ddot2_form()
    if form == "plain":
        return np.sqrt(x0 * x0 + x1 * x1)
    if form == "fused":
        return np.sqrt(portable.fma(x1, x1, x0 * x0))
    return np.sqrt(np.array([np.dot(row, row) for row in qpos[:, 0:2]], dtype=np.float64))


@functools.cache
def ddot2_form() -> str:
    """How this process's BLAS computes a two-element ``dot(x, x)``: "plain" (x0 x0 + x1 x1),
    "fused" (fma(x1, x1, x0 x0)) or "other" (neither, on a fixed probe set of 1,024 vectors on
    which the two forms differ often). Cached: the kernel is chosen once per process."""
    k = np.arange(1, 2049, dtype=np.float64)
    probe = (((k * 0.6180339887498949) % 1.0) * 7.0 - 3.5).reshape(-1, 2)  # fixed, well-spread values
    got = np.array([np.dot(row, row) for row in probe])
    x0, x1 = probe[:, 0], probe[:, 1]
    if np.array_equal(got, x0 * x0 + x1 * x1):
        return "plain"
    if np.array_equal(got, portable.fma(x1, x1, x0 * x0)):
        return "fused"
    return "other"


def ant_healthy(opts: Any, qpos: np.ndarray, qvel: np.ndarray) -> np.ndarray:
    """Ant: the state is finite and low <= torso z (qpos[2]) <= high (both inclusive)."""
    low, high = opts.healthy_z_range
    finite = np.isfinite(qpos).all(axis=1) & np.isfinite(qvel).all(axis=1)
    z = qpos[:, 2]
    return finite & (low <= z) & (z <= high)


def hopper_healthy(opts: Any, qpos: np.ndarray, qvel: np.ndarray) -> np.ndarray:
    """Hopper: every qpos[2:] and qvel entry, the height qpos[1] and the angle qpos[2] strictly in range."""
    s_low, s_high = opts.healthy_state_range
    state = np.concatenate([qpos[:, 2:], qvel], axis=1)
    healthy_state = np.all((s_low < state) & (state < s_high), axis=1)
    return healthy_state & _strictly_in(qpos[:, 1], opts.healthy_z_range) & \
        _strictly_in(qpos[:, 2], opts.healthy_angle_range)


def walker_healthy(opts: Any, qpos: np.ndarray, qvel: np.ndarray) -> np.ndarray:
    """Walker2d: the height qpos[1] and the angle qpos[2] strictly in range."""
    return _strictly_in(qpos[:, 1], opts.healthy_z_range) & _strictly_in(qpos[:, 2], opts.healthy_angle_range)


def humanoid_healthy(opts: Any, qpos: np.ndarray, qvel: np.ndarray) -> np.ndarray:
    """Humanoid: the torso height qpos[2] strictly in range."""
    return _strictly_in(qpos[:, 2], opts.healthy_z_range)


def _strictly_in(value: np.ndarray, bounds: tuple[float, float]) -> np.ndarray:
    return (bounds[0] < value) & (value < bounds[1])
