"""Run a policy exported from mjvec on plain MuJoCo: the template for a robot's control loop.

This package imports only numpy, mujoco and (for `OnnxPolicy`) onnxruntime: nothing of mjvec's
envs, wrappers or backends. Everything it does comes from the policy contract
(``<prefix>.contract.json``, written by ``mjvec.integrations.export_policy``; docs/deploy.md):

- `ObservationBuilder`: the observation blocks from ``MjData`` (and the commands the policy needs:
  a goal pose, an object's size), with the arithmetic the env used;
- `ActionMapper`: the action into PD targets or torques, as the env applied it;
- `Perception`: the train-time noise and delays, reproduced in distribution (off by default);
- `Deployment`: the loop (reset, apply, observe, step) over one ``MjModel`` + ``MjData``;
- `OnnxPolicy`, `load_contract`, `check_model`, `model_sha256`.

To deploy on a robot, copy this folder (its imports are relative, so it works under any package
name without mjvec installed; tests/test_deploy.py runs such a copy), keep the contract, and
replace what `ObservationBuilder` reads from MjData and what `Deployment.apply` writes to it
(examples/deploy_mujoco.py runs it).
"""

from .action import ActionMapper
from .loop import Deployment, OnnxPolicy, check_model, load_contract, model_sha256
from .observation import DeployError, ObservationBuilder
from .perception import Perception

__all__ = ["ActionMapper", "DeployError", "Deployment", "ObservationBuilder", "OnnxPolicy", "Perception",
           "check_model", "load_contract", "model_sha256"]
