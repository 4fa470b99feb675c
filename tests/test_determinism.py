"""The `deterministic` option and each backend's declared determinism (`Capabilities.determinism`).

Oracles: a second run of the same configuration (same seed, options and actions) for run-to-run
identity; mujoco_warp's own Model field (`opt.deterministic`) and the kernels its launches used for
"the option reached the engine"; torch's documented list of nondeterministic operations for the
task layer's torch ops (`test_device_task_layer_uses_order_fixed_torch_ops`).
"""

from __future__ import annotations

import collections
import contextlib
from collections.abc import Iterator
from unittest import mock

import gymnasium as gym
import numpy as np
import pytest

torch = pytest.importorskip("torch")
wp = pytest.importorskip("warp")
mjw = pytest.importorskip("mujoco_warp")

from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

import mjvec  # noqa: E402
from mjvec.backends.base import Capabilities, Scene  # noqa: E402
from mjvec.backends.cpu import CpuBackend  # noqa: E402
from mjvec.backends.registry import make_backend  # noqa: E402
from mjvec.backends.warp import WarpBackend  # noqa: E402
from mjvec.errors import ConfigError  # noqa: E402
from tests.scenes import make_scene  # noqa: E402

# 8 envs of the 600-tool catalog fall into all three Warp variant groups (gathered state views).
KW = {"num_envs": 8, "num_tools": 600, "backend": "warp", "max_episode_steps": 6}


@contextlib.contextmanager
def _kernel_modes() -> Iterator[collections.Counter]:
    """Counts warp launches by their module's `deterministic` option while the block runs."""
    modes: collections.Counter = collections.Counter()

    def wrap(launch):
        def counted(*args, **kwargs):
            kernel = kwargs["kernel"] if "kernel" in kwargs else args[0]
            modes[kernel.module.options.get("deterministic", wp.DeterministicMode.NOT_GUARANTEED)] += 1
            return launch(*args, **kwargs)

        return counted

    with mock.patch.object(wp, "launch", wrap(wp.launch)), mock.patch.object(wp, "launch_tiled",
                                                                              wrap(wp.launch_tiled)):
        yield modes


@pytest.mark.parametrize("deterministic", [True, False])
def test_the_option_reaches_every_group_model_before_capture(deterministic: bool, warp_device: str) -> None:
    """Every group's mujoco_warp Model carries the mode, and the graphs captured at the first reset
    and step launched mujoco_warp's deterministic kernel variants (warp's RUN_TO_RUN module option)
    exactly when it is on: the flag was set before anything was captured."""
    env = gym.make_vec(mjvec.ENV_ID, device=warp_device, randomization=None, deterministic=deterministic, **KW)
    be = env.unwrapped.backend
    assert be.num_groups == 3 and be.deterministic is deterministic
    want = mjw.DeterminismType.ALL if deterministic else mjw.DeterminismType.NONE
    assert [int(m.opt.deterministic) for m, _, _ in be.group_handles] == [int(want)] * 3
    assert be.capabilities.determinism == ("run_to_run" if warp_device == "cpu" else "none")
    with _kernel_modes() as modes:
        env.reset(seed=0)
        env.step(torch.zeros(8, 29, device=warp_device))
    assert modes[wp.DeterministicMode.NOT_GUARANTEED] > 0  # kernels with no atomics to order
    assert (modes[wp.DeterministicMode.RUN_TO_RUN] > 0) is deterministic, dict(modes)
    env.close()


def _rollout(device: str, deterministic: bool) -> list[np.ndarray]:
    env = gym.make_vec(mjvec.ENV_ID, device=device, deterministic=deterministic, obs_mode="asymmetric",
                       record_episode_statistics=True, **KW)  # the paper preset: delays, noise, pushes
    obs, _ = env.reset(seed=11)
    out = [obs["policy"].cpu().numpy(), obs["critic"].cpu().numpy()]
    actions = torch.as_tensor(np.random.default_rng(2).uniform(-1, 1, (14, 8, 29)), dtype=torch.float32,
                              device=device)
    ended = 0
    for a in actions:  # two autoresets per env on the way
        obs, reward, terminated, truncated, info = env.step(a)
        ended += int((terminated | truncated).sum())
        be = env.unwrapped.backend
        out += [x.cpu().numpy() for x in (obs["policy"], obs["critic"], reward, terminated, truncated, be.qpos,
                                          be.qvel, info["keypoint_dist"], info["tolerance"])]
    assert ended >= 8
    env.close()
    return out


def test_two_runs_with_the_same_seed_are_bit_identical(warp_device: str) -> None:
    """deterministic=True, SimToolReal-v0 with the paper preset, 14 steps with autoresets: the second
    run repeats the first bit for bit (observations, rewards, dones, state, info) wherever the
    backend declares it (warp's CPU device: "run_to_run")."""
    probe = make_backend("warp", Scene(1, make_scene, 1), device=warp_device, deterministic=True, progress=False)
    level = probe.capabilities.determinism
    probe.close()
    if level == "none":
        pytest.skip(f"the warp backend on {warp_device} declares determinism 'none' (mjvec.backends.determinism); "
                    "python -m benchmarks.gpu --part determinism measures how far two runs drift there")
    for k, (a, b) in enumerate(zip(_rollout(warp_device, True), _rollout(warp_device, True), strict=True)):
        np.testing.assert_array_equal(a, b, err_msg=f"output {k}")


def test_cpu_backend_declares_bit_exact_and_accepts_the_option() -> None:
    """The CPU backend's contract holds with the option on: 1 and 2 threads step bit-identically."""
    runs = []
    for threads in (1, 2):
        be = CpuBackend(Scene(3, make_scene, 6), num_threads=threads, deterministic=True, progress=False)
        assert be.capabilities.determinism == "bit_exact"
        be.ctrl[...] = np.random.default_rng(0).uniform(-1, 1, be.ctrl.shape)
        for _ in range(20):
            be.step(2)
        runs.append(be.qpos.copy())
        be.close()
    np.testing.assert_array_equal(runs[0], runs[1])
    env = gym.make_vec(mjvec.ENV_ID, num_envs=2, num_tools=2, randomization=None, deterministic=True)
    assert env.unwrapped.backend.capabilities.determinism == "bit_exact"
    env.close()


@pytest.mark.parametrize("value", ["yes", 1, None, 0.0])
def test_bad_deterministic_values_raise(value) -> None:
    match = rf"deterministic must be True or False, got {value!r}"
    with pytest.raises(ConfigError, match=match):
        gym.make_vec(mjvec.ENV_ID, num_envs=1, deterministic=value)
    with pytest.raises(ConfigError, match=match):
        make_backend("cpu", Scene(1, make_scene, 1), deterministic=value)
    with pytest.raises(ConfigError, match=match):
        CpuBackend(Scene(1, make_scene, 1), deterministic=value)
    with pytest.raises(ConfigError, match=match):
        WarpBackend(Scene(1, make_scene, 1), device="cpu", deterministic=value)


def test_capabilities_refuse_an_unknown_determinism_level() -> None:
    with pytest.raises(ConfigError, match=r"determinism='always' is not a determinism level; allowed values are "
                                          r"\{bit_exact, none, run_to_run\}"):
        Capabilities(backend="x", fields={}, array_namespace="numpy", device="cpu", exact_variants=True,
                     determinism="always")


# ---- the task layer's torch ops -------------------------------------------------------------
# Torch ops whose result can depend on the order a GPU runs their threads in (torch's
# use_deterministic_algorithms list: float atomics, or several writes to one element), by
# overload packet name. index_put_ (accumulate=False) and index_copy_ are deterministic only with
# distinct destinations, which the recorder checks on every call.
ORDER_DEPENDENT = frozenset({
    "index_add", "index_add_", "scatter_add", "scatter_add_", "scatter_reduce", "scatter_reduce_", "scatter",
    "scatter_", "put", "put_", "bincount", "histc", "median", "nanmedian", "kthvalue", "cumsum", "cumsum_",
    "cumprod", "cumprod_", "embedding_bag", "_embedding_bag", "index_reduce", "index_reduce_",
})


def _repeats(indices: list) -> bool:
    """Whether index tensors (None: a whole axis) name some destination element twice."""
    given = [i for i in indices if i is not None]
    if not given or any(i.dtype == torch.bool for i in given):
        return False  # a mask names each element at most once
    flat = torch.stack([t.reshape(-1) for t in torch.broadcast_tensors(*given)], dim=1)
    return torch.unique(flat, dim=0).shape[0] != flat.shape[0]


class _OpRecorder(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.ops: collections.Counter = collections.Counter()
        self.problems: collections.Counter = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func._overloadpacket.__name__
        self.ops[name] += 1
        if name in ORDER_DEPENDENT:
            self.problems[name] += 1
        elif name in ("index_put", "index_put_", "_index_put_impl_"):
            accumulate = args[3] if len(args) > 3 else kwargs.get("accumulate", False)
            if accumulate or _repeats(list(args[1])):
                self.problems[f"{name}(accumulate={accumulate}, repeated destinations)"] += 1
        elif name in ("index_copy", "index_copy_") and _repeats([args[2]]):
            self.problems[f"{name} with repeated destinations"] += 1
        return func(*args, **kwargs)


@pytest.mark.parametrize("mode", ["next_step", "same_step"])
def test_device_task_layer_uses_order_fixed_torch_ops(mode: str, warp_device: str) -> None:
    """25 steps of the device path (paper preset, asymmetric observations, episode statistics,
    autoresets): no torch op whose result depends on thread order (float atomics, repeated
    destinations). Its reductions are per env over a fixed axis, plus the curriculum's sum of
    integer success counts in float64, which is exact in any order (docs/determinism.md)."""
    env = gym.make_vec(mjvec.ENV_ID, device=warp_device, obs_mode="asymmetric", record_episode_statistics=True,
                       autoreset_mode=mode, **KW)
    env.reset(seed=0)
    actions = torch.as_tensor(np.random.default_rng(0).uniform(-1, 1, (25, 8, 29)), dtype=torch.float32,
                              device=warp_device)
    env.step(actions[0])
    recorder = _OpRecorder()
    with recorder:
        for a in actions[1:]:
            env.step(a)
    env.close()
    assert recorder.ops["index_put_"] and recorder.ops["index_copy_"]  # the checks below saw them
    assert not recorder.problems, dict(recorder.problems)
    reductions = {n for n in recorder.ops if n in ("sum", "mean", "amax", "amin", "linalg_vector_norm", "bmm",
                                                   "all", "any", "max", "min", "prod")}
    assert reductions <= {"sum", "amax", "linalg_vector_norm", "bmm", "all"}, reductions  # listed in the docs
