"""mjvec.deploy on plain MuJoCo (MjModel + MjData, the ONNX policy through onnxruntime, the observation
from the contract and MjData only) against mjvec's env on the same episode, noise and delays off: from
the env's start state, every observation, action (ONNX output), ctrl and qpos is equal bit for bit,
step for step, for SimToolReal-v0, CubeRotate-v0, two Gymnasium tasks and a task registered later.
The torch actor the ONNX file was exported from gives the same actions within the stated ONNX
tolerance (ONNX_ATOL). Every refusal of the loop names what is wrong."""

from __future__ import annotations

import gymnasium as gym
import mujoco
import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("onnxruntime")
pytest.importorskip("onnxscript")

import mjvec  # noqa: F401  (registers the tasks)
from mjvec.deploy import (
    ActionMapper,
    DeployError,
    Deployment,
    ObservationBuilder,
    OnnxPolicy,
    Perception,
    load_contract,
)
from mjvec.integrations import export_policy, load_policy
from mjvec.integrations.policy_contract import env_contract
from tests import policy_files as pf
from tests import third_task
from tests.test_policy_contract import _contract, register_bare

# The exported ONNX graph against the torch actor it came from (float32 matmuls in another order):
# measured at most 5.7e-7 on these policies' actions (80 steps of 8 envs each); 1e-5 is tests/test_export.py's bound.
ONNX_ATOL = 1e-5
STEPS = 80


def _commands(base, i: int = 0) -> dict:
    """What the policy needs besides MjData (the goal a task sampled, the object's size: on a robot, the
    task specification), as the env holds it for env i (`MjVecEnv.command_values`)."""
    return {name: values[i] for name, values in base.command_values().items()}


def _variant_model(env) -> mujoco.MjModel:
    """The model env 0 runs, compiled alone by plain mujoco (what a deployer loads)."""
    base = env.unwrapped
    return base.backend.scene.make_variant(int(base.backend.variant_of_env[0])).compile()


CASES = {
    # (env id, options of the trained env, options of the env deployed against (another tool for SimToolReal))
    "SimToolReal-v0": ("SimToolReal-v0", {"num_tools": 3, "randomization": None},
                       {"num_tools": 3, "randomization": None, "env_id_offset": 1}),
    "CubeRotate-v0": ("CubeRotate-v0", {"randomization": None}, {"randomization": None}),
    "mjvec/Ant-v5": ("mjvec/Ant-v5", {}, {}),  # contact forces in the observation (mj_rnePostConstraint)
    "mjvec/Humanoid-v5": ("mjvec/Humanoid-v5", {}, {}),  # cinert, cvel, qfrc_actuator, cfrc_ext
    "PoleBalance-v0": (third_task.ENV_ID, {"threshold": 3.0}, {"threshold": 3.0}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_plain_mujoco_loop_equals_the_env_step_for_step_bit_for_bit(case, tmp_path):
    env_id, trained, deployed = CASES[case]
    policy = pf.mlp_policy(env_id, **trained)
    train_env = gym.make_vec(env_id, num_envs=1, **trained)
    onnx_path, _ = export_policy(policy, tmp_path / "policy", env=train_env)
    train_env.close()
    env = gym.make_vec(env_id, num_envs=1, autoreset_mode="disabled", **deployed)
    onnx = load_policy(onnx_path, env=env)  # the env side runs the same ONNX file through load_policy
    contract = load_contract(tmp_path / "policy.contract.json")
    loop = Deployment(contract, _variant_model(env), OnnxPolicy(onnx_path))
    assert loop.same_model == (case != "SimToolReal-v0")  # SimToolReal: deployed on another tool than hashed
    base = env.unwrapped
    obs, _ = env.reset(seed=11)
    mine = loop.reset(base.backend.qpos[0], base.backend.qvel[0], _commands(base))
    np.testing.assert_array_equal(mine, obs[0])
    for step in range(STEPS):
        action = onnx(obs)
        mine_action = loop.policy(mine)
        np.testing.assert_array_equal(mine_action, action[0], err_msg=f"step {step}")
        np.testing.assert_allclose(policy(mine[None]), action, rtol=0, atol=ONNX_ATOL)
        obs, _, terminated, truncated, _ = env.step(action)
        mine = loop.step(mine_action, _commands(base))
        np.testing.assert_array_equal(loop.data.ctrl, base.backend.ctrl[0], err_msg=f"ctrl, step {step}")
        np.testing.assert_array_equal(loop.data.qpos, base.backend.qpos[0], err_msg=f"qpos, step {step}")
        np.testing.assert_array_equal(mine, obs[0], err_msg=f"observation, step {step}")
        if terminated[0] or truncated[0]:
            break
    assert step >= 10, "the episode ended before the loop was tested"
    env.close()


@pytest.fixture(scope="module")
def cube(tmp_path_factory):
    """CubeRotate-v0's exported policy, its contract and the model it was trained on."""
    tmp = tmp_path_factory.mktemp("cube")
    env = gym.make_vec("CubeRotate-v0", num_envs=1, randomization=None)
    onnx_path, _ = export_policy(pf.mlp_policy("CubeRotate-v0", randomization=None), tmp / "policy", env=env)
    model = _variant_model(env)
    env.close()
    return onnx_path, load_contract(onnx_path), model


def test_the_loop_refuses_what_it_cannot_run(cube, tmp_path):
    onnx_path, contract, model = cube
    loop = Deployment(contract, model, OnnxPolicy(onnx_path))
    qpos = model.qpos0.copy()
    with pytest.raises(DeployError, match=r"the observation needs command 'cube_half_size' \(1 values\); pass "
                                          r"commands=\{'cube_half_size': ...\}"):
        loop.reset(qpos, np.zeros(model.nv))
    with pytest.raises(DeployError, match=r"command 'cube_half_size' must have 1 values, got 3"):
        loop.reset(qpos, np.zeros(model.nv), {"cube_half_size": [0.1, 0.2, 0.3]})
    loop.reset(qpos, np.zeros(model.nv), {"cube_half_size": [0.025]})
    with pytest.raises(DeployError, match=r"the action must be 22 finite values, got shape \(21,\)"):
        loop.step(np.zeros(21), {"cube_half_size": [0.025]})
    with pytest.raises(DeployError, match=r"the model has no joint 'left_thumb_CMC_FE', which the contract reads"):
        Deployment(contract, _variant_model(gym.make_vec("mjvec/Hopper-v5", num_envs=1)))
    slow = _variant_model(gym.make_vec("CubeRotate-v0", num_envs=1))
    slow.opt.timestep = 0.02
    with pytest.raises(DeployError, match=r"the model's timestep is 0.02, the contract's physics_dt 0.01"):
        Deployment(contract, slow)
    narrow = _variant_model(gym.make_vec("CubeRotate-v0", num_envs=1))
    narrow.jnt_range[3] = [0.0, 0.5]
    with pytest.raises(DeployError, match=r"joint 'left_thumb_MCP_AA' has range \[0.0, 0.5\] in the model"):
        Deployment(contract, narrow)
    (tmp_path / "other.json").write_text('{"schema": "x"}')
    with pytest.raises(DeployError, match=r"is not a policy contract of schema 'mjvec.policy_contract/1'"):
        load_contract(tmp_path / "other.json")
    import onnx

    bare = onnx.load(str(onnx_path))
    del bare.metadata_props[:]  # as exported before contracts existed
    onnx.save(bare, str(tmp_path / "old.onnx"))
    with pytest.raises(DeployError, match=r"old.onnx' carries no policy contract; export it again"):
        load_contract(tmp_path / "old.onnx")


def test_a_task_without_declarations_is_refused_naming_the_block():
    contract = _contract(register_bare())  # the third task without its declarations
    model = third_task.pole_spec(0).compile()
    with pytest.raises(DeployError, match=r"observation block 'angle': its task declares no source"):
        ObservationBuilder(contract, model)
    with pytest.raises(DeployError, match=r"action dimensions \['motor'\] have no declared semantics"):
        ActionMapper(contract, model)


def test_perception_refuses_a_wrapper_it_cannot_describe():
    class Blur(gym.vector.VectorWrapper):
        pass

    env = Blur(gym.make_vec("CubeRotate-v0", num_envs=1))
    contract = env_contract(env)
    assert contract["randomization"]["wrappers"][-1] == {"wrapper": "Blur", "kind": "undescribed",
                                                         "applies_to": "unknown", "parameters": {}}
    with pytest.raises(DeployError, match=r"randomization wrappers it could not describe \(\['Blur'\]\)"):
        Perception(contract, np.random.default_rng(0))
    env.close()


def test_the_example_script_runs_the_loop_beside_the_env_bit_for_bit(cube):
    import subprocess
    import sys

    from tests.subprocesses import ROOT, checkout_env

    onnx_path, _, _ = cube
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "deploy_mujoco.py"), "--policy", str(onnx_path),
                          "--check", "--steps", "30", "--print-every", "10"], capture_output=True, text=True,
                         env=checkout_env(), check=True).stdout
    assert "30 steps of CubeRotate-v0 on plain MuJoCo (control dt 0.05 s, 5 substeps), model as hashed; largest " \
           "observation difference to the env: 0" in out, out


def test_a_copy_of_the_loop_package_runs_without_mjvec(cube, tmp_path):
    """mjvec/deploy copied under another name runs in a process where mjvec cannot be imported at all,
    and gives the observations the in-tree loop gives (bit for bit)."""
    import shutil
    import subprocess
    import sys

    from tests.subprocesses import ROOT

    onnx_path, contract, model = cube
    shutil.copytree(ROOT / "mjvec" / "deploy", tmp_path / "robot_loop", ignore=shutil.ignore_patterns("__pycache__"))
    mujoco.mj_saveModel(model, str(tmp_path / "scene.mjb"), None)
    actions = np.random.default_rng(0).uniform(-0.3, 0.3, (10, 22))
    np.save(tmp_path / "actions.npy", actions)
    code = (
        "import sys, numpy as np, mujoco\n"
        "sys.modules['mjvec'] = None  # importing mjvec now raises\n"
        "import robot_loop as rl\n"
        f"c = rl.load_contract({str(onnx_path)!r})\n"
        "m = mujoco.MjModel.from_binary_path('scene.mjb')\n"
        "loop = rl.Deployment(c, m, rl.OnnxPolicy(" + repr(str(onnx_path)) + "))\n"
        "cmd = {'cube_half_size': [0.024]}\n"
        "obs = [loop.reset(m.qpos0, np.zeros(m.nv), cmd)]\n"
        "obs += [loop.step(a, cmd) for a in np.load('actions.npy')]\n"
        "np.save('copied.npy', np.stack(obs))\n"
        "print(loop.same_model, sorted(k for k in sys.modules if k.split('.')[0] == 'mjvec' and sys.modules[k]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True,
                         env={"PATH": "", "MUJOCO_GL": "osmesa"})
    assert out.stdout.strip() == "True []", out.stderr
    loop = Deployment(contract, model)
    cmd = {"cube_half_size": [0.024]}
    mine = [loop.reset(model.qpos0, np.zeros(model.nv), cmd)] + [loop.step(a, cmd) for a in actions]
    np.testing.assert_array_equal(np.load(tmp_path / "copied.npy"), np.stack(mine))
