"""The three randomization defects, reproduced as tests (each failed before its fix), and every
preset of every registered task stepping on both backends.

1. Mesh tools + a write that needs mj_setConst: mujoco.batch's set_const used to hand every env the
   group template's mesh geom_rbound (and dof_length derived from it), changing trajectories.
2. geom_pos on a box handle: the handle compiles with geom_sameframe = BODY, which mj_kinematics
   trusts; a move used to leave the geom in place while its BVH leaf moved.
3. Warp: an actuator write covering two or more worlds of one group raised in the coupled-actuator
   flag check.
"""

from __future__ import annotations

import gymnasium as gym
import mujoco
import numpy as np
import pytest

import mjvec
from mjvec.backends.base import FieldWrite, Scene
from mjvec.backends.cpu import CpuBackend
from mjvec.envs.registry import registered_tasks
from mjvec.randomization import DomainRandomization, EventTerm
from mjvec.tasks.simtoolreal.scene import OBJECT_BODY_NAME, default_catalog, scene_spec
from tests import dr_matrix as M


def _run(backend, models: list[mujoco.MjModel], qpos: np.ndarray, qvel: np.ndarray, steps: int = 60) -> np.ndarray:
    """Step the backend and the models alike from (qpos, qvel); assert bit-equality; return contact flags."""
    n = len(models)
    backend.reset(np.arange(n), qpos, qvel)
    datas = [mujoco.MjData(m) for m in models]
    for m, d, q, v in zip(models, datas, qpos, qvel, strict=True):
        d.qpos[:], d.qvel[:] = q, v
        mujoco.mj_forward(m, d)
    rng = np.random.default_rng(5)
    tool = models[0].body(OBJECT_BODY_NAME).id
    touched = np.zeros(n, bool)
    for _ in range(steps):
        ctrl = M.controls(models[0], qpos[0], n, rng)
        backend.ctrl[:] = ctrl
        backend.step(2)
        for i, (m, d) in enumerate(zip(models, datas, strict=True)):
            d.ctrl[:] = ctrl[i]
            mujoco.mj_step(m, d, 2)
            bodies = m.geom_bodyid[d.contact.geom[: d.ncon]]
            touched[i] |= bool(((bodies == tool).any(axis=1) & (bodies == 0).any(axis=1)).any())
    np.testing.assert_array_equal(backend.qpos, np.stack([d.qpos for d in datas]))
    np.testing.assert_array_equal(backend.qvel, np.stack([d.qvel for d in datas]))
    return touched


def _states(models: list[mujoco.MjModel]) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(2)
    states = [M.initial_state(m, rng) for m in models]
    return np.stack([s[0] for s in states]), np.stack([s[1] for s in states])


def test_mesh_tools_keep_their_own_geometry_through_a_mass_write_that_changes_nothing() -> None:
    tools = np.arange(24)
    backend = CpuBackend(Scene(600, lambda v: scene_spec(v, "mesh"), tools.size), num_threads=2, progress=False)
    models = [scene_spec(int(t), "mesh").compile() for t in tools]
    g = int(backend.routing.group_of_env[0])
    rbound = np.array(backend._rows(g, "geom_rbound"))
    dof_length = np.array(backend._rows(g, "dof_length"))
    body = backend.model.body(OBJECT_BODY_NAME).id
    mass = backend.defaults("body_mass")[:, [body]] * 1.0
    backend.write_fields([FieldWrite("body_mass", np.arange(tools.size), np.array([body]), mass)])
    np.testing.assert_array_equal(backend._rows(g, "geom_rbound"), rbound)
    np.testing.assert_array_equal(backend._rows(g, "dof_length"), dof_length)
    assert _run(backend, models, *_states(models)).all()


def _moved_handle(tool: int, dz: float) -> mujoco.MjSpec:
    spec = scene_spec(tool)
    handle = spec.geom("object_handle")
    handle.pos = np.asarray(handle.pos) + np.array([0.0, 0.0, dz])
    return spec


@pytest.mark.parametrize("topology", ["box_box", "box_only", "capsule_box"])
def test_geom_pos_write_equals_the_scene_compiled_with_the_handle_moved(topology: str) -> None:
    tools = default_catalog().ids_of_topology(topology)[:8]
    backend = CpuBackend(Scene(600, scene_spec, tools.size, assignment=tools), num_threads=2, progress=False)
    handle = backend.model.geom("object_handle").id
    pos = backend.defaults("geom_pos")[:, [handle]] + np.array([0.0, 0.0, 0.01])
    backend.write_fields([FieldWrite("geom_pos", np.arange(tools.size), np.array([handle]), pos)])
    models = [_moved_handle(int(t), 0.01).compile() for t in tools]
    assert _run(backend, models, *_states(models)).all()


@pytest.mark.parametrize("groups", [1, 2], ids=["two_worlds_of_one_group", "two_worlds_of_each_of_two_groups"])
def test_warp_actuator_gain_write_covering_several_worlds_of_a_group(groups: int) -> None:
    env = gym.make_vec(mjvec.ENV_ID, num_envs=6, backend="warp", device="cpu", randomization=None,
                       array_backend="numpy")
    be = env.unwrapped.backend
    group_of_env = be.routing.group_of_env
    shared = [g for g in np.unique(group_of_env) if (group_of_env == g).sum() >= 2][:groups]
    assert len(shared) == groups
    ids = np.sort(np.concatenate([np.flatnonzero(group_of_env == g)[:2] for g in shared]))
    index = np.array([be.model.actuator(n).id for n in ("iiwa14_joint_1_act", "left_thumb_IP_act")])
    gain = be.defaults("actuator_gainprm")[ids][:, index] * np.linspace(0.8, 1.2, ids.size)[:, None, None]
    be.write_fields([FieldWrite("actuator_gainprm", ids, index, gain)])
    np.testing.assert_array_equal(be.field_values("actuator_gainprm", ids)[:, index], gain.astype(np.float32))
    others = np.setdiff1d(np.arange(6), ids)
    np.testing.assert_array_equal(be.field_values("actuator_gainprm", others), be.defaults("actuator_gainprm")[others])
    # The same through the kp term, which writes gainprm and biasprm together at every reset.
    wrapped = DomainRandomization(env, (EventTerm("actuator_kp", 0.8, 1.2, targets=("iiwa14_joint_.*_act",)),))
    wrapped.reset(seed=0)
    for _ in range(3):
        obs, *_ = wrapped.step(np.zeros((6, 29)))
    assert np.isfinite(obs).all()
    kp = wrapped.dr_params["actuator_kp"]
    np.testing.assert_allclose(be.field_values("actuator_gainprm")[:, :7, 0],
                               be.defaults("actuator_gainprm")[:, :7, 0] * kp.reshape(6, 7), rtol=1e-6)
    wrapped.close()


def _preset_cases() -> list[tuple[str, str, str]]:
    return [(env_id, preset, backend) for env_id, task in sorted(registered_tasks().items())
            for preset in sorted(task.presets) for backend in ("cpu", "warp")]


# Combinations a backend refuses at construction, with what the refusal names.
REFUSED = {("mjvec/Humanoid-v5", "warp"): "mjSOL_PGS is unsupported"}


@pytest.mark.parametrize(("env_id", "preset", "backend"), _preset_cases())
def test_every_preset_of_every_task_steps_on_both_backends(env_id: str, preset: str, backend: str) -> None:
    extra = {"device": "cpu"} if backend == "warp" else {}
    if (env_id, backend) in REFUSED:
        with pytest.raises(mjvec.ConfigError, match=REFUSED[(env_id, backend)]):
            gym.make_vec(env_id, num_envs=3, backend=backend, randomization=preset, **extra)
        return
    env = gym.make_vec(env_id, num_envs=3, backend=backend, randomization=preset, array_backend="numpy", **extra)
    obs, _ = env.reset(seed=1)
    for _ in range(4):
        obs, reward, *_ = env.step(env.action_space.sample() * 0.2)
    assert np.isfinite(obs).all() if not isinstance(obs, dict) else all(np.isfinite(v).all() for v in obs.values())
    assert np.isfinite(reward).all()
    env.close()
