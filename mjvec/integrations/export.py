"""Export a trained policy (`mjvec.integrations.policies.Policy`: actor + observation normalization)
to ONNX and TorchScript, each file carrying its metadata (observation keys and size, action size,
the source kind, the env id and options), so `load_policy` and ``python -m mjvec eval`` run it.

    policy = load_policy("out/ppo/checkpoint.pt")
    onnx_path, ts_path = export_policy(policy, "out/ppo/policy")   # policy.onnx, policy.pt

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

import torch

from mjvec.errors import ConfigError, InstallError, install_hint
from mjvec.integrations.policies import METADATA_KEY, Policy

__all__ = ["export_policy"]


def export_policy(policy: Policy, prefix: str | Path) -> tuple[Path, Path]:
    """Write ``<prefix>.onnx`` and ``<prefix>.pt`` (TorchScript); returns their paths."""
    if policy.actor is None:
        raise ConfigError(f"a {policy.kind} policy has no torch module to export; export the checkpoint it came from")
    try:
        import onnx
    except ImportError as error:
        raise InstallError(f"ONNX export needs onnx and onnxscript ({error}); fix: {install_hint('export')}") from error
    prefix = Path(prefix)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    actor = policy.actor.eval().cpu()
    metadata = json.dumps(policy.metadata, default=str)
    dummy = torch.zeros(2, policy.obs_dim)
    onnx_path, ts_path = prefix.with_suffix(".onnx"), prefix.with_suffix(".pt")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        program = torch.onnx.export(actor, (dummy,), dynamo=True, opset_version=18, input_names=["obs"],
                                    output_names=["actions"], dynamic_shapes=({0: torch.export.Dim("batch")},),
                                    verbose=False)
        scripted = torch.jit.script(actor)
    model = program.model_proto
    entry = model.metadata_props.add()
    entry.key, entry.value = METADATA_KEY, metadata
    onnx.save(model, str(onnx_path))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.jit.save(scripted, str(ts_path), _extra_files={METADATA_KEY: metadata})
    return onnx_path, ts_path
