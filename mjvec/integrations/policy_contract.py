"""The policy contract: what a policy trained on an mjvec env needs to run anywhere else, as JSON,
generated from the env (never written by hand). docs/deploy.md documents every field; the JSON
Schema `SCHEMA_PATH` states the shape every contract has, whatever the task.

    env = gym.make_vec("CubeRotate-v0", num_envs=1)
    contract = env_contract(env)                     # the env's part
    contract = policy_contract(policy, env)          # + the policy's normalization and kind
    write_contract(contract, "out/policy.contract.json")

Sources: the env's Gymnasium spec (id and options: ``env.unwrapped.spec``, which ``gym.make_vec``
sets), the task's declarations (`MjVecEnv.deployment_spec`, `mjvec.envs.deployment`), the variant
of env 0 compiled alone through the task registry (joint and actuator order, compiled gains and
limits, the model hash: sha256 of its MJB bytes, `model_sha256`), the randomization wrappers'
`describe()` (noise, delays, perturbations) and, for a policy, its normalization statistics.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import importlib.metadata
import json
import math
import platform
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import mujoco
import numpy as np

import mjvec
from mjvec.envs.deployment import DeploymentSpec, ObsBlock, ObsSource, undeclared_spec
from mjvec.envs.registry import get_task
from mjvec.errors import ConfigError

__all__ = ["SCHEMA", "SCHEMA_PATH", "env_contract", "jsonable", "model_sha256", "policy_contract",
           "read_contract", "write_contract"]

SCHEMA = "mjvec.policy_contract/1"
SCHEMA_PATH = Path(__file__).with_name("policy_contract.schema.json")
# gym.make_vec's own arguments in a spec's kwargs: not task options.
_MAKE_VEC = ("num_envs", "vectorization_mode", "vector_kwargs", "wrappers")
# Shared options that choose where and how the task runs, not what it is (never compared).
RUNTIME_OPTIONS = ("backend", "num_threads", "device", "array_backend", "autoreset_mode", "render_mode",
                   "render_size", "env_id_offset", "record_episode_statistics", "task_namespace", "deterministic",
                   "nconmax", "njmax")
_JOINT_TYPES = {int(mujoco.mjtJoint.mjJNT_FREE): "free", int(mujoco.mjtJoint.mjJNT_BALL): "ball",
                int(mujoco.mjtJoint.mjJNT_SLIDE): "slide", int(mujoco.mjtJoint.mjJNT_HINGE): "hinge"}


def jsonable(value: Any) -> Any:
    """`value` as JSON data: dataclasses as dicts of their fields, tuples and arrays as lists, enums
    by value, non-finite floats as strings ("inf", "-inf", "nan"), anything else as its repr."""
    if value is None or isinstance(value, (bool, str, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, (np.floating, np.integer, np.bool_)):
        return jsonable(value.item())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return jsonable(value.value)
    if isinstance(value, Mapping):
        return {("null" if k is None else str(k)): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [jsonable(v) for v in (value.tolist() if isinstance(value, np.ndarray) else value)]
    return repr(value)


def model_sha256(model: mujoco.MjModel) -> str:
    """sha256 of the model's MJB bytes (`mujoco.mj_saveModel`): equal for the same compile of the
    same model by the same MuJoCo build (a user's model is checked against a contract with it)."""
    buffer = np.zeros(mujoco.mj_sizeModel(model), np.uint8)
    mujoco.mj_saveModel(model, None, buffer)
    return hashlib.sha256(buffer.tobytes()).hexdigest()


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def _task_of(env: Any) -> tuple[Any, Any, Any]:
    """(the unwrapped env, its registered task, its parsed options), from ``env.unwrapped.spec``."""
    base = env.unwrapped
    spec = getattr(base, "spec", None)
    if not hasattr(base, "deployment_spec") or spec is None:
        raise ConfigError(
            f"a policy contract is generated from an mjvec env built with gym.make_vec (its id and options come "
            f"from env.unwrapped.spec); got a {type(base).__name__} with spec {spec!r}: build it with "
            "gym.make_vec(env_id, num_envs=..., **options)"
        )
    task = get_task(spec.id)
    kwargs = {k: v for k, v in spec.kwargs.items() if k not in _MAKE_VEC}
    return base, task, task.parse_options(kwargs)


def _wrappers(env: Any) -> list[Any]:
    """The vector wrappers around the env, innermost first (the order their transforms apply)."""
    chain = []
    while isinstance(env, gym.vector.VectorWrapper):
        chain.append(env)
        env = env.env
    return chain[::-1]


def _effects(env: Any) -> list[dict[str, Any]]:
    out = []
    for wrapper in _wrappers(env):
        describe = getattr(wrapper, "describe", None)
        effect = describe() if callable(describe) else None
        entry = {"wrapper": type(wrapper).__name__}
        if effect is None:
            entry.update(kind="undescribed", applies_to="unknown", parameters={})
        else:
            entry.update(kind=effect.kind, applies_to=effect.applies_to, parameters=jsonable(effect.parameters))
        out.append(entry)
    return out


def _actuator(model: mujoco.MjModel, i: int) -> dict[str, Any]:
    gain, bias = model.actuator_gainprm[i], model.actuator_biasprm[i]
    position = (model.actuator_biastype[i] == mujoco.mjtBias.mjBIAS_AFFINE and bias[0] == 0.0
                and bias[1] == -gain[0])
    joint = None
    if model.actuator_trntype[i] == mujoco.mjtTrn.mjTRN_JOINT:
        joint = model.joint(int(model.actuator_trnid[i, 0])).name
    return {
        "name": model.actuator(i).name, "joint": joint, "kp": float(gain[0]) if position else None,
        "kd": float(-bias[2]) if position else None, "gear": float(model.actuator_gear[i, 0]),
        "gainprm": gain[:3].tolist(), "biasprm": bias[:3].tolist(),
        "ctrlrange": model.actuator_ctrlrange[i].tolist() if model.actuator_ctrllimited[i] else None,
        "forcerange": model.actuator_forcerange[i].tolist() if model.actuator_forcelimited[i] else None,
    }


def _model_section(model: mujoco.MjModel, variant: int, num_variants: int) -> dict[str, Any]:
    joints = [{"name": model.joint(j).name, "type": _JOINT_TYPES[int(model.jnt_type[j])],
               "qposadr": int(model.jnt_qposadr[j]), "dofadr": int(model.jnt_dofadr[j]),
               "range": model.jnt_range[j].tolist() if model.jnt_limited[j] else None} for j in range(model.njnt)]
    return {"sha256": model_sha256(model), "variant": variant, "num_variants": num_variants,
            "compiled": "the variant compiled alone (task registry: make_variant(variant).compile())",
            "nq": int(model.nq), "nv": int(model.nv), "nu": int(model.nu), "nbody": int(model.nbody),
            "joints": joints, "actuators": [_actuator(model, i) for i in range(model.nu)]}


def _source(source: ObsSource) -> dict[str, Any]:
    out = {"kind": source.kind, "elements": list(source.elements), "field": source.field,
           "index": None if source.index is None else list(source.index), "command": source.command,
           "params": jsonable(source.params), "minus": None if source.minus is None else _source(source.minus)}
    return out


def _block(block: ObsBlock, key: str | None, start: int, effects: Sequence[dict[str, Any]]) -> dict[str, Any]:
    noise = [e for e in effects if (e["kind"] == "obs_noise" and e["applies_to"] == block.name
                                    and e["parameters"].get("key") in (None, key))
             or (e["kind"] in ("scale_noise", "pose_latency") and e["applies_to"] in block.perceives)]
    delay = [e for e in effects if e["kind"] == "obs_delay"
             or (e["kind"] == "pose_latency" and e["applies_to"] in block.perceives)]
    return {"name": block.name, "key": key, "start": start, "size": block.size, "source": _source(block.source),
            "frame": block.frame, "units": block.units, "scale": block.scale,
            "clip": None if block.clip is None else list(block.clip), "normalize": block.normalize,
            "quat_order": block.quat_order, "canonical": block.canonical, "perceives": list(block.perceives),
            "history": block.history, "description": block.description,
            "noise": noise, "delay": delay, "normalization": None}


def _policy_keys(base: Any, obs_keys: Sequence[str] | None) -> list[str | None]:
    """The observation keys the policy reads: a Box env's None, else `obs_keys` or "policy"."""
    space = base.single_observation_space
    if not isinstance(space, gym.spaces.Dict):
        return [None]
    keys = list(obs_keys) if obs_keys else ["policy"]
    missing = [k for k in keys if k not in space.spaces]
    if missing:
        raise ConfigError(f"the policy reads observation keys {keys}; the env's observation has {sorted(space.spaces)}")
    return keys


def _observation(base: Any, spec: DeploymentSpec, keys: list[str | None], effects: list[dict]) -> dict[str, Any]:
    fallback = undeclared_spec(base).observation
    blocks, start = [], 0
    for key in keys:
        for block in spec.observation.get(key) or fallback[key]:
            blocks.append(_block(block, key, start, effects))
            start += block.size
    return {"keys": None if keys == [None] else keys, "size": start, "dtype": spec.obs_dtype,
            "clip": None if spec.obs_clip is None else [-spec.obs_clip, spec.obs_clip], "blocks": blocks,
            "perception": [e for e in effects if e["kind"] in ("obs_noise", "obs_delay", "pose_latency",
                                                               "scale_noise")],
            "normalization": None, "after_step": list(spec.after_step)}


def _action(base: Any, spec: DeploymentSpec, effects: list[dict], model: dict[str, Any]) -> dict[str, Any]:
    """The action section; each dimension with its actuator's compiled gains and limits (`gains`)."""
    space = base.single_action_space
    actuators = {a["name"]: a for a in model["actuators"]}
    keys = ("kp", "kd", "gear", "ctrlrange", "forcerange")
    dims = [{"index": i, **jsonable(d), "gains": {k: actuators[d.actuator][k] for k in keys}
             if d.actuator in actuators else None} for i, d in enumerate(spec.action)]
    delay = [e for e in effects if e["kind"] == "action_delay"]
    return {"size": int(space.shape[0]), "dtype": str(space.dtype), "low": jsonable(np.asarray(space.low, np.float64)),
            "high": jsonable(np.asarray(space.high, np.float64)), "initial_targets": spec.initial_targets,
            "delay": delay[0] if delay else None, "dims": dims}


def env_contract(env: Any, obs_keys: Sequence[str] | None = None) -> dict[str, Any]:
    """The contract of `env` (an mjvec env built with ``gym.make_vec``, wrappers included) for a
    policy reading observation keys `obs_keys` (None: a Box env's observation, or the "policy" key
    of a Dict one). Raises ConfigError for an env that was not built with gym.make_vec."""
    base, task, opts = _task_of(env)
    spec = base.deployment_spec()
    num_variants, make_variant = task.checked_variants(opts)
    variant = int(np.asarray(base.backend.variant_of_env)[0])
    model = make_variant(variant).compile()
    effects = _effects(env)
    section = _model_section(model, variant, num_variants)
    values = opts.effective_values()
    options = {k: jsonable(v) for k, v in values.items() if k not in RUNTIME_OPTIONS}
    runtime = {k: jsonable(v) for k, v in values.items() if k in RUNTIME_OPTIONS}
    preset = opts.randomization if isinstance(opts.randomization, str) or opts.randomization is None else "terms"
    return {
        "schema": SCHEMA,
        "task": {"env_id": task.env_id, "version": base.spec.version, "env_class":
                 f"{type(base).__module__}:{type(base).__qualname__}", "declared": spec.declared},
        "versions": {"mjvec": mjvec.__version__, "mujoco": mujoco.__version__, "mujoco_warp": _version("mujoco-warp"),
                     "gymnasium": gym.__version__, "numpy": np.__version__, "python": platform.python_version()},
        "options": options,
        "timing": {"control_dt": float(base.control_dt), "physics_dt": float(model.opt.timestep),
                   "substeps": int(base.frame_skip),
                   "integrator": mujoco.mjtIntegrator(model.opt.integrator).name.removeprefix("mjINT_").lower()},
        "observation": _observation(base, spec, _policy_keys(base, obs_keys), effects),
        "commands": [jsonable(c) for c in spec.commands],
        "perceived": [jsonable(p) for p in spec.perceived],
        "action": _action(base, spec, effects, section),
        "model": section,
        "randomization": {"preset": preset, "wrappers": effects},
        "runtime": runtime,
        "policy": None,
    }


def _normalization(actor: Any) -> dict[str, Any] | None:
    """(mean, denominator, clip, formula) of the normalizer inside a torch actor, or None."""
    from mjvec.integrations.actors import Normalizer  # torch: only where a torch actor exists

    norm = getattr(actor, "normalizer", None)
    if isinstance(norm, Normalizer):
        mean, var = norm.mean.double().numpy(), norm.var.double().numpy()
        return {"formula": "clip((x - mean) / sqrt(var + eps), -clip, clip)", "eps": norm.eps, "clip": norm.clip,
                "mean": mean, "denominator": np.sqrt(var + norm.eps)}
    inner = getattr(getattr(actor, "body", None), "obs_normalizer", None)  # rsl_rl's as_jit() copy
    if inner is not None and hasattr(inner, "std"):  # an EmpiricalNormalization (not an Identity)
        mean, std = inner.mean.double().reshape(-1).numpy(), inner.std.double().reshape(-1).numpy()
        return {"formula": "(x - mean) / (std + eps)", "eps": float(inner.eps), "clip": None, "mean": mean,
                "denominator": std + float(inner.eps)}
    return None


def policy_contract(policy: Any, env: Any) -> dict[str, Any]:
    """`env_contract(env)` for `policy` (an `mjvec.integrations.policies.Policy`) with its normalization
    statistics per block (applied inside the exported network: feed it the raw observation) and its kind."""
    contract = env_contract(env, policy.obs_keys)
    norm = _normalization(policy.actor) if policy.actor is not None else None
    if norm is None and policy.contract is not None:  # an exported file: its contract has them
        contract["observation"]["normalization"] = policy.contract["observation"]["normalization"]
        for mine, theirs in zip(contract["observation"]["blocks"], policy.contract["observation"]["blocks"],
                                strict=False):
            mine["normalization"] = theirs.get("normalization")
    elif norm is not None:
        mean, denominator = norm.pop("mean"), norm.pop("denominator")
        contract["observation"]["normalization"] = {"inside_policy": True, **norm}
        for block in contract["observation"]["blocks"]:
            rows = slice(block["start"], block["start"] + block["size"])
            block["normalization"] = {"mean": jsonable(mean[rows]), "denominator": jsonable(denominator[rows])}
    contract["policy"] = {"kind": policy.metadata.get("kind", policy.kind), "source": policy.metadata.get("source"),
                          "obs_keys": None if policy.obs_keys is None else list(policy.obs_keys),
                          "obs_dim": policy.obs_dim, "action_dim": policy.action_dim}
    return contract


def contract_text(contract: Mapping[str, Any], indent: str = "") -> str:
    """The contract as the JSON text written to files: keys in contract order, one key per line,
    lists of numbers and strings on one line."""
    if isinstance(contract, Mapping) and contract:
        inner = indent + " "
        items = [f"{inner}{json.dumps(k)}: {contract_text(v, inner)}" for k, v in contract.items()]
        return "{\n" + ",\n".join(items) + "\n" + indent + "}"
    if isinstance(contract, list) and any(isinstance(v, (Mapping, list)) for v in contract):
        inner = indent + " "
        return "[\n" + ",\n".join(inner + contract_text(v, inner) for v in contract) + "\n" + indent + "]"
    return json.dumps(contract, allow_nan=False)


def write_contract(contract: Mapping[str, Any], path: str | Path) -> Path:
    """Write `contract` to `path` (JSON); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(contract_text(contract) + "\n")
    return path


def read_contract(path: str | Path) -> dict[str, Any]:
    """The contract in `path`; ConfigError for a file that is not one."""
    path = Path(path)
    try:
        contract = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise ConfigError(f"{str(path)!r} is not a readable policy contract ({error})") from error
    if not isinstance(contract, dict) or contract.get("schema") != SCHEMA:
        found = contract.get("schema") if isinstance(contract, dict) else type(contract).__name__
        raise ConfigError(f"{str(path)!r} is not a policy contract of schema {SCHEMA!r} (found {found!r})")
    return contract
