"""benchmarks/playground.py's machinery (no timing): the raw-engine side builds the very model
mjvec steps, from the XML with plain MjSpec edits (so "MuJoCo 4.0 vs 3.6" compares engines on
one model), the per-task constants are mjvec's and EnvPool's, r1's replays of each task's batch
are bit-exact, and the target and memory checks decide as stated."""

from __future__ import annotations

import json
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest

import mjvec  # noqa: F401  (registers the tasks)
from benchmarks import playground
from benchmarks._engines import PLAYGROUND_TASKS, PlaygroundEngine
from benchmarks._gym_worker import _compiled_model
from tests.envpool_compare import envpool_config, requires_envpool
from tests.playground_oracle import numeric_fields
from tests.subprocesses import ROOT, checkout_env

TASKS = list(PLAYGROUND_TASKS)


def _options(model: object) -> dict[str, object]:
    opt = model.opt
    return {n: np.asarray(getattr(opt, n)).tolist() for n in dir(opt) if not n.startswith("_")
            and isinstance(getattr(opt, n), (int, float, np.ndarray))}


def _mjvec_env(task: str):
    return gym.make_vec(task, num_envs=1, array_backend="numpy").unwrapped


@pytest.mark.parametrize("task", TASKS)
def test_the_raw_engine_side_steps_mjvecs_compiled_scene(task: str) -> None:
    engine = PlaygroundEngine(task, 1)
    env = _mjvec_env(task)
    ours = _compiled_model(task, env)
    differing = [n for n in numeric_fields(ours) if not np.array_equal(getattr(ours, n), getattr(engine.model, n))]
    assert differing == []
    assert _options(ours) == _options(engine.model)  # timestep, ccd_iterations, ... (not arrays of the model)
    assert ours.opt.timestep == PLAYGROUND_TASKS[task].sim_dt
    # and mjvec's env steps that model: its backend's model has the same physics
    stepped = env.backend.model
    assert [n for n in numeric_fields(ours) if not np.array_equal(getattr(ours, n), getattr(stepped, n))] == []


@pytest.mark.parametrize("task", TASKS)
def test_the_task_constants_are_mjvecs(task: str) -> None:
    t, cfg = PLAYGROUND_TASKS[task], _mjvec_env(task).cfg
    assert (t.sim_dt, t.substeps, t.action_scale) == (cfg.sim_dt, cfg.substeps, cfg.action_scale)
    if t.episode_length is not None:
        assert t.episode_length == cfg.episode_length


@requires_envpool
@pytest.mark.parametrize("task", TASKS)
def test_the_task_constants_are_envpools(task: str) -> None:
    t, conf = PLAYGROUND_TASKS[task], envpool_config(PLAYGROUND_TASKS[task].envpool_id)
    assert (t.sim_dt, t.action_scale) == (conf["sim_dt"], conf["action_scale"])
    assert t.substeps == round(conf["ctrl_dt"] / conf["sim_dt"])
    if t.episode_length is not None:
        assert t.episode_length == conf["max_episode_steps"]


def _random_steps(engine: PlaygroundEngine, steps: int) -> None:
    rng = np.random.default_rng(0)
    for _ in range(steps):
        engine.step(rng.uniform(-1, 1, (len(engine.datas), engine.model.nu)).astype(np.float32))


@pytest.mark.parametrize("task", [t for t in TASKS if PLAYGROUND_TASKS[t].episode_length is not None])
def test_the_raw_engine_side_ends_episodes_at_their_length_within_ctrlrange(task: str) -> None:
    engine, length = PlaygroundEngine(task, 2), PLAYGROUND_TASKS[task].episode_length
    _random_steps(engine, 50)
    assert np.all(engine.ages == 50)  # no fall in 50 random steps
    assert all(np.all((engine.low <= d.ctrl) & (d.ctrl <= engine.high)) for d in engine.datas)
    assert not all(np.array_equal(d.qpos, engine.home_qpos) for d in engine.datas)
    engine.ages[:] = length - 1
    _random_steps(engine, 1)
    assert np.all(engine.ages == 0)
    assert all(np.array_equal(d.qpos, engine.home_qpos) for d in engine.datas)


@pytest.mark.parametrize("task", [t for t in TASKS if PLAYGROUND_TASKS[t].fall is not None])
def test_the_raw_engine_side_resets_a_fall(task: str) -> None:
    engine = PlaygroundEngine(task, 1)
    d = engine.datas[0]
    if PLAYGROUND_TASKS[task].fall[0] == "site_up":
        d.qpos[3:7] = [0.0, 1.0, 0.0, 0.0]  # the robot upside down
    else:
        adr = engine.model.jnt_qposadr[engine.model.body(PLAYGROUND_TASKS[task].fall[1]).jntadr[0]]
        d.qpos[adr:adr + 3] = [0.0, 0.0, -1.0]  # the cube on its free joint, under the floor
    _random_steps(engine, 1)
    assert np.array_equal(d.qpos, engine.home_qpos) and engine.ages[0] == 0


@pytest.mark.parametrize("task", ["playground/Go1JoystickFlatTerrain-v0", "playground/LeapCubeReorient-v0",
                                  "playground/PandaPickCube-v0"])
def test_r1_replays_of_a_batch_are_bit_exact(tmp_path, task: str) -> None:
    commands = "\n".join(json.dumps(c) for c in ({"cmd": "step", "steps": 8}, {"cmd": "r1"}, {"cmd": "quit"}))
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "_gym_worker.py"), "mjvec", task, "8", "1"],
                          input=commands + "\n", capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env=checkout_env())
    assert done.returncode == 0, done.stderr[-3000:]
    ready, step, r1 = (json.loads(line) for line in done.stdout.splitlines())
    assert ready == {"ready": True} and step["seconds"] > 0
    substeps = PLAYGROUND_TASKS[task].substeps
    assert r1["total"] == 4 * 8 and r1["exact"] == r1["total"] and r1["passes"] >= 1
    assert r1["units"] == r1["passes"] * r1["total"] * substeps  # every pass replays every recorded step


def _row(n: int, speed: float | str, rss: float | str, e2e: float) -> dict:
    return {"num_envs": n, "mjvec_vs_envpool": speed, "rss_vs_envpool": rss, "e2e_vs_limit": e2e}


def test_misses_apply_each_target_where_the_issue_sets_it() -> None:
    assert playground.misses(_row(256, 1.0, 0.5, 0.9)) == []
    assert playground.misses(_row(64, 0.5, 0.2, 0.95)) == []  # the speed target starts at 256 envs
    assert [m.split()[0] for m in playground.misses(_row(1024, 0.99, 0.51, 0.89))] == ["speed", "RSS", "e2e"]
    assert [m.split()[0] for m in playground.misses(_row(1024, "", "", 0.95))] == []  # EnvPool not run


def test_envpool_is_skipped_where_its_extrapolated_peak_exceeds_the_memory(monkeypatch, capsys) -> None:
    gib = 2**30
    monkeypatch.setattr(playground, "mem_available", lambda: 20 * gib)
    assert playground._envpool_fits(256, {})
    peaks = {16: 1.0 * gib, 64: 3.4 * gib}  # 50 MiB per env plus 0.25 GiB
    assert playground._envpool_fits(256, peaks)  # 13.0 GiB < 14 GiB
    assert not playground._envpool_fits(1024, peaks)  # 51.4 GiB
    assert "EnvPool at num_envs=1024 skipped: its estimated peak RSS 51.4 GiB" in capsys.readouterr().out
    assert not playground._envpool_fits(1024, {64: 3.4 * gib})  # one size: proportional, 54.4 GiB
