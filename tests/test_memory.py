"""`mjvec.envs.memory`: configurations that cannot fit are refused before anything is allocated.

Oracles: MuJoCo's state layout summed by hand, the RSS a real build grows by (in subprocesses),
and the peak RSS of a refused build (it must stay small: nothing was allocated).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import mujoco
import pytest

from mjvec.backends.memory import bound_field_bytes, cpu_bytes_per_env
from mjvec.envs import memory
from mjvec.errors import ConfigError
from tests.subprocesses import checkout_env
from tests.toy_env import pendulum_spec

RUN = """
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (16 * 2**30, 16 * 2**30))  # a failed check must not reach the OOM killer
import gymnasium as gym, mjvec
from mjvec.backends.memory import bound_field_bytes, cpu_bytes_per_env
from mjvec.envs import memory
if {available} is not None:
    memory.available_bytes = lambda: {available}
try:
    gym.make_vec("SimToolReal-v0", num_envs={num_envs}, num_threads=1)
    print(json.dumps({{"error": None}}))
except mjvec.ConfigError as error:
    # VmHWM, not ru_maxrss: the latter keeps the peak of the forked parent across exec.
    peak = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM"))
    print(json.dumps({{"error": str(error), "peak_rss_kb": peak}}))
"""


def _run(code: str, timeout: float = 120) -> dict:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout,
                         env=checkout_env(PYTHONWARNINGS="ignore"))
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads the peak RSS from /proc")
@pytest.mark.parametrize(("num_envs", "available", "match"), [
    (3_000_000, 64 * 10**9, r"num_envs=3,000,000 needs about 1\d\d\.\d GB of memory \(4\d\.\d kB per env: "
                            r"state 2\.8 kB, .*\), but only 64\.0 GB is available; use num_envs <= 1,\d\d\d,\d\d\d"),
    (2**40, None, r"num_envs=1,099,511,627,776 needs about \d+\.\d PB of memory .* but only .* is available"),
])
def test_absurd_num_envs_are_refused_fast_without_allocating(num_envs, available, match):
    result = _run(RUN.format(num_envs=num_envs, available=available), timeout=120)
    assert result["error"] is not None, "the configuration was built instead of refused"
    assert re.search(match, result["error"]), result["error"]
    assert result["peak_rss_kb"] < 1_000_000  # nothing proportional to num_envs was allocated


GROWTH = """
import json, sys
import gymnasium as gym, mjvec, numpy as np
import warnings; warnings.simplefilter("ignore")
from mjvec.envs.registry import get_task, wrapper_bytes_per_env

def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1]) * 1024

kwargs = {kwargs}
n = {num_envs}
task = get_task({env_id!r})
estimate = task.estimate_memory(n, task.parse_options(kwargs))
before = rss()
env = gym.make_vec({env_id!r}, num_envs=n, **kwargs)
built = rss() - before
env.reset(seed=0)
for _ in range(3):
    env.step(np.zeros(env.action_space.shape, np.float32))
print(json.dumps({{"growth": rss() - before, "built": built, "built_estimate": estimate.total_bytes,
                  "estimate": estimate.total_bytes + n * wrapper_bytes_per_env(env)}}))
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads RSS from /proc")
@pytest.mark.parametrize(("env_id", "kwargs", "sizes", "lowest"), [
    # The fast set keeps each task on the CPU and the flagship on Warp; the other configurations are slow.
    pytest.param("SimToolReal-v0", {"num_tools": 1, "randomization": None, "num_threads": 1}, (500, 6000), 0.5,
                 marks=pytest.mark.slow),
    ("SimToolReal-v0", {"num_tools": 600, "randomization": "paper", "num_threads": 1}, (500, 6000), 0.5),
    pytest.param("SimToolReal-v0", {"num_tools": 600, "randomization": "paper", "obs_mode": "asymmetric",
                                    "num_threads": 1}, (500, 6000), 0.5, marks=pytest.mark.slow),
    ("CubeRotate-v0", {"randomization": "paper", "num_threads": 1}, (256, 4096), 0.5),
    ("SimToolReal-v0", {"num_tools": 600, "randomization": "paper", "backend": "warp", "device": "cpu"}, (64, 1024),
     0.5),
    # Slow: 3 steps of 1,024 CubeRotate worlds take about 100 s on warp's cpu device.
    pytest.param("CubeRotate-v0", {"randomization": "paper", "backend": "warp", "device": "cpu"}, (64, 1024), 0.5,
                 marks=pytest.mark.slow),
    pytest.param("playground/Go1JoystickFlatTerrain-v0", {"randomization": "paper", "obs_mode": "asymmetric",
                                                          "num_threads": 1}, (500, 6000), 0.5, marks=pytest.mark.slow),
    pytest.param("playground/Go1JoystickFlatTerrain-v0", {"randomization": "paper", "obs_mode": "asymmetric",
                                                          "backend": "warp", "device": "cpu"}, (64, 1024), 0.5,
                 marks=pytest.mark.slow),
    pytest.param("playground/LeapCubeReorient-v0", {"randomization": "paper", "obs_mode": "asymmetric",
                                                    "num_threads": 1}, (500, 6000), 0.5, marks=pytest.mark.slow),
    # No randomization: the engine expands no model field, while the estimate counts two copies of every
    # writable one (a write may expand any); measured growth / estimate 0.48-0.50, hence the lower floor.
    pytest.param("playground/PandaPickCube-v0", {"num_threads": 1}, (500, 6000), 0.4, marks=pytest.mark.slow),
    pytest.param("playground/PandaPickCubeOrientation-v0", {"num_threads": 1}, (500, 6000), 0.4,
                 marks=pytest.mark.slow),
    # The heightfield raises the Warp backend's default contact and constraint buffers per world.
    pytest.param("playground/Go1JoystickRoughTerrain-v0", {"randomization": "paper", "obs_mode": "asymmetric",
                                                           "backend": "warp", "device": "cpu"}, (64, 1024), 0.5,
                 marks=pytest.mark.slow),
])
def test_estimate_bounds_the_measured_growth(env_id, kwargs, sizes, lowest):
    """Per env: the growth between two sizes (fixed costs such as compiled tools and captured graphs
    cancel out) is at most the estimate (a refusal is never too late) and at least `lowest` of it
    (half, where randomization expands the model fields it writes); and what the build allocates is
    at most the part checked before it (backend and task)."""
    small, large = (_run(GROWTH.format(env_id=env_id, kwargs=kwargs, num_envs=n), timeout=600) for n in sizes)
    measured = large["growth"] - small["growth"]
    estimated = large["estimate"] - small["estimate"]
    assert lowest <= measured / estimated <= 1.0, (measured, estimated)
    built, checked_first = large["built"] - small["built"], large["built_estimate"] - small["built_estimate"]
    assert built <= checked_first, (built, checked_first)


def test_the_wrappers_are_checked_with_the_rest_against_the_memory_before_the_build():
    """CubeRotate-v0's paper preset: the backend and task fit the available memory, the whole with the
    wrappers' state does not. Refused, the message giving the whole per-env estimate (before, the
    wrappers were checked alone against what was left, so the pair was admitted; the measured growth
    of such a build, about 36 kB per env, is more than the backend and task part of the estimate)."""
    code = RUN.replace("SimToolReal-v0", "CubeRotate-v0").replace(", num_threads=1", ", num_threads=1, "
                                                                   "randomization='paper'")
    result = _run(code.format(num_envs=1000, available=40 * 10**6))
    assert result["error"] is not None, "the configuration was built instead of refused"
    # The message names every part; the parts add up to the per-env figure, which bounds num_envs. (The
    # model_fields part follows the writable field set, so it is read from the message, not written here.)
    found = re.search(r"num_envs=1,000 needs about ([\d.]+) MB of memory \(([\d.]+) kB per env: state 2\.0 kB, "
                      r"bound_fields 4\.0 kB, model_fields ([\d.]+) kB, task 4\.1 kB, wrappers 17\.0 kB\), but only "
                      r"40\.0 MB is available; use num_envs <= (\d+)", result["error"])
    assert found, result["error"]
    total_mb, per_env_kb, model_kb, limit = float(found[1]), float(found[2]), float(found[3]), int(found[4])
    assert abs(per_env_kb - (2.0 + 4.0 + model_kb + 4.1 + 17.0)) <= 0.2 and abs(total_mb - per_env_kb) <= 0.1
    assert 2.0 + 4.0 + 4.1 + model_kb < 40.0 < per_env_kb  # backend and task fit; with the wrappers they do not
    assert limit == int(40e6 // (per_env_kb * 1e3)) or abs(limit - 40e6 / (per_env_kb * 1e3)) <= 2


def test_parts_match_mujoco_layout_by_hand():
    model = pendulum_spec(0).compile()
    backend = cpu_bytes_per_env(model, ("site_xpos",))
    est = memory.estimate_memory(10, backend, task_bytes_per_env=100)
    # mjSTATE_INTEGRATION: time, qpos, qvel, act, warmstart, ctrl, qfrc_applied, xfrc_applied,
    # eq_active, mocap_pos, mocap_quat, userdata, plugin state.
    m = model
    count = (1 + m.nq + m.nv + m.na + m.nv + m.nu + m.nv + 6 * m.nbody + m.neq + 3 * m.nmocap + 4 * m.nmocap
             + m.nuserdata + m.npluginstate)
    assert est.per_env["state"] == 8 * count
    doubles = m.nq + m.nv + m.nu + 6 * m.nbody + 1 + 3 * m.nsite  # qpos qvel ctrl xfrc time site_xpos
    assert est.per_env["bound_fields"] == 2 * (8 * doubles + 4 * mujoco.mjtWarning.mjNWARNING * 2)
    writable = (10 * m.nbody + 16 * m.ngeom + 3 * m.nv + m.njnt + 30 * m.nu + 3 + m.nq  # qpos0
                + 8 * m.ncam + 4 * m.ngeom + 7 * m.nmat + 15 * m.nlight)  # what cameras and the renderer read
    assert est.per_env["model_fields"] == 2 * 8 * writable
    assert est.per_env["task"] == 100 and not est.device_per_env
    assert est.total_bytes == 10 * sum(est.per_env.values())


def test_a_gpu_estimate_is_checked_against_the_gpus_free_memory():
    est = memory.MemoryEstimate(1000, {"model_defaults": 10}, {"worlds": 3000}, "cuda:0")
    memory.check_fits(est, available=10**9, device_available=3_000_000)
    with pytest.raises(ConfigError, match=r"num_envs=1,000 needs about 3\.0 MB of cuda:0 memory \(3\.0 kB per env: "
                                          r"worlds 3\.0 kB\), but only 2\.0 MB is available; use num_envs <= 666"):
        memory.check_fits(est, available=10**9, device_available=2_000_000)
    on_cpu_device = memory.MemoryEstimate(1000, {"model_defaults": 10}, {"worlds": 3000}, "cpu")
    assert on_cpu_device.per_env_bytes == 3010 and on_cpu_device.device_per_env_bytes == 0


def test_check_fits_names_num_envs_estimate_and_available():
    est = memory.MemoryEstimate(1000, {"state": 2000, "task": 500})
    memory.check_fits(est, available=2_500_000)  # exactly fits
    with pytest.raises(ConfigError, match=r"num_envs=1,000 needs about 2\.5 MB of memory \(2\.5 kB per env: state "
                                          r"2\.0 kB, task 500 B\), but only 1\.0 MB is available; use num_envs <= 400"):
        memory.check_fits(est, available=1_000_000)


def test_available_bytes_is_at_most_the_physical_memory():
    total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    available = memory.available_bytes()
    assert available is not None and 0 < available <= total


def test_unknown_mjdata_field_is_named():
    with pytest.raises(ConfigError, match="'qpoz' is not an MjData field"):
        bound_field_bytes(pendulum_spec(0).compile(), ["qpoz"])
