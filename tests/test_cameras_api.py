"""Camera observations' interface: spaces that Gymnasium's and SB3's checkers accept, SB3's
MultiInputPolicy over them, the memory estimate, and every refusal (each error path)."""

from __future__ import annotations

import warnings

import gymnasium as gym
import mujoco
import numpy as np
import pytest

import mjvec
from mjvec.assets.cameras import CameraSpec, add_cameras, look_at_quat
from mjvec.envs.camera_images import CameraImages
from mjvec.envs.cameras import CameraObs, CameraSetup
from mjvec.envs.registry import get_task
from mjvec.errors import ConfigError
from mjvec.tasks.simtoolreal.scene import scene_spec

SMALL = CameraObs("depth", size=(36, 36))  # NatureCNN's smallest input


def test_single_env_spaces_pass_gymnasium_and_sb3_checkers():
    from gymnasium.utils.env_checker import check_env
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    env = gym.make("CubeRotate-v0", cameras=SMALL, frame_stack=2)
    space = env.observation_space
    assert isinstance(space, gym.spaces.Dict) and set(space) == {"policy", "depth"}
    assert space["depth"] == gym.spaces.Box(0, 255, (2, 36, 36), np.uint8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # neither checker has anything to say about the image
        check_env(env.unwrapped, skip_render_check=True)
        sb3_check_env(env.unwrapped, warn=True)
    env.close()


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_sb3_multi_input_policy_reads_the_image_through_a_cnn():
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.torch_layers import NatureCNN

    from mjvec.integrations.sb3 import SB3VecEnv

    env = gym.make_vec("CubeRotate-v0", num_envs=4, cameras=SMALL, autoreset_mode="same_step")
    model = PPO("MultiInputPolicy", SB3VecEnv(env), n_steps=16, batch_size=32, n_epochs=1, seed=0, device="cpu")
    extractors = model.policy.features_extractor.extractors
    assert isinstance(extractors["depth"], NatureCNN)
    before = [p.detach().clone() for p in extractors["depth"].parameters()]
    model.learn(64)
    assert any(not torch.equal(a, b) for a, b in zip(before, extractors["depth"].parameters(), strict=True))
    obs = model.env.reset()
    blank = {**obs, "depth": np.zeros_like(obs["depth"])}
    with torch.no_grad():  # the policy's action depends on the image
        assert not np.allclose(model.predict(obs, deterministic=True)[0], model.predict(blank, deterministic=True)[0])
    model.env.close()


def test_float_depth_and_several_cameras():
    cams = ("table", CameraSpec("side", pos=(1.0, 0.0, 0.8), look_at=(0.0, 0.0, 0.55), width=20, height=10,
                                depth_range=(0.2, 1.5)))
    env = gym.make_vec(mjvec.ENV_ID, num_envs=2, num_tools=2, randomization=None,
                       cameras=CameraObs("depth", cameras=cams, depth_format="float32"))
    space = env.single_observation_space
    assert set(space) == {"policy", "depth_table", "depth_side"}
    assert space["depth_side"] == gym.spaces.Box(0.2, 1.5, (1, 10, 20), np.float32)
    obs, _ = env.reset(seed=0)
    raw = env.unwrapped.camera_images.raw_depth("side")
    expected = np.where(raw < 0, 1.5, np.clip(raw, 0.2, 1.5)).astype(np.float32)
    np.testing.assert_array_equal(obs["depth_side"][:, 0], expected)
    assert obs["depth_table"].dtype == np.float32 and obs["depth_table"].shape == (2, 1, 64, 64)
    env.close()


def test_uint8_depth_maps_the_range_linearly_and_misses_to_far():
    env = gym.make_vec("CubeRotate-v0", num_envs=2, cameras="depth")
    obs, _ = env.reset(seed=0)
    images = env.unwrapped.camera_images
    near, far = images.setup.cameras[0].depth_range
    raw = images.raw_depth("palm")
    expected = np.round((np.where(raw < 0, far, np.clip(raw, near, far)) - near) * (255.0 / (far - near)))
    np.testing.assert_array_equal(obs["depth"][:, 0], expected.astype(np.uint8))
    assert 0 < (obs["depth"] < 255).mean() < 1  # the hand and cube are in range, the floor beyond
    env.close()


def test_memory_estimate_counts_the_image_buffers_and_the_rangefinders():
    task = get_task("CubeRotate-v0")
    plain = task.estimate_memory(8, task.parse_options({}))
    opts = task.parse_options({"cameras": "depth", "frame_stack": 4})
    cams = task.estimate_memory(8, opts)
    setup = task.cameras(opts)
    pixels = 64 * 64
    assert cams.per_env["images"] == setup.bytes_per_env() == 3 * 4 * pixels + 4 * pixels
    # The rangefinder's sensordata row (float64) and the camera mount's xfrc_applied row, in the
    # backend's two copies of bound fields.
    assert cams.per_env["bound_fields"] - plain.per_env["bound_fields"] == 2 * 8 * (pixels + 6)
    assert cams.total_bytes > plain.total_bytes


def test_look_at_points_the_camera_at_the_target():
    pos, target = np.array([0.3, -0.5, 1.0]), np.array([0.0, 0.2, 0.5])
    mat = np.zeros(9)
    mujoco.mju_quat2Mat(mat, np.array(look_at_quat(pos, target)))
    forward = -mat.reshape(3, 3)[:, 2]
    np.testing.assert_allclose(forward, (target - pos) / np.linalg.norm(target - pos), atol=1e-12)
    assert mat.reshape(3, 3)[2, 1] > 0  # the image's up has a positive world z


def _make(**kw):
    return gym.make_vec("CubeRotate-v0", num_envs=1, **kw)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"cameras": "rgb"}, r"cameras='rgb' needs \['rgb'\] images, which backend='cpu' does not make.*backend='warp'"),
    ({"cameras": "segmentation"}, r"needs \['segmentation'\] images.*backend='warp'"),
    ({"frame_stack": 2}, r"frame_stack=2 / render_every=1 apply to camera observations.*add cameras="),
    ({"cameras": "depth", "render_every": 0}, r"render_every must be an int >= 1, got 0"),
    ({"cameras": "thermal"}, r"CameraObs.mode 'thermal' is not one of \{depth, rgb, rgbd, segmentation\}"),
    ({"cameras": 3}, r"cameras must be None, one of .* or a CameraObs, got 3"),
    ({"cameras": CameraObs("depth", cameras=("nope",))}, r"CubeRotate-v0 has no camera 'nope'; its cameras are .*palm"),
    ({"cameras": CameraObs("depth", cameras=("palm", "palm"))}, r"name a camera twice"),
    ({"cameras": CameraObs("depth", cameras=(CameraSpec("cube_view"),))}, r"already has a camera 'cube_view'"),
    ({"cameras": CameraObs("depth", cameras=(CameraSpec("x", body="nobody"),))}, r"body='nobody' is not a body"),
    ({"cameras": CameraObs("depth", cameras=(CameraSpec("x", existing=True),))}, r"the scene has no camera 'x'"),
])
def test_camera_requests_are_refused_before_anything_runs(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        _make(**kwargs)


def test_a_task_without_cameras_asks_for_one_and_gets_one_by_option():
    from tests.third_task import ENV_ID

    with pytest.raises(ConfigError, match=r"PoleBalance-v0 declares no cameras; add one: cameras=CameraObs"):
        gym.make_vec(ENV_ID, num_envs=1, cameras="depth")
    side = CameraSpec("side", pos=(0.0, -1.0, 0.3), look_at=(0.0, 0.0, 0.3), width=8, height=8)
    env = gym.make_vec(ENV_ID, num_envs=3, cameras=CameraObs("depth", cameras=(side,), depth_format="float32"))
    obs, _ = env.reset(seed=0)
    assert obs["depth"].shape == (3, 1, 8, 8) and (obs["depth"] < 2.0).any()  # the pole is in view
    env.close()


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"width": 0}, r"CameraSpec\('c'\).width must be an int in \[1, 1024\], got 0"),
    ({"existing": 1}, r"CameraSpec\('c'\).existing must be True or False, got 1"),
    ({"fovy": 180.0}, r"fovy must be in \(0, 180\)"),
    ({"mode": "orbit"}, r"mode 'orbit' is not one of"),
    ({"pos": (1.0, 2.0)}, r"pos must be 3 finite floats"),
    ({"quat": (1, 0, 0, 0), "look_at": (0, 0, 0)}, r"give quat or look_at, not both"),
    ({"quat": (0, 0, 0, 0)}, r"must be a non-zero quaternion"),
    ({"existing": True, "body": "b"}, r"an existing camera keeps the scene's pose"),
    ({"depth_range": (1.0, 0.5)}, r"depth_range must be \(near, far\)"),
    ({"name": ""}, r"name must be a non-empty str"),
])
def test_camera_spec_validates_each_field(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        CameraSpec(**{"name": "c", **kwargs})


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"depth_format": "int16"}, r"depth_format 'int16' is not one of"),
    ({"cameras": "palm"}, r"cameras must be a tuple of camera names or CameraSpecs.*write cameras=\('palm',\)"),
    ({"cameras": (3,)}, r"must be a non-empty tuple of names or CameraSpecs, got \[3\]"),
    ({"size": (0, 4)}, r"CameraObs.size\[0\] must be an int in \[1, 1024\], got 0"),
    ({"size": 36}, r"CameraObs.size must be \(height, width\), got 36"),
])
def test_camera_obs_validates_each_field(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        CameraObs("depth", **kwargs)


def test_look_at_its_own_position_is_refused():
    with pytest.raises(ConfigError, match=r"is the camera's own position"):
        look_at_quat((0, 0, 1), (0, 0, 1))


def test_a_mount_name_taken_is_refused():
    spec = scene_spec(0)
    spec.worldbody.add_body(name="c_mount")
    with pytest.raises(ConfigError, match=r"already has a body 'c_mount'"):
        add_cameras(spec, (CameraSpec("c"),), depth=True)


class _Backend:
    """Just what CameraImages reads before its first frame."""

    def __init__(self, model: mujoco.MjModel) -> None:
        self.model, self.num_envs, self.qpos = model, 1, np.zeros((1, model.nq))


def test_segmentation_refuses_more_geoms_than_uint8_labels():
    spec = mujoco.MjSpec()
    for i in range(256):
        spec.worldbody.add_geom(name=f"g{i}", size=[0.1, 0, 0], pos=[i, 0, 0])
    setup = CameraSetup((CameraSpec("c"),), ("segmentation",))
    with pytest.raises(ConfigError, match=r"this model has 256 geoms \(at most 255\)"):
        CameraImages(_Backend(spec.compile()), setup)


def test_an_image_key_the_task_uses_is_refused():
    setup = CameraSetup((CameraSpec("c"),), ("depth",))
    images = CameraImages.__new__(CameraImages)
    images.setup = setup
    with pytest.raises(ConfigError, match=r"already has a key 'depth'; rename camera 'c'"):
        images.space(gym.spaces.Dict({"depth": gym.spaces.Box(0, 1, (1,))}))


def test_backend_camera_calls_refuse_what_they_cannot_do():
    from mjvec.backends.base import Capabilities
    from mjvec.backends.registry import BACKENDS
    from mjvec.errors import CapabilityError

    env = gym.make_vec("CubeRotate-v0", num_envs=2, cameras="depth")
    backend = env.unwrapped.backend
    assert backend.capabilities.images == BACKENDS["cpu"].images == frozenset({"depth"})
    with pytest.raises(ConfigError, match=r"sense\(env_ids\) takes a \(2,\) bool mask or None, got dtype int64"):
        backend.sense(np.zeros(2, np.int64))
    with pytest.raises(CapabilityError, match=r"\['rgb'\] images need a batch renderer, which the 'cpu' backend does "
                                              r"not have.*use backend='warp'"):
        backend.image_renderer(["palm"], frozenset({"rgb"}))
    env.close()
    with pytest.raises(ConfigError, match=r"Capabilities.images has \['thermal'\], which are not image kinds"):
        Capabilities("x", {}, "numpy", "cpu", True, images=frozenset({"thermal"}))
