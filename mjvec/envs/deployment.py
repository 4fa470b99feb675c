"""What a task declares so that a policy trained on it can run outside mjvec: `DeploymentSpec`.

The policy contract (`mjvec.integrations.policy_contract`) is generated from it: every observation
block says what it is computed from in MuJoCo terms (an `ObsSource` over named joints, sites,
bodies, MjData fields, the action pipeline's targets or a command the deployer supplies) and how
it is transformed; every action dimension says which actuator it drives and how (`ActionDim`).
`mjvec.deploy` rebuilds the observation and applies the action from those declarations and a
plain ``MjData``, so each formula below is the arithmetic the task itself runs, in that order.

A task declares its spec by overriding `DeploymentMixin.deployment_spec` (`MjVecEnv` has it); a
task that does not gets `undeclared_spec`: its declared layouts (or one block) with source
"undeclared" and actions with mode "undeclared", which a contract records and `mjvec.deploy`
refuses, naming the block.

Source kinds (`SOURCE_KINDS`), each an (N, size) float64 array, the elements in the given order:

- ``joint_pos`` / ``joint_vel``: qpos / qvel of 1-DoF joints `elements`.
- ``qpos`` / ``qvel``: qpos[start:stop] / qvel[start:stop] (``index``).
- ``data``: MjData field `field`, rows [start:stop) (``index``), flattened row-major.
- ``targets``: the action pipeline's current targets, in action order (`ActionDim`).
- ``site_pos``: site_xpos of sites `elements`; ``body_quat``: xquat (wxyz) of bodies `elements`.
- ``free_joint_pos`` / ``free_joint_quat``: qpos position / wxyz orientation of free joint
  ``elements[0]``; ``free_joint_linvel``: its qvel[0:3] (world frame); ``free_joint_angvel``: its
  qvel[3:6] rotated by its orientation into the world frame (``v + w t + u x t``, t = 2 u x v).
- ``box_keypoints``: the K corners of a box attached to a pose, ``pos + offsets @ R^T`` with
  ``offsets = signs * (0.5 * extent_scale * (command(size_command) * size_scale))`` and R the
  ``1 - 2 (...)`` rotation matrix of the pose's quaternion; the pose is free joint ``elements[0]``
  or the command `command` (pos 3 + wxyz quat 4).
- ``command``: the command `command` (`Command`), as the deployer supplies it.
- ``constant``: the fixed vector ``params["value"]`` (e.g. a point of the scene).
- ``undeclared``: the task did not say.

`minus` (another `ObsSource`, broadcast over the block's points) is subtracted from the source.
Then, in this order: `canonical` (a quaternion times -1 where w < 0), `quat_order` "xyzw" (reorder
from wxyz), `normalize` "joint_range" (``(2 q - hi - lo) / (hi - lo)`` with each joint's range),
`scale` (times), `clip` (the block), and last the whole observation's clip and dtype.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field as _field
from types import MappingProxyType
from typing import Any

import gymnasium as gym

from mjvec.errors import ConfigError, allowed, is_int

__all__ = [
    "ACTION_MAPS",
    "ACTION_MODES",
    "SOURCE_KINDS",
    "ActionDim",
    "Command",
    "DeploymentMixin",
    "DeploymentSpec",
    "ObsBlock",
    "ObsSource",
    "Perceived",
    "undeclared_spec",
]

SOURCE_KINDS = ("joint_pos", "joint_vel", "qpos", "qvel", "data", "targets", "site_pos", "body_quat",
                "free_joint_pos", "free_joint_quat", "free_joint_linvel", "free_joint_angvel", "box_keypoints",
                "command", "constant", "undeclared")
DATA_FIELDS = ("cinert", "cvel", "qfrc_actuator", "cfrc_ext", "xpos", "xquat", "site_xpos", "sensordata")
NORMALIZATIONS = ("joint_range",)
QUAT_ORDERS = ("wxyz", "xyzw")
ACTION_MODES = ("absolute", "delta", "torque", "undeclared")
# affine: offset + scale * a (delta: the previous target + scale * a); limits: lo + 0.5 (a + 1) (hi - lo).
ACTION_MAPS = ("affine", "limits", "undeclared")
AFTER_STEP = ("mj_rnePostConstraint",)
Range = tuple[float, float]


def _range(owner: str, value: Any) -> Range | None:
    if value is None:
        return None
    try:
        low, high = (float(v) for v in value)
    except (TypeError, ValueError):
        raise ConfigError(f"{owner} must be None or a pair (low, high), got {value!r}") from None
    if math.isnan(low) or math.isnan(high) or low > high:
        raise ConfigError(f"{owner} must be a pair (low, high) with low <= high, got {value!r}")
    return low, high


@dataclass(frozen=True)
class ObsSource:
    """What an observation block is computed from (the module docstring lists the kinds).

    elements: the model elements it reads, by name, in order (joints, sites, bodies, a free joint).
    field: the MjData field of kind "data". index: (start, stop) of kinds "qpos", "qvel", "data".
    command: the command of kinds "command" and "box_keypoints" (a pose command).
    params: kind "box_keypoints": ``signs`` (K rows of 3), ``size_command``, ``size_scale``,
        ``extent_scale``. minus: a source subtracted from this one (None: nothing).
    """

    kind: str
    elements: tuple[str, ...] = ()
    field: str | None = None
    index: tuple[int, int] | None = None
    command: str | None = None
    params: Mapping[str, Any] = _field(default_factory=lambda: MappingProxyType({}))
    minus: ObsSource | None = None

    def __post_init__(self) -> None:
        if self.kind not in SOURCE_KINDS:
            raise ConfigError(f"ObsSource.kind={self.kind!r} is not one of {allowed(SOURCE_KINDS)}")
        object.__setattr__(self, "elements", tuple(str(e) for e in self.elements))
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))
        needs = {"joint_pos": "elements", "joint_vel": "elements", "site_pos": "elements", "body_quat": "elements",
                 "free_joint_pos": "elements", "free_joint_quat": "elements", "free_joint_linvel": "elements",
                 "free_joint_angvel": "elements", "qpos": "index", "qvel": "index", "data": "index",
                 "command": "command"}
        need = needs.get(self.kind)
        if need is not None and not getattr(self, need):
            raise ConfigError(f"ObsSource(kind={self.kind!r}) needs {need}")
        if self.kind == "data" and self.field not in DATA_FIELDS:
            raise ConfigError(f"ObsSource(kind='data').field={self.field!r} is not one of {allowed(DATA_FIELDS)}")
        if self.index is not None:
            start, stop = self.index
            if not (is_int(start) and is_int(stop) and 0 <= start <= stop):
                raise ConfigError(f"ObsSource.index must be (start, stop) ints with 0 <= start <= stop, got "
                                  f"{self.index!r}")
            object.__setattr__(self, "index", (int(start), int(stop)))
        if self.kind == "constant" and "value" not in self.params:
            raise ConfigError("ObsSource(kind='constant') needs params={'value': [...]}")
        if self.kind == "box_keypoints":
            missing = sorted({"signs", "size_command", "size_scale", "extent_scale"} - set(self.params))
            if missing or not (self.elements or self.command):
                raise ConfigError(f"ObsSource(kind='box_keypoints') needs params {missing or 'ok'} and a pose "
                                  "(elements=(free joint,) or command=pose command)")


@dataclass(frozen=True)
class ObsBlock:
    """One named block of an observation (see the module docstring for the transform order).

    name, size: the block as the task's layout names it. source: what it is computed from.
    frame: the frame its vectors are expressed in ("world", "none" for joint-space quantities).
    units: what one unit is ("rad", "m", "rad/s", ...). perceives: the perceived quantities it reads
    (`Perceived` names): randomization of those applies to it. history: stacked frames (1: none).
    """

    name: str
    size: int
    source: ObsSource
    frame: str = "none"
    units: str = ""
    scale: float | None = None
    clip: Range | None = None
    normalize: str | None = None
    quat_order: str | None = None
    canonical: bool = False
    perceives: tuple[str, ...] = ()
    history: int = 1
    description: str = ""

    def __post_init__(self) -> None:
        if not (is_int(self.size) and self.size >= 1):
            raise ConfigError(f"ObsBlock {self.name!r}: size must be an int >= 1, got {self.size!r}")
        if not isinstance(self.source, ObsSource):
            raise ConfigError(f"ObsBlock {self.name!r}: source must be an ObsSource, got {self.source!r}")
        object.__setattr__(self, "clip", _range(f"ObsBlock {self.name!r}: clip", self.clip))
        if self.normalize not in (None, *NORMALIZATIONS):
            raise ConfigError(f"ObsBlock {self.name!r}: normalize={self.normalize!r} is not None or one of "
                              f"{allowed(NORMALIZATIONS)}")
        if self.quat_order not in (None, *QUAT_ORDERS):
            raise ConfigError(f"ObsBlock {self.name!r}: quat_order={self.quat_order!r} is not None or one of "
                              f"{allowed(QUAT_ORDERS)}")
        if not (is_int(self.history) and self.history >= 1):
            raise ConfigError(f"ObsBlock {self.name!r}: history must be an int >= 1, got {self.history!r}")
        object.__setattr__(self, "perceives", tuple(self.perceives))


@dataclass(frozen=True)
class ActionDim:
    """One action dimension, applied in this order (a: the action, clipped to the action space):

    raw = map(a): "affine" ``offset + scale * a`` (mode "delta": ``previous target + scale * a``),
    "limits" ``lo + 0.5 * (a + 1) * (hi - lo)`` with (lo, hi) = `map_range`; raw clipped to
    `clip_target` (None: not); smoothed ``smoothing * raw + (1 - smoothing) * previous`` (None: not);
    clipped to `limit` (None: not); written to actuator `actuator`'s ctrl; it is the next previous
    target. mode: "absolute" (a target position), "delta" (a change of the previous target) or
    "torque" (the actuator's input itself). joint: the joint the actuator drives (None: none).
    """

    actuator: str
    joint: str | None
    mode: str
    map: str = "affine"
    scale: float = 1.0
    offset: float | None = 0.0
    map_range: Range | None = None
    clip_target: Range | None = None
    smoothing: float | None = None
    limit: Range | None = None

    def __post_init__(self) -> None:
        if self.mode not in ACTION_MODES:
            raise ConfigError(f"ActionDim {self.actuator!r}: mode={self.mode!r} is not one of {allowed(ACTION_MODES)}")
        if self.map not in ACTION_MAPS:
            raise ConfigError(f"ActionDim {self.actuator!r}: map={self.map!r} is not one of {allowed(ACTION_MAPS)}")
        if self.map == "limits" and self.map_range is None:
            raise ConfigError(f"ActionDim {self.actuator!r}: map 'limits' needs map_range=(lo, hi)")
        for name in ("map_range", "clip_target", "limit"):
            object.__setattr__(self, name, _range(f"ActionDim {self.actuator!r}: {name}", getattr(self, name)))
        if self.smoothing is not None and not 0.0 < self.smoothing <= 1.0:
            raise ConfigError(f"ActionDim {self.actuator!r}: smoothing must be None or in (0, 1], "
                              f"got {self.smoothing!r}")


@dataclass(frozen=True)
class Command:
    """An input the policy needs that is not in MjData: name, size, units, frame, and where the env
    gets it (`description`), e.g. the goal pose a task samples or an object's size."""

    name: str
    size: int
    units: str
    frame: str = "none"
    description: str = ""


@dataclass(frozen=True)
class Perceived:
    """A quantity a robot perceives (a pose estimate, an object's measured size) that perception
    randomization acts on: read from free joint `free_joint` or command `command` in simulation."""

    name: str
    free_joint: str | None = None
    command: str | None = None
    description: str = ""


@dataclass(frozen=True)
class DeploymentSpec:
    """A task's deployment declarations (see the module docstring).

    observation: per observation key (None: a Box observation) its blocks, in order.
    obs_clip: the whole observation's clip (None: none); obs_dtype its dtype name.
    action: one `ActionDim` per action dimension, in order. initial_targets: "joint_pos" (at a
    reset the targets are the driven joints' positions) or None (no targets: torque actions).
    commands, perceived: see `Command`, `Perceived`. after_step: MuJoCo calls after every
    mj_step that the observation needs (`AFTER_STEP`). declared: whether the task declared it.
    """

    observation: Mapping[str | None, tuple[ObsBlock, ...]]
    obs_clip: float | None
    obs_dtype: str
    action: tuple[ActionDim, ...]
    initial_targets: str | None = None
    commands: tuple[Command, ...] = ()
    perceived: tuple[Perceived, ...] = ()
    after_step: tuple[str, ...] = ()
    declared: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "observation", MappingProxyType({k: tuple(v) for k, v in self.observation.items()}))
        object.__setattr__(self, "action", tuple(self.action))
        if self.initial_targets not in (None, "joint_pos"):
            raise ConfigError(f"DeploymentSpec.initial_targets must be None or 'joint_pos', "
                              f"got {self.initial_targets!r}")
        bad = sorted(set(self.after_step) - set(AFTER_STEP))
        if bad:
            raise ConfigError(f"DeploymentSpec.after_step has {bad}; allowed are {allowed(AFTER_STEP)}")
        names = {c.name for c in self.commands}
        for blocks in self.observation.values():
            for block in blocks:
                for source in _sources(block.source):
                    if source.command is not None and source.command not in names and source.kind != "undeclared":
                        raise ConfigError(f"ObsBlock {block.name!r} reads command {source.command!r}, which the spec "
                                          f"does not declare; declared commands are {allowed(names)}")


def _sources(source: ObsSource) -> list[ObsSource]:
    out = [source]
    while out[-1].minus is not None:
        out.append(out[-1].minus)
    return out


def _space_size(space: gym.Space) -> int:
    return int(math.prod(space.shape)) if space.shape else 0


def undeclared_spec(env: Any) -> DeploymentSpec:
    """The spec of a task that declares none: its declared layouts (`observation_layouts`), or one
    block per observation key, with source "undeclared"; one "undeclared" action per dimension on
    actuator i when the action has one dimension per actuator ("?" otherwise)."""
    space, layouts = env.single_observation_space, env.observation_layouts
    keys: dict[str | None, gym.Space] = dict(space.spaces) if isinstance(space, gym.spaces.Dict) else {None: space}
    observation = {}
    for key, sub in keys.items():
        layout = layouts.get(key) or ((key or "observation", _space_size(sub)),)
        observation[key] = tuple(ObsBlock(name, width, ObsSource("undeclared")) for name, width in layout)
    model, size = env.backend.model, _space_size(env.single_action_space)
    names = [model.actuator(i).name for i in range(model.nu)] if size == model.nu else ["?"] * size
    action = tuple(ActionDim(name, None, "undeclared", map="undeclared") for name in names)
    dtype = next(iter(keys.values())).dtype
    return DeploymentSpec(observation, None, str(dtype), action, declared=False)


class DeploymentMixin:
    """The deployment hooks of `MjVecEnv`."""

    def deployment_spec(self) -> DeploymentSpec:
        """What a deployed policy needs to rebuild this task's observation and apply its action outside
        mjvec (`DeploymentSpec`); the policy contract is generated from it. Default: `undeclared_spec`
        (a task overrides this to declare its blocks' sources and its actions' semantics)."""
        return undeclared_spec(self)

    def command_values(self) -> dict[str, Any]:
        """The current value of each declared `Command`, name -> (N, size) host float64 array (the true
        values: perception randomization acts on what the policy sees, not here), e.g. to drive a
        deployed loop with the goals the task sampled. Default: none."""
        return {}
