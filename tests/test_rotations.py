"""mjvec.rotations vs MuJoCo's own quaternion functions (the oracle), in numpy and in torch."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from mjvec import rotations as R

RNG = np.random.default_rng(0)
Q = RNG.normal(size=(64, 4))
Q /= np.linalg.norm(Q, axis=1, keepdims=True)
P = RNG.normal(size=(64, 4))
P /= np.linalg.norm(P, axis=1, keepdims=True)
V = RNG.normal(size=(64, 3))


def _each(fn, *arrays, width: int) -> np.ndarray:
    out = np.zeros((arrays[0].shape[0], width))
    for i in range(out.shape[0]):
        fn(out[i], *(a[i] for a in arrays))
    return out


def test_products_and_rotations_are_mujocos() -> None:
    np.testing.assert_allclose(R.quat_mul(Q, P), _each(mujoco.mju_mulQuat, Q, P, width=4), rtol=0, atol=1e-15)
    np.testing.assert_allclose(R.quat_rotate(Q, V), _each(mujoco.mju_rotVecQuat, V, Q, width=3), rtol=0, atol=1e-15)
    np.testing.assert_allclose(R.quat_sandwich(Q, V), R.quat_rotate(Q, V), rtol=0, atol=1e-14)
    np.testing.assert_allclose(R.quat_mul(Q, R.quat_conj(Q)), np.tile([1.0, 0, 0, 0], (64, 1)), atol=1e-15)
    np.testing.assert_allclose(R.quat_to_mat_mj(Q).reshape(64, 9), _each(mujoco.mju_quat2Mat, Q, width=9), rtol=0,
                               atol=2.3e-16)
    np.testing.assert_allclose(R.quat_to_mat(Q), R.quat_to_mat_mj(Q), rtol=0, atol=1e-15)
    np.testing.assert_array_equal(R.xyzw_to_wxyz(R.wxyz_to_xyzw(Q)), Q)


def test_axis_angle_and_rotation_vectors_are_mujocos() -> None:
    axis = V / np.linalg.norm(V, axis=1, keepdims=True)
    angle = RNG.uniform(-np.pi, np.pi, 64)
    want = np.stack([_axis_angle(a, t) for a, t in zip(axis, angle, strict=True)])
    np.testing.assert_allclose(R.quat_from_axis_angle(axis, angle), want, rtol=0, atol=1e-15)
    # mju_quat2Vel(q, dt=1) is the rotation vector of q.
    np.testing.assert_allclose(R.rotation_vector(Q), _each(lambda o, q: mujoco.mju_quat2Vel(o, q, 1.0), Q, width=3),
                               rtol=0, atol=1e-12)
    half = RNG.uniform(-0.5, 0.5, 64)
    want = np.stack([R.quat_mul(q, _axis_angle(a, 2 * h)) for q, a, h in zip(Q, axis, half, strict=True)])
    np.testing.assert_allclose(R.rotate_by_axis_angle(Q, 3.0 * axis, half), want, rtol=0, atol=1e-15)
    canon = R.canonical_quat(-Q)
    assert (canon[:, 0] >= 0).all() and np.allclose(np.abs(canon), np.abs(Q))


def _axis_angle(axis: np.ndarray, angle: float) -> np.ndarray:
    out = np.zeros(4)
    mujoco.mju_axisAngle2Quat(out, axis, angle)
    return out


@pytest.mark.parametrize("name", ["quat_mul", "quat_rotate", "quat_to_mat", "quat_to_mat_mj", "rotation_vector",
                                  "quat_normalize", "rotate_by_axis_angle"])
def test_torch_gives_numpys_values_to_float32_round_off(name: str) -> None:
    torch = pytest.importorskip("torch")
    args = {"quat_mul": (Q, P), "quat_rotate": (Q, V), "quat_to_mat": (Q,), "quat_to_mat_mj": (Q,),
            "rotation_vector": (Q,), "quat_normalize": (3.0 * Q,), "rotate_by_axis_angle": (Q, V, V[:, 0])}[name]
    fn = getattr(R, name)
    got = fn(*(torch.as_tensor(a, dtype=torch.float32) for a in args)).numpy()
    np.testing.assert_allclose(got, fn(*args), rtol=0, atol=3e-6)
