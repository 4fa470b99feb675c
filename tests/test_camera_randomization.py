"""Randomization of what cameras see, against a direct MjModel edit of each env's own model.

Oracle: the env's cube compiled alone with the same camera, the randomized value written into
that MjModel by hand (plus mj_setConst, which derives the camera's reference frames), the env's
state set and mj_forward run: its rangefinder image (and, for colours, mujoco.Renderer's frame)
must equal the batched env's bit for bit on the CPU backend.
"""

from __future__ import annotations

import gymnasium as gym
import mujoco
import numpy as np
import pytest

from mjvec.assets.cameras import add_cameras, depth_sensor_name
from mjvec.errors import CapabilityError, ConfigError
from mjvec.randomization import EventTerm
from mjvec.tasks.cube_rotate.cameras import CAMERAS
from mjvec.tasks.cube_rotate.scene import cube_variant_spec

CAM = CAMERAS[0]


def _env(terms, **kw):
    return gym.make_vec("CubeRotate-v0", num_envs=3, num_cubes=3, cameras="depth", randomization=tuple(terms), **kw)


def _edited(cube: int, edit) -> mujoco.MjModel:
    spec = cube_variant_spec(cube)
    add_cameras(spec, CAMERAS, depth=True)
    model = spec.compile()
    edit(model)
    mujoco.mj_setConst(model, mujoco.MjData(model))
    return model


def _depth(model: mujoco.MjModel, qpos: np.ndarray, qvel: np.ndarray) -> np.ndarray:
    data = mujoco.MjData(model)
    data.qpos[:], data.qvel[:] = qpos, qvel
    mujoco.mj_forward(model, data)
    sensor = model.sensor(depth_sensor_name(CAM.name))
    return data.sensordata[sensor.adr[0]:sensor.adr[0] + sensor.dim[0]].reshape(CAM.height, CAM.width)


@pytest.mark.parametrize("term", [
    EventTerm("camera_pos", -0.03, 0.03, targets=("palm",), operation="add"),
    EventTerm("camera_rotation", -0.1, 0.1, targets=("palm",), operation="add"),
    EventTerm("camera_fovy", 0.7, 1.3, targets=("palm",)),
], ids=lambda t: t.kind)
def test_camera_terms_move_the_image_as_a_model_edit_does(term):
    env = _env([term])
    env.reset(seed=4)
    base = env.unwrapped
    field = term.field
    cam = base.backend.model.camera(CAM.name).id
    values = base.backend.field_values(field)[:, cam]
    default = base.backend.defaults(field)[:, cam]
    assert not np.allclose(values, default) and not np.allclose(values[0], values[1])
    for i, cube in enumerate(base.cube_ids):
        def edit(model, i=i):
            getattr(model, field)[cam] = values[i]

        expected = _depth(_edited(int(cube), edit), base.backend.qpos[i], base.backend.qvel[i])
        np.testing.assert_array_equal(base.camera_images.raw_depth(CAM.name)[i], expected, err_msg=str(i))
    if term.kind == "camera_rotation":  # the written orientation is the drawn turn about the camera's own axes
        draws = env.dr_params[term.name][:, 0]
        for i in range(3):
            turn = np.zeros(4)
            angle = np.linalg.norm(draws[i])
            mujoco.mju_axisAngle2Quat(turn, draws[i] / angle, angle)
            expected = np.zeros(4)
            mujoco.mju_mulQuat(expected, default[i], turn)
            np.testing.assert_allclose(values[i], expected, rtol=0, atol=1e-14)
    env.close()


def test_geom_colour_renders_as_a_model_edit_does():
    term = EventTerm("geom_rgba", 0.0, 1.0, targets=("cube",), operation="abs")
    env = _env([term], render_mode="rgb_array", render_size=(48, 64))
    env.reset(seed=1)
    base = env.unwrapped
    geom = base.backend.model.geom("cube").id
    rgba = base.backend.field_values("geom_rgba")[:, geom]
    assert (rgba[:, 3] == 1.0).all() and not np.allclose(rgba[0, :3], rgba[1, :3])  # rgb drawn, alpha kept
    frames = env.render()
    for i, cube in enumerate(base.cube_ids):
        def edit(model, i=i):
            model.geom_rgba[geom] = rgba[i]

        model = _edited(int(cube), edit)
        data = mujoco.MjData(model)
        data.qpos[:] = base.backend.qpos[i]
        mujoco.mj_forward(model, data)
        with mujoco.Renderer(model, 48, 64) as renderer:
            renderer.update_scene(data, camera=base.render_camera)
            np.testing.assert_array_equal(frames[i], renderer.render())
    env.close()


def test_colours_are_clipped_and_light_directions_stay_unit():
    from mjvec.randomization.terms import values_from_draw

    colour = EventTerm("geom_rgba", -0.5, 0.5, targets=("g",), operation="add")
    rgba = np.array([[[0.9, 0.1, 0.5, 1.0]]])
    [(_, new)] = values_from_draw({"geom_rgba": rgba}, {"geom_rgba": rgba}, colour, np.array([0]),
                                  np.array([[[0.3, -0.4, 0.2]]]))
    np.testing.assert_allclose(new, [[[1.0, 0.0, 0.7, 1.0]]])
    light = EventTerm("light_dir", -0.2, 0.2, targets=("l",), operation="add")
    direction = np.array([[[0.0, 0.0, -1.0]]])
    [(_, new)] = values_from_draw({"light_dir": direction}, {"light_dir": direction}, light, np.array([0]),
                                  np.array([[[0.2, 0.0, 0.0]]]))
    np.testing.assert_allclose(np.linalg.norm(new, axis=-1), 1.0)
    np.testing.assert_allclose(new[0, 0], np.array([0.2, 0.0, -1.0]) / np.sqrt(1.04))


@pytest.mark.parametrize(("term", "error", "match"), [
    (EventTerm("camera_pos", -0.1, 0.1, targets=("eye",)), ConfigError,
     r"target 'eye' matches no camera; camera names are .*palm"),
    (EventTerm("camera_fovy", 1.0, 9.0, targets=("palm",)), ConfigError,
     r"camera_fovy\) at its range end 9.0 \(scale\) gives fields of view from 450 to 450 degrees"),
    (EventTerm("camera_fovy", 0.0, 5.0, targets=("palm",), distribution="gaussian"), ConfigError,
     r"a gaussian draw is unbounded"),
    (EventTerm("light_diffuse", 0.5, 1.0, targets=(".*",)), ConfigError, r"matches no light; light names are"),
])
def test_camera_terms_are_validated_at_construction(term, error, match):
    with pytest.raises(error, match=match):
        _env([term])


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"kind": "camera_rotation", "low": -0.1, "high": 0.1, "operation": "scale"},
     r"camera_rotation\): operation must be 'add'"),
    ({"kind": "geom_rgba", "low": 0.2, "high": 1.5, "operation": "abs"},
     r"colours and material weights are in \[0, 1\]; an abs range \(0.2, 1.5\)"),
])
def test_camera_event_terms_validate_their_ranges(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        EventTerm(targets=("x",), **kwargs)


def test_visual_fields_are_declared_like_the_others():
    env = gym.make_vec("CubeRotate-v0", num_envs=1)
    caps = env.unwrapped.backend.capabilities
    for name in ("cam_pos", "cam_quat", "cam_fovy", "geom_rgba", "mat_rgba", "light_diffuse"):
        assert caps.fields[name].entity in {"camera", "geom", "material", "light"}
    with pytest.raises(CapabilityError, match=r"'mat_reflectance' is not writable on the 'cpu' backend"):
        caps.require("mat_reflectance")
    env.close()
