"""Wrappers act on a task only through the hooks it declares, release them on close, push through
the backend's declared input, and present the vector-env interface RL libraries use."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import mjvec
from mjvec.errors import CapabilityError, ConfigError, FieldWriteError
from mjvec.randomization import (
    ActionDelay,
    DomainRandomization,
    EventTerm,
    ObjectPoseLatency,
    ObjectScaleNoise,
    ObservationDelay,
    ObservationNoise,
    RandomPushes,
)
from mjvec.randomization.inputs import StateInput
from mjvec.rng import EnvRandom
from mjvec.tasks.simtoolreal.presets import paper
from tests.arm_env import ArmEnv, actions

SMALL = {"num_tools": 6, "num_threads": 1}


class PushableArm(ArmEnv):
    """A second task that opts into RandomPushes by implementing `PushHooks` (the free tool 'obj')."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.push_body_id = int(self.backend.model.body("obj").id)
        self.push_mass = self.backend.defaults("body_mass")[:, self.push_body_id].copy()
        self.push_reference_mass = float(self.push_mass.min())  # one mass for every env
        self.allowed = np.ones(self.num_envs, bool)

    def push_allowed(self) -> np.ndarray:
        return self.allowed.copy()


@pytest.mark.parametrize(
    ("wrap", "match"),
    [
        (ObservationNoise, r"ObservationNoise: block 'joint_vel' is not one of the observation's blocks \{\} "
                           r"\(the task declares no observation layout: set policy_layout\)"),
        (ObjectPoseLatency, r"ObjectPoseLatency needs .*ObjectPoseHooks \(missing \['set_object_pose_source', "
                            r"'true_object_pose'\]\)"),
        (ObjectScaleNoise, r"ObjectScaleNoise needs .*ObjectScaleHooks \(missing \['object_scales', "
                           r"'set_object_scale_source'\]\)"),
        (RandomPushes, r"RandomPushes\(mass_scale='reference'\) needs .*PushHooks \(missing \['push_allowed', "
                       r"'push_body_id', 'push_mass'\]\); PushReferenceMassHooks \(missing "
                       r"\['push_reference_mass'\]\)"),
        (lambda e: RandomPushes(e, mass_scale="per_env"),
         r"RandomPushes\(mass_scale='per_env'\) needs .*: PushHooks \(missing \['push_allowed', 'push_body_id', "
         r"'push_mass'\]\)\. Implement"),
        (lambda e: ObservationDelay(e, 1, refill_on_goal=True),
         r"ObservationDelay\(refill_on_goal=True\) needs .*GoalSegmentHooks \(missing \['goal_segment_steps'\]\)"),
        (lambda e: ActionDelay(e, 1, refill_on_goal=True),
         r"ActionDelay\(refill_on_goal=True\) needs .*GoalSegmentHooks"),
    ],
)
def test_wrapper_needing_an_undeclared_hook_fails_at_construction(wrap, match) -> None:
    env = ArmEnv(2)
    with pytest.raises(ConfigError, match=match):
        wrap(env)
    assert not any(env.hook_registrations().values()), "a refused wrapper must register nothing"


def test_generic_wrappers_work_on_any_mjvec_env() -> None:
    env = ActionDelay(ObservationDelay(ArmEnv(2), 1), 1)
    env.reset(seed=0)
    for t in range(5):
        obs, *_ = env.step(actions(env.unwrapped.global_env_ids, t))
    assert obs.shape == (2, env.unwrapped.single_observation_space.shape[0])


@pytest.mark.parametrize("mass_scale", ["reference", "per_env"])
def test_second_task_opts_into_pushes_and_they_go_through_the_declared_input(mass_scale: str) -> None:
    env = RandomPushes(PushableArm(3), prob_range=(0.2, 0.6), force_scale=20.0, torque_scale=2.0,
                       mass_scale=mass_scale)
    base = env.unwrapped
    base.allowed[:] = [True, False, True]
    env.reset(seed=4)
    # Oracle: the same streams drawn by hand in the wrapper's documented order; force and torque
    # have their own probabilities and their own draws.
    rng = EnvRandom(base.global_env_ids, 4)
    ids = np.arange(3)
    lo, hi = np.log(0.2), np.log(0.6)
    prob = {k: np.exp(rng.uniform(ids, f"dr/push_{k}_prob", lo, hi)) for k in ("force", "torque")}
    seen = {"force": 0, "torque": 0, "only_one": 0}
    for t in range(16):
        env.step(actions(base.global_env_ids, t))
        expected = np.zeros((3, 6))
        masks = {}
        for row, (kind, scale) in enumerate((("force", 20.0), ("torque", 2.0))):
            masks[kind] = (rng.uniform(ids, f"dr/push_{kind}_draw") < prob[kind]) & base.allowed
            p = np.flatnonzero(masks[kind])
            mass = base.push_reference_mass if mass_scale == "reference" else base.push_mass[p, None]
            expected[p, 3 * row:3 * row + 3] = rng.normal(p, f"dr/push_{kind}", (3,)) * mass * scale
            seen[kind] += p.size
        np.testing.assert_array_equal(base.backend.xfrc_applied[:, base.push_body_id], expected)
        np.testing.assert_array_equal(env.force_pushed, masks["force"])
        np.testing.assert_array_equal(env.torque_pushed, masks["torque"])
        np.testing.assert_array_equal(env.pushed, masks["force"] | masks["torque"])
        seen["only_one"] += int((masks["force"] ^ masks["torque"]).sum())
    assert seen["force"] > 0 and seen["torque"] > 0 and seen["only_one"] > 0 and not env.pushed[1]


@pytest.mark.parametrize("stale", [5.0, -0.0], ids=["force", "negative_zero"])
def test_a_step_without_pushes_still_clears_the_push_body_to_positive_zero(stale: float) -> None:
    """The step skips its write of zeros only where every bit already is +0.0: a value someone else
    wrote into the push body's xfrc_applied (even -0.0) is cleared as before."""
    env = RandomPushes(PushableArm(2), prob_range=(0.5, 0.5))
    base = env.unwrapped
    base.allowed[:] = False  # nobody is pushed
    env.reset(seed=1)
    body = np.array([base.push_body_id])
    xfrc = StateInput(base.backend, "xfrc_applied", who="test")
    for t in range(3):
        assert xfrc.is_zero(body)
        xfrc.write(np.array([1]), body, np.full((1, 1, 6), stale))
        assert not xfrc.is_zero(body)
        env.step(actions(base.global_env_ids, t))
        assert not base.backend.xfrc_applied[:, base.push_body_id].view(np.uint64).any()
    assert not env.pushed.any()


def test_state_input_refuses_undeclared_inputs_and_bad_values() -> None:
    env = ArmEnv(2)
    with pytest.raises(CapabilityError, match=r"writes the state input 'qacc'.*writable inputs are "
                                              r"\{ctrl, mocap_pos, mocap_quat, qfrc_applied, xfrc_applied\}"):
        StateInput(env.backend, "qacc", who="test")
    xfrc = StateInput(env.backend, "xfrc_applied", who="test")
    before = env.backend.xfrc_applied.copy()
    with pytest.raises(FieldWriteError, match=r"write_input\('xfrc_applied'\) values must be finite numbers of "
                                              r"shape \(2, 1, 6\)"):
        xfrc.write(np.arange(2), np.array([1]), np.full((2, 1, 6), np.nan))
    with pytest.raises(FieldWriteError, match=r"write_input\('xfrc_applied'\) index must be 1-D integer ids in"):
        xfrc.write(np.arange(2), np.array([99]), np.zeros((2, 1, 6)))
    with pytest.raises(FieldWriteError, match=r"write_input\('xfrc_applied'\) env_ids \[5\] out of range"):
        xfrc.write(np.array([5]), np.array([1]), np.zeros((1, 1, 6)))
    with pytest.raises(CapabilityError, match=r"state input 'qpos' is not writable on the 'cpu' backend"):
        env.backend.write_input("qpos", None, None, np.zeros((2, env.backend.model.nq)))
    np.testing.assert_array_equal(env.backend.xfrc_applied, before)
    xfrc.write(np.array([1]), np.array([2]), np.full((1, 1, 6), 3.0))
    expected = before.copy()
    expected[1, 2] = 3.0
    np.testing.assert_array_equal(env.backend.xfrc_applied, expected)


def test_close_releases_every_hook_of_the_paper_stack() -> None:
    base_env = gym.make_vec(mjvec.ENV_ID, num_envs=2, randomization=None, **SMALL)
    term = EventTerm("geom_friction", 0.5, 1.5, targets=("table",))
    env = paper(DomainRandomization(base_env, [term]))
    base = env.unwrapped
    counts = base.hook_registrations()
    assert counts["slot.object_pose"] == counts["slot.object_scales"] == 1
    # Action transforms: the action delay and the pushes (drawn before each step's physics).
    assert counts["observation_transforms"] == 2 and counts["action_transforms"] == 2
    assert counts["lifecycle.reset"] >= 4 and counts["lifecycle.interval"] >= 2
    env.reset(seed=0)
    env.step(np.zeros((2, 29)))
    env.close()
    assert base.hook_registrations() == dict.fromkeys(counts, 0)
    assert base.closed


def test_two_pose_sources_are_refused() -> None:
    env = ObjectPoseLatency(gym.make_vec(mjvec.ENV_ID, num_envs=1, randomization=None, **SMALL))
    with pytest.raises(ConfigError, match="hook slot 'object_pose' of SimToolRealEnv already has a source"):
        ObjectPoseLatency(env)
    assert env.unwrapped.hook_registrations()["lifecycle.interval"] == 1


# ---- the vector-env interface --------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["next_step", "same_step", "disabled"])
def test_vector_interface_on_the_wrapper_stack_and_the_env(mode: str) -> None:
    env = gym.make_vec(mjvec.ENV_ID, num_envs=3, autoreset_mode=mode, **SMALL)
    base = env.unwrapped
    for e in (env, base):
        assert e.autoreset_mode is AutoresetMode(e.metadata["autoreset_mode"]) is base.metadata["autoreset_mode"]
        assert len(e) == 3
        assert e.get_attr("tolerance") == (base.tolerance,) * 3
        assert e.call("true_object_pose")[0][0].shape == (3, 3)
        assert e.call("num_envs") == (3, 3, 3)
    assert env.get_attr("pushed")[0] is env.pushed  # owned by the outermost wrapper, RandomPushes
    with pytest.raises(AttributeError, match=r"no env in the wrapper chain \['RandomPushes'.* has an attribute 'nope'"):
        env.get_attr("nope")
    env.set_attr("render_size_hint", 7)
    assert env.get_attr("render_size_hint") == (7, 7, 7)
    env.set_attr("pushed", [env.pushed] * 3)
    with pytest.raises(ConfigError, match="differing per-env values"):
        env.set_attr("render_size_hint", [1, 2, 3])
    with pytest.raises(ConfigError, match="got 2 values for 3 envs"):
        env.set_attr("render_size_hint", [1, 1])
    env.close()


def test_call_render_is_the_envs_frames() -> None:
    env = gym.make_vec(mjvec.ENV_ID, num_envs=2, render_mode="rgb_array", render_size=(24, 32), **SMALL)
    env.reset(seed=0)
    frames = env.call("render")
    assert len(frames) == 2
    np.testing.assert_array_equal(frames[1], env.render()[1])
    env.close()


def test_frameskip_is_refused_as_an_unexpected_keyword() -> None:
    with pytest.raises(TypeError, match="got an unexpected keyword argument 'frameskip'") as info:
        gym.make(mjvec.ENV_ID, frameskip=4, **SMALL)
    assert isinstance(info.value, ConfigError) and "config=SimToolRealConfig(frame_skip=" in str(info.value)
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        gym.make_vec(mjvec.ENV_ID, num_envs=1, bogus=1)
