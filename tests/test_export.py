"""Trained policies (examples/ppo.py, SB3, rsl_rl) load as one `Policy` and export to ONNX and
TorchScript; every form gives the actions the library's own in-process policy gives, on 1,000
observations of the task (oracle: that in-process policy, tests/policy_files.py)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("onnxruntime")
pytest.importorskip("onnxscript")

from mjvec.errors import ConfigError
from mjvec.integrations import export_policy, load_policy
from tests import policy_files as pf
from tests.subprocesses import checkout_env

CASES = {
    "ppo": (lambda tmp: pf.ppo_checkpoint(tmp, num_tools=3),
            lambda: pf.observations("SimToolReal-v0", num_tools=3, randomization=None, obs_mode="asymmetric")),
    "sb3": (pf.sb3_checkpoint, lambda: pf.observations("CubeRotate-v0", **pf.CUBE)),
    "rsl_rl": (pf.rsl_rl_checkpoint, lambda: pf.observations("CubeRotate-v0", **pf.CUBE)),
}


# The fast set exports one kind (ppo.py's); the SB3 and rsl_rl kinds, which train first, are slow.
@pytest.mark.parametrize("kind", [pytest.param(k, marks=pytest.mark.slow) if k in ("sb3", "rsl_rl") else k
                                  for k in sorted(CASES)])
def test_loaded_and_exported_policies_act_like_the_in_process_policy(kind, tmp_path):
    make_checkpoint, make_obs = CASES[kind]
    path, in_process = make_checkpoint(tmp_path)
    obs = make_obs()
    flat = obs["policy"] if isinstance(obs, dict) else obs
    assert flat.shape[0] == 1000
    want = in_process(flat)
    assert np.abs(want).max() > 0.05 and (np.abs(want) < 1).any()  # a non-trivial policy

    policy = load_policy(path)
    assert policy.kind == kind
    if kind == "sb3":  # the VecNormalize statistics beside the model are part of the policy
        assert policy.metadata["vecnormalize"].endswith("vecnormalize.pkl")
    np.testing.assert_allclose(policy(obs), want, rtol=0, atol=1e-6)  # the dict obs: its "policy" key
    # An SB3 zip records no env id, so its contract comes from the env it was trained on (a ppo.py or
    # rsl_rl checkpoint records its env and options, and exports without one).
    env = gym.make_vec("CubeRotate-v0", num_envs=1, **pf.CUBE) if kind == "sb3" else None
    onnx_path, ts_path = export_policy(policy, tmp_path / "export" / "policy", env=env)
    for file, kind_name, atol in ((onnx_path, "onnx", 1e-5), (ts_path, "torchscript", 1e-6)):
        exported = load_policy(file)
        assert exported.kind == kind_name and exported.metadata["kind"] == kind
        assert (exported.obs_dim, exported.action_dim) == (policy.obs_dim, policy.action_dim)
        np.testing.assert_allclose(exported(obs), want, rtol=0, atol=atol, err_msg=kind_name)
        np.testing.assert_allclose(exported(flat[:1]), want[:1], rtol=0, atol=atol)  # any batch size


def test_foreign_files_and_mismatched_observations_are_refused(tmp_path):
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"not a policy")
    with pytest.raises(ConfigError, match=r"junk.pt' is none of the policy files mjvec loads"):
        load_policy(junk)
    with pytest.raises(ConfigError, match=r"does not exist"):
        load_policy(tmp_path / "missing.pt")
    with pytest.raises(ConfigError, match=r"kind='keras' is not supported; allowed values are"):
        load_policy(junk, kind="keras")
    path, _ = pf.ppo_checkpoint(tmp_path, num_tools=3)
    policy = load_policy(path)
    with pytest.raises(ConfigError, match=r"the policy expects 140-D observations, got shape \(4, 95\)"):
        policy(np.zeros((4, 95), np.float32))
    rsl = tmp_path / "rsl" / "model_0.pt"
    rsl.parent.mkdir()
    import torch

    torch.save({"actor_state_dict": {}, "iter": 0}, rsl)
    with pytest.raises(ConfigError, match=r"params/agent.json', which is missing; examples/train_rsl_rl.py writes it"):
        load_policy(rsl)


def test_import_mjvec_imports_no_rl_library_and_no_onnx():
    import subprocess
    import sys

    code = ("import sys, mjvec, mjvec.integrations; "
            "print(sorted(m for m in ('rsl_rl', 'rl_games', 'onnx', 'onnxruntime', 'tensordict', 'torch') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=checkout_env()).stdout  # this checkout's mjvec
    assert out.strip() == "[]"
