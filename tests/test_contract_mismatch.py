"""Policies meet envs through their contracts: every kind ``python -m mjvec eval`` loads round-trips
through export with its contract (file and embedded copies equal, normalization statistics those of
the loaded actor, the exported policy accepted by its env), and a mismatch in layout, order, an
option that changes the observation or the action mode is refused with one line naming the first
difference, unless allowed; a policy without a contract runs with a warning."""

from __future__ import annotations

import json
import logging
import warnings

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("onnxruntime")
pytest.importorskip("onnxscript")
pytest.importorskip("jsonschema")

from mjvec.cli import main
from mjvec.errors import ConfigError
from mjvec.integrations import export_policy, load_policy
from mjvec.integrations.contract_check import ContractMismatchError, ContractWarning, validate_contract
from mjvec.integrations.policies import CONTRACT_KEY
from mjvec.integrations.policy_contract import policy_contract
from mjvec.tasks.cube_rotate.config import CubeRotateConfig
from tests import policy_files as pf

CUBE = {"num_cubes": 2, "randomization": None}
KINDS = {
    "ppo": lambda tmp: pf.ppo_checkpoint(tmp, env_id="CubeRotate-v0", asymmetric=False)[0],
    "sb3": lambda tmp: pf.sb3_checkpoint(tmp)[0],
    "rsl_rl": lambda tmp: pf.rsl_rl_checkpoint(tmp)[0],
}


def _cube(**options):
    return gym.make_vec("CubeRotate-v0", num_envs=1, **{**CUBE, **options})


def _stats(policy) -> np.ndarray:
    """The loaded actor's normalization mean, read from the torch module itself (the oracle)."""
    actor = policy.actor
    if hasattr(actor.normalizer, "mean"):
        return actor.normalizer.mean.double().numpy()
    return actor.body.obs_normalizer.mean.double().reshape(-1).numpy()


# The fast set round-trips ppo.py's kind; SB3 and rsl_rl, which train first, are slow (as in test_export),
# and the exported kinds (onnx, torchscript) round-trip in every case.
@pytest.mark.parametrize("kind", [pytest.param(k, marks=pytest.mark.slow) if k in ("sb3", "rsl_rl") else k
                                  for k in sorted(KINDS)])
def test_every_policy_kind_round_trips_through_export_with_its_contract(kind, tmp_path, capsys):
    checkpoint = KINDS[kind](tmp_path)
    env = _cube()
    policy = load_policy(checkpoint)
    if kind == "sb3":  # an SB3 zip records no env: exporting it needs the env
        with pytest.raises(ConfigError, match=r"a sb3 policy that records no env id .* needs env= to write its policy "
                                              r"contract"):
            export_policy(policy, tmp_path / "nope")
    onnx_path, ts_path = export_policy(policy, tmp_path / "export" / "policy", env=env)
    contract = json.loads((tmp_path / "export" / "policy.contract.json").read_text())
    validate_contract(contract)
    assert contract["policy"]["kind"] == kind and contract["task"]["env_id"] == "CubeRotate-v0"
    means = np.concatenate([b["normalization"]["mean"] for b in contract["observation"]["blocks"]])
    np.testing.assert_array_equal(means, _stats(policy))
    obs = pf.observations("CubeRotate-v0", n=64, **CUBE)
    for path, exported_kind in ((onnx_path, "onnx"), (ts_path, "torchscript")):
        exported = load_policy(path, env=env)  # its contract matches its env: accepted
        assert exported.kind == exported_kind and exported.metadata["contract_from"] == "embedded"
        assert exported.contract == contract
        np.testing.assert_allclose(exported(obs), policy(obs), rtol=0, atol=1e-5)
    # An exported file's contract, regenerated from the env, keeps its statistics (its actor is opaque).
    again = policy_contract(load_policy(ts_path), env)
    assert again["observation"]["normalization"] == contract["observation"]["normalization"]
    assert [b["normalization"] for b in again["observation"]["blocks"]] == [
        b["normalization"] for b in contract["observation"]["blocks"]]
    env.close()
    argv = ["eval", "--checkpoint", str(onnx_path), "--num-envs", "2", "--option", "max_episode_steps=3",
            "--option", "num_cubes=2", "--option", "randomization=None", "--json"]
    capsys.readouterr()  # what training printed
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["contract"] == "matches"


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """A CubeRotate-v0 policy exported with the contract of its env (CUBE), exported once."""
    tmp = tmp_path_factory.mktemp("exported")
    env = _cube()
    onnx_path, _ = export_policy(pf.mlp_policy("CubeRotate-v0", **CUBE), tmp / "p", env=env)
    env.close()
    return onnx_path


def _copy(exported, tmp_path):
    import shutil

    for suffix in (".onnx", ".contract.json"):
        shutil.copy(exported.with_suffix(suffix), tmp_path / f"p{suffix}")
    return tmp_path / "p.onnx"


def _edit_contract(exported, tmp_path, edit):
    """A copy of the exported policy whose contract file was edited (`edit(contract)`), its embedded copy
    removed, so load_policy reads the file beside it: a contract another env would have written."""
    import onnx

    onnx_path = _copy(exported, tmp_path)
    model = onnx.load(str(onnx_path))
    keep = [p for p in model.metadata_props if p.key != CONTRACT_KEY]
    del model.metadata_props[:]
    model.metadata_props.extend(keep)
    onnx.save(model, str(onnx_path))
    path = tmp_path / "p.contract.json"
    contract = json.loads(path.read_text())
    edit(contract)
    path.write_text(json.dumps(contract))
    return onnx_path


def _swap_actuators(contract):
    actuators = contract["model"]["actuators"]
    actuators[0], actuators[1] = actuators[1], actuators[0]


def _delta_mode(contract):
    contract["action"]["dims"][5]["mode"] = "delta"


MISMATCHES = [
    # (what differs, how the policy's contract is made, the env's options, the first difference named)
    ("option that changes the observation", "export", {"config": CubeRotateConfig(joint_vel_obs_scale=0.2)},
     r"first: observation.blocks\[1:joint_vel\].scale: policy 0.1, env 0.2; options that differ: "
     r"config.joint_vel_obs_scale: policy 0.1, env 0.2"),
    ("timing", "export", {"config": CubeRotateConfig(frame_skip=4)},
     r"first: timing.control_dt: policy 0.05, env 0.04; options that differ: config.frame_skip: policy 5, env 4"),
    ("layout", lambda c: c["observation"]["blocks"].reverse(), {},
     r"first: observation.blocks\[0:cube_half_size\].name: policy 'cube_half_size', env 'joint_pos'"),
    ("actuator order", _swap_actuators, {},
     r"first: model.actuators\[0:left_thumb_CMC_AA_act\].name: policy 'left_thumb_CMC_AA_act', env "
     r"'left_thumb_CMC_FE_act'"),
    ("action mode", _delta_mode, {},
     r"first: action.dims\[5:left_index_MCP_FE_act\].mode: policy 'delta', env 'absolute'"),
]


@pytest.mark.parametrize("what, make, options, match", MISMATCHES, ids=[m[0] for m in MISMATCHES])
def test_load_policy_and_eval_refuse_a_mismatch_naming_the_first_difference(what, make, options, match, exported,
                                                                             tmp_path, capsys, caplog):
    onnx_path = _copy(exported, tmp_path) if make == "export" else _edit_contract(exported, tmp_path, make)
    env = _cube(**options)
    with pytest.raises(ContractMismatchError, match=r"the policy's contract does not match the env's \(\d+ "
                                                     r"differences?\); " + match):
        load_policy(onnx_path, env=env)
    with caplog.at_level(logging.WARNING, logger="mjvec.integrations.contract_check"):
        policy = load_policy(onnx_path, env=env, allow_mismatch=True)
    assert policy.kind == "onnx" and "(allowed)" in caplog.text
    env.close()
    if options:  # the CLI: one line on stderr, exit status 2; --allow-mismatch runs it
        return
    argv = ["eval", "--checkpoint", str(onnx_path), "--num-envs", "2", "--option", "max_episode_steps=3",
            "--option", "num_cubes=2", "--option", "randomization=None"]
    assert main(argv) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error")]  # not progress bars
    assert len(err) == 1 and err[0].startswith("error: the policy's contract does not match the env's")
    assert main([*argv, "--allow-mismatch", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["contract"].startswith("allowed mismatch: ")


def test_a_policy_without_a_contract_loads_and_evaluates_with_a_warning(exported, tmp_path, capsys):
    onnx_path = _edit_contract(exported, tmp_path, lambda c: None)
    (tmp_path / "p.contract.json").unlink()  # exported before contracts existed: no contract anywhere
    env = _cube()
    with pytest.warns(ContractWarning, match=r"the onnx policy .* carries no policy contract .* not checked against "
                                             r"the env"):
        policy = load_policy(onnx_path, env=env)
    assert policy.contract is None
    env.close()
    argv = ["eval", "--checkpoint", str(onnx_path), "--num-envs", "2", "--option", "max_episode_steps=3",
            "--option", "num_cubes=2", "--option", "randomization=None", "--json"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the CLI turns it into its own line on stderr, not a Python warning
        assert main(argv) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["contract"] == "none"
    lines = [line for line in captured.err.splitlines() if line.startswith("warning")]
    assert len(lines) == 1 and lines[0].startswith("warning: the onnx policy")
    assert "carries no policy contract" in lines[0]


def test_a_checkpoint_that_records_its_env_is_checked_against_it(tmp_path):
    path, _ = pf.ppo_checkpoint(tmp_path, env_id="CubeRotate-v0", asymmetric=False)
    policy = load_policy(path, env=_cube(num_cubes=8, randomization="paper"))  # the options ppo.py recorded
    assert policy.metadata["contract_from"] == "the env the checkpoint records, built at load time"
    with pytest.raises(ContractMismatchError, match=r"first: observation.blocks\[1:joint_vel\].scale: policy 0.1, "
                                                     r"env 0.3"):
        load_policy(path, env=_cube(config=CubeRotateConfig(joint_vel_obs_scale=0.3)))
