"""The task layer on the device (torch, Warp backend) against the same task on the host (numpy).

Oracle: one Warp simulation per env set, the task run twice: in torch where the backend keeps its
state (`task_namespace=None`, the default) and in numpy over host copies (`task_namespace="numpy"`).
The random streams are bit-identical across namespaces (tests/test_rng.py), so what differs is
float32 rounding in the task math, which reaches the physics through the control targets.
Measured over 40 steps with the paper preset (seed 3, 8 envs, two episode ends): observations
within 1.4e-4, rewards within 7.9e-5; terminations, truncations, success counters, tolerance and
episode lengths equal. Each term on identical inputs: tests/test_task_namespaces.py.
"""

from __future__ import annotations

import collections
import os
import traceback
from collections.abc import Iterator

import gymnasium as gym
import numpy as np
import pytest

torch = pytest.importorskip("torch")
wp = pytest.importorskip("warp")

import mjvec  # noqa: E402
from mjvec.errors import ActionError, ConfigError  # noqa: E402
from tests.devices import run_to_run_atol  # noqa: E402

OBS_TOL = 5e-4
REWARD_TOL = 5e-4
KW = {"num_envs": 8, "num_tools": 8, "backend": "warp", "max_episode_steps": 15}


def _values(info: dict, key: str) -> np.ndarray:
    return np.asarray(info[key])


@pytest.mark.parametrize("mode", ["next_step", "same_step"])
def test_device_task_matches_the_host_task(mode: str, warp_device: str) -> None:
    kw = {**KW, "device": warp_device, "array_backend": "numpy", "obs_mode": "asymmetric",
          "record_episode_statistics": True, "autoreset_mode": mode}
    dev = gym.make_vec(mjvec.ENV_ID, **kw)
    host = gym.make_vec(mjvec.ENV_ID, task_namespace="numpy", **kw)
    assert isinstance(dev.unwrapped.backend.qpos, torch.Tensor)
    assert isinstance(host.unwrapped.backend.qpos, np.ndarray)
    od, _ = dev.reset(seed=3)
    oh, _ = host.reset(seed=3)
    for k in od:
        np.testing.assert_allclose(od[k], oh[k], rtol=0, atol=1e-5)
    rng = np.random.default_rng(0)
    episodes = 0
    for _ in range(40):
        action = rng.uniform(-1, 1, (8, 29))
        od, rd, td, ud, infod = dev.step(action)
        oh, rh, th, uh, infoh = host.step(action)
        for k in od:
            np.testing.assert_allclose(od[k], oh[k], rtol=0, atol=OBS_TOL, err_msg=k)
        np.testing.assert_allclose(rd, rh, rtol=0, atol=REWARD_TOL)
        np.testing.assert_array_equal(td, th)
        np.testing.assert_array_equal(ud, uh)
        for key in ("success", "successes", "tool_id", "lifted"):
            np.testing.assert_array_equal(_values(infod, key), _values(infoh, key), err_msg=key)
        np.testing.assert_allclose(_values(infod, "keypoint_dist"), _values(infoh, "keypoint_dist"), atol=OBS_TOL)
        np.testing.assert_array_equal(_values(infod, "tolerance"), _values(infoh, "tolerance"))
        assert set(infod["reward_terms"]) == set(infoh["reward_terms"])
        for term, value in infod["reward_terms"].items():
            np.testing.assert_allclose(value, infoh["reward_terms"][term], rtol=0, atol=REWARD_TOL, err_msg=term)
        # The device path always carries the episode entry with its mask (knowing whether any
        # env finished would cost a wait); the host path carries it when one did. Same episodes.
        ended = np.asarray(infod["_episode"])
        np.testing.assert_array_equal(ended, td | ud)
        if ended.any():
            episodes += 1
            np.testing.assert_array_equal(infoh["_episode"], ended)
            np.testing.assert_array_equal(infod["episode"]["l"][ended], infoh["episode"]["l"][ended])
            np.testing.assert_allclose(infod["episode"]["r"][ended], infoh["episode"]["r"][ended], atol=40 * REWARD_TOL)
            if mode == "same_step":
                np.testing.assert_array_equal(infod["_final_obs"], infoh["_final_obs"])
                for k in od:
                    np.testing.assert_allclose(infod["final_obs"][k][ended], infoh["final_obs"][k][ended],
                                               rtol=0, atol=OBS_TOL, err_msg=k)
        else:
            assert "episode" not in infoh and "final_obs" not in infoh
            assert not np.asarray(infod.get("_final_obs", ended)).any()
    assert episodes >= 2
    dev.close()
    host.close()


_SYNCS = ("cpu", "numpy", "item", "tolist", "__bool__", "__int__", "__float__", "__index__", "nonzero")


@pytest.fixture
def sync_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[collections.Counter]:
    """Counts calls of the torch and warp entry points that copy a device value to the host (each
    one waits for the device), by caller, once `start()` is called."""
    calls: collections.Counter = collections.Counter()
    armed = [False]

    def spy(owner: type, name: str) -> None:
        original = getattr(owner, name)

        def counted(self, *args, **kwargs):
            if armed[0]:
                frame = traceback.extract_stack(limit=3)[0]
                calls[f"{name} at {os.path.basename(frame.filename)}:{frame.lineno}"] += 1
            return original(self, *args, **kwargs)

        monkeypatch.setattr(owner, name, counted)

    for name in _SYNCS:
        spy(torch.Tensor, name)
    spy(wp.array, "numpy")
    monkeypatch.setattr(torch, "nonzero", _counting(torch.nonzero, calls, armed, "torch.nonzero"))
    monkeypatch.setattr(wp, "synchronize", _counting(wp.synchronize, calls, armed, "wp.synchronize"))
    calls.start = lambda: armed.__setitem__(0, True)  # type: ignore[attr-defined]
    yield calls


def _counting(fn, calls: collections.Counter, armed: list, name: str):
    def counted(*args, **kwargs):
        if armed[0]:
            calls[name] += 1
        return fn(*args, **kwargs)

    return counted


def _run(env: gym.vector.VectorEnv, calls: collections.Counter, device: str) -> None:
    env.reset(seed=0)
    actions = torch.as_tensor(np.random.default_rng(0).uniform(-1, 1, (30, 8, 29)), dtype=torch.float32,
                              device=device)
    for t in range(5):
        env.step(actions[t])
    calls.start()  # type: ignore[attr-defined]
    for t in range(5, 30):  # two episode ends and autoresets (max_episode_steps) on the way
        env.step(actions[t])


def test_device_step_never_waits_for_the_device(sync_calls: collections.Counter, warp_device: str) -> None:
    """25 steps of the paper preset (delays, noise, pushes, autoresets) with torch actions on the
    device: no call that copies a device value to the host. The control below shows the spy sees
    the host path's per-step copies."""
    env = gym.make_vec(mjvec.ENV_ID, device=warp_device, **KW)
    _run(env, sync_calls, warp_device)
    env.close()
    assert not sync_calls, dict(sync_calls)


def test_device_step_with_the_critic_never_waits_for_the_device(sync_calls: collections.Counter,
                                                                warp_device: str) -> None:
    """The same with the asymmetric observation: the critic's re-measured rows (autoresets, new goals)
    are device masks too."""
    env = gym.make_vec(mjvec.ENV_ID, device=warp_device, obs_mode="asymmetric", **KW)
    _run(env, sync_calls, warp_device)
    env.close()
    assert not sync_calls, dict(sync_calls)


def test_the_sync_spy_sees_the_host_path(sync_calls: collections.Counter, warp_device: str) -> None:
    env = gym.make_vec(mjvec.ENV_ID, task_namespace="numpy", device=warp_device, **KW)
    _run(env, sync_calls, warp_device)
    env.close()
    assert sum(sync_calls.values()) >= 25, dict(sync_calls)


def test_task_namespace_is_validated() -> None:
    with pytest.raises(ConfigError, match=r"task_namespace must be None .* or 'numpy' .*got 'torch'"):
        gym.make_vec(mjvec.ENV_ID, num_envs=1, task_namespace="torch")


def test_non_finite_action_tensor_rows_fail_only_their_envs(warp_device: str) -> None:
    """A NaN row in a device action tensor is not read back (that would wait for the device): the
    env ends as a simulation error would (truncated, sim_error, reset at the next step), and the
    other envs step exactly as in a run where that row was finite. A host array is checked on the
    host and raises, as on the CPU backend."""
    runs = []
    later = torch.as_tensor(np.random.default_rng(4).uniform(-1, 1, (12, 8, 29)), dtype=torch.float32,
                            device=warp_device)
    for poison in (False, True):
        env = gym.make_vec(mjvec.ENV_ID, device=warp_device, **KW)  # the paper preset: the failed envs' resets draw
        env.reset(seed=1)
        action = torch.zeros(8, 29, device=warp_device)
        if poison:
            action[2, 5] = float("nan")
            action[6, 0] = float("inf")
        first = env.step(action)
        runs.append((first, env.step(torch.zeros(8, 29, device=warp_device)), env, [env.step(a)[0] for a in later]))
    (obs_ok, _, _, trunc_ok, _), _, _, later_ok = runs[0]
    (obs_bad, _, term_bad, trunc_bad, info_bad), (obs_next, *_), env, later_bad = runs[1]
    hit = np.zeros(8, bool)
    hit[[2, 6]] = True
    assert (trunc_bad.cpu().numpy() == hit).all() and not term_bad.any() and not trunc_ok.any()
    np.testing.assert_array_equal(info_bad["sim_error"].cpu().numpy(), hit)
    ok, atol = torch.as_tensor(~hit, device=warp_device), run_to_run_atol(env.unwrapped.backend)
    torch.testing.assert_close(obs_bad[ok], obs_ok[ok], rtol=0, atol=atol)
    assert torch.isfinite(obs_next).all()
    for a, b in zip(later_ok, later_bad, strict=True):  # the others never notice (streams included)
        torch.testing.assert_close(b[ok], a[ok], rtol=0, atol=atol)
    assert (env.unwrapped.backend.qpos[~ok].abs() < 10).all()  # reset to a spawn state
    with pytest.raises(ActionError, match=r"NaN or infinite for envs \[3\] \(1 of 8\)"):
        bad = np.zeros((8, 29))
        bad[3, 1] = np.nan
        env.step(bad)
    for _, _, e, _ in runs:
        e.close()
