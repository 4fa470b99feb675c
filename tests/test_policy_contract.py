"""The policy contract (mjvec.integrations.policy_contract): one JSON Schema for every task, its facts
taken from the env and checked against independent sources (the variant compiled alone with plain
mujoco, the env's own spaces and layouts, the randomization wrappers as built), and a diff that
names the option changed."""

from __future__ import annotations

import hashlib
import json

import gymnasium as gym
import mujoco
import numpy as np
import pytest

import mjvec  # noqa: F401  (registers the tasks)
from mjvec.envs.base import MjVecEnv
from mjvec.envs.deployment import ActionDim, DeploymentSpec, ObsBlock, ObsSource
from mjvec.envs.registry import register_task, registered_tasks
from mjvec.errors import ConfigError
from mjvec.integrations.contract_check import diff_contracts, interface, validate_contract
from mjvec.integrations.policy_contract import contract_text, env_contract, read_contract, write_contract
from mjvec.randomization.wrapper import WrapperEffect
from mjvec.tasks.cube_rotate.config import CubeRotateConfig
from tests import third_task

pytest.importorskip("jsonschema")

CASES = {
    "SimToolReal-v0/paper": ("SimToolReal-v0", {"num_tools": 3}),
    "SimToolReal-v0/asymmetric": ("SimToolReal-v0", {"num_tools": 3, "obs_mode": "asymmetric", "randomization": None}),
    "CubeRotate-v0": ("CubeRotate-v0", {}),
    "CubeRotate-v0/paper": ("CubeRotate-v0", {"randomization": "paper"}),
    **{env_id: (env_id, {}) for env_id in ("mjvec/Ant-v5", "mjvec/HalfCheetah-v5", "mjvec/Hopper-v5",
                                           "mjvec/Walker2d-v5", "mjvec/Humanoid-v5")},
    "mjvec/Ant-v5/locomotion": ("mjvec/Ant-v5", {"randomization": "locomotion"}),
    "PoleBalance-v0": (third_task.ENV_ID, {}),  # a task registered later, through the public API
}


def _contract(env_id: str, **options) -> dict:
    env = gym.make_vec(env_id, num_envs=2, **options)
    try:
        return env_contract(env)
    finally:
        env.close()


def _sha256(model: mujoco.MjModel) -> str:
    buffer = np.zeros(mujoco.mj_sizeModel(model), np.uint8)
    mujoco.mj_saveModel(model, None, buffer)
    return hashlib.sha256(buffer.tobytes()).hexdigest()


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_task_contract_fits_the_schema_and_states_the_env(case):
    env_id, options = CASES[case]
    env = gym.make_vec(env_id, num_envs=2, **options)
    base = env.unwrapped
    contract = env_contract(env)
    validate_contract(contract)
    validate_contract(json.loads(contract_text(contract)))  # the file's text: the same contract
    # The model section against the variant of env 0 compiled alone by plain mujoco.
    variant = int(base.backend.variant_of_env[0])
    model = base.backend.scene.make_variant(variant).compile()
    section = contract["model"]
    assert section["sha256"] == _sha256(model) and section["variant"] == variant
    assert [j["name"] for j in section["joints"]] == [model.joint(j).name for j in range(model.njnt)]
    assert [a["name"] for a in section["actuators"]] == [model.actuator(i).name for i in range(model.nu)]
    for i, actuator in enumerate(section["actuators"]):
        if actuator["kp"] is not None:  # a position actuator: gain kp, bias (0, -kp, -kd)
            assert (actuator["kp"], -actuator["kd"]) == (model.actuator_gainprm[i, 0], model.actuator_biasprm[i, 2])
    for dim in contract["action"]["dims"]:  # each dimension's actuator, with its compiled gain and force limit
        if dim["mode"] == "undeclared":
            continue
        i = model.actuator(dim["actuator"]).id
        limited = bool(model.actuator_forcelimited[i])
        assert dim["gains"]["gear"] == model.actuator_gear[i, 0]
        assert dim["gains"]["forcerange"] == (model.actuator_forcerange[i].tolist() if limited else None)
        assert dim["gains"]["kp"] in (None, model.actuator_gainprm[i, 0])
    assert contract["timing"] == {"control_dt": base.control_dt, "physics_dt": model.opt.timestep,
                                  "substeps": base.frame_skip, "integrator": contract["timing"]["integrator"]}
    # The observation and action against the env's spaces and declared layout.
    obs = contract["observation"]
    space = base.single_observation_space
    policy_space = space["policy"] if isinstance(space, gym.spaces.Dict) else space
    assert obs["size"] == policy_space.shape[0] == sum(b["size"] for b in obs["blocks"])
    layout = base.observation_layouts.get(obs["keys"][0] if obs["keys"] else None)
    assert [(b["name"], b["size"]) for b in obs["blocks"]] == [tuple(x) for x in layout]
    assert [b["start"] for b in obs["blocks"]] == list(np.cumsum([0] + [b["size"] for b in obs["blocks"]])[:-1])
    assert contract["action"]["size"] == base.single_action_space.shape[0] == len(contract["action"]["dims"])
    np.testing.assert_array_equal(contract["action"]["low"], base.single_action_space.low)
    assert contract["task"] == {"env_id": env_id, "version": gym.spec(env_id).version,
                                "env_class": f"{type(base).__module__}:{type(base).__qualname__}", "declared": True}
    # The wrappers, innermost first, as built.
    chain, wrapped = [], env
    while isinstance(wrapped, gym.vector.VectorWrapper):
        chain.append(type(wrapped).__name__)
        wrapped = wrapped.env
    assert [w["wrapper"] for w in contract["randomization"]["wrappers"]] == chain[::-1]
    env.close()


class Bare(third_task.PoleBalanceEnv):
    """The third task without its deployment declarations: what a task that declares none gets."""

    deployment_spec = MjVecEnv.deployment_spec


def register_bare() -> str:
    """Register `Bare` as PoleBalanceBare-v0 (once per process); returns its id."""
    if "PoleBalanceBare-v0" not in registered_tasks():
        register_task("PoleBalanceBare-v0", env_class=Bare, options=third_task.PoleBalanceOptions,
                      variants=lambda opts: (third_task.NUM_POLES, third_task.pole_spec),
                      env_kwargs=lambda opts: {"threshold": opts.threshold, "max_steps": 50})
    return "PoleBalanceBare-v0"


def test_a_task_that_declares_nothing_gets_a_valid_contract_marked_undeclared():
    contract = _contract(register_bare())
    validate_contract(contract)
    assert contract["task"]["declared"] is False
    assert [(b["name"], b["source"]["kind"]) for b in contract["observation"]["blocks"]] == [
        ("angle", "undeclared"), ("angular_velocity", "undeclared")]
    assert [(d["actuator"], d["mode"]) for d in contract["action"]["dims"]] == [("motor", "undeclared")]


def test_the_paper_presets_noise_and_delays_are_in_the_blocks_they_act_on():
    contract = _contract("SimToolReal-v0", num_tools=3)
    blocks = {b["name"]: b for b in contract["observation"]["blocks"]}
    kinds = {name: ([e["kind"] for e in b["noise"]], [e["kind"] for e in b["delay"]]) for name, b in blocks.items()}
    assert kinds["joint_vel"] == (["obs_noise"], ["obs_delay"])
    assert kinds["joint_pos"] == ([], ["obs_delay"])
    assert kinds["object_rot"] == (["pose_latency"], ["pose_latency", "obs_delay"])
    assert kinds["keypoints_rel_goal"] == (["scale_noise", "pose_latency"], ["pose_latency", "obs_delay"])
    assert blocks["joint_vel"]["noise"][0]["parameters"] == {"key": None, "distribution": "gaussian", "scale": 0.1,
                                                             "dtype": "float32"}
    assert contract["action"]["delay"]["parameters"] == {"max_delay": 2, "refill_on_goal": True}
    assert [e["kind"] for e in contract["observation"]["perception"]] == [
        "scale_noise", "pose_latency", "obs_noise", "obs_delay"]  # the order the wrappers apply them


DIFF_CASES = [
    # (env id, base options, the changed option, paths the diff must name)
    ("CubeRotate-v0", {}, {"config": CubeRotateConfig(joint_vel_obs_scale=0.2)},
     {"options.config.joint_vel_obs_scale", "observation.blocks[1:joint_vel].scale"}),
    ("CubeRotate-v0", {}, {"config": CubeRotateConfig(frame_skip=4)},
     {"options.config.frame_skip", "timing.control_dt", "timing.substeps"}),
    ("mjvec/Hopper-v5", {}, {"frame_skip": 2}, {"options.frame_skip", "timing.control_dt", "timing.substeps"}),
    ("mjvec/Ant-v5", {}, {"include_cfrc_ext_in_observation": False},
     {"options.include_cfrc_ext_in_observation", "observation.size", "observation.blocks[2:cfrc_ext]"}),
    ("mjvec/Ant-v5", {}, {"exclude_current_positions_from_observation": False},
     {"options.exclude_current_positions_from_observation", "observation.blocks[0:qpos].size"}),
    ("SimToolReal-v0", {"num_tools": 3, "randomization": None}, {"num_tools": 4},
     {"options.num_tools", "model.num_variants"}),
]


@pytest.mark.parametrize("env_id, base, change, paths", DIFF_CASES,
                         ids=[f"{c[0]}:{next(iter(c[2]))}" for c in DIFF_CASES])
def test_changing_one_option_the_contract_diff_names_it(env_id, base, change, paths):
    before, after = _contract(env_id, **base), _contract(env_id, **{**base, **change})
    named = {d.path for d in diff_contracts(before, after)}
    assert paths <= named, sorted(named)
    options = {p for p in named if p.startswith("options.")}
    assert len({p.split(".")[1] for p in options}) == 1  # exactly the option changed
    # The interface (what a policy is fed and what its actions do) differs unless only variants changed.
    assert bool(diff_contracts(interface(before), interface(after))) == (env_id != "SimToolReal-v0")


def test_a_contract_round_trips_through_its_file(tmp_path):
    contract = _contract("CubeRotate-v0")
    path = write_contract(contract, tmp_path / "c" / "policy.contract.json")
    assert read_contract(path) == json.loads(json.dumps(contract)) and not diff_contracts(read_contract(path), contract)
    assert path.read_text().startswith('{\n "schema": "mjvec.policy_contract/1",\n "task": {')


def test_contract_errors_name_the_problem(tmp_path):
    env = third_task.PoleBalanceEnv.__new__(third_task.PoleBalanceEnv)  # no gym spec: not built by make_vec
    with pytest.raises(ConfigError, match=r"generated from an mjvec env built with gym.make_vec"):
        env_contract(env)
    junk = tmp_path / "junk.json"
    junk.write_text('{"schema": "other/2"}')
    with pytest.raises(ConfigError, match=r"not a policy contract of schema 'mjvec.policy_contract/1' \(found 'other"):
        read_contract(junk)
    junk.write_text("not json")
    with pytest.raises(ConfigError, match=r"is not a readable policy contract"):
        read_contract(junk)
    broken = _contract("CubeRotate-v0")
    broken["action"]["dims"][3]["mode"] = "velocity"
    with pytest.raises(ConfigError, match=r"violates policy_contract.schema.json at action/dims/3/mode: 'velocity'"):
        validate_contract(broken)
    env = gym.make_vec("SimToolReal-v0", num_envs=1, num_tools=2, obs_mode="asymmetric", randomization=None)
    with pytest.raises(ConfigError, match=r"the policy reads observation keys \['state'\]; the env's observation has"):
        env_contract(env, obs_keys=("state",))
    env.close()


@pytest.mark.parametrize("make, match", [
    (lambda: ObsSource("velocity"), r"ObsSource.kind='velocity' is not one of"),
    (lambda: ObsSource("joint_pos"), r"ObsSource\(kind='joint_pos'\) needs elements"),
    (lambda: ObsSource("data", field="qacc", index=(0, 3)), r"field='qacc' is not one of"),
    (lambda: ObsSource("qpos", index=(3, 1)), r"index must be \(start, stop\) ints with 0 <= start <= stop"),
    (lambda: ObsSource("constant"), r"needs params=\{'value'"),
    (lambda: ObsSource("box_keypoints", elements=("obj",)), r"needs params \['extent_scale', 'signs'"),
    (lambda: ObsBlock("x", 0, ObsSource("targets")), r"ObsBlock 'x': size must be an int >= 1"),
    (lambda: ObsBlock("x", 1, ObsSource("targets"), clip=(1.0, -1.0)), r"clip must be a pair \(low, high\) with low"),
    (lambda: ObsBlock("x", 1, ObsSource("targets"), normalize="minmax"), r"normalize='minmax' is not None or one of"),
    (lambda: ObsBlock("x", 4, ObsSource("targets"), quat_order="zyxw"), r"quat_order='zyxw' is not None or one of"),
    (lambda: ActionDim("m", None, "velocity"), r"ActionDim 'm': mode='velocity' is not one of"),
    (lambda: ActionDim("m", None, "absolute", "limits"), r"map 'limits' needs map_range"),
    (lambda: ActionDim("m", None, "absolute", smoothing=1.5), r"smoothing must be None or in \(0, 1\]"),
    (lambda: DeploymentSpec({None: (ObsBlock("x", 1, ObsSource("command", command="goal")),)}, None, "float32", ()),
     r"reads command 'goal', which the spec does not declare"),
    (lambda: DeploymentSpec({}, None, "float32", (), initial_targets="zero"), r"initial_targets must be None or"),
    (lambda: DeploymentSpec({}, None, "float32", (), after_step=("mj_forward",)), r"after_step has \['mj_forward'\]"),
    (lambda: WrapperEffect("blur", "observation", {}), r"WrapperEffect.kind='blur' is not one of"),
])
def test_declarations_refuse_what_the_contract_cannot_state(make, match):
    with pytest.raises(ConfigError, match=match):
        make()


def test_the_cli_prints_an_envs_contract(capsys):
    from mjvec.cli import main

    assert main(["info", "mjvec/Hopper-v5", "--contract", "--option", "frame_skip=2"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads(contract_text(_contract("mjvec/Hopper-v5", frame_skip=2)))
    assert printed["timing"]["substeps"] == 2
