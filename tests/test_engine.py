"""Engine-level promises of the backends seen through SimToolReal: rendering each env from its own
model, bounded render memory, and a clear refusal (never a hang) in a forked child."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys

import gymnasium as gym
import mujoco
import numpy as np

import mjvec
from mjvec.errors import ForkedProcessError
from mjvec.tasks.simtoolreal import scene

_ENV = {**os.environ, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "osmesa")}


def test_each_env_renders_like_its_tool_compiled_alone() -> None:
    """Oracle: a plain mujoco.Renderer on scene_spec(tool) compiled alone, at the env's state."""
    size = (96, 128)
    env = gym.make_vec(mjvec.ENV_ID, num_envs=6, num_tools=600, env_id_offset=40, render_mode="rgb_array",
                       render_size=size, randomization=None)
    try:
        env.reset(seed=1)
        for _ in range(5):
            env.step(np.zeros((6, 29)))
        base = env.unwrapped
        frames = base.render()
        qpos, mocap_pos, mocap_quat = (np.array(base.backend.bind(n)) for n in ("qpos", "mocap_pos", "mocap_quat"))
        assert len({base.catalog[int(t)].topology for t in base.tool_ids}) >= 2  # both variant groups drawn
        for i, tool in enumerate(base.tool_ids):
            model = scene.compile_scene(int(tool))
            data = mujoco.MjData(model)
            data.qpos[:], data.mocap_pos[:], data.mocap_quat[:] = qpos[i], mocap_pos[i], mocap_quat[i]
            mujoco.mj_forward(model, data)
            with mujoco.Renderer(model, *size) as oracle:
                oracle.update_scene(data, camera=scene.CAMERA_NAME)
                np.testing.assert_array_equal(frames[i], oracle.render(), err_msg=f"env {i} (tool {tool})")
        assert len(base._renderer._cache) == base.backend.num_groups  # one renderer per group, not per tool
    finally:
        env.close()


_RENDER_MEMORY = """
import json, numpy as np, gymnasium as gym, mjvec

def rss():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) / 1024 for line in f if line.startswith("VmRSS:"))

env = gym.make_vec(mjvec.ENV_ID, num_envs=64, num_tools=600, render_mode="rgb_array", randomization=None)
env.reset(seed=0)
before = rss()
frames = env.unwrapped.render()
for i in range(64):
    frames[i]
print(json.dumps({"growth_mib": rss() - before, "tools": len(set(env.unwrapped.tool_ids.tolist()))}))
env.close()
"""


def test_rendering_64_tools_stays_within_a_few_renderers_of_memory() -> None:
    """One renderer per variant group: drawing 64 envs with 64 different tools adds what two
    renderers and 64 frames cost (measured about 250 MiB with osmesa), not ~100 MiB per tool."""
    out = subprocess.run([sys.executable, "-c", _RENDER_MEMORY], capture_output=True, text=True, check=True,
                         env=_ENV, timeout=300)
    result = json.loads(next(line for line in out.stdout.splitlines() if line.startswith("{")))
    assert result["tools"] == 64
    assert result["growth_mib"] < 400, result


_FORK = """
import os, signal, sys, numpy as np, gymnasium as gym, mjvec
from mjvec.errors import ForkedProcessError

env = gym.make_vec(mjvec.ENV_ID, num_envs=8, num_tools=8, num_threads=2)
env.reset(seed=0)
env.step(np.zeros((8, 29)))
pid = os.fork()
if pid == 0:
    signal.alarm(20)  # a hang would be killed here, and the parent would see it
    try:
        env.step(np.zeros((8, 29)))
    except ForkedProcessError as error:
        print("child refused:", error, flush=True)
        sys.exit(0)  # a normal interpreter exit: the inherited thread pool must not be joined
    sys.exit(3)
_, status = os.waitpid(pid, 0)
env.step(np.zeros((8, 29)))  # the parent's env is untouched by the child
env.close()
print("child exit status", os.waitstatus_to_exitcode(status), flush=True)
"""


def test_a_forked_child_gets_a_clear_error_and_exits_without_hanging() -> None:
    out = subprocess.run([sys.executable, "-c", _FORK], capture_output=True, text=True, env=_ENV, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "child refused:" in out.stdout and "created in process" in out.stdout, out.stdout
    assert "spawn" in out.stdout
    assert "child exit status 0" in out.stdout, out.stdout


def test_forked_process_error_is_a_runtime_error() -> None:
    assert issubclass(ForkedProcessError, RuntimeError)


def test_env_model_of_every_env_is_its_tool_model() -> None:
    """backend.write_env_model reproduces the model each env runs on: its tool's scene, compiled alone."""
    headless = int(scene.default_catalog().ids_of_topology("box_only")[0])
    env = gym.make_vec(mjvec.ENV_ID, num_envs=6, env_id_offset=headless - 3, randomization=None)
    try:
        be = env.unwrapped.backend
        for i, tool in enumerate(env.unwrapped.tool_ids):
            model = scene.compile_scene(int(tool))
            got = copy.deepcopy(be.env_template(i))
            be.write_env_model(i, got)
            for name in ("body_mass", "body_inertia", "body_ipos", "geom_size", "geom_pos", "geom_type", "bvh_aabb"):
                want = getattr(model, name)
                np.testing.assert_array_equal(getattr(got, name)[: len(want)], want, err_msg=name)
    finally:
        env.close()
