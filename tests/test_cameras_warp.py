"""Camera observations on the Warp backend (on warp's CPU device by default: the GPU path's kernels).

- Depth: the CPU backend's and the Warp backend's camera rangefinders on the same states (the CPU
  state copied into the Warp worlds): hit masks equal and depths within DEPTH_TOL. Measured on
  SimToolReal-v0's two cameras (4 tools, 2 x 4 x 4,096 pixels): masks equal, max |diff| 3.3e-5 m
  (table camera, distances up to 2.8 m), 99.9th percentile 1.1e-5 m; float32 kinematics along the
  arm's chain and float32 ray-geom intersection, amplified where a ray grazes a surface.
- RGB from mujoco-warp's batch renderer: non-trivial, different per env where the tools differ;
  its segmentation names, per pixel, the geom `mj_ray` hits from the same camera on each env's
  tool compiled alone (the renderer's rays are its own float32 ones: edge pixels may differ).
- The image path never reads a device value back (tests/test_device_task.py's spy).
"""

from __future__ import annotations

import collections

import gymnasium as gym
import mujoco
import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("warp")

import mjvec  # noqa: E402
from mjvec.assets.cameras import add_cameras  # noqa: E402
from mjvec.envs.cameras import CameraObs  # noqa: E402
from mjvec.tasks.simtoolreal.cameras import CAMERAS  # noqa: E402
from mjvec.tasks.simtoolreal.scene import scene_spec  # noqa: E402
from tests.camera_oracle import ray_depth  # noqa: E402
from tests.test_device_task import KW, _run  # noqa: E402
from tests.test_device_task import sync_calls as sync_calls  # noqa: E402  (the spy fixture)

DEPTH_TOL = 1e-4  # m
SIM = {"num_envs": 4, "num_tools": 4, "randomization": None}


def _same_state_pair(warp_device: str) -> tuple:
    cpu = gym.make_vec(mjvec.ENV_ID, cameras="depth", **SIM)
    wrp = gym.make_vec(mjvec.ENV_ID, backend="warp", device=warp_device, cameras="rgbd", **SIM)
    cpu.reset(seed=0)
    wrp.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(3):
        cpu.step(rng.uniform(-1, 1, cpu.action_space.shape))
    cb, wb = cpu.unwrapped.backend, wrp.unwrapped.backend
    cb.forward()  # every env's sensors at its current state
    mocap = {n: cb.bind(n).copy() for n in ("mocap_pos", "mocap_quat")}
    wb.reset(np.arange(4), cb.qpos.copy(), cb.qvel.copy(), **mocap)  # the same states in the Warp worlds
    return cpu, wrp, mocap


def test_cpu_and_warp_depth_agree_on_the_same_states(warp_device: str) -> None:
    cpu, wrp, _ = _same_state_pair(warp_device)
    for cam in ("table", "wrist"):
        a = cpu.unwrapped.camera_images.raw_depth(cam)
        b = wrp.unwrapped.camera_images.raw_depth(cam).cpu().numpy().astype(np.float64)
        np.testing.assert_array_equal(a >= 0, b >= 0, err_msg=cam)
        np.testing.assert_allclose(b[a >= 0], a[a >= 0], rtol=0, atol=DEPTH_TOL, err_msg=cam)
        assert (a >= 0).mean() > 0.5
    cpu.close()
    wrp.close()


def test_warp_rgb_and_segmentation_show_each_envs_own_tool(warp_device: str) -> None:
    cpu, wrp, mocap = _same_state_pair(warp_device)
    base, images = wrp.unwrapped, wrp.unwrapped.camera_images
    rendered = base.backend.image_renderer(["table"], frozenset({"rgb", "segmentation"})).render()
    rgb, seg = rendered["rgb"][0].cpu().numpy(), rendered["segmentation"][0].cpu().numpy()
    assert rgb.shape == (4, 64, 64, 3) and rgb.std() > 20 and len(np.unique(rgb.reshape(-1, 3), axis=0)) > 50
    names = [base.backend.model.geom(g).name for g in range(base.backend.model.ngeom)]
    tools = [int(t) for t in base.tool_ids]
    for i, tool in enumerate(tools):
        spec = scene_spec(tool)
        add_cameras(spec, CAMERAS, depth=True)
        model = spec.compile()
        data = mujoco.MjData(model)
        data.qpos[:], data.qvel[:] = cpu.unwrapped.backend.qpos[i], cpu.unwrapped.backend.qvel[i]
        data.mocap_pos[:], data.mocap_quat[:] = mocap["mocap_pos"][i], mocap["mocap_quat"][i]
        mujoco.mj_forward(model, data)
        _, hit = ray_depth(model, data, "table")
        expected = np.array([model.geom(g).name if g >= 0 else "" for g in hit.reshape(-1)]).reshape(hit.shape)
        got = np.array([names[g] if g >= 0 else "" for g in seg[i].reshape(-1)]).reshape(hit.shape)
        assert (got == expected).mean() > 0.97, (i, (got == expected).mean())
        tool_pixels = np.char.startswith(expected, "object_")
        assert tool_pixels.sum() > 10 and (got[tool_pixels] == expected[tool_pixels]).mean() > 0.8
        for j in range(i):
            if tools[j] != tool:
                assert np.abs(rgb[i].astype(int) - rgb[j]).mean() > 1.0  # another tool, another image
    obs = base._task_obs()  # the rgb observation is the rendered frame, channel-first
    np.testing.assert_array_equal(obs["rgb_table"][:, :3].cpu().numpy(), images._rings["rgb_table"][:, 0].cpu().numpy())
    cpu.close()
    wrp.close()


@pytest.mark.parametrize("mode", ["rgbd", "segmentation"])
def test_device_image_path_never_waits_for_the_device(sync_calls: collections.Counter,
                                                      warp_device: str, mode: str) -> None:
    """tests/test_device_task.py's run (25 spied steps, autoresets, the paper preset) with rgb, depth
    and segmentation images, frame stacks and a cadence: no call copies a device value to the host."""
    env = gym.make_vec(mjvec.ENV_ID, device=warp_device, frame_stack=2, render_every=2,
                       cameras=CameraObs(mode, size=(8, 8)), **KW)
    _run(env, sync_calls, warp_device)
    assert not sync_calls, dict(sync_calls)
    obs = env.unwrapped._task_obs()
    assert all(isinstance(v, torch.Tensor) and v.device == env.unwrapped.backend.qpos.device for v in obs.values())
    env.close()


def test_a_host_task_on_warp_gets_host_images(warp_device: str) -> None:
    """CubeRotate-v0 runs its task on numpy views of the Warp state: its rgb images are host arrays
    of the batch renderer's frames."""
    env = gym.make_vec("CubeRotate-v0", num_envs=2, num_cubes=2, backend="warp", device=warp_device,
                       array_backend="numpy", cameras=CameraObs("rgb", size=(16, 16)))
    obs, _ = env.reset(seed=0)
    assert isinstance(obs["rgb"], np.ndarray) and obs["rgb"].shape == (2, 3, 16, 16) and obs["rgb"].dtype == np.uint8
    frames = env.unwrapped.backend.image_renderer(["palm"], frozenset({"rgb"})).render()["rgb"][0]
    np.testing.assert_array_equal(obs["rgb"].transpose(0, 2, 3, 1), frames)
    assert obs["rgb"].std() > 10
    env.close()


def test_warp_declares_its_images_and_names_a_missing_camera(warp_device: str) -> None:
    from mjvec.backends.registry import BACKENDS
    from mjvec.errors import ConfigError

    env = gym.make_vec("CubeRotate-v0", num_envs=1, num_cubes=1, backend="warp", device=warp_device)
    backend = env.unwrapped.backend
    assert backend.capabilities.images == BACKENDS["warp"].images == frozenset({"depth", "rgb", "segmentation"})
    with pytest.raises(ConfigError, match=r"the model has no camera 'eye'; its cameras are \['cube_view'\]"):
        backend.image_renderer(["eye"], frozenset({"rgb"}))
    env.close()
