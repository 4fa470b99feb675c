"""Trained policies as one callable: `load_policy(path)` -> `Policy` (actor + its observation
normalization, deterministic, the action the env executes).

Sources (``kind="auto"`` tells them apart by content, not by name):

- ``"ppo"``: examples/ppo.py's ``checkpoint.pt`` (``{"agent": state dict, "args": ...}``): the
  actor is ``clamp(actor_mean(normalize(obs)))`` with its ``RunningMeanStd`` (``(x - mean) /
  sqrt(var + 1e-8)``, clipped to +-5) when ``norm_obs``; it reads ``obs["policy"]`` when trained
  ``--asymmetric``.
- ``"sb3"``: a Stable-Baselines3 PPO/A2C ``.zip`` (``MlpPolicy``, Box observations), with the
  ``VecNormalize`` statistics beside it (``vecnormalize.pkl`` or CheckpointCallback's
  ``<prefix>_vecnormalize_<n>_steps.pkl``) when present: ``clamp(action_net(policy_net(
  normalize(obs))))``, what ``model.predict(..., deterministic=True)`` returns. The zip and the
  pickle are pickles: loading them runs code from the files; load only files you trust.
- ``"rsl_rl"``: an rsl_rl ``model_<it>.pt`` with ``params/agent.json`` beside it (written by
  examples/train_rsl_rl.py: the train config, observation group sizes and the env's options); the
  actor is rsl_rl's own ``MLPModel.as_jit()`` (normalizer, MLP, deterministic output), clamped.
- ``"onnx"`` / ``"torchscript"``: files written by `mjvec.integrations.export.export_policy`,
  which carry their metadata (observation keys and sizes, action bounds, the env id and options)
  and their policy contract (`mjvec.integrations.policy_contract`).

Contracts (``policy.contract``): an exported file's own; else ``<file stem>.contract.json`` or
``contract.json`` beside the file; else, for a training checkpoint that records its env id and
options (ppo, rsl_rl), the contract of that env built now (`contract_check.contract_of`); else none (an SB3 zip,
a file exported before contracts existed: it loads with a `ContractWarning`).
``load_policy(path, env=env)`` compares the policy's contract with `env`'s and refuses a mismatch
(`mjvec.integrations.contract_check`).

A `Policy` takes the env's observation (a numpy or torch (N, D) array, or a dict of them) and
returns (N, A) float32 numpy actions clipped to the action space's bounds (the env clips them
too). ``policy.actor`` is the torch module (None for ONNX), input (N, obs_dim) float32.
"""

from __future__ import annotations

import copy
import json
import pickle
import warnings
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from mjvec.envs.arrays import to_numpy
from mjvec.errors import ConfigError, InstallError, allowed, install_hint
from mjvec.integrations.actors import Actor, Normalizer

__all__ = ["KINDS", "Actor", "Policy", "find_vecnormalize", "load_policy"]

KINDS = ("auto", "ppo", "sb3", "rsl_rl", "onnx", "torchscript")
METADATA_KEY = "mjvec.json"  # ONNX metadata_props key and TorchScript extra file name
CONTRACT_KEY = "mjvec.contract.json"  # the same, for the policy contract


@dataclass
class Policy:
    """A deterministic policy (see the module docstring). ``metadata``: what exports carry;
    ``contract``: its policy contract (None: none found, see `contract_check.contract_of`)."""

    kind: str
    obs_keys: tuple[str, ...] | None
    obs_dim: int
    action_dim: int
    run: Callable[[np.ndarray], np.ndarray]
    actor: nn.Module | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    contract: dict[str, Any] | None = None

    def flatten(self, obs: Any) -> np.ndarray:
        """(N, obs_dim) float32: the observation, or its `obs_keys` entries concatenated. A Box
        observation stands for the single key "policy" (SimToolReal-v0's policy obs is the same
        in both obs modes)."""
        if isinstance(obs, Mapping):
            keys = self.obs_keys or ("policy",)
            missing = [k for k in keys if k not in obs]
            if missing:
                raise ConfigError(f"the policy reads observation keys {list(keys)}; the env's has {sorted(obs)}")
            flat = np.concatenate([np.asarray(to_numpy(obs[k]), np.float32) for k in keys], axis=-1)
        elif self.obs_keys in (None, ("policy",)):
            flat = np.asarray(to_numpy(obs), np.float32)
        else:
            raise ConfigError(f"the policy reads observation keys {list(self.obs_keys)}; the env's observation is a "
                              "Box: build the env with the obs_mode it was trained with (e.g. obs_mode='asymmetric')")
        if flat.ndim != 2 or flat.shape[1] != self.obs_dim:
            raise ConfigError(
                f"the policy expects {self.obs_dim}-D observations, got shape {flat.shape}; build the env with the "
                f"options it was trained with (the policy's env: {self.metadata.get('env_id')!r}, options "
                f"{self.metadata.get('env_options', {})})"
            )
        return flat

    def __call__(self, obs: Any) -> np.ndarray:
        return self.run(self.flatten(obs))


def _torch_policy(kind: str, actor: nn.Module, obs_keys: tuple[str, ...] | None, obs_dim: int, action_dim: int,
                  metadata: dict[str, Any]) -> Policy:
    actor = actor.eval()

    def run(obs: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return actor(torch.from_numpy(obs)).numpy()

    meta = {"kind": kind, "obs_keys": None if obs_keys is None else list(obs_keys), "obs_dim": obs_dim,
            "action_dim": action_dim, **metadata}
    return Policy(kind, obs_keys, obs_dim, action_dim, run, actor, meta)


def detect_kind(path: Path) -> str:
    """What `path` holds (see the module docstring), from its content."""
    if path.suffix == ".onnx":
        return "onnx"
    if zipfile.is_zipfile(path):
        names = zipfile.ZipFile(path).namelist()
        if "policy.pth" in names and "data" in names:
            return "sb3"
        if any("/code/" in n for n in names) and any(n.endswith("constants.pkl") for n in names):
            return "torchscript"
        state = torch.load(path, map_location="cpu", weights_only=True)
        if isinstance(state, dict) and {"agent", "args"} <= set(state):
            return "ppo"
        if isinstance(state, dict) and "actor_state_dict" in state:
            return "rsl_rl"
    raise ConfigError(
        f"{str(path)!r} is none of the policy files mjvec loads ({allowed(KINDS[1:])}): examples/ppo.py's "
        "checkpoint.pt, an SB3 .zip, an rsl_rl model_<it>.pt, or an exported .onnx / TorchScript .pt"
    )


def load_policy(path: str | Path, kind: str = "auto", *, env: Any = None, allow_mismatch: bool = False) -> Policy:
    """The policy in `path` (see the module docstring); ConfigError for a missing or foreign file.

    env: an mjvec env (built with ``gym.make_vec``) to check the policy against: its contract and
    the env's must match (`mjvec.integrations.contract_check.check_policy_env`: a mismatch raises
    `ContractMismatchError` naming the first difference, unless `allow_mismatch`; a policy without
    a contract loads with a `ContractWarning`).
    """
    path = Path(path)
    if kind not in KINDS:
        raise ConfigError(f"kind={kind!r} is not supported; allowed values are {allowed(KINDS)}")
    if not path.is_file():
        raise ConfigError(f"policy file {str(path)!r} does not exist")
    kind = detect_kind(path) if kind == "auto" else kind
    loaders = {"ppo": _load_ppo, "sb3": _load_sb3, "rsl_rl": _load_rsl_rl, "onnx": _load_onnx,
               "torchscript": _load_torchscript}
    policy = loaders[kind](path)
    if policy.contract is None:
        beside = next((p for p in (path.with_suffix(".contract.json"), path.parent / "contract.json") if p.is_file()),
                      None)
        if beside is not None:
            from mjvec.integrations.policy_contract import read_contract

            policy.contract = read_contract(beside)
            policy.metadata["contract_from"] = str(beside)
    if env is not None:
        from mjvec.integrations.contract_check import check_policy_env

        check_policy_env(policy, env, allow_mismatch=allow_mismatch)
    return policy


# ---- examples/ppo.py ----------------------------------------------------------------------------
def ppo_actor(state: Mapping[str, torch.Tensor], norm_obs: bool) -> Actor:
    """examples/ppo.py's deterministic actor from its Agent's state dict (Linear layers with ELU between)."""
    layers = sorted({int(k.split(".")[1]) for k in state if k.startswith("actor_mean.")})
    modules: list[nn.Module] = []
    for n, index in enumerate(layers):
        weight = state[f"actor_mean.{index}.weight"]
        linear = nn.Linear(weight.shape[1], weight.shape[0])
        linear.load_state_dict({"weight": weight, "bias": state[f"actor_mean.{index}.bias"]})
        modules += [linear] + ([nn.ELU()] if n < len(layers) - 1 else [])
    dim = state["policy_norm.mean"].numel()
    normalizer: nn.Module = (Normalizer(state["policy_norm.mean"], state["policy_norm.var"], 1e-8, 5.0)
                             if norm_obs else nn.Identity())
    action_dim = state["actor_logstd"].numel()
    actor = Actor(normalizer, nn.Sequential(*modules), -np.ones(action_dim), np.ones(action_dim))
    if modules[0].in_features != dim:
        raise ConfigError(f"ppo checkpoint: the actor takes {modules[0].in_features} inputs, its normalizer {dim}")
    return actor


def _load_ppo(path: Path) -> Policy:
    state = torch.load(path, map_location="cpu", weights_only=True)
    args, weights = state["args"], state["agent"]
    actor = ppo_actor(weights, bool(args.get("norm_obs", True)))
    options = {k: args[k] for k in ("num_tools", "max_episode_steps") if args.get(k) is not None}
    if "randomization" in args:  # ppo.py's --randomization: "paper" (the task's preset) or "none"
        options["randomization"] = None if args["randomization"] == "none" else args["randomization"]
    meta = {"env_id": args.get("env_id"), "env_options": options, "source": str(path)}
    obs_keys = ("policy",) if args.get("asymmetric") else None
    return _torch_policy("ppo", actor, obs_keys, weights["policy_norm.mean"].numel(),
                         weights["actor_logstd"].numel(), meta)


# ---- Stable-Baselines3 --------------------------------------------------------------------------
def find_vecnormalize(checkpoint: Path) -> Path | None:
    """vecnormalize.pkl beside a final model, or CheckpointCallback's matching <prefix>_vecnormalize_<n>_steps.pkl."""
    stem = checkpoint.stem
    candidates = [checkpoint.parent / "vecnormalize.pkl"]
    if stem.endswith("_steps"):
        prefix, _, rest = stem.rpartition("_")[0].rpartition("_")
        candidates.insert(0, checkpoint.parent / f"{prefix}_vecnormalize_{rest}_steps.pkl")
    return next((c for c in candidates if c.is_file()), None)


def sb3_actor(model: Any, normalize: Any | None) -> Actor:
    """The deterministic actor of an SB3 on-policy model (MlpPolicy on a Box observation), with the
    VecNormalize statistics `normalize` (None: none)."""
    import gymnasium as gym

    space, policy = model.observation_space, model.policy
    if not isinstance(space, gym.spaces.Box) or len(space.shape) != 1:
        raise ConfigError(f"SB3 policies with a flat Box observation are supported, got {space}")
    if not hasattr(policy, "mlp_extractor") or not hasattr(policy, "action_net"):
        raise ConfigError(f"SB3 policy {type(policy).__name__} is not an actor-critic MlpPolicy (PPO, A2C)")
    body = nn.Sequential(copy.deepcopy(policy.mlp_extractor.policy_net), copy.deepcopy(policy.action_net)).cpu()
    normalizer: nn.Module = nn.Identity()
    if normalize is not None and normalize.norm_obs:
        rms = normalize.obs_rms
        normalizer = Normalizer(torch.as_tensor(rms.mean), torch.as_tensor(rms.var), normalize.epsilon,
                                normalize.clip_obs)
    low, high = model.action_space.low, model.action_space.high
    return Actor(normalizer, body, low, high)


def _load_sb3(path: Path) -> Policy:
    try:
        from stable_baselines3 import A2C, PPO
    except ImportError as error:
        raise InstallError(
            f"loading an SB3 checkpoint needs stable-baselines3 ({error}); fix: {install_hint('train')}") from error
    try:
        model = PPO.load(path, device="cpu")
    except Exception:  # an A2C zip lacks PPO's parameters; a foreign file fails inside SB3 with any type
        try:
            model = A2C.load(path, device="cpu")
        except Exception as error:
            raise ConfigError(f"{str(path)!r} is not a loadable SB3 PPO or A2C checkpoint ({type(error).__name__}: "
                              f"{error})") from error
    stats = find_vecnormalize(path)
    normalize = None
    if stats is not None:
        with stats.open("rb") as f:  # VecNormalize.save pickles itself without its env
            normalize = pickle.load(f)
    actor = sb3_actor(model, normalize)
    meta = {"env_id": None, "env_options": {}, "source": str(path), "vecnormalize": stats and str(stats)}
    return _torch_policy("sb3", actor, None, int(model.observation_space.shape[0]),
                         int(model.action_space.shape[0]), meta)


# ---- rsl_rl ---------------------------------------------------------------------------------------
def rsl_rl_actor(actor_model: nn.Module, low: np.ndarray, high: np.ndarray) -> Actor:
    """rsl_rl's exportable copy of an actor ``MLPModel`` (``as_jit()``: normalizer, MLP, deterministic
    output), clamped to the action bounds."""
    jit = actor_model.as_jit()
    return Actor(nn.Identity(), jit, low, high)


def _load_rsl_rl(path: Path) -> Policy:
    params = path.parent / "params" / "agent.json"
    if not params.is_file():
        raise ConfigError(
            f"rsl_rl checkpoint {str(path)!r}: its network is described by {str(params)!r}, which is missing; "
            "examples/train_rsl_rl.py writes it into the run's log dir"
        )
    from rsl_rl.utils import resolve_class
    from tensordict import TensorDict

    info = json.loads(params.read_text())
    cfg, dims = info["train_cfg"], info["obs_dims"]
    groups = info["train_cfg"]["obs_groups"]
    obs = TensorDict({k: torch.zeros(1, d) for k, d in dims.items()}, batch_size=[1])
    actor_class, actor_cfg = resolve_class(cfg["actor"])
    model = actor_class(obs, groups, "actor", info["num_actions"], **actor_cfg)
    model.load_state_dict(torch.load(path, map_location="cpu", weights_only=True)["actor_state_dict"])
    actor = rsl_rl_actor(model, np.asarray(info["action_low"]), np.asarray(info["action_high"]))
    keys = tuple(groups["actor"])
    meta = {"env_id": info.get("env_id"), "env_options": info.get("env_options", {}), "source": str(path)}
    return _torch_policy("rsl_rl", actor, keys, sum(dims[k] for k in keys), info["num_actions"], meta)


# ---- exported files -------------------------------------------------------------------------------
def _from_metadata(kind: str, meta: dict[str, Any], run: Callable, actor: nn.Module | None,
                   contract: str | None) -> Policy:
    keys = None if meta.get("obs_keys") is None else tuple(meta["obs_keys"])
    policy = Policy(kind, keys, int(meta["obs_dim"]), int(meta["action_dim"]), run, actor, meta)
    if contract:
        policy.contract = json.loads(contract)
        meta["contract_from"] = "embedded"
    return policy


def _load_onnx(path: Path) -> Policy:
    try:
        import onnxruntime as ort
    except ImportError as error:
        raise InstallError(
            f"running an ONNX policy needs onnxruntime ({error}); fix: {install_hint('export')}") from error
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    props = session.get_modelmeta().custom_metadata_map
    meta = json.loads(props.get(METADATA_KEY, "null") or "null")
    if not isinstance(meta, dict):
        raise ConfigError(f"{str(path)!r} has no mjvec metadata; export it with mjvec.integrations.export")
    name = session.get_inputs()[0].name
    return _from_metadata("onnx", meta, lambda obs: session.run(None, {name: obs})[0], None, props.get(CONTRACT_KEY))


def _load_torchscript(path: Path) -> Policy:
    extra = {METADATA_KEY: "", CONTRACT_KEY: ""}
    with warnings.catch_warnings():  # torch deprecates TorchScript in favour of torch.export; it still loads
        warnings.simplefilter("ignore", DeprecationWarning)
        module = torch.jit.load(str(path), map_location="cpu", _extra_files=extra)
    if not extra[METADATA_KEY]:
        raise ConfigError(f"{str(path)!r} has no mjvec metadata; export it with mjvec.integrations.export")
    module.eval()

    def run(obs: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return module(torch.from_numpy(obs)).numpy()

    return _from_metadata("torchscript", json.loads(extra[METADATA_KEY]), run, module, extra[CONTRACT_KEY])
