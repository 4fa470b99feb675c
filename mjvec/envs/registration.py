"""Registration of SimToolReal-v0 with Gymnasium, and the creators behind it.

After ``import mjvec``:

- ``gym.make_vec("SimToolReal-v0", num_envs=N, backend="cpu", ...)`` -> `SimToolRealEnv`
  (a `gymnasium.vector.VectorEnv`) through `make_vec`;
- ``gym.make("SimToolReal-v0", ...)`` -> a single `gymnasium.Env` (`mjvec.envs.single.SingleEnv`
  over a one-env vector env with autoreset disabled) through `make_single`.

Every option is a plain keyword argument (Gymnasium rejects ``vector_kwargs``/``wrappers`` in
vector-entry-point mode); the accepted ones are the fields of `SimToolRealOptions`, and anything
else raises `ConfigError` naming the allowed set. Backends are made by name through
`mjvec.backends.registry`; nothing here branches on which backend is in use.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

import gymnasium as gym
import mujoco
import numpy as np

from mjvec.assets.scene import default_catalog, scene_spec
from mjvec.assets.tools import TOOL_GEOMETRIES
from mjvec.backends.base import Scene
from mjvec.backends.fields import field_specs
from mjvec.backends.registry import backend_entry, make_backend, native_namespace
from mjvec.envs import memory
from mjvec.envs.base import MAX_GLOBAL_ID
from mjvec.envs.config import SimToolRealConfig
from mjvec.envs.simtoolreal import SimToolRealEnv
from mjvec.envs.task_math import OBS_MODES, POLICY_LAYOUT, layout_size
from mjvec.errors import ConfigError, UnknownOptionError, allowed
from mjvec.randomization import KINDS, PRESETS, EventTerm, apply_randomization, check_randomization

ENV_ID = "SimToolReal-v0"
MAX_TOOLS = 600


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class SimToolRealOptions:
    """Every keyword `make_vec` accepts (besides num_envs), validated at construction.

    backend: a name in `mjvec.backends.registry.BACKENDS`: "cpu" (MuJoCo's `mujoco.batch` thread
        pool) or "warp" (mujoco-warp, when installed).
    num_threads: CPU worker threads (None: the CPU affinity count); CPU backend only.
    max_episode_steps: control steps without a success before truncation (None: config's, 599).
    obs_mode: "policy" (Box(140)) or "asymmetric" (Dict(policy=140, critic=162)).
    env_id_offset: global id of local env 0 (shards of one run keep tool and random streams).
    num_tools: tools in use, 1..600; env with global id g gets tool g % num_tools.
    tool_geometry: how tools are modelled ("primitive" or "mesh").
    array_backend: "numpy" or "torch"; None picks the backend's native kind (numpy for "cpu",
        torch on the backend's device for "warp").
    task_namespace: where the task layer (observations, reward, resets, randomization) runs. None:
        where the backend keeps its state (numpy for "cpu", torch on the device for "warp", with no
        per-step host round trip); "numpy": on the host whatever the backend, through host copies
        of the state made every step (slower on a device; a reference for the device path).
    config: task constants; None for the paper's.
    randomization: "paper" (the source's delays, noise and pushes; `mjvec.randomization.paper`),
        None or "none" (the bare task), or a sequence of `EventTerm`s (model-field DR). Names are
        case-insensitive.
    The rest go to `MjVecEnv` unchanged.
    """

    backend: str = "cpu"
    num_threads: int | None = None
    max_episode_steps: int | None = None
    autoreset_mode: Any = "next_step"
    render_mode: str | None = None
    obs_mode: str = "policy"
    env_id_offset: int = 0
    num_tools: int = MAX_TOOLS
    tool_geometry: str = "primitive"
    array_backend: str | None = None
    task_namespace: str | None = None
    device: str | None = None
    record_episode_statistics: bool = False
    render_size: tuple[int, int] = (240, 320)
    config: SimToolRealConfig | None = None
    randomization: str | tuple[EventTerm, ...] | None = "paper"

    def __post_init__(self) -> None:
        if isinstance(self.randomization, str) and self.randomization.lower() in ("none", *PRESETS):
            key = self.randomization.lower()
            object.__setattr__(self, "randomization", None if key == "none" else key)
        check_randomization(self.randomization)
        if self.randomization is not None and not isinstance(self.randomization, str):
            object.__setattr__(self, "randomization", tuple(self.randomization))
        backend_entry(self.backend)
        if self.num_threads is not None and (not _is_int(self.num_threads) or self.num_threads < 1):
            raise ConfigError(f"num_threads must be None or an int >= 1, got {self.num_threads!r}")
        if self.max_episode_steps is not None and (not _is_int(self.max_episode_steps) or self.max_episode_steps < 1):
            raise ConfigError(f"max_episode_steps must be None or an int >= 1, got {self.max_episode_steps!r}")
        if self.obs_mode not in OBS_MODES:
            raise ConfigError(f"obs_mode={self.obs_mode!r} is not supported; allowed values are {allowed(OBS_MODES)}")
        if not _is_int(self.env_id_offset) or not 0 <= self.env_id_offset <= MAX_GLOBAL_ID:
            raise ConfigError(
                f"env_id_offset must be an int >= 0 and at most 2**63 - 1 (global env ids are int64), "
                f"got {self.env_id_offset!r}"
            )
        if not isinstance(self.record_episode_statistics, (bool, np.bool_)):
            raise ConfigError(
                f"record_episode_statistics must be True or False, got {self.record_episode_statistics!r}"
            )
        if not _is_int(self.num_tools) or not 1 <= self.num_tools <= MAX_TOOLS:
            raise ConfigError(
                f"num_tools must be an int in [1, {MAX_TOOLS}] (the catalog has {MAX_TOOLS} tools), "
                f"got {self.num_tools!r}"
            )
        if self.tool_geometry not in TOOL_GEOMETRIES:
            raise ConfigError(
                f"tool_geometry={self.tool_geometry!r} is not supported; allowed values are {allowed(TOOL_GEOMETRIES)}"
            )
        if self.task_namespace not in (None, "numpy"):
            raise ConfigError(
                f"task_namespace must be None (where the backend keeps its state) or 'numpy' (on the host), "
                f"got {self.task_namespace!r}"
            )
        if self.config is not None and not isinstance(self.config, SimToolRealConfig):
            raise ConfigError(f"config must be a SimToolRealConfig or None, got {type(self.config).__name__}")

    @classmethod
    def from_kwargs(cls, kwargs: dict[str, Any]) -> SimToolRealOptions:
        """Options from keyword arguments; unknown names raise ConfigError with the allowed set."""
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(kwargs) - names)
        if unknown:
            hints = {
                "frameskip": "; the control period is fixed by the task: config=SimToolRealConfig(frame_skip=...) "
                "sets physics substeps per control step, and skipping control steps belongs in a wrapper",
            }
            raise UnknownOptionError(
                f"{ENV_ID} got an unexpected keyword argument {unknown[0]!r}"
                + "".join(f", unexpected keyword argument {u!r}" for u in unknown[1:])
                + f"; allowed options are {allowed(names, limit=32)} (plus num_envs)"
                + "".join(hints.get(u, "") for u in unknown)
            )
        return cls(**kwargs)

    def task_config(self) -> SimToolRealConfig:
        cfg = SimToolRealConfig() if self.config is None else self.config
        if self.max_episode_steps is None:
            return cfg
        return dataclasses.replace(cfg, max_episode_steps=self.max_episode_steps)


def make_vec(num_envs: int = 1, **kwargs: Any) -> gym.vector.VectorEnv:
    """Build a `SimToolRealEnv` of `num_envs` envs (the vector entry point of SimToolReal-v0),
    wrapped with the requested randomization (default: the paper's preset).

    Keyword options: the fields of `SimToolRealOptions`. Raises ConfigError for unknown options
    or bad values.
    """
    if not _is_int(num_envs) or num_envs < 1:
        raise ConfigError(f"num_envs must be an int >= 1, got {num_envs!r}")
    opts = SimToolRealOptions.from_kwargs(kwargs)
    last_id = opts.env_id_offset + num_envs - 1
    if last_id > MAX_GLOBAL_ID:
        raise ConfigError(
            f"global env ids env_id_offset + num_envs - 1 = {last_id} exceed 2**63 - 1 (they are int64); "
            "lower env_id_offset or num_envs"
        )
    cfg = opts.task_config()
    catalog = default_catalog()
    make_variant = functools.partial(scene_spec, tool_geometry=opts.tool_geometry, catalog=catalog)
    memory.check_fits(estimate_memory(num_envs, opts, catalog, make_variant))
    scene = Scene(
        num_variants=opts.num_tools, make_variant=make_variant, num_envs=num_envs,
        env_id_offset=opts.env_id_offset, name="simtoolreal",
    )
    # The task runs where the backend keeps its state (numpy on the host, torch on a device).
    # `device` places the env's outputs; a backend that takes a device keeps its state there too.
    takes_device = backend_entry(opts.backend).default_device is not None
    backend = make_backend(opts.backend, scene, num_threads=opts.num_threads,
                           device=opts.device if takes_device else None, state_namespace=opts.task_namespace)
    try:
        env = SimToolRealEnv(
            backend,
            catalog=catalog,
            tool_geometry=opts.tool_geometry,
            config=cfg,
            obs_mode=opts.obs_mode,
            autoreset_mode=opts.autoreset_mode,
            render_mode=opts.render_mode,
            array_backend=opts.array_backend or native_namespace(backend),
            device=opts.device,
            record_episode_statistics=opts.record_episode_statistics,
            render_size=opts.render_size,
        )
    except Exception:
        backend.close()
        raise
    try:
        return apply_randomization(env, opts.randomization)
    except Exception:
        env.close()  # frees the backend too
        raise


# Per-env bytes of the paper preset's wrappers: object-pose latency (10 poses of 7 float64), the
# observation delay (3 float32 policy observations plus the last one), the action delay (3 float64
# actions) and the pushes' per-env state. `tests/test_memory.py` checks them against the wrappers.
def _paper_bytes_per_env() -> int:
    return 10 * 7 * 8 + 4 * layout_size(POLICY_LAYOUT) * 4 + 3 * 29 * 8 + 128


def estimate_memory(
    num_envs: int, opts: SimToolRealOptions, catalog: Any, make_variant: Callable[[int], mujoco.MjSpec]
) -> memory.MemoryEstimate:
    """The `mjvec.envs.memory` estimate of `num_envs` envs with these options, before anything is built.

    The canonical model is approximated by compiling one used tool per topology class and taking
    the largest estimate (each class has one geom layout).
    """
    used = (opts.env_id_offset + np.arange(min(num_envs, opts.num_tools), dtype=np.int64)) % opts.num_tools
    first_of_class: dict[str, int] = {}
    for tool in used.tolist():
        first_of_class.setdefault(catalog[tool].topology, tool)
    wrappers = 0
    if opts.randomization == "paper":
        wrappers = _paper_bytes_per_env()
    estimates = []
    for tool in first_of_class.values():
        model = make_variant(tool).compile()
        if isinstance(opts.randomization, tuple):
            wrappers = _terms_bytes_per_env(model, opts.randomization)
        estimates.append(memory.estimate_memory(
            model, num_envs, bound_fields=SimToolRealEnv.bound_fields(opts.obs_mode),
            task_bytes_per_env=SimToolRealEnv.bytes_per_env(opts.obs_mode), wrapper_bytes_per_env=wrappers,
        ))
    return max(estimates, key=lambda e: e.per_env_bytes)


def _terms_bytes_per_env(model: mujoco.MjModel, terms: tuple[EventTerm, ...]) -> int:
    """Each term keeps its draws (`dr_params`) and makes the backend keep a per-env copy of its field."""
    specs = field_specs(model, np.float64)
    total = 0
    for term in terms:
        spec = specs.get(KINDS[term.kind][0])
        total += 2 * 8 * int(np.prod(spec.shape)) + 16 if spec is not None else 16
    return total


def make_single(**kwargs: Any) -> gym.Env:
    """The single-env entry point: env 0 of a one-env vector env, autoreset disabled."""
    from mjvec.envs.single import SingleEnv

    for name, fixed in (("num_envs", 1), ("autoreset_mode", "disabled"), ("array_backend", "numpy")):
        if name in kwargs and kwargs[name] != fixed:
            raise ConfigError(
                f"gym.make({ENV_ID!r}) builds one env with {name}={fixed!r}; got {name}={kwargs[name]!r}. "
                f"Use gym.make_vec({ENV_ID!r}, ...) for other settings"
            )
        kwargs.pop(name, None)
    return SingleEnv(make_vec(1, autoreset_mode="disabled", array_backend="numpy", **kwargs))


def register_envs() -> None:
    """Register SimToolReal-v0 with Gymnasium (idempotent: a second call does nothing)."""
    if ENV_ID in gym.registry:
        return
    gym.register(
        ENV_ID,
        entry_point=make_single,
        vector_entry_point=make_vec,
        max_episode_steps=None,
    )
