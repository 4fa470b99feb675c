"""Camera observations on the CPU backend, against independent oracles.

- Depth: each env's camera rangefinder image equals `mj_ray` cast pixel by pixel from the same
  camera on that env's tool compiled alone (tests/camera_oracle.py), exactly (measured: 0 of
  4 x 2 x 4,096 pixels differ, max |diff| 0.0: the oracle computes the rays in MuJoCo's order).
- The sensor cadence (sensors only at a step's last substep, only for the envs due) against
  plain `mj_step` semantics (sensors at every substep): the same physics bit for bit, and the
  same sensordata for the envs sensed.
- Frame stacks and the render cadence under partial resets and autoresets: against a reference
  run of the same seed with one fresh frame every step (k = 1, n = 1), restacked in the test.
"""

from __future__ import annotations

import gymnasium as gym
import mujoco
import numpy as np
import pytest

import mjvec
from mjvec.assets.cameras import CameraSpec, add_cameras
from mjvec.backends.base import Scene
from mjvec.backends.cpu import CpuBackend
from mjvec.envs.cameras import CameraObs, camera_setup
from mjvec.tasks.cube_rotate.scene import cube_variant_spec
from mjvec.tasks.simtoolreal.cameras import CAMERAS as TOOL_CAMERAS
from mjvec.tasks.simtoolreal.scene import scene_spec
from tests.camera_oracle import ray_depth

SIM = {"num_envs": 4, "num_tools": 4, "randomization": None}


def _alone(tool: int) -> mujoco.MjModel:
    spec = scene_spec(tool)
    add_cameras(spec, TOOL_CAMERAS, depth=True)
    return spec.compile()


def _oracle_data(model: mujoco.MjModel, backend, views, i: int) -> mujoco.MjData:
    data = mujoco.MjData(model)
    data.qpos[:], data.qvel[:] = backend.qpos[i], backend.qvel[i]
    data.mocap_pos[:], data.mocap_quat[:] = views["mocap_pos"][i], views["mocap_quat"][i]
    mujoco.mj_forward(model, data)
    return data


def test_cpu_depth_is_mj_ray_pixel_by_pixel_on_each_envs_own_tool():
    env = gym.make_vec(mjvec.ENV_ID, cameras="depth", **SIM)
    env.reset(seed=2)
    rng = np.random.default_rng(0)
    for _ in range(4):
        env.step(rng.uniform(-1, 1, env.action_space.shape))
    base = env.unwrapped
    base.backend.forward()  # the sensors at the current state (mocap targets applied) for every env
    views = {n: base.backend.bind(n) for n in ("mocap_pos", "mocap_quat")}
    tools = base.tool_ids
    oracles = {}
    for i, tool in enumerate(tools):
        model = _alone(int(tool))
        data = _oracle_data(model, base.backend, views, i)
        tool_geoms = [g for g in range(model.ngeom) if model.geom(g).name.startswith("object_")]
        for cam in TOOL_CAMERAS:
            depth, _ = ray_depth(model, data, cam.name)
            np.testing.assert_array_equal(base.camera_images.raw_depth(cam.name)[i], depth, err_msg=f"{i} {cam.name}")
            oracles[i, cam.name] = depth
        # The tool is in the table camera's view, so a shared model would show the wrong one.
        assert np.isin(ray_depth(model, data, "table")[1], tool_geoms).sum() > 10
    for i in range(len(tools)):
        for j in range(len(tools)):
            if tools[i] != tools[j]:
                assert not np.array_equal(oracles[i, "table"], oracles[j, "table"])
    env.close()


def _cube_backend(num_envs: int, cams: tuple[CameraSpec, ...]) -> CpuBackend:
    setup = camera_setup("CubeRotate-v0", cams, CameraObs("depth"))
    scene = Scene(num_variants=3, make_variant=setup.make_variant(cube_variant_spec), num_envs=num_envs)
    return CpuBackend(scene, num_threads=2, progress=False)


@pytest.mark.parametrize("nstep", [1, 3])
def test_sensor_cadence_keeps_the_physics_and_senses_the_last_substep(nstep):
    """Oracle: the same backend without the cadence, whose sensors run at every substep as in
    mj_step (so its sensordata after a step is the last substep's)."""
    cams = (CameraSpec("top", pos=(0.05, 0.0, 0.3), look_at=(0.05, 0.0, 0.0), width=16, height=12),)
    plain, paced = _cube_backend(6, cams), _cube_backend(6, cams)
    for backend in (plain, paced):
        backend.reset(np.arange(6), np.tile(backend.model.qpos0, (6, 1)), np.zeros((6, backend.model.nv)))
    sd_plain, sd_paced = plain.bind("sensordata"), paced.bind("sensordata")
    rng = np.random.default_rng(1)
    for t in range(6):
        due = np.arange(6) % 3 == t % 3
        paced.sense(due)
        ctrl = rng.uniform(-0.5, 0.5, (6, plain.model.nu))
        plain.ctrl[:], paced.ctrl[:] = ctrl, ctrl
        plain.step(nstep)
        paced.step(nstep)
        np.testing.assert_array_equal(paced.qpos, plain.qpos)
        np.testing.assert_array_equal(paced.qvel, plain.qvel)
        np.testing.assert_array_equal(sd_paced[due], sd_plain[due])
    plain.close()
    paced.close()


def test_cameras_do_not_change_the_trajectory():
    actions = np.random.default_rng(3).uniform(-1, 1, (14, 4, 29))
    runs = []
    for extra in ({}, {"cameras": "depth", "frame_stack": 2, "render_every": 3}):
        env = gym.make_vec(mjvec.ENV_ID, max_episode_steps=6, **SIM, **extra)
        obs, _ = env.reset(seed=5)
        trace = [obs["policy"] if extra else obs]
        for action in actions:
            obs, reward, term, trunc, _ = env.step(action)
            trace.append((obs["policy"] if extra else obs, reward, term, trunc))
        runs.append(trace)
        env.close()
    for a, b in zip(*runs, strict=True):
        np.testing.assert_equal(a, b)


def _restack(fresh: list[np.ndarray], starts: list[int], t: int, k: int, n: int) -> np.ndarray:
    """The expected (k, H, W) stack at step t of an env whose episode started at step starts[-1]:
    the k most recent of its frames at steps start, start + n, ..., padded with the start frame."""
    start = max(s for s in starts if s <= t)
    rendered = [fresh[s] for s in range(start, t + 1) if (s - start) % n == 0]
    rendered = [rendered[0]] * max(0, k - len(rendered)) + rendered
    return np.stack(rendered[-k:])


def test_frame_stack_and_render_every_under_partial_and_auto_resets():
    k, n, num = 3, 2, 4
    kw = {"num_envs": num, "num_cubes": 4, "max_episode_steps": 5, "cameras": CameraObs("depth", size=(12, 16))}
    ref = gym.make_vec("CubeRotate-v0", **kw)  # a fresh frame at every step
    env = gym.make_vec("CubeRotate-v0", frame_stack=k, render_every=n, **kw)
    assert env.single_observation_space["depth"].shape == (k, 12, 16)
    rng = np.random.default_rng(0)
    obs_ref, _ = ref.reset(seed=1)
    obs, _ = env.reset(seed=1)
    fresh = [[obs_ref["depth"][i, 0]] for i in range(num)]  # env i's fresh frame at each step
    starts = [[0] for _ in range(num)]  # the steps env i's episodes started at
    partial = {3: np.array([True, False, False, True]), 8: np.array([False, True, False, False])}
    for t in range(1, 16):
        if t in partial:  # a partial reset before step t: the reset frame takes step t - 1's place
            obs_ref, _ = ref.reset(options={"reset_mask": partial[t]})
            obs, _ = env.reset(options={"reset_mask": partial[t]})
            for i in np.flatnonzero(partial[t]):
                fresh[i][-1] = obs_ref["depth"][i, 0]
                starts[i].append(t - 1)
            for i in range(num):
                np.testing.assert_array_equal(obs["depth"][i], _restack(fresh[i], starts[i], t - 1, k, n))
        pending = ref.unwrapped.episodes.needs_reset.copy()  # NEXT_STEP: these reset inside step t
        action = rng.uniform(-1, 1, env.action_space.shape)
        obs_ref, *_ = ref.step(action)
        obs, *_ = env.step(action)
        for i in range(num):
            fresh[i].append(obs_ref["depth"][i, 0])
            if pending[i]:
                starts[i].append(t)
            np.testing.assert_array_equal(obs["depth"][i], _restack(fresh[i], starts[i], t, k, n), err_msg=f"{t} {i}")
    assert sum(len(s) for s in starts) >= num + 6  # partial resets and autoresets both happened
    env.close()
    ref.close()
