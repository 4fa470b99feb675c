"""The shared task path (`mjvec.envs.registry`) with a third task written on the public API only
(tests/third_task.py): its envs against plain mujoco, its own and the shared options, its presets,
the CLI listing it, the memory estimate it declares, and every registration error."""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import mujoco
import numpy as np
import pytest

import mjvec
from mjvec.cli import commands as cli
from mjvec.envs import registry
from mjvec.envs.registry import TaskOptions, register_task, unregister_task
from mjvec.errors import ConfigError, UnknownOptionError
from mjvec.randomization import EventTerm
from tests import third_task
from tests.subprocesses import checkout_env
from tests.third_task import ENV_ID, FRAME_SKIP, PoleBalanceEnv, pole_spec

third_task.register()


def test_third_task_steps_like_its_variants_compiled_alone():
    env = gym.make_vec(ENV_ID, num_envs=4, env_id_offset=5, threshold=1.0, autoreset_mode="disabled")
    obs, info = env.reset(seed=3)
    models = [pole_spec(int(v)).compile() for v in env.unwrapped.backend.variant_of_env]
    assert env.unwrapped.backend.variant_of_env.tolist() == [(5 + i) % 3 for i in range(4)]
    datas = [mujoco.MjData(m) for m in models]
    np.testing.assert_array_equal(obs[:, 0], env.unwrapped.backend.qpos[:, 0].astype(np.float32))
    for i, d in enumerate(datas):
        d.qpos[:] = env.unwrapped.backend.qpos[i]
        mujoco.mj_forward(models[i], d)
    rng = np.random.default_rng(0)
    for _ in range(10):
        a = rng.uniform(-1, 1, (4, 1)).astype(np.float32)
        obs, reward, _, _, info = env.step(a)
        for i, (m, d) in enumerate(zip(models, datas, strict=True)):
            d.ctrl[:] = a[i].astype(np.float64)
            mujoco.mj_step(m, d, FRAME_SKIP)
            np.testing.assert_array_equal(env.unwrapped.backend.qpos[i], d.qpos)
            assert reward[i] == -abs(d.qpos[0]) and info["angle"][i] == d.qpos[0]
    env.close()


def test_own_option_shared_options_and_episode_limit():
    env = gym.make_vec(ENV_ID, num_envs=2, threshold=3.0, max_episode_steps=3, record_episode_statistics=True)
    assert isinstance(env.unwrapped, PoleBalanceEnv) and env.unwrapped.threshold == 3.0
    env.reset(seed=0)
    for _ in range(3):
        *_, trunc, info = env.step(np.zeros((2, 1), np.float32))
    assert trunc.all() and (info["episode"]["l"] == 3).all()
    env.close()
    single = gym.make(ENV_ID, threshold=0.2)
    obs, _ = single.reset(seed=0)
    assert obs.shape == (2,)
    single.close()


def test_preset_is_the_tasks_own_and_paper_is_refused():
    env = gym.make_vec(ENV_ID, num_envs=2, randomization="NOISY")
    clean = gym.make_vec(ENV_ID, num_envs=2)
    noisy_obs, _ = env.reset(seed=1)
    clean_obs, _ = clean.reset(seed=1)
    np.testing.assert_array_equal(noisy_obs[:, 1], clean_obs[:, 1])  # only the angle block is noised
    assert (noisy_obs[:, 0] != clean_obs[:, 0]).all()
    env.close()
    clean.close()
    with pytest.raises(ConfigError, match=r"randomization='paper' is not a preset of PoleBalance-v0; its presets "
                                          r"are \{noisy\}"):
        gym.make_vec(ENV_ID, num_envs=1, randomization="paper")


def test_model_field_terms_apply_to_the_third_task():
    env = gym.make_vec(ENV_ID, num_envs=3, randomization=[EventTerm("dof_damping", 2.0, 3.0, targets=("hinge",))])
    env.reset(seed=2)
    backend = env.unwrapped.backend
    np.testing.assert_allclose(backend.field_values("dof_damping")[:, 0],
                               backend.defaults("dof_damping")[:, 0] * env.dr_params["dof_damping"][:, 0])
    env.close()


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"thresold": 0.3}, UnknownOptionError,
     r"PoleBalance-v0 got an unexpected keyword argument 'thresold'; allowed options are \{.*threshold.*\}"),
    ({"threshold": 4.0}, ConfigError, r"threshold must be a number in \(0, pi\), got 4\.0"),
    ({"num_threads": 0}, ConfigError, r"num_threads must be an int >= 1 or None, got 0"),
    ({"backend": "tpu"}, ConfigError, r"backend='tpu' is not supported; allowed values are \{cpu, warp\}"),
    ({"autoreset_mode": "later"}, ConfigError, r"autoreset_mode='later' is not supported"),
    ({"array_backend": "jax"}, ConfigError, r"array_backend='jax' is not supported"),
    ({"render_mode": "human"}, ConfigError, r"render_mode='human' is not supported"),
    ({"randomization": 7}, ConfigError, r"randomization must be None, one of the task's presets or a sequence"),
    ({"env_id_offset": -1}, ConfigError, r"env_id_offset must be an int >= 0"),
])
def test_option_errors_name_the_value_and_the_allowed_set(kwargs, error, match):
    with pytest.raises(error, match=match):
        gym.make_vec(ENV_ID, num_envs=1, **kwargs)


def test_duplicate_ids_and_malformed_registrations_are_refused():
    kw = {"env_class": PoleBalanceEnv, "variants": lambda o: (1, pole_spec)}
    with pytest.raises(ConfigError, match=r"'PoleBalance-v0' is already registered; pick another id"):
        register_task(ENV_ID, **kw)
    with pytest.raises(ConfigError, match=r"'CartPole-v1' is already registered"):  # a Gymnasium id
        register_task("CartPole-v1", **kw)
    with pytest.raises(ConfigError, match=r"env_class must be an MjVecEnv subclass"):
        register_task("Other-v0", env_class=dict, variants=kw["variants"])
    with pytest.raises(ConfigError, match=r"options must be a TaskOptions subclass"):
        register_task("Other-v0", options=dict, **kw)
    with pytest.raises(ConfigError, match=r"presets must map lower-case names other than 'none'"):
        register_task("Other-v0", presets={"Loud": third_task.noisy}, **kw)
    with pytest.raises(ConfigError, match=r"\['variants'\] must be callables"):
        register_task("Other-v0", env_class=PoleBalanceEnv, variants=3)
    with pytest.raises(ConfigError, match=r"namespaces must be \('numpy',\) or \('numpy', 'torch'\), got \('torch',\)"):
        register_task("Other-v0", namespaces=("torch",), **kw)
    assert "Other-v0" not in registry.registered_tasks() and "Other-v0" not in gym.registry
    with pytest.raises(ConfigError, match=r"'Other-v0' is not a registered task"):
        unregister_task("Other-v0")


def test_register_and_unregister_a_task_with_gymnasium():
    task = register_task("PoleBalance-v9", env_class=PoleBalanceEnv, variants=lambda o: (1, pole_spec),
                         env_kwargs=lambda o: {"threshold": 0.5, "max_steps": 5})
    try:
        assert gym.spec("PoleBalance-v9").vector_entry_point == task.make_vec
        env = gym.make_vec("PoleBalance-v9", num_envs=2)
        assert env.unwrapped.backend.variant_of_env.tolist() == [0, 0]
        env.close()
    finally:
        unregister_task("PoleBalance-v9")
    assert "PoleBalance-v9" not in gym.registry
    with pytest.raises(ConfigError, match=r"'PoleBalance-v9' is not a registered mjvec task"):
        registry.get_task("PoleBalance-v9")


def test_cli_lists_every_registered_task(capsys):
    assert cli.main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines == [cli.task_line(env_id) for env_id in sorted(registry.registered_tasks())]
    assert {"CubeRotate-v0", "SimToolReal-v0", ENV_ID} <= {line.split()[0] for line in lines}
    assert f"{ENV_ID}  tests.third_task:PoleBalanceEnv  presets: noisy" in lines


def test_memory_estimate_uses_what_the_task_declares():
    task = registry.get_task(ENV_ID)
    opts = task.parse_options({})
    estimate = task.estimate_memory(1000, opts)
    assert estimate.per_env["task"] == 0 and "wrappers" not in estimate.per_env
    model = pole_spec(0).compile()
    assert estimate.per_env["state"] == 8 * mujoco.mj_stateSize(model, mujoco.mjtState.mjSTATE_INTEGRATION)
    terms = (EventTerm("dof_damping", 2.0, 3.0, targets=("hinge",)),)
    env = gym.make_vec(ENV_ID, num_envs=2, randomization=terms)
    # The wrapper reports its own state: its draws and timer, and the backend's two per-env rows of dof_damping.
    assert registry.wrapper_bytes_per_env(env) == 8 * model.nv + 8 + 2 * 8 * model.nv
    with pytest.raises(ConfigError, match=r"got \['bytes_per_env'\]: the memory arguments were removed.*memory_needs"):
        registry.register_task("Removed-v0", env_class=PoleBalanceEnv, variants=lambda o: (1, pole_spec),
                            bytes_per_env=lambda o: 64)


def test_shared_options_are_one_dataclass_for_every_task():
    shared = {f.name for f in dataclasses.fields(TaskOptions)}
    assert shared == {"backend", "num_threads", "device", "array_backend", "autoreset_mode", "render_mode",
                      "render_size", "env_id_offset", "randomization", "record_episode_statistics",
                      "max_episode_steps", "task_namespace", "deterministic", "nconmax", "njmax", "cameras",
                      "frame_stack", "render_every"}
    for env_id, task in registry.registered_tasks().items():
        assert issubclass(task.options, TaskOptions), env_id
        assert shared <= {f.name for f in dataclasses.fields(task.options)}
    assert mjvec.ENV_ID in registry.registered_tasks()


def test_each_variant_is_built_and_compiled_once_per_make_vec() -> None:
    """The memory estimate's compile of the first variant is the one the backend uses."""
    built: list[int] = []

    def counted(v: int) -> mujoco.MjSpec:
        built.append(v)
        return pole_spec(v)

    register_task("CountedPole-v0", env_class=PoleBalanceEnv, variants=lambda opts: (3, counted),
                  env_kwargs=lambda opts: {"threshold": 0.5, "max_steps": 50})
    try:
        gym.make_vec("CountedPole-v0", num_envs=5, env_id_offset=1).close()
        assert sorted(built) == [0, 1, 2]
    finally:
        unregister_task("CountedPole-v0")


def test_the_cli_runs_a_task_registered_by_another_module_by_module_and_id() -> None:
    import subprocess
    import sys

    run = lambda *args: subprocess.run([sys.executable, "-m", "mjvec", *args], capture_output=True,  # noqa: E731
                                       text=True, env=checkout_env(), timeout=120)
    ok = run("info", f"tests.third_task:{ENV_ID}")
    assert ok.returncode == 0 and ok.stdout.startswith(ENV_ID), ok.stderr[-2000:]
    unknown = run("info", ENV_ID)  # this process never imported tests.third_task
    assert unknown.returncode == 2 and "give 'package.module:Id-v0'" in unknown.stderr
    missing = run("info", "no_such_module:X-v0")
    assert missing.returncode == 2 and "cannot import 'no_such_module'" in missing.stderr
