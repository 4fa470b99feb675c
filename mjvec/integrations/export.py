"""Export a trained policy (`mjvec.integrations.policies.Policy`: actor + observation normalization)
to ONNX and TorchScript, each file carrying its metadata (observation keys and size, action size,
the source kind, the env id and options) and its policy contract, so `load_policy` and
``python -m mjvec eval`` run it and `mjvec.deploy` runs it on plain MuJoCo.

    policy = load_policy("out/ppo/checkpoint.pt")
    onnx_path, ts_path = export_policy(policy, "out/ppo/policy")   # policy.onnx, policy.pt
    # and policy.contract.json (docs/deploy.md), embedded in both files too

The contract (`mjvec.integrations.policy_contract`) is generated from `env` when given, else from
a one-env instance of the env the policy records (its id and options), else it is the policy's own
(an exported file); a policy with none of these (an SB3 zip) needs ``env=``.

Input ``obs`` (batch, obs_dim) float32 (the batch size is dynamic); output ``actions`` (batch,
action_dim) float32, clipped to the action bounds: the deterministic action the env executes.
ONNX uses torch's torch.export-based exporter (opset 18, needs onnxscript); TorchScript uses
``torch.jit.script`` (deprecated by torch in favour of torch.export, still what rsl_rl and Isaac
Lab ship for deployment).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import torch

from mjvec.envs.registry import MAKE_VEC_ARGUMENTS
from mjvec.errors import ConfigError, InstallError, install_hint
from mjvec.integrations.contract_check import contract_of
from mjvec.integrations.policies import CONTRACT_KEY, METADATA_KEY, Policy
from mjvec.integrations.policy_contract import RUNTIME_OPTIONS, contract_text, policy_contract, write_contract

__all__ = ["export_policy"]


def _plain(value: Any) -> bool:
    """Whether `value` survives JSON as itself (so eval can pass it back to gym.make_vec)."""
    if isinstance(value, (list, tuple)):
        return all(_plain(v) for v in value)
    return value is None or isinstance(value, (bool, int, float, str))


def _metadata(metadata: dict[str, Any], env: Any) -> dict[str, Any]:
    """The policy's metadata, with the env id and options of `env` when given (those JSON keeps as
    they are: an option such as a config dataclass is left out, and the contract check names it)."""
    if env is None:
        return metadata
    spec = env.unwrapped.spec
    options = {k: v for k, v in spec.kwargs.items()
               if k not in (*MAKE_VEC_ARGUMENTS, *RUNTIME_OPTIONS) and _plain(v)}
    return {**metadata, "env_id": spec.id, "env_options": options}


def export_policy(policy: Policy, prefix: str | Path, env: Any = None) -> tuple[Path, Path]:
    """Write ``<prefix>.onnx``, ``<prefix>.pt`` (TorchScript) and ``<prefix>.contract.json``; returns the
    two policy paths. env: the mjvec env (built with ``gym.make_vec``) the contract is generated
    from (None: see the module docstring). Raises ConfigError for a policy without a torch module
    or without any env to take the contract from."""
    if policy.actor is None:
        raise ConfigError(f"a {policy.kind} policy has no torch module to export; export the checkpoint it came from")
    contract = policy_contract(policy, env) if env is not None else contract_of(policy)
    if contract is None:
        raise ConfigError(
            f"a {policy.kind} policy that records no env id ({policy.metadata.get('source')!r}) needs env= to write "
            "its policy contract: export_policy(policy, prefix, env=gym.make_vec(env_id, num_envs=1, **its options)) "
            "(python -m mjvec eval --export takes --env-id)"
        )
    try:
        import onnx
    except ImportError as error:
        raise InstallError(f"ONNX export needs onnx and onnxscript ({error}); fix: {install_hint('export')}") from error
    prefix = Path(prefix)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    actor = policy.actor.eval().cpu()
    metadata = json.dumps(_metadata(policy.metadata, env), default=str)
    contract_json = contract_text(contract)
    dummy = torch.zeros(2, policy.obs_dim)
    onnx_path, ts_path = prefix.with_suffix(".onnx"), prefix.with_suffix(".pt")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        program = torch.onnx.export(actor, (dummy,), dynamo=True, opset_version=18, input_names=["obs"],
                                    output_names=["actions"], dynamic_shapes=({0: torch.export.Dim("batch")},),
                                    verbose=False)
        scripted = torch.jit.script(actor)
    model = program.model_proto
    for key, value in ((METADATA_KEY, metadata), (CONTRACT_KEY, contract_json)):
        entry = model.metadata_props.add()
        entry.key, entry.value = key, value
    onnx.save(model, str(onnx_path))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.jit.save(scripted, str(ts_path), _extra_files={METADATA_KEY: metadata, CONTRACT_KEY: contract_json})
    write_contract(contract, prefix.with_suffix(".contract.json"))
    return onnx_path, ts_path
