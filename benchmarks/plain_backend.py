"""The usual alternative to a batched backend, for benchmarks: one MjModel per tool, one MjData
per env, stepped by a Python loop of plain `mujoco.mj_step` calls.

`PlainBackend` implements the `Backend` contract (state views, step, reset, forward) without
model-field writes, so the SAME `SimToolRealEnv` task code runs on it; `make_plain_env` gives a
single Gymnasium env over it for `gymnasium.vector.AsyncVectorEnv` (the standard Gymnasium way).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import mujoco
import numpy as np

from mjvec.backends.base import RESET_INPUTS, Capabilities, FieldWrite, Scene
from mjvec.backends.checks import check_input_write
from mjvec.backends.groupviews import put_input
from mjvec.envs.single import SingleEnv
from mjvec.randomization import apply_randomization
from mjvec.tasks.simtoolreal.env import SimToolRealEnv
from mjvec.tasks.simtoolreal.presets import paper
from mjvec.tasks.simtoolreal.scene import default_catalog, scene_spec

# The state inputs SimToolReal writes (of STATE_INPUTS): the ones this loop copies in every call.
_INPUTS = ("ctrl", "xfrc_applied", "mocap_pos", "mocap_quat")


class PlainBackend:
    """N plain MjData, each with its own tool's MjModel (compiled once per tool)."""

    def __init__(self, scene: Scene) -> None:
        compiled: dict[int, mujoco.MjModel] = {}
        self._models = []
        for v in scene.variant_of_env:
            if int(v) not in compiled:
                compiled[int(v)] = scene.make_variant(int(v)).compile()
            self._models.append(compiled[int(v)])
        self._datas = [mujoco.MjData(m) for m in self._models]
        for m, d in zip(self._models, self._datas, strict=True):
            mujoco.mj_forward(m, d)
        self._scene = scene
        self.model = max(compiled.values(), key=lambda m: m.ngeom)
        self.capabilities = Capabilities("plain", {}, "numpy", "cpu", True)
        self._views: dict[str, np.ndarray] = {}
        for name in ("qpos", "qvel", *_INPUTS):
            self.bind(name)

    num_envs = property(lambda self: self._scene.num_envs)
    env_id_offset = property(lambda self: self._scene.env_id_offset)
    variant_of_env = property(lambda self: self._scene.variant_of_env)
    qpos = property(lambda self: self._views["qpos"])
    qvel = property(lambda self: self._views["qvel"])
    ctrl = property(lambda self: self._views["ctrl"])
    xfrc_applied = property(lambda self: self._views["xfrc_applied"])

    def bind(self, name: str) -> np.ndarray:
        if name not in self._views:
            self._views[name] = np.stack([np.array(getattr(d, name)) for d in self._datas])
        return self._views[name]

    def _sync_in(self, ids: Sequence[int]) -> None:
        for i in ids:
            d = self._datas[i]
            for name in _INPUTS:
                getattr(d, name)[...] = self._views[name][i]

    def _sync_out(self, ids: Sequence[int]) -> None:
        for name, view in self._views.items():
            for i in ids:
                view[i] = getattr(self._datas[i], name)

    def step(self, nstep: int = 1) -> np.ndarray:
        ids = range(self.num_envs)
        self._sync_in(ids)
        for m, d in zip(self._models, self._datas, strict=True):
            mujoco.mj_step(m, d, nstep)
        self._sync_out(ids)
        return np.zeros(self.num_envs, bool)

    def reset(self, env_ids: np.ndarray, qpos: np.ndarray, qvel: np.ndarray, **inputs: Any) -> None:
        """mj_resetData (inputs and mocap included), then qpos/qvel and the given `RESET_INPUTS`
        (ctrl, mocap_pos, mocap_quat, act), then mj_forward."""
        given = {name: np.asarray(inputs.pop(name)) for name in RESET_INPUTS if inputs.get(name) is not None}
        if inputs:
            raise TypeError(f"reset() got unexpected keyword arguments {sorted(inputs)}")
        for k, i in enumerate(np.asarray(env_ids)):
            m, d = self._models[i], self._datas[i]
            mujoco.mj_resetData(m, d)
            d.qpos[:], d.qvel[:] = qpos[k], qvel[k]
            for name, values in given.items():
                getattr(d, name)[...] = values[k]
            mujoco.mj_forward(m, d)
        self._sync_out(env_ids)

    def forward(self, env_ids: np.ndarray | None = None) -> None:
        ids = range(self.num_envs) if env_ids is None else env_ids
        self._sync_in(ids)
        for i in ids:
            mujoco.mj_forward(self._models[i], self._datas[i])
        self._sync_out(ids)

    def write_input(self, name: str, env_ids: Any, index: Any, values: Any) -> None:
        view = self._views.get(name) if name in self.capabilities.inputs else None
        ids, rows, values = check_input_write(name, self.capabilities, None if view is None else view.shape,
                                              self.num_envs, env_ids, index, values)
        put_input(view, ids, rows, values)

    def defaults(self, field_name: str) -> np.ndarray:
        raise KeyError(field_name)

    def field_values(self, field_name: str, env_ids: Any = None) -> np.ndarray:
        raise KeyError(field_name)

    def write_fields(self, writes: Sequence[FieldWrite]) -> None:
        raise NotImplementedError("the plain alternative has no batched field writes")

    def field_version(self, field_name: str) -> int:
        """Always 0: the plain alternative has no field writes."""
        return 0

    def env_template(self, env_id: int) -> mujoco.MjModel:
        return self._models[env_id]

    def write_env_model(self, env_id: int, model: mujoco.MjModel) -> None:
        """Nothing to write: the template of env `env_id` is its own model."""

    def close(self) -> None:
        self._datas.clear()


def make_plain_vec(num_envs: int, env_id_offset: int = 0, randomization: str | None = "paper",
                   num_tools: int = 600) -> gym.vector.VectorEnv:
    """SimToolReal over PlainBackend (same task code as the batched env)."""
    catalog = default_catalog()
    make = functools.partial(scene_spec, catalog=catalog)
    scene = Scene(num_tools, make, num_envs, env_id_offset=env_id_offset)
    env = SimToolRealEnv(PlainBackend(scene), catalog=catalog, autoreset_mode="disabled")
    return apply_randomization(env, randomization, presets={"paper": paper})


def make_plain_env(global_id: int, randomization: str | None = "paper") -> gym.Env:
    """One plain SimToolReal env (its tool is global_id % 600), for AsyncVectorEnv."""
    return SingleEnv(make_plain_vec(1, env_id_offset=global_id, randomization=randomization))
