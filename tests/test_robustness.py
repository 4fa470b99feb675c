"""Misuse is detected and named: concurrent calls, out-of-range seeds and ids, odd action and id
types, copies, bad render sizes, and a backend freed when construction fails.

Oracles: a twin env driven the same way from one thread, the same actions in float32, the global
id arithmetic done by hand, and a spy on the backend's close().
"""

from __future__ import annotations

import copy
import re
import subprocess
import sys
import threading

import gymnasium as gym
import numpy as np
import pytest
import torch

import mjvec
from mjvec.errors import ActionError, ActionTypeError, ConcurrentUseError, ConfigError
from mjvec.randomization import EventTerm
from mjvec.tasks.simtoolreal.config import SimToolRealConfig
from tests.subprocesses import checkout_env
from tests.toy_env import ToyPendulumEnv, policy

SMALL = {"num_tools": 3, "randomization": None, "num_threads": 1}


def _make(n: int = 2, **kw):
    return gym.make_vec(mjvec.ENV_ID, num_envs=n, **{**SMALL, **kw})


# ---- item 1: a second concurrent call is refused -------------------------------------------
def test_calls_from_another_thread_during_a_step_raise_and_the_step_is_unharmed():
    env, twin = ToyPendulumEnv(4, render_mode="rgb_array"), ToyPendulumEnv(4)
    env.reset(seed=3)
    twin.reset(seed=3)
    entered, release = threading.Event(), threading.Event()
    apply = env._apply_action

    def slow_apply(actions):
        entered.set()
        assert release.wait(30)
        apply(actions)

    env._apply_action = slow_apply
    action = policy(env.global_env_ids, 0)
    result = {}
    worker = threading.Thread(target=lambda: result.setdefault("step", env.step(action)), name="stepper")
    worker.start()
    assert entered.wait(30)
    calls = {
        "step": lambda: env.step(action), "reset": lambda: env.reset(seed=0), "close": env.close,
        "render": env.render, "render_grid": lambda: env.render_grid([0]),
    }
    try:
        for name, call in calls.items():
            with pytest.raises(ConcurrentUseError, match=rf"{name}\(\) was called while step\(\) is running in "
                                                         r"thread 'stepper'.*not thread-safe"):
                call()
    finally:
        release.set()
        worker.join(30)
    env._apply_action = apply
    expected = twin.step(action)
    for got, want in zip(result["step"][:4], expected[:4], strict=True):
        np.testing.assert_array_equal(got, want)
    assert not env.closed
    later = policy(env.global_env_ids, 1)
    np.testing.assert_array_equal(env.step(later)[0], twin.step(later)[0])
    env.close()
    twin.close()


def test_two_threads_stepping_one_env_never_corrupt_it():
    """Every step either runs whole or is refused; the accepted ones replay exactly on a fresh env."""
    env = ToyPendulumEnv(4, max_steps=1000)
    env.reset(seed=5)
    accepted, refused, lock = [], [0], threading.Lock()
    apply = env._apply_action

    def record(actions):
        accepted.append(actions.copy())  # runs under the env's guard, so in step order
        apply(actions)

    env._apply_action = record
    errors = []

    def hammer(k: int) -> None:
        for t in range(150):
            try:
                _, _, _, _, info = env.step(policy(env.global_env_ids, 1000 * k + t))
                if info["sim_error"].any():
                    errors.append("sim_error")
            except ConcurrentUseError:
                with lock:
                    refused[0] += 1

    threads = [threading.Thread(target=hammer, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors and len(accepted) + refused[0] == 300
    replay = ToyPendulumEnv(4, max_steps=1000)
    replay.reset(seed=5)
    for actions in accepted:
        obs, *_ = replay.step(actions.astype(np.float32))
    np.testing.assert_allclose(env._observe(), obs, rtol=0, atol=1e-6)  # float32 round trip of the actions
    env.close()
    replay.close()


# ---- item 3: raw or late errors become clear ones ------------------------------------------
@pytest.mark.parametrize("seed", [2**64, [0, 0, 2**64, 0]])
def test_seed_beyond_64_bits_is_refused_before_any_rng_moves(seed):
    env = ToyPendulumEnv(4)
    env.reset(seed=1)
    state = copy.deepcopy(env.np_random.bit_generator.state)
    with pytest.raises(ConfigError, match=r"seed.*must be .*in \[0, 2\*\*64 - 1\]"):
        env.reset(seed=seed)
    assert env.np_random.bit_generator.state == state
    env.close()


@pytest.mark.parametrize(("offset", "match"), [
    (2**64, r"env_id_offset must be an int >= 0 and at most 2\*\*63 - 1.*got 18446744073709551616"),
    (2**63 - 1, r"global env ids env_id_offset \+ num_envs - 1 = 9223372036854775808 exceed 2\*\*63 - 1"),
])
def test_env_id_offset_that_would_wrap_the_global_ids_is_refused(offset, match):
    with pytest.raises(ConfigError, match=match):
        _make(2, env_id_offset=offset)


def test_largest_env_id_offset_keeps_positive_global_ids():
    env = _make(2, env_id_offset=2**63 - 2)
    assert env.unwrapped.global_env_ids.tolist() == [2**63 - 2, 2**63 - 1]
    env.close()


def test_ragged_action_list_names_the_row_lengths():
    env = _make(2)
    env.reset(seed=0)
    with pytest.raises(ActionError, match=r"ragged.*row lengths \[29, 28\].*expected \(2, 29\)"):
        env.step([[0.0] * 29, [0.0] * 28])
    env.close()


def test_bfloat16_actions_step_like_their_float32_values():
    a, b = _make(2), _make(2)
    a.reset(seed=0)
    b.reset(seed=0)
    act = torch.linspace(-1, 1, 58).reshape(2, 29).to(torch.bfloat16)
    for dtype in (torch.bfloat16, torch.float16):
        oa, *_ = a.step(act.to(dtype))
        ob, *_ = b.step(act.to(dtype).to(torch.float32).numpy())
        np.testing.assert_array_equal(oa, ob)
    a.close()
    b.close()


def test_meta_tensor_actions_are_refused():
    env = _make(2)
    env.reset(seed=0)
    with pytest.raises(ActionTypeError, match=r"meta device.*no values"):
        env.step(torch.zeros(2, 29, device="meta"))
    env.close()


@pytest.mark.parametrize("ids", [["a"], None, [1.7], [True, False], np.array([0.0]), "0", [[0, 1]]])
def test_render_grid_refuses_ids_that_are_not_ints(ids):
    env = ToyPendulumEnv(2, render_mode="rgb_array")
    env.reset(seed=0)
    with pytest.raises(ConfigError, match=r"render_grid env_ids must be .*ints in \[0, 2\)"):
        env.render_grid(ids)
    np.testing.assert_array_equal(env.render_grid(np.array([1, 0]))[:, :320], env.render()[1])  # still works
    env.close()


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"goal_low": "abc"}, r"SimToolRealConfig.goal_low must be 3 finite floats, got 'abc'"),
    ({"goal_low": (-1e200, -0.2, 0.6)}, r"goal_low.*metres from the origin"),
    ({"goal_high": (0.35, 0.2, 1e200)}, r"goal_high.*metres from the origin"),
    ({"spawn_pos_noise": (1e6, 0.1, 0.1)}, r"spawn_pos_noise.*metres from the origin"),
])
def test_config_refuses_unparseable_and_absurd_lengths(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        SimToolRealConfig(**kwargs)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error of a machine without CUDA")
def test_cuda_device_without_cuda_is_refused_at_construction():
    with pytest.raises(ConfigError, match=r"device='cuda:0'.*CUDA is not available.*device='cpu'"):
        _make(2, array_backend="torch", device="cuda:0")


def test_cuda_device_index_beyond_the_count_is_refused():
    with pytest.raises(ConfigError, match=r"device='cuda:99'"):
        _make(2, array_backend="torch", device="cuda:99")


def test_render_size_beyond_the_framebuffer_limit_is_refused_at_construction():
    with pytest.raises(ConfigError, match=r"render_size=\(12000, 12000\).*at most 4096"):
        _make(1, render_mode="rgb_array", render_size=(12000, 12000))


def test_single_env_step_names_the_single_action_shape():
    env = gym.make(mjvec.ENV_ID, **SMALL)
    env.reset(seed=0)
    with pytest.raises(ActionError, match=r"action has shape \(1, 29\); expected \(29,\)"):
        env.step(np.zeros((1, 29), np.float32))
    env.close()


def test_copies_are_refused_so_the_original_keeps_working():
    env = _make(2)
    env.reset(seed=0)
    for fn in (copy.copy, copy.deepcopy):
        with pytest.raises(TypeError, match=r"SimToolRealEnv cannot be copied.*gym.make_vec"):
            fn(env.unwrapped)
    assert np.isfinite(env.step(np.zeros((2, 29), np.float32))[0]).all()
    env.close()


# ---- item 4: accepted silently before, refused now -----------------------------------------
@pytest.mark.parametrize("value", ["no", 1, None])
def test_record_episode_statistics_must_be_a_bool(value):
    with pytest.raises(ConfigError, match=rf"record_episode_statistics must be True or False, got {value!r}"):
        _make(2, record_episode_statistics=value)


# ---- item 5: the backend is freed when a later construction step fails --------------------
def test_make_vec_closes_the_backend_when_a_randomization_term_is_rejected(monkeypatch):
    from mjvec.backends.cpu import CpuBackend

    closed = []
    original = CpuBackend.close
    monkeypatch.setattr(CpuBackend, "close", lambda self: (closed.append(self), original(self)))
    with pytest.raises(Exception, match="no_such_body"):
        _make(2, randomization=[EventTerm("body_mass", 0.5, 1.5, targets=("no_such_body",))])
    assert len(closed) == 1 and closed[0]._closed


# ---- first contact: reset infos carry what is known at reset -------------------------------
def test_reset_info_has_tool_ids_with_masks():
    env = _make(4, num_tools=3, env_id_offset=5)
    _, info = env.reset(seed=0)
    np.testing.assert_array_equal(info["tool_id"], (5 + np.arange(4)) % 3)
    assert info["_tool_id"].tolist() == [True] * 4
    _, info = env.reset(options={"reset_mask": np.array([False, True, False, True])})
    np.testing.assert_array_equal(info["tool_id"], (5 + np.arange(4)) % 3)
    assert info["_tool_id"].tolist() == [False, True, False, True]
    single = gym.make(mjvec.ENV_ID, **SMALL)
    assert single.reset(seed=0)[1]["tool_id"] == 0
    env.close()
    single.close()


def test_headless_rendering_without_mujoco_gl_says_to_set_it():
    code = (
        "import gymnasium as gym, mjvec\n"
        "env = gym.make_vec('SimToolReal-v0', num_envs=1, num_tools=1, randomization=None, render_mode='rgb_array')\n"
        "env.reset(seed=0)\n"
        "try:\n"
        "    env.unwrapped.render()[0]\n"
        "except mjvec.RenderError as error:\n"
        "    print('RenderError:', error)\n"
    )
    env = {k: v for k, v in checkout_env().items() if k not in ("MUJOCO_GL", "PYOPENGL_PLATFORM", "DISPLAY",
                                                                "WAYLAND_DISPLAY")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert re.search(r"RenderError: could not create an OpenGL renderer .*set MUJOCO_GL=egl \(GPU\) or "
                     r"MUJOCO_GL=osmesa \(CPU, needs libosmesa6\)", out.stdout), out.stdout + out.stderr


@pytest.mark.parametrize("dtype, big", [(np.float32, 1e30), (np.float64, 1e300)])
def test_the_compiled_action_check_is_np_clip_and_refuses_the_same_rows(dtype, big) -> None:
    """mjvec.envs.arrays.check_actions' compiled pass against the numpy lines it stands in for:
    np.clip's bits with (A,) bound arrays (a value equal to a bound takes the bound, signed zeros
    included), strided input, and the same ActionError naming the same envs for nan and inf."""
    from mjvec.envs.arrays import check_actions

    rng = np.random.default_rng(0)
    low, high = np.array([-1.0, 0.0, -0.0, -2.0, 0.0]), np.array([1.0, 0.0, 0.5, -0.0, 3.0])
    specials = np.array([0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, 1e-40, -1e-40, big, -big])
    for trial in range(100):
        actions = (rng.choice(specials, (7, 5)) if trial % 2 else rng.normal(size=(7, 5)) * 3).astype(dtype)
        want = np.clip(actions.astype(np.float64), low, high)
        np.testing.assert_array_equal(check_actions(actions, (7, 5), low, high).view(np.int64), want.view(np.int64))
    strided = rng.normal(size=(5, 7)).astype(dtype).T
    np.testing.assert_array_equal(check_actions(strided, (7, 5), low, high),
                                  np.clip(strided.astype(np.float64), low, high))
    for bad in (np.nan, np.inf, -np.inf):
        actions = np.zeros((7, 5), dtype)
        actions[3, 2] = actions[5, 0] = bad
        with pytest.raises(ActionError, match=r"envs \[3, 5\] \(2 of 7\)"):
            check_actions(actions, (7, 5), low, high)
