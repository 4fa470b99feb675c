"""SimToolReal-v0's registration on the shared task path (`mjvec.envs.registry.register_task`).

After ``import mjvec``:

- ``gym.make_vec("SimToolReal-v0", num_envs=N, backend="cpu", ...)`` -> `SimToolRealEnv`
  (a `gymnasium.vector.VectorEnv`), wrapped with the requested randomization (default "paper");
- ``gym.make("SimToolReal-v0", ...)`` -> a single `gymnasium.Env` (`mjvec.envs.single.SingleEnv`
  over a one-env vector env with autoreset disabled).

The accepted options are the fields of `SimToolRealOptions`: the shared `TaskOptions` plus
obs_mode, tool_pool, num_tools, tool_geometry and config; anything else raises `ConfigError` naming
the allowed set.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, ClassVar

from mjvec.envs.registry import Task, TaskOptions, register_once
from mjvec.errors import ConfigError, allowed, is_int
from mjvec.randomization import EventTerm
from mjvec.tasks.simtoolreal.catalog.tools import TOOL_GEOMETRIES
from mjvec.tasks.simtoolreal.config import SimToolRealConfig
from mjvec.tasks.simtoolreal.env import SimToolRealEnv
from mjvec.tasks.simtoolreal.presets import paper
from mjvec.tasks.simtoolreal.scene import TOOL_POOLS, default_catalog, pool_catalog, scene_spec
from mjvec.tasks.simtoolreal.terms import OBS_MODES

__all__ = ["ENV_ID", "MAX_TOOLS", "SimToolRealOptions", "default_catalog", "register_envs", "task"]

ENV_ID = "SimToolReal-v0"
MAX_TOOLS = 600  # the default pool's size


@dataclass(frozen=True)
class SimToolRealOptions(TaskOptions):
    """The keywords SimToolReal-v0 accepts: the shared `TaskOptions` (max_episode_steps defaults
    to the config's 599) plus:

    obs_mode: "policy" (Box(140)) or "asymmetric" (Dict(policy=140, critic=162)).
    tool_pool: the tools drawn from: "mjvec" (default: 600 tools, 50 per distribution, the size of the
        MuJoCo port in UniLab) or "source" (the authors' own 1,200, 100 per distribution, in their
        order; `mjvec.tasks.simtoolreal.scene.pool_catalog`).
    num_tools: tools in use, the first num_tools of the pool (1..its size; None: all of it); env
        with global id g gets tool g % num_tools.
    tool_geometry: how tools are modelled ("primitive" or "mesh").
    config: task constants; None for the paper's.
    randomization: defaults to "paper" (the source's delays, noise and pushes;
        `mjvec.tasks.simtoolreal.presets.paper`), this task's one preset.
    """

    HINTS: ClassVar[Mapping[str, str]] = MappingProxyType({
        "frameskip": "; the control period is fixed by the task: config=SimToolRealConfig(frame_skip=...) "
        "sets physics substeps per control step, and skipping control steps belongs in a wrapper",
    })

    randomization: str | tuple[EventTerm, ...] | None = "paper"
    obs_mode: str = "policy"
    tool_pool: str = "mjvec"
    num_tools: int | None = None
    tool_geometry: str = "primitive"
    config: SimToolRealConfig | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.obs_mode not in OBS_MODES:
            raise ConfigError(f"obs_mode={self.obs_mode!r} is not supported; allowed values are {allowed(OBS_MODES)}")
        if self.tool_pool not in TOOL_POOLS:
            raise ConfigError(
                f"tool_pool={self.tool_pool!r} is not supported; allowed values are {allowed(TOOL_POOLS)}"
            )
        size = 12 * TOOL_POOLS[self.tool_pool]
        num_tools = size if self.num_tools is None else self.num_tools
        if not is_int(num_tools) or not 1 <= num_tools <= size:
            hint = ("; tool_pool='source' has the authors' 1,200" if self.tool_pool == "mjvec" and is_int(num_tools)
                    and size < num_tools <= 12 * TOOL_POOLS["source"] else "")
            raise ConfigError(
                f"num_tools must be an int in [1, {size}] (tool_pool={self.tool_pool!r} has {size} tools){hint}, "
                f"got {self.num_tools!r}"
            )
        object.__setattr__(self, "num_tools", int(num_tools))
        if self.tool_geometry not in TOOL_GEOMETRIES:
            raise ConfigError(
                f"tool_geometry={self.tool_geometry!r} is not supported; allowed values are {allowed(TOOL_GEOMETRIES)}"
            )
        if self.config is not None and not isinstance(self.config, SimToolRealConfig):
            raise ConfigError(f"config must be a SimToolRealConfig or None, got {type(self.config).__name__}")

    def effective_values(self) -> dict[str, Any]:
        """`TaskOptions.effective_values` with ``config`` the config the task runs with (`task_config`)."""
        return {**super().effective_values(), "config": self.task_config()}

    def task_config(self) -> SimToolRealConfig:
        cfg = SimToolRealConfig() if self.config is None else self.config
        if self.max_episode_steps is None:
            return cfg
        return dataclasses.replace(cfg, max_episode_steps=self.max_episode_steps)


def _variants(opts: SimToolRealOptions) -> tuple[int, Any]:
    catalog = pool_catalog(opts.tool_pool)
    return opts.num_tools, functools.partial(scene_spec, tool_geometry=opts.tool_geometry, catalog=catalog)


def _env_kwargs(opts: SimToolRealOptions) -> dict[str, Any]:
    return {"catalog": pool_catalog(opts.tool_pool), "tool_geometry": opts.tool_geometry,
            "config": opts.task_config(), "obs_mode": opts.obs_mode}


def register_envs() -> Task:
    """Register SimToolReal-v0 (idempotent: a second call returns the registered task)."""
    return register_once(
        ENV_ID,
        env_class=SimToolRealEnv,
        options=SimToolRealOptions,
        variants=_variants,
        env_kwargs=_env_kwargs,
        presets={"paper": paper},
        namespaces=("numpy", "torch"),
    )


def task() -> Task:
    """The registered SimToolReal-v0 task (registering it first if needed)."""
    return register_envs()
