"""Comparing policy contracts (`mjvec.integrations.policy_contract`): every difference between two
contracts (`diff_contracts`), and the check `load_policy(..., env=)` and ``python -m mjvec eval``
run before a policy meets an env (`check_policy_env`).

What a mismatch is: a difference in the part of the contract that decides what the policy is fed
and what its outputs do (`interface`): the env id, the timing, the observation's size, dtype,
clip and blocks (name, size, start, source, frame, units, scale, clip, normalization, quaternion
order and sign, history), the commands, the action's size, bounds and every dimension's semantics,
and the model's joint order (names, types, ranges) and actuator order (names, joints). Versions,
runtime options (backend, threads, device, ...), randomization, the model hash, the compiled gains
and limits and the normalization statistics are recorded but never refused: a policy evaluated on another backend,
without its training noise, or on another tool is a legitimate use.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mjvec.errors import ConfigError

__all__ = ["ContractMismatchError", "ContractWarning", "Difference", "check_policy_env", "diff_contracts",
           "interface", "validate_contract"]

log = logging.getLogger(__name__)

_BLOCK_KEYS = ("name", "size", "start", "source", "frame", "units", "scale", "clip", "normalize", "quat_order",
               "canonical", "history")
_ACTION_KEYS = ("size", "low", "high", "initial_targets", "dims")


class ContractMismatchError(ConfigError):
    """A policy's contract and an env's differ in what the policy is fed or what its actions do."""


class ContractWarning(UserWarning):
    """A policy carries no contract (exported before contracts existed, or an SB3 zip): unchecked."""


@dataclass(frozen=True)
class Difference:
    """One difference: where (a dotted path, list items as ``[i:name]``) and the two values."""

    path: str
    first: Any
    second: Any

    def describe(self, names: tuple[str, str] = ("policy", "env")) -> str:
        return f"{self.path}: {names[0]} {_short(self.first)}, {names[1]} {_short(self.second)}"


def _short(value: Any, limit: int = 72) -> str:
    text = "absent" if value is _ABSENT else repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


class _Absent:
    def __repr__(self) -> str:
        return "absent"


_ABSENT = _Absent()


def _label(item: Any) -> str:
    if isinstance(item, Mapping):
        for key in ("name", "actuator"):
            if isinstance(item.get(key), str):
                return f":{item[key]}"
    return ""


def _diff(a: Any, b: Any, path: str, out: list[Difference]) -> None:
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        for key in list(a) + [k for k in b if k not in a]:
            _diff(a.get(key, _ABSENT), b.get(key, _ABSENT), f"{path}.{key}" if path else str(key), out)
    elif isinstance(a, list) and isinstance(b, list):
        for i in range(max(len(a), len(b))):
            x, y = (a[i] if i < len(a) else _ABSENT), (b[i] if i < len(b) else _ABSENT)
            _diff(x, y, f"{path}[{i}{_label(x if x is not _ABSENT else y)}]", out)
    elif type(a) is not type(b) or a != b:
        if not (isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool)
                and not isinstance(b, bool) and a == b):
            out.append(Difference(path, a, b))


def diff_contracts(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Difference]:
    """Every difference between contracts `a` and `b`, in contract order (leaf paths)."""
    out: list[Difference] = []
    _diff(a, b, "", out)
    return out


def interface(contract: Mapping[str, Any]) -> dict[str, Any]:
    """The part of a contract a mismatch is about (see the module docstring), in the order checked."""
    obs, action, model = contract["observation"], contract["action"], contract["model"]
    return {
        "task": {"env_id": contract["task"]["env_id"]},
        "timing": contract["timing"],
        "observation": {"size": obs["size"], "dtype": obs["dtype"], "clip": obs["clip"],
                        "after_step": obs["after_step"],
                        "blocks": [{k: b[k] for k in _BLOCK_KEYS} for b in obs["blocks"]]},
        "commands": [{k: c[k] for k in ("name", "size", "units", "frame")} for c in contract["commands"]],
        "action": {**{k: action[k] for k in _ACTION_KEYS if k != "dims"},
                   "dims": [{k: v for k, v in d.items() if k != "gains"} for d in action["dims"]]},
        "model": {"joints": [{k: j[k] for k in ("name", "type", "range")} for j in model["joints"]],
                  "actuators": [{k: a[k] for k in ("name", "joint")} for a in model["actuators"]]},
    }


def contract_of(policy: Any) -> dict[str, Any] | None:
    """`policy`'s contract: its own (``policy.contract``), else, for a training checkpoint that records
    the env it was trained on (ppo, rsl_rl: ``metadata["env_id"]`` and ``"env_options"``), that env's
    contract with the policy's normalization, built now with one env and kept on the policy; else
    None (an SB3 zip; a file exported before contracts existed, whose recorded env is not trusted
    to be what today's code builds)."""
    if policy.contract is None and policy.kind in ("ppo", "rsl_rl") and policy.metadata.get("env_id"):
        import gymnasium as gym

        from mjvec.integrations.policy_contract import policy_contract

        env = gym.make_vec(policy.metadata["env_id"], num_envs=1, **policy.metadata.get("env_options", {}))
        try:
            policy.contract = policy_contract(policy, env)
        finally:
            env.close()
        policy.metadata["contract_from"] = "the env the checkpoint records, built at load time"
    return policy.contract



def check_policy_env(policy: Any, env: Any, *, allow_mismatch: bool = False) -> list[Difference]:
    """Compare `policy`'s contract (`contract_of`) with `env`'s for it.

    Returns the interface differences (empty when they match). Raises `ContractMismatchError`,
    one line naming the first difference (and the options that differ), unless `allow_mismatch`
    (then it logs that line at WARNING and returns). A policy without a contract warns
    (`ContractWarning`) and is not checked (returns []).
    """
    from mjvec.integrations.policy_contract import env_contract

    theirs = contract_of(policy)
    if theirs is None:
        warnings.warn(ContractWarning(
            f"the {policy.kind} policy {policy.metadata.get('source')!r} carries no policy contract (exported before "
            "contracts existed, or a file that records no env): its observation and action layout are not checked "
            "against the env; export it with mjvec.integrations.export_policy(policy, prefix, env=env) to get one"
        ), stacklevel=2)
        return []
    mine = env_contract(env, policy.obs_keys)
    differences = diff_contracts(interface(theirs), interface(mine))
    if not differences:
        return []
    same_task = theirs["task"]["env_id"] == mine["task"]["env_id"]
    options = [d.describe() for d in diff_contracts(theirs["options"], mine["options"])] if same_task else []
    line = (f"the policy's contract does not match the env's ({len(differences)} difference"
            f"{'s' if len(differences) > 1 else ''}); first: {differences[0].describe()}"
            + (f"; options that differ: {'; '.join(options[:4])}" if options else "")
            + "; build the env with the options the policy was trained with, or pass allow_mismatch=True "
            "(python -m mjvec eval --allow-mismatch) to run it anyway")
    if not allow_mismatch:
        raise ContractMismatchError(line)
    log.warning("%s (allowed)", line)
    return differences


def validate_contract(contract: Mapping[str, Any]) -> None:
    """Validate `contract` against the JSON Schema (needs the ``jsonschema`` package, in the dev
    extra); raises ConfigError naming the first violation and where it is."""
    import json

    try:
        import jsonschema
    except ImportError as error:
        raise ConfigError(f"validating a contract needs jsonschema ({error}); pip install jsonschema") from error
    from mjvec.integrations.policy_contract import SCHEMA_PATH

    schema = json.loads(SCHEMA_PATH.read_text())
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(contract), key=lambda e: list(e.path))
    if errors:
        where = "/".join(str(p) for p in errors[0].absolute_path) or "(top level)"
        raise ConfigError(f"the contract violates {SCHEMA_PATH.name} at {where}: {errors[0].message} "
                          f"({len(errors)} violation{'s' if len(errors) > 1 else ''})")
