"""SimToolReal-v0's records (`TaskIndices`, `TaskState`, the step's `Measurement`) against oracles.

Oracles: a plain `mujoco` MjData of the env's own scene for the distances the critic shows, the
call count of `measure` for "the critic reads the step's terms", and scenes edited with MjSpec for
the errors `build_indices` raises.
"""

from __future__ import annotations

import gymnasium as gym
import mujoco
import numpy as np
import pytest

import mjvec.tasks.simtoolreal.env as env_module
from mjvec.assets import robot as R
from mjvec.errors import ConfigError
from mjvec.tasks.simtoolreal import scene as S
from mjvec.tasks.simtoolreal import terms as tm
from mjvec.tasks.simtoolreal.config import SimToolRealConfig
from mjvec.tasks.simtoolreal.indices import build_indices
from mjvec.tasks.simtoolreal.registration import ENV_ID, default_catalog, register_envs
from mjvec.tasks.simtoolreal.scene import scene_spec

register_envs()

SMALL = {"num_tools": 4, "backend": "cpu", "randomization": None, "obs_mode": "asymmetric"}
CSL = tm.layout_slices(tm.CRITIC_LAYOUT)


def _oracle(task, i: int) -> mujoco.MjData:
    model = scene_spec(int(task.tool_ids[i]), "primitive", default_catalog()).compile()
    data = mujoco.MjData(model)
    data.qpos[:] = task.backend.qpos[i]
    data.mocap_pos[:] = task.backend.bind("mocap_pos")[i]
    data.mocap_quat[:] = task.backend.bind("mocap_quat")[i]
    mujoco.mj_forward(model, data)
    return data


def _fixed_keypoints(data: mujoco.MjData, body: str, cfg: SimToolRealConfig) -> np.ndarray:
    """(4, 3) world corners of the fixed-size keypoint box of a body, from its xpos/xmat."""
    b = data.body(body)
    local = tm.KEYPOINT_SIGNS * (0.5 * cfg.keypoint_scale * np.asarray(cfg.fixed_keypoint_size))
    return b.xpos + local @ b.xmat.reshape(3, 3).T


def test_critic_unset_best_distances_read_the_state_after_new_goals_and_autoresets():
    """Every step reaches its goal (a tolerance larger than the scene) and an episode ends at its third
    success, so each observation has envs with a new goal (best keypoint distance unset) and, after
    each episode end, envs just reset (both unset): the critic shows the current distances there,
    computed by plain MuJoCo, and the best-so-far distances elsewhere."""
    cfg = SimToolRealConfig(tolerance_start=5.0, success_steps=1, max_consecutive_successes=3)
    env = gym.make_vec(ENV_ID, num_envs=4, config=cfg, **SMALL)
    try:
        task = env.unwrapped
        env.reset(seed=2)
        rng = np.random.default_rng(0)
        seen = {"new_goal": 0, "reset": 0}
        for _ in range(8):
            obs = env.step(rng.uniform(-0.3, 0.3, (4, 29)))[0]
            crit = obs["critic"]
            for i in range(4):
                data = _oracle(task, i)
                best_kp, best_tip = task.closest_keypoint_dist[i], task.closest_fingertip_dist[i]
                if best_kp < 0:
                    seen["new_goal" if best_tip[0] >= 0 else "reset"] += 1
                    want = np.linalg.norm(_fixed_keypoints(data, S.OBJECT_BODY_NAME, cfg)
                                          - _fixed_keypoints(data, S.GOAL_BODY_NAME, cfg), axis=1).max()
                else:
                    want = best_kp
                np.testing.assert_allclose(crit[i, CSL["closest_keypoint_max_dist"]], [want], rtol=1e-6, atol=1e-6)
                if best_tip[0] < 0:
                    tips = np.stack([data.site(n).xpos for n in R.FINGERTIP_SITE_NAMES])
                    want_tip = np.linalg.norm(tips - data.body(S.OBJECT_BODY_NAME).xpos, axis=1)
                else:
                    want_tip = best_tip
                np.testing.assert_allclose(crit[i, CSL["closest_fingertip_dist"]], want_tip, rtol=1e-6, atol=1e-6)
        assert seen["new_goal"] > 0 and seen["reset"] > 0, seen
    finally:
        env.close()


def test_the_critic_reads_the_steps_measurement_instead_of_measuring_again(monkeypatch):
    """One measurement per step, asymmetric observation included, while no env resets or reaches a goal."""
    calls = []
    real = env_module.measure

    def counting(*args, **kwargs):
        calls.append(args[1].shape[0])
        return real(*args, **kwargs)

    env = gym.make_vec(ENV_ID, num_envs=3, **SMALL)
    try:
        env.reset(seed=0)
        monkeypatch.setattr(env_module, "measure", counting)
        for _ in range(4):
            _, _, term, trunc, info = env.step(np.zeros((3, 29)))
            assert not (term | trunc | info["success"]).any()
        assert calls == [3] * 4
    finally:
        env.close()


def test_record_fields_are_the_envs_arrays_and_refuse_rebinding():
    env = gym.make_vec(ENV_ID, num_envs=2, **SMALL)
    try:
        task = env.unwrapped
        env.reset(seed=0)
        assert task.lifted is task.task_state.lifted and task.object_scales is task.indices.object_scales
        task.lifted[:] = [True, False]  # an in-place write reaches the task state (the push tests rely on it)
        np.testing.assert_array_equal(task.push_allowed(), [True, False])
        with pytest.raises(AttributeError, match=r"SimToolRealEnv\.targets is task_state\.targets; write into it "
                                                 r"in place"):
            task.targets = np.zeros((2, 29))
    finally:
        env.close()


def _static_goal(spec: mujoco.MjSpec) -> None:
    spec.body(S.GOAL_BODY_NAME).mocap = False
    for key in list(spec.keys):  # a keyframe holds a pose per mocap body
        spec.delete(key)


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (lambda spec: setattr(spec.joint(S.OBJECT_JOINT_NAME), "name", "renamed"),
         rf"the scene has no joint '{S.OBJECT_JOINT_NAME}'; is it a SimToolReal scene\?"),
        (_static_goal, rf"body '{S.GOAL_BODY_NAME}' must be a mocap body"),
    ],
)
def test_build_indices_names_what_the_scene_lacks(edit, match):
    spec = scene_spec(0, "primitive", default_catalog())
    edit(spec)
    with pytest.raises(ConfigError, match=match):
        build_indices(spec.compile(), default_catalog(), np.array([0]), SimToolRealConfig(), np.asarray, np.float64)
