"""The policy observation rebuilt from a policy contract and a plain ``mujoco.MjData``.

`ObservationBuilder` resolves every block's source (docs/deploy.md, "Observation sources") to
MuJoCo ids once, then `build` computes the blocks with the arithmetic the env used: float64, each
block's ``minus``, ``canonical``, ``quat_order``, ``normalize``, ``scale`` and ``clip`` in that order,
the blocks concatenated in contract order, the observation's clip, its dtype. On a robot, replace
what `build` reads from MjData (joint encoders, the state estimator, the pose tracker) and keep the
rest.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import mujoco
import numpy as np

from . import _math as rotation_math

Pose = tuple[np.ndarray, np.ndarray]  # (pos (3,), quat (4,) wxyz)


class DeployError(ValueError):
    """The contract, the model or an input does not fit the deployment loop."""


def _id(model: mujoco.MjModel, kind: str, name: str) -> int:
    index = mujoco.mj_name2id(model, getattr(mujoco.mjtObj, f"mjOBJ_{kind.upper()}"), name)
    if index < 0:
        raise DeployError(f"the model has no {kind} {name!r}, which the contract reads; load the model the policy was "
                          "trained on (the contract's model section names its joints and actuators)")
    return int(index)


class ObservationBuilder:
    """Builds the contract's observation from MjData (see the module docstring).

    contract: the policy contract (a dict). model: the MjModel the loop steps.
    Raises DeployError for a block whose source the task did not declare ("undeclared"), or a
    name the model lacks.
    """

    def __init__(self, contract: Mapping[str, Any], model: mujoco.MjModel) -> None:
        obs = contract["observation"]
        self.model, self.size, self.dtype = model, int(obs["size"]), np.dtype(obs["dtype"])
        self.clip = None if obs["clip"] is None else tuple(obs["clip"])
        self.ranges = {j["name"]: j["range"] for j in contract["model"]["joints"]}
        self.commands = {c["name"]: int(c["size"]) for c in contract["commands"]}
        self.perceived = {p["free_joint"]: p["name"] for p in contract["perceived"] if p["free_joint"]}
        self._blocks = [(block, self._compile(block["source"], block["name"])) for block in obs["blocks"]]

    # ---- sources -------------------------------------------------------------------------------
    def _compile(self, source: Mapping[str, Any], block: str) -> Callable[..., np.ndarray]:
        kind, m = source["kind"], self.model
        if kind == "undeclared":
            raise DeployError(f"observation block {block!r}: its task declares no source (MjVecEnv.deployment_spec), "
                              "so the loop cannot build it; declare it on the task and export again")
        names = source["elements"]
        read = getattr(self, f"_{kind}")(m, source, names)
        if source["minus"] is None:
            return read
        minus = self._compile(source["minus"], block)
        return lambda d, ctx: read(d, ctx) - minus(d, ctx)

    def _joint_pos(self, m: Any, source: Mapping, names: list[str]) -> Callable:
        adr = np.array([m.jnt_qposadr[_id(m, "joint", n)] for n in names])
        return lambda d, ctx: d.qpos[adr][None]

    def _joint_vel(self, m: Any, source: Mapping, names: list[str]) -> Callable:
        adr = np.array([m.jnt_dofadr[_id(m, "joint", n)] for n in names])
        return lambda d, ctx: d.qvel[adr][None]

    def _qpos(self, m: Any, source: Mapping, names: list[str]) -> Callable:
        start, stop = source["index"]
        return lambda d, ctx: d.qpos[start:stop][None]

    def _qvel(self, m: Any, source: Mapping, names: list[str]) -> Callable:
        start, stop = source["index"]
        return lambda d, ctx: d.qvel[start:stop][None]

    def _data(self, m: Any, source: Mapping, names: list[str]) -> Callable:
        start, stop = source["index"]
        field = source["field"]
        return lambda d, ctx: np.array(getattr(d, field)[start:stop])[None]

    def _targets(self, m: Any, source: Mapping, names: list[str]) -> Callable:
        return lambda d, ctx: ctx["targets"][None]

    def _site_pos(self, m: Any, source: Mapping, names: list[str]) -> Callable:
        ids = np.array([_id(m, "site", n) for n in names])
        return lambda d, ctx: d.site_xpos[ids][None]

    def _body_quat(self, m: Any, source: Mapping, names: list[str]) -> Callable:
        ids = np.array([_id(m, "body", n) for n in names])
        return lambda d, ctx: d.xquat[ids][None]

    def _free_joint(self, m: Any, names: list[str]) -> tuple[int, int, str | None]:
        j = _id(m, "joint", names[0])
        if m.jnt_type[j] != mujoco.mjtJoint.mjJNT_FREE:
            raise DeployError(f"joint {names[0]!r} is not a free joint in the model")
        return int(m.jnt_qposadr[j]), int(m.jnt_dofadr[j]), self.perceived.get(names[0])

    def _pose(self, d: Any, ctx: Mapping, adr: int, perceived: str | None) -> Pose:
        """The free joint's (pos, quat): the perceived one where the loop has it, else MjData's."""
        pose = ctx["perceived"].get(perceived) if perceived is not None else None
        if pose is not None:
            return pose
        return d.qpos[adr:adr + 3], d.qpos[adr + 3:adr + 7]

    def _free_joint_pos(self, m: Any, source: Mapping, names: list[str]) -> Callable:
        adr, _, perceived = self._free_joint(m, names)
        return lambda d, ctx: np.array(self._pose(d, ctx, adr, perceived)[0])[None]

    def _free_joint_quat(self, m: Any, source: Mapping, names: list[str]) -> Callable:
        adr, _, perceived = self._free_joint(m, names)
        return lambda d, ctx: np.array(self._pose(d, ctx, adr, perceived)[1])[None]

    def _free_joint_linvel(self, m: Any, source: Mapping, names: list[str]) -> Callable:
        _, dof, _ = self._free_joint(m, names)
        return lambda d, ctx: d.qvel[dof:dof + 3][None]

    def _free_joint_angvel(self, m: Any, source: Mapping, names: list[str]) -> Callable:
        adr, dof, _ = self._free_joint(m, names)
        return lambda d, ctx: rotation_math.quat_rotate(d.qpos[adr + 3:adr + 7][None], d.qvel[dof + 3:dof + 6][None])

    def _command(self, m: Any, source: Mapping, names: list[str]) -> Callable:
        name = source["command"]
        return lambda d, ctx: self.command(ctx, name)[None]

    def _constant(self, m: Any, source: Mapping, names: list[str]) -> Callable:
        value = np.asarray(source["params"]["value"], np.float64)
        return lambda d, ctx: value[None]

    def _box_keypoints(self, m: Any, source: Mapping, names: list[str]) -> Callable:
        params = source["params"]
        signs = np.asarray(params["signs"], np.float64)
        size_command, size_scale, extent = params["size_command"], params["size_scale"], params["extent_scale"]
        if names:
            adr, _, perceived = self._free_joint(m, names)

            def pose(d: Any, ctx: Mapping) -> Pose:
                return self._pose(d, ctx, adr, perceived)
        else:
            command = source["command"]

            def pose(d: Any, ctx: Mapping) -> Pose:
                value = self.command(ctx, command)
                return value[:3], value[3:7]

        def read(d: Any, ctx: Mapping) -> np.ndarray:
            pos, quat = (np.asarray(v, np.float64)[None] for v in pose(d, ctx))
            dims = self.command(ctx, size_command)[None] * size_scale
            offsets = signs * (0.5 * extent * dims)[..., None, :]
            return rotation_math.keypoints_from_rot(pos, rotation_math.quat_to_mat(quat), offsets)

        return read

    def command(self, ctx: Mapping, name: str) -> np.ndarray:
        """Command `name` from the step's commands (perceived values first), checked for its size."""
        value = ctx["perceived"].get(name)
        if value is None:
            value = ctx["commands"].get(name)
        if value is None:
            raise DeployError(f"the observation needs command {name!r} ({self.commands[name]} values); pass "
                              f"commands={{{name!r}: ...}} (the contract's commands: {sorted(self.commands)})")
        value = np.asarray(value, np.float64).reshape(-1)
        if value.size != self.commands[name]:
            raise DeployError(f"command {name!r} must have {self.commands[name]} values, got {value.size}")
        return value

    # ---- the observation -----------------------------------------------------------------------
    def _transform(self, block: Mapping[str, Any], value: np.ndarray) -> np.ndarray:
        if block["canonical"]:
            value = rotation_math.canonical(value)
        if block["quat_order"] == "xyzw":
            value = value[..., rotation_math.XYZW]
        if block["normalize"] == "joint_range":
            ranges = np.array([self.ranges[n] for n in block["source"]["elements"]], np.float64)
            lower, upper = ranges[:, 0], ranges[:, 1]
            value = (2.0 * value - upper - lower) / (upper - lower)
        if block["scale"] is not None:
            value = block["scale"] * value
        if block["clip"] is not None:
            value = np.clip(value, *block["clip"])
        return value.reshape(1, -1)

    def build(self, data: mujoco.MjData, targets: np.ndarray | None, commands: Mapping[str, Any],
              perceived: Mapping[str, Any] | None = None) -> np.ndarray:
        """The observation (size,) in the contract's dtype, from `data` as it is now, the action
        pipeline's `targets`, the `commands` (name -> values) and the `perceived` values that
        replace MjData's (a free joint's perceived name -> (pos, quat); a command's -> values)."""
        ctx = {"targets": targets, "commands": commands, "perceived": perceived or {}}
        parts = []
        for block, read in self._blocks:
            value = self._transform(block, read(data, ctx))
            if value.shape[1] != block["size"]:
                raise DeployError(f"observation block {block['name']!r} has {value.shape[1]} values, the contract "
                                  f"{block['size']}: the model differs from the one the policy was trained on")
            parts.append(value)
        out = np.concatenate(parts, axis=1)
        if self.clip is not None:
            out = np.clip(out, *self.clip)
        return out.astype(self.dtype)[0]
