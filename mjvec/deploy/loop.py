"""The deployment loop: a policy contract, a plain ``mujoco.MjModel`` + ``MjData`` and the exported
ONNX policy through onnxruntime, with nothing of mjvec's envs, wrappers or backends.

    contract = load_contract("out/policy.contract.json")
    model = mujoco.MjModel.from_binary_path("scene.mjb")            # the model the policy was trained on
    loop = Deployment(contract, model, OnnxPolicy("out/policy.onnx"))
    obs = loop.reset(qpos, qvel, commands={"cube_half_size": [0.03]})
    for _ in range(400):
        obs = loop.step(loop.policy(obs), commands={"cube_half_size": [0.03]})

One control step (`step` = `apply` then `observe`): the action through the contract's pipeline
(`ActionMapper`) into ``ctrl``; ``mj_step`` x substeps; the contract's ``after_step`` calls; the
observation from MjData (`ObservationBuilder`). ``perception=True`` adds the train-time noise and
delays the contract lists (`Perception`, in distribution). On a robot, `apply` sends the targets to
the joint controllers and `observe` reads the robot's state instead of MjData's.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import mujoco
import numpy as np

from .action import ActionMapper
from .observation import DeployError, ObservationBuilder, _id
from .perception import Perception

log = logging.getLogger(__name__)

SCHEMA = "mjvec.policy_contract/1"
CONTRACT_KEY = "mjvec.contract.json"  # the ONNX metadata key an exported policy carries its contract under


def load_contract(path: str | Path) -> dict[str, Any]:
    """The policy contract in `path`: a ``.contract.json`` file, or an exported ``.onnx`` (its metadata)."""
    path = Path(path)
    if path.suffix == ".onnx":
        import onnxruntime as ort

        text = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).get_modelmeta() \
            .custom_metadata_map.get(CONTRACT_KEY)
        if not text:
            raise DeployError(f"{str(path)!r} carries no policy contract; export it again with mjvec's export_policy")
    else:
        text = path.read_text()
    contract = json.loads(text)
    if contract.get("schema") != SCHEMA:
        raise DeployError(f"{str(path)!r} is not a policy contract of schema {SCHEMA!r} "
                          f"(found {contract.get('schema')!r})")
    return contract


def model_sha256(model: mujoco.MjModel) -> str:
    """sha256 of the model's MJB bytes: the contract's ``model.sha256`` for the model it was trained on."""
    buffer = np.zeros(mujoco.mj_sizeModel(model), np.uint8)
    mujoco.mj_saveModel(model, None, buffer)
    return hashlib.sha256(buffer.tobytes()).hexdigest()


def check_model(contract: Mapping[str, Any], model: mujoco.MjModel) -> bool:
    """Check `model` against the contract: every joint and actuator the contract names exists with
    its type and range (DeployError otherwise). Returns whether the model is the trained variant
    bit for bit (its hash); another variant (another tool) or MuJoCo build logs a warning."""
    types = {"free": mujoco.mjtJoint.mjJNT_FREE, "ball": mujoco.mjtJoint.mjJNT_BALL,
             "slide": mujoco.mjtJoint.mjJNT_SLIDE, "hinge": mujoco.mjtJoint.mjJNT_HINGE}
    for joint in contract["model"]["joints"]:
        j = _id(model, "joint", joint["name"])
        if model.jnt_type[j] != types[joint["type"]]:
            raise DeployError(f"joint {joint['name']!r} is a {joint['type']} joint in the contract, not in the model")
        if joint["range"] is not None and model.jnt_range[j].tolist() != joint["range"]:
            raise DeployError(f"joint {joint['name']!r} has range {model.jnt_range[j].tolist()} in the model, "
                              f"{joint['range']} in the contract")
    for actuator in contract["model"]["actuators"]:
        _id(model, "actuator", actuator["name"])
    same = model_sha256(model) == contract["model"]["sha256"]
    if not same:
        log.warning("the model is not the one the contract hashes (variant %s of %s): another variant or MuJoCo build",
                    contract["model"]["variant"], contract["task"]["env_id"])
    return same


class OnnxPolicy:
    """An exported ONNX policy through onnxruntime: ``policy(obs)`` -> (A,) float32 actions for one
    (D,) observation (fed as (1, D) float32: the network includes its normalization)."""

    def __init__(self, path: str | Path) -> None:
        import onnxruntime as ort

        self.session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        self.input = self.session.get_inputs()[0].name

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        batch = np.asarray(obs, np.float32).reshape(1, -1)
        return self.session.run(None, {self.input: batch})[0][0]


class Deployment:
    """One robot (one MjData) run by a policy as its contract says (see the module docstring).

    contract: the policy contract. model: the MjModel (checked with `check_model`). policy: a
    callable (D,) observation -> (A,) action, e.g. `OnnxPolicy` (None: pass actions yourself).
    perception: reproduce the contract's train-time noise and delays (`Perception`); seed: its
    generator's seed. Attributes: ``data`` (the MjData), ``targets`` (the action pipeline's state),
    ``segment_steps`` (control steps since the episode or goal segment began).
    """

    def __init__(self, contract: Mapping[str, Any], model: mujoco.MjModel, policy: Any = None, *,
                 perception: bool = False, seed: int | None = None) -> None:
        self.contract, self.model, self.policy = contract, model, policy
        self.same_model = check_model(contract, model)
        self.data = mujoco.MjData(model)
        self.observation = ObservationBuilder(contract, model)
        self.action = ActionMapper(contract, model)
        self.perception = Perception(contract, np.random.default_rng(seed)) if perception else None
        self.substeps = int(contract["timing"]["substeps"])
        if model.opt.timestep != contract["timing"]["physics_dt"]:
            raise DeployError(f"the model's timestep is {model.opt.timestep}, the contract's physics_dt "
                              f"{contract['timing']['physics_dt']}")
        self.after_step = list(contract["observation"]["after_step"])
        pose = next((p for p in contract["perceived"] if p["free_joint"] is not None), None)
        self._pose_adr = None if pose is None else int(model.jnt_qposadr[_id(model, "joint", pose["free_joint"])])
        self.targets: np.ndarray | None = None
        self.segment_steps = 0
        self._perceived: dict[str, Any] = {}

    def _true_pose(self) -> tuple[np.ndarray, np.ndarray] | None:
        if self._pose_adr is None:
            return None
        a = self._pose_adr
        return self.data.qpos[a:a + 3].copy(), self.data.qpos[a + 3:a + 7].copy()

    def reset(self, qpos: Any, qvel: Any, commands: Mapping[str, Any] | None = None) -> np.ndarray:
        """Start an episode at (qpos, qvel): ``mj_resetData``, the state, the initial targets into ctrl
        (the contract's ``initial_targets``), ``mj_forward``; returns the first observation."""
        m, d = self.model, self.data
        mujoco.mj_resetData(m, d)
        d.qpos[:], d.qvel[:] = np.asarray(qpos, np.float64), np.asarray(qvel, np.float64)
        self.targets = self.action.initial_targets(d)
        if self.targets is not None:
            self.action.write(d, self.targets)
        mujoco.mj_forward(m, d)
        self.segment_steps = 0
        commands = dict(commands or {})
        if self.perception is not None:
            self._perceived = self.perception.reset(self._true_pose(), commands)
        obs = self.observation.build(d, self.targets, commands, self._perceived)
        return obs if self.perception is None else self.perception.observation(obs, False, 0)

    def apply(self, action: Any) -> None:
        """The action's first half of a step: through the pipeline into ctrl, then the physics."""
        if self.perception is not None:
            action = self.perception.action(np.asarray(action, np.float64), self.segment_steps)
        self.targets = self.action.targets(action, self.targets)
        self.action.write(self.data, self.targets)
        mujoco.mj_step(self.model, self.data, self.substeps)
        for call in self.after_step:
            getattr(mujoco, call)(self.model, self.data)

    def observe(self, commands: Mapping[str, Any] | None = None, new_segment: bool = False) -> np.ndarray:
        """The step's second half: its observation. new_segment: a goal was reached in this step and
        `commands` hold the next goal (the step counter restarts; delay queues refill as in training)."""
        commands = dict(commands or {})
        if self.perception is not None:
            self._perceived = self.perception.after_physics(self._true_pose(), self.segment_steps, commands)
        self.segment_steps = 0 if new_segment else self.segment_steps + 1
        obs = self.observation.build(self.data, self.targets, commands, self._perceived)
        return obs if self.perception is None else self.perception.observation(obs, True, self.segment_steps)

    def step(self, action: Any, commands: Mapping[str, Any] | None = None, new_segment: bool = False) -> np.ndarray:
        """One control step (`apply`, then `observe`); returns the observation."""
        self.apply(action)
        return self.observe(commands, new_segment)
