"""Registering a task: the options every task shares (validated once, here) and the one path from
``gym.make_vec`` / ``gym.make`` to a built, randomized env.

A task is an `MjVecEnv` subclass plus what `register_task` needs to build it::

    from mjvec.envs.tasks import TaskOptions, register_task

    @dataclass(frozen=True)
    class MyOptions(TaskOptions):           # the shared options + the task's own keywords
        pole_length: float = 0.5

    register_task(
        "MyTask-v0",
        env_class=MyEnv,                    # MyEnv(backend, **env_kwargs(opts), **the shared env options)
        options=MyOptions,
        variants=lambda o: (3, my_spec),    # (num_variants, make_variant(v) -> MjSpec)
        env_kwargs=lambda o: {"pole_length": o.pole_length},
    )
    env = gym.make_vec("MyTask-v0", num_envs=64, pole_length=0.7)

`tests/third_task.py` is a complete example written with this public API only.

What every task gets from this path: every option is a plain keyword (unknown ones raise
`UnknownOptionError` naming the allowed set); env i of a batch holds variant
``(env_id_offset + i) % num_variants``; the configuration's memory is estimated (`mjvec.envs.memory`)
and refused before anything is allocated when it cannot fit; the backend is made by name, its state
in the task's namespace (a device's tensors for a task written against the array API, host views
for a numpy-only one); ``randomization`` is None / ``"none"``, one of the task's own presets
(``presets={name: wrap}``; ``"paper"`` means each task's own), or a list of `EventTerm`s; and
``gym.make(env_id)`` gives a single `gymnasium.Env` (`mjvec.envs.single.SingleEnv`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from types import MappingProxyType
from typing import Any, ClassVar

import gymnasium as gym
import mujoco
import numpy as np
from gymnasium.vector import VectorEnv

from mjvec.backends.base import Scene
from mjvec.backends.fields import field_specs
from mjvec.backends.registry import backend_entry, make_backend, native_namespace
from mjvec.envs import memory
from mjvec.envs._autoreset import parse_autoreset_mode
from mjvec.envs.arrays import ARRAY_BACKENDS
from mjvec.envs.base import MAX_GLOBAL_ID, RENDER_MODES, MjVecEnv
from mjvec.errors import ConfigError, UnknownOptionError, allowed
from mjvec.randomization import KINDS, EventTerm, apply_randomization, check_randomization

Preset = Callable[[VectorEnv], VectorEnv]
Variants = tuple[int, Callable[[int], mujoco.MjSpec]]


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


@dataclass(frozen=True)
class TaskOptions:
    """The keyword options every task accepts (besides num_envs), validated in `__post_init__`.

    backend: a name in `mjvec.backends.registry.BACKENDS` ("cpu": MuJoCo's `mujoco.batch` thread
        pool; "warp": mujoco-warp, when installed).
    num_threads: CPU worker threads (None: the CPU affinity count); threaded backends only.
    device: where a device backend keeps its state and where torch outputs live (None: the
        backend's default).
    array_backend: "numpy" or "torch"; None picks the backend's native kind.
    autoreset_mode: "next_step" (default), "same_step", "disabled", or an `AutoresetMode`.
    render_mode: None or "rgb_array". render_size: (height, width) of each env's frame.
    env_id_offset: global id of local env 0 (shards of one run keep variants and random streams).
    randomization: None or "none" (the bare task), the name of one of the task's presets
        (case-insensitive), or a sequence of `EventTerm`s (model-field DR).
    record_episode_statistics: add ``info["episode"]`` at episode ends.
    max_episode_steps: the episode limit in control steps (None: the task's own).
    task_namespace: where the task layer runs. None: where the backend keeps its state if the task
        runs in that namespace (`register_task`'s ``namespaces``), else numpy over host views;
        "numpy": on the host whatever the backend, through per-step host copies of a device's
        state (slower on a device; the reference the device path is tested against).

    A task subclasses this (a frozen dataclass) to add its own options, may change a default by
    redefining the field (SimToolReal-v0 defaults to randomization="paper"), and validates its own
    fields in its `__post_init__` after calling this one. `HINTS` maps a commonly mistaken option
    name to advice appended to the unknown-option error.
    """

    HINTS: ClassVar[Mapping[str, str]] = MappingProxyType({})

    backend: str = "cpu"
    num_threads: int | None = None
    device: str | None = None
    array_backend: str | None = None
    autoreset_mode: Any = "next_step"
    render_mode: str | None = None
    render_size: tuple[int, int] = (240, 320)
    env_id_offset: int = 0
    randomization: str | tuple[EventTerm, ...] | None = None
    record_episode_statistics: bool = False
    max_episode_steps: int | None = None
    task_namespace: str | None = None

    def __post_init__(self) -> None:
        randomization = self.randomization
        if isinstance(randomization, str):
            randomization = None if randomization.lower() == "none" else randomization.lower()
        elif randomization is not None:
            check_randomization(randomization, presets=None)  # a sequence of EventTerm, or a clear error
            randomization = tuple(randomization)
        object.__setattr__(self, "randomization", randomization)
        backend_entry(self.backend)
        if self.num_threads is not None and (not _is_int(self.num_threads) or self.num_threads < 1):
            raise ConfigError(f"num_threads must be None or an int >= 1, got {self.num_threads!r}")
        if self.max_episode_steps is not None and (not _is_int(self.max_episode_steps) or self.max_episode_steps < 1):
            raise ConfigError(f"max_episode_steps must be None or an int >= 1, got {self.max_episode_steps!r}")
        if not _is_int(self.env_id_offset) or not 0 <= self.env_id_offset <= MAX_GLOBAL_ID:
            raise ConfigError(
                f"env_id_offset must be an int >= 0 and at most 2**63 - 1 (global env ids are int64), "
                f"got {self.env_id_offset!r}"
            )
        if not isinstance(self.record_episode_statistics, (bool, np.bool_)):
            raise ConfigError(
                f"record_episode_statistics must be True or False, got {self.record_episode_statistics!r}"
            )
        parse_autoreset_mode(self.autoreset_mode)
        if self.render_mode is not None and self.render_mode not in RENDER_MODES:
            raise ConfigError(
                f"render_mode={self.render_mode!r} is not supported; allowed values are None or {RENDER_MODES}"
            )
        if self.array_backend is not None and self.array_backend not in ARRAY_BACKENDS:
            raise ConfigError(
                f"array_backend={self.array_backend!r} is not supported; allowed values are None or "
                f"{allowed(ARRAY_BACKENDS)}"
            )
        if self.task_namespace not in (None, "numpy"):
            raise ConfigError(
                f"task_namespace must be None (where the backend keeps its state) or 'numpy' (on the host), "
                f"got {self.task_namespace!r}"
            )

    def env_options(self, backend: Any) -> dict[str, Any]:
        """The `MjVecEnv` keyword arguments these options set, for an env over `backend`."""
        return {
            "autoreset_mode": self.autoreset_mode,
            "render_mode": self.render_mode,
            "array_backend": self.array_backend or native_namespace(backend),
            "device": self.device,
            "record_episode_statistics": self.record_episode_statistics,
            "render_size": self.render_size,
        }


def _first_used(opts: TaskOptions, used: np.ndarray) -> Sequence[int]:
    return used[:1].tolist()


@dataclass(frozen=True)
class Task:
    """A registered task (see `register_task` for the fields); its methods are Gymnasium's entry points."""

    env_id: str
    env_class: type[MjVecEnv]
    options: type[TaskOptions]
    variants: Callable[[Any], Variants]
    env_kwargs: Callable[[Any], Mapping[str, Any]]
    presets: Mapping[str, Preset]
    bound_fields: Callable[[Any], Sequence[str]]
    bytes_per_env: Callable[[Any], int]
    preset_bytes: Callable[[Any, mujoco.MjModel], int]
    memory_variants: Callable[[Any, np.ndarray], Sequence[int]]
    namespaces: tuple[str, ...] = ("numpy",)
    scene_options: Callable[[Any], Mapping[str, Any]] = lambda opts: {}

    # Gymnasium deep-copies an env spec (and so its entry points, bound methods of this task) on
    # every make; a task is immutable and registered once, so copies are the task itself, and a
    # pickle refers to it by id (the receiving process must have registered it too).
    def __copy__(self) -> Task:
        return self

    def __deepcopy__(self, memo: dict) -> Task:
        return self

    def __reduce__(self) -> tuple[Callable[[str], Task], tuple[str]]:
        return get_task, (self.env_id,)

    def parse_options(self, kwargs: Mapping[str, Any]) -> TaskOptions:
        """The task's options from keyword arguments; unknown names raise `UnknownOptionError`
        naming the allowed set, a preset the task does not have raises `ConfigError` naming its presets."""
        names = {f.name for f in fields(self.options)}
        unknown = sorted(set(kwargs) - names)
        if unknown:
            raise UnknownOptionError(
                f"{self.env_id} got an unexpected keyword argument {unknown[0]!r}"
                + "".join(f", unexpected keyword argument {u!r}" for u in unknown[1:])
                + f"; allowed options are {allowed(names, limit=32)} (plus num_envs)"
                + "".join(self.options.HINTS.get(u, "") for u in unknown)
            )
        opts = self.options(**kwargs)
        if isinstance(opts.randomization, str) and opts.randomization not in self.presets:
            raise ConfigError(
                f"randomization={opts.randomization!r} is not a preset of {self.env_id}; its presets are "
                f"{allowed(self.presets)}; pass one of them, None (the bare task) or a list of EventTerm"
            )
        return opts

    def make_vec(self, num_envs: int = 1, **kwargs: Any) -> VectorEnv:
        """Build `num_envs` envs of this task (its vector entry point), wrapped with the requested
        randomization. Keyword options: the fields of the task's options class."""
        if not _is_int(num_envs) or num_envs < 1:
            raise ConfigError(f"num_envs must be an int >= 1, got {num_envs!r}")
        opts = self.parse_options(kwargs)
        last_id = opts.env_id_offset + num_envs - 1
        if last_id > MAX_GLOBAL_ID:
            raise ConfigError(
                f"global env ids env_id_offset + num_envs - 1 = {last_id} exceed 2**63 - 1 (they are int64); "
                "lower env_id_offset or num_envs"
            )
        num_variants, make_variant = self.variants(opts)
        memory.check_fits(self.estimate_memory(num_envs, opts))
        scene = Scene(num_variants=num_variants, make_variant=make_variant, num_envs=num_envs,
                      env_id_offset=opts.env_id_offset, name=self.env_id, **self.scene_options(opts))
        # The task runs where the backend keeps its state when it can (no per-step host round trip
        # on a device); a numpy-only task, or task_namespace="numpy", gets host views.
        takes_device = backend_entry(opts.backend).default_device is not None
        host = opts.task_namespace == "numpy" or "torch" not in self.namespaces
        backend = make_backend(opts.backend, scene, num_threads=opts.num_threads,
                               device=opts.device if takes_device else None, state_namespace="numpy" if host else None)
        try:
            env = self.env_class(backend, **self.env_kwargs(opts), **opts.env_options(backend))
        except Exception:
            backend.close()
            raise
        try:
            if isinstance(opts.randomization, str):
                return self.presets[opts.randomization](env)
            return apply_randomization(env, opts.randomization)
        except Exception:
            env.close()  # frees the backend too
            raise

    def make_single(self, **kwargs: Any) -> gym.Env:
        """The single-env entry point: env 0 of a one-env vector env, autoreset disabled."""
        from mjvec.envs.single import SingleEnv

        for name, fixed in (("num_envs", 1), ("autoreset_mode", "disabled"), ("array_backend", "numpy")):
            if name in kwargs and kwargs[name] != fixed:
                raise ConfigError(
                    f"gym.make({self.env_id!r}) builds one env with {name}={fixed!r}; got {name}={kwargs[name]!r}. "
                    f"Use gym.make_vec({self.env_id!r}, ...) for other settings"
                )
            kwargs.pop(name, None)
        return SingleEnv(self.make_vec(1, autoreset_mode="disabled", array_backend="numpy", **kwargs))

    def estimate_memory(self, num_envs: int, opts: TaskOptions) -> memory.MemoryEstimate:
        """The `mjvec.envs.memory` estimate of `num_envs` envs with `opts`, before anything is built.

        Compiles the variants `memory_variants` picks among those in use (default: the first) and
        keeps the largest estimate; the task declares what it binds and holds per env, and its
        presets' per-env state (`preset_bytes`).
        """
        num_variants, make_variant = self.variants(opts)
        used = (opts.env_id_offset + np.arange(min(num_envs, num_variants), dtype=np.int64)) % num_variants
        estimates = []
        for variant in self.memory_variants(opts, used):
            model = make_variant(int(variant)).compile()
            if isinstance(opts.randomization, str):
                wrappers = self.preset_bytes(opts, model)
            else:
                wrappers = terms_bytes_per_env(model, opts.randomization or ())
            estimates.append(memory.estimate_memory(
                model, num_envs, bound_fields=self.bound_fields(opts), task_bytes_per_env=self.bytes_per_env(opts),
                wrapper_bytes_per_env=wrappers,
            ))
        return max(estimates, key=lambda e: e.per_env_bytes)


def terms_bytes_per_env(model: mujoco.MjModel, terms: Sequence[EventTerm]) -> int:
    """Each term keeps its draws (`dr_params`) and makes the backend keep a per-env copy of its field."""
    specs = field_specs(model, np.float64)
    total = 0
    for term in terms:
        spec = specs.get(KINDS[term.kind][0])
        total += 2 * 8 * int(np.prod(spec.shape)) + 16 if spec is not None else 16
    return total


_TASKS: dict[str, Task] = {}


def register_task(
    env_id: str,
    *,
    env_class: type[MjVecEnv],
    variants: Callable[[Any], Variants],
    options: type[TaskOptions] = TaskOptions,
    env_kwargs: Callable[[Any], Mapping[str, Any]] = lambda opts: {},
    presets: Mapping[str, Preset] | None = None,
    bound_fields: Callable[[Any], Sequence[str]] = lambda opts: (),
    bytes_per_env: Callable[[Any], int] = lambda opts: 0,
    preset_bytes: Callable[[Any, mujoco.MjModel], int] = lambda opts, model: 0,
    memory_variants: Callable[[Any, np.ndarray], Sequence[int]] = _first_used,
    namespaces: Sequence[str] = ("numpy",),
    scene_options: Callable[[Any], Mapping[str, Any]] = lambda opts: {},
) -> Task:
    """Register `env_id` with Gymnasium (``gym.make_vec`` and ``gym.make``) and mjvec's CLI.

    env_class: the `MjVecEnv` subclass; it is built as ``env_class(backend, **env_kwargs(opts),
        **opts.env_options(backend))``, over a backend whose state views are in one of `namespaces`.
    namespaces: the array namespaces the task's code runs in: ("numpy",) (the default: numpy-only
        code, given host views of a device backend's state) or ("numpy", "torch") for a task
        written against the array API (`mjvec.xp`), which then runs on the device's tensors.
    variants(opts): (num_variants, make_variant), make_variant(v) returning a fresh, independently
        compilable MjSpec of variant v (a pure function of v); env with global id g gets variant
        g % num_variants.
    options: a `TaskOptions` subclass (a frozen dataclass) with the task's own options.
    env_kwargs(opts): the task-specific constructor arguments of `env_class`.
    presets: name -> wrap(env), the named randomization settings ``randomization=name`` selects;
        names are lower-case ("none" is reserved).
    bound_fields(opts), bytes_per_env(opts): the MjData fields the task binds and the host bytes it
        holds per env (`mjvec.envs.memory`); preset_bytes(opts, model): the per-env bytes of the
        chosen preset's wrappers; memory_variants(opts, used variant ids): which variants to
        compile for the estimate (default: the first used one; list one per distinct layout).
    scene_options(opts): extra `mjvec.backends.base.Scene` fields the task needs from every backend
        (e.g. ``{"rne_post_constraint": True}`` for contact forces as mj_rnePostConstraint gives them).

    Returns the `Task`. Raises ConfigError for an id already registered (with Gymnasium or here)
    or a malformed argument.
    """
    if not isinstance(env_id, str) or not env_id:
        raise ConfigError(f"env_id must be a non-empty str such as 'MyTask-v0', got {env_id!r}")
    if env_id in _TASKS or env_id in gym.registry:
        raise ConfigError(
            f"{env_id!r} is already registered; pick another id (e.g. bump its version, 'Name-v1'), or call "
            "mjvec.envs.tasks.unregister_task first to replace it"
        )
    if not (isinstance(env_class, type) and issubclass(env_class, MjVecEnv)):
        raise ConfigError(f"env_class must be an MjVecEnv subclass, got {env_class!r}")
    if not (isinstance(options, type) and issubclass(options, TaskOptions) and dataclasses.is_dataclass(options)):
        raise ConfigError(f"options must be a TaskOptions subclass (a frozen dataclass), got {options!r}")
    presets = dict(presets or {})
    bad = [name for name in presets if not isinstance(name, str) or name != name.lower() or name == "none"]
    if bad or not all(callable(wrap) for wrap in presets.values()):
        raise ConfigError(
            f"presets must map lower-case names other than 'none' to callables wrap(env) -> env; got {presets!r}"
        )
    callables = {"variants": variants, "env_kwargs": env_kwargs, "bound_fields": bound_fields,
                 "bytes_per_env": bytes_per_env, "preset_bytes": preset_bytes, "memory_variants": memory_variants,
                 "scene_options": scene_options}
    not_callable = [name for name, fn in callables.items() if not callable(fn)]
    if not_callable:
        raise ConfigError(f"register_task({env_id!r}): {not_callable} must be callables")
    namespaces = tuple(namespaces)
    if "numpy" not in namespaces or not set(namespaces) <= {"numpy", "torch"}:
        raise ConfigError(
            f"register_task({env_id!r}): namespaces must be ('numpy',) or ('numpy', 'torch'), got {namespaces!r}"
        )
    task = Task(env_id, env_class, options, presets=MappingProxyType(presets), namespaces=namespaces, **callables)
    gym.register(env_id, entry_point=task.make_single, vector_entry_point=task.make_vec, max_episode_steps=None)
    _TASKS[env_id] = task
    return task


def unregister_task(env_id: str) -> None:
    """Remove a task registered with `register_task` (from Gymnasium too); ConfigError if unknown."""
    if env_id not in _TASKS:
        raise ConfigError(f"{env_id!r} is not a registered task; registered tasks are {allowed(_TASKS)}")
    del _TASKS[env_id]
    gym.registry.pop(env_id, None)


def registered_tasks() -> Mapping[str, Task]:
    """Every task registered so far (a read-only view), by env id."""
    return MappingProxyType(_TASKS)


def get_task(env_id: str) -> Task:
    """The registered task `env_id`, or ConfigError naming the registered ones."""
    task = _TASKS.get(env_id)
    if task is None:
        raise ConfigError(
            f"{env_id!r} is not a registered mjvec task; registered tasks are {allowed(_TASKS)} "
            "(see python -m mjvec list)"
        )
    return task
