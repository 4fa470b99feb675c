"""Two EventTerm features MuJoCo Playground's randomize.py needs: joint reference positions (qpos0)
and a term composed with the one before it (every mass x U(0.9, 1.1), then the torso's + U(-1, 1) kg).

Oracles: the values the backend holds equal the compiled defaults with the term's own draws
(`dr_params`) applied as Playground applies them, and an env stepped with them equals the scene
compiled alone with those values written into its MjModel directly, then mj_setConst.
"""

from __future__ import annotations

import gymnasium as gym
import mujoco
import numpy as np
import pytest

import mjvec
from mjvec.errors import ConfigError
from mjvec.randomization import DomainRandomization, EventTerm
from mjvec.tasks.simtoolreal.scene import OBJECT_BODY_NAME, scene_spec

HAND = r"(left|right)_.*"  # the hand's hinge joints (names of mjvec.assets.robot)


def _env(n: int = 3) -> gym.vector.VectorEnv:
    return gym.make_vec(mjvec.ENV_ID, num_envs=n, num_tools=1, randomization=None, array_backend="numpy")


def _hinges(model: mujoco.MjModel) -> list[str]:
    return [model.joint(j).name for j in range(model.njnt) if model.jnt_type[j] == mujoco.mjtJoint.mjJNT_HINGE]


def test_a_qpos0_term_offsets_each_hinge_by_its_own_draw() -> None:
    env = _env()
    be = env.unwrapped.backend
    joints = tuple(_hinges(be.model))
    wrapped = DomainRandomization(env, (EventTerm("qpos0", -0.05, 0.05, targets=joints, operation="add",
                                                  mode="startup"),))
    wrapped.reset(seed=2)
    index = np.array([be.model.joint(j).qposadr[0] for j in joints])
    draw = wrapped.dr_params["qpos0"]
    assert draw.shape == (3, len(joints)) and np.abs(draw).max() <= 0.05 and np.abs(draw).min() > 0
    want = be.defaults("qpos0").copy()
    want[:, index] += draw
    np.testing.assert_array_equal(be.field_values("qpos0"), want)
    wrapped.close()


def test_the_env_with_qpos0_offsets_equals_its_scene_compiled_with_those_offsets() -> None:
    """Offsets written into the spec's joint refs compile to the same qpos0; stepping the batch env
    equals plain MuJoCo on that model (kinematics place each hinge at qpos - qpos0)."""
    env = _env(2)
    be = env.unwrapped.backend
    joints = tuple(_hinges(be.model))[:4]
    wrapped = DomainRandomization(env, (EventTerm("qpos0", -0.05, 0.05, targets=joints, operation="add",
                                                  mode="startup"),))
    wrapped.reset(seed=4)
    values = be.field_values("qpos0")
    qpos, qvel = be.qpos.copy(), be.qvel.copy()
    ctrl = be.ctrl.copy()
    be.ctrl[:] = ctrl
    be.step(4)
    for i in range(2):
        model = scene_spec(0).compile()
        model.qpos0[:] = values[i]
        data = mujoco.MjData(model)
        mujoco.mj_setConst(model, data)
        data.qpos[:], data.qvel[:], data.ctrl[:] = qpos[i], qvel[i], ctrl[i]
        mujoco.mj_forward(model, data)
        mujoco.mj_step(model, data, 4)
        np.testing.assert_array_equal(be.qpos[i], data.qpos)
        plain = scene_spec(0).compile()  # the offsets matter: without them the state differs
        plain_data = mujoco.MjData(plain)
        plain_data.qpos[:], plain_data.qvel[:], plain_data.ctrl[:] = qpos[i], qvel[i], ctrl[i]
        mujoco.mj_forward(plain, plain_data)
        mujoco.mj_step(plain, plain_data, 4)
        assert not np.array_equal(be.qpos[i], plain_data.qpos)
    wrapped.close()


def test_a_term_relative_to_the_previous_one_composes_with_it_in_the_same_event() -> None:
    env = _env()
    be = env.unwrapped.backend
    bodies = tuple(be.model.body(b).name for b in range(1, be.model.nbody) if be.defaults("body_mass")[0, b] > 0)
    terms = (EventTerm("body_mass", 0.9, 1.1, targets=bodies, recompute_inertia=False, name="masses"),
             EventTerm("body_mass", -0.1, 0.1, targets=(OBJECT_BODY_NAME,), operation="add",
                       recompute_inertia=False, relative_to="previous", name="object_mass"))
    wrapped = DomainRandomization(env, terms)
    for seed in (0, 1):  # twice: a reset recomposes from the defaults, nothing accumulates
        wrapped.reset(seed=seed)
        index = np.array([be.model.body(b).id for b in bodies])
        want = be.defaults("body_mass").copy()
        want[:, index] *= wrapped.dr_params["masses"]
        obj = be.model.body(OBJECT_BODY_NAME).id
        want[:, obj] += wrapped.dr_params["object_mass"][:, 0]
        np.testing.assert_array_equal(be.field_values("body_mass"), want)
        np.testing.assert_array_equal(be.field_values("body_inertia"), be.defaults("body_inertia"))
    wrapped.close()


@pytest.mark.parametrize(("terms", "match"), [
    ((EventTerm("body_mass", -0.1, 0.1, targets=("object",), operation="add", relative_to="previous"),),
     r"term 'body_mass' \(body_mass, relative_to='previous'\): it is the first term; put it right after"),
    ((EventTerm("geom_friction", 0.9, 1.1, targets=("object_handle",)),
      EventTerm("body_mass", -0.1, 0.1, targets=("object",), operation="add", relative_to="previous")),
     r"the term before it, 'geom_friction', writes geom_friction in mode 'reset'"),
    ((EventTerm("body_mass", 0.9, 1.1, targets=("object",), mode="startup", name="a"),
      EventTerm("body_mass", -0.1, 0.1, targets=("object",), operation="add", relative_to="previous")),
     r"the term before it, 'a', writes body_mass in mode 'startup'"),
    ((EventTerm("body_mass", 0.9, 1.1, targets=("object",), name="a"),
      EventTerm("body_mass", -0.1, 0.1, targets=("object", "left_.*"), operation="add", relative_to="previous")),
     r"the term before it, 'a', does not cover all of its targets"),
    ((EventTerm("body_mass", 0.9, 1.1, targets=("object",), name="a"),
      EventTerm("body_mass", -5.0, 0.1, targets=("object",), operation="add", relative_to="previous")),
     r"add range low=-5.0 can make a mass <= 0"),
    ((EventTerm("qpos0", -0.1, 0.1, targets=("object_freejoint",), operation="add"),),
     r"term 'qpos0' \(qpos0\): targets \('object_freejoint',\) match the free or ball joints \['object_freejoint'\]"),
])
def test_composition_and_qpos0_misuse_is_refused_at_construction(terms, match) -> None:
    env = _env(2)
    with pytest.raises(ConfigError, match=match):
        DomainRandomization(env, terms)
    env.close()


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"mode": "interval", "interval_s": (1.0, 2.0)}, r"relative_to='previous' composes .* needs mode 'startup' or"),
    ({"operation": "abs"}, r"operation 'scale' or 'add' \(an abs value ignores"),
    ({"relative_to": "current"}, r"relative_to 'current' is not one of \{default, previous\}"),
])
def test_a_relative_term_is_validated_on_its_own(kwargs, match) -> None:
    with pytest.raises(ConfigError, match=match):
        EventTerm("body_mass", 0.9, 1.1, targets=("object",), **{"relative_to": "previous", **kwargs})
