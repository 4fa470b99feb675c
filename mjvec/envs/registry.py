"""Registering a task: the options every task shares (validated once, here) and the one path from
``gym.make_vec`` / ``gym.make`` to a built, randomized env.

A task is an `MjVecEnv` subclass plus what `register_task` needs to build it::

    from mjvec.envs.registry import TaskOptions, register_task

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
import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from types import MappingProxyType
from typing import Any

import gymnasium as gym
import mujoco
from gymnasium.vector import VectorEnv

from mjvec.backends.base import Scene
from mjvec.backends.registry import BackendRequest, backend_entry
from mjvec.envs import memory
from mjvec.envs.base import MAX_GLOBAL_ID, MjVecEnv
from mjvec.envs.cameras import CameraSetup, camera_setup
from mjvec.envs.options import TaskOptions
from mjvec.errors import ConfigError, UnknownOptionError, allowed, is_int
from mjvec.randomization import apply_randomization

Preset = Callable[[VectorEnv], VectorEnv]
# gym.make_vec's own parameters: an options field of one of these names would never be set.
MAKE_VEC_ARGUMENTS = frozenset({"id", "num_envs", "vectorization_mode", "vector_kwargs", "wrappers"})
Variants = tuple[int, Callable[[int], mujoco.MjSpec]]


@dataclass(frozen=True)
class Task:
    """A registered task (see `register_task` for the fields); its methods are Gymnasium's entry points."""

    env_id: str
    env_class: type[MjVecEnv]
    options: type[TaskOptions]
    variants: Callable[[Any], Variants]
    env_kwargs: Callable[[Any], Mapping[str, Any]]
    presets: Mapping[str, Preset]
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

    def checked_variants(self, opts: TaskOptions) -> Variants:
        """``variants(opts)``, checked: (num_variants >= 1, make_variant), make_variant wrapped so that
        every variant it builds is checked to be an MjSpec (not, e.g., an already compiled MjModel)."""
        result = self.variants(opts)
        count, make = result if isinstance(result, tuple) and len(result) == 2 else (None, None)
        if count is None:
            wrong = f"got {result!r}"
        elif not (is_int(count) and count >= 1):
            wrong = f"num_variants={count!r}"
        elif not callable(make):
            wrong = f"make_variant={make!r}"
        else:
            setup = self.cameras(opts)
            if setup is not None:  # every variant gets the cameras (and their rangefinders)
                make = setup.make_variant(make)
            return int(count), functools.partial(_checked_variant, self.env_id, make)
        raise ConfigError(
            f"{self.env_id}: variants(opts) must return (num_variants, make_variant): an int >= 1 and a callable "
            f"v -> MjSpec; {wrong}"
        )

    def cameras(self, opts: TaskOptions) -> CameraSetup | None:
        """The camera observations `opts` ask for, resolved against the env class's own cameras
        (`MjVecEnv.task_cameras`); None without ``cameras=``."""
        if opts.cameras is None:
            return None
        return camera_setup(self.env_id, self.env_class.task_cameras(opts), opts.cameras,
                            frame_stack=opts.frame_stack, render_every=opts.render_every)

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
        randomization. Keyword options: the fields of the task's options class.

        Before anything proportional to num_envs is allocated, the memory the backend and the task
        need is estimated and checked (`mjvec.envs.memory`) against the memory available before the
        build: over the first variant in use, then over the largest of the variants as the backend
        compiles them (each once), before it allocates; once the wrappers are built, and before they
        allocate their per-env state, the whole estimate (backend, task and wrappers) is checked
        against that same available memory.
        """
        if not is_int(num_envs) or num_envs < 1:
            raise ConfigError(f"num_envs must be an int >= 1, got {num_envs!r}")
        opts = self.parse_options(kwargs)
        last_id = opts.env_id_offset + num_envs - 1
        if last_id > MAX_GLOBAL_ID:
            raise ConfigError(
                f"global env ids env_id_offset + num_envs - 1 = {last_id} exceed 2**63 - 1 (they are int64); "
                "lower env_id_offset or num_envs"
            )
        request, host = self.placement(opts)
        num_variants, make_variant = self.checked_variants(opts)
        first = opts.env_id_offset % num_variants
        spec = make_variant(first)
        model = spec.compile()
        def estimate(variant: mujoco.MjModel) -> memory.MemoryEstimate:
            return self._estimate(num_envs, opts, [variant], request, host)

        available = memory.Available.now(estimate(model))  # before the build allocates (lazily, in part)
        check = memory.VariantMemoryCheck(estimate, available=available.host, device_available=available.device)
        check(first, model)
        scene = Scene(num_variants=num_variants, make_variant=make_variant, num_envs=num_envs,
                      env_id_offset=opts.env_id_offset, name=self.env_id, check_variant=check,
                      **self.env_class.scene_options(opts))
        scene.keep_compiled(first, spec, model)
        backend = request.build(scene)
        setup = self.cameras(opts)
        try:
            env = self.env_class(backend, **self.env_kwargs(opts), **opts.env_options(backend),
                                 **({} if setup is None else {"camera_setup": setup}))
        except Exception:
            backend.close()
            raise
        try:
            if isinstance(opts.randomization, str):
                wrapped = self.presets[opts.randomization](env)
            else:
                wrapped = apply_randomization(env, opts.randomization)
            total = check.estimate.with_host_item("wrappers", wrapper_bytes_per_env(wrapped))
            memory.check_fits(total, available.host, available.device)
            return wrapped
        except Exception:
            env.close()  # frees the backend too
            raise

    def placement(self, opts: TaskOptions) -> tuple[BackendRequest, bool]:
        """Where a build with `opts` runs: (the backend request, checked once, whether the task
        layer runs on host views). The task runs where the backend keeps its state when it can (no
        per-step host round trip on a device); a numpy-only task, or task_namespace="numpy", gets
        host views. `device` goes to the backend only where it takes one (for the CPU backend it is
        the output device of torch arrays)."""
        takes_device = backend_entry(opts.backend).default_device is not None
        host = opts.task_namespace == "numpy" or "torch" not in self.namespaces
        request = BackendRequest(opts.backend, num_threads=opts.num_threads,
                                 device=opts.device if takes_device else None, nconmax=opts.nconmax,
                                 njmax=opts.njmax, deterministic=opts.deterministic,
                                 state_namespace="numpy" if host else None)
        return request, host

    def make_single(self, **kwargs: Any) -> gym.Env:
        """The single-env entry point: env 0 of a one-env vector env, autoreset disabled. Refused
        inside ``gym.make_vec(..., vectorization_mode="async")`` (`refuse_async_make_vec`)."""
        from mjvec.envs.single import SingleEnv

        refuse_async_make_vec(self.env_id)
        for name, fixed in (("num_envs", 1), ("autoreset_mode", "disabled"), ("array_backend", "numpy")):
            if name in kwargs and kwargs[name] != fixed:
                raise ConfigError(
                    f"gym.make({self.env_id!r}) builds one env with {name}={fixed!r}; got {name}={kwargs[name]!r}. "
                    f"Use gym.make_vec({self.env_id!r}, ...) for other settings"
                )
            kwargs.pop(name, None)
        return SingleEnv(self.make_vec(1, autoreset_mode="disabled", array_backend="numpy", **kwargs))

    def estimate_memory(self, num_envs: int, opts: TaskOptions,
                        models: mujoco.MjModel | Sequence[mujoco.MjModel] | None = None) -> memory.MemoryEstimate:
        """The `mjvec.envs.memory` estimate of `num_envs` envs with `opts`, before anything is built:
        the backend's own per-env bytes (its estimator, `BackendRequest.estimate_memory`) and what the
        env class declares (`MjVecEnv.memory_needs`), item by item the largest over the compiled
        variants `models` (None: every variant num_envs envs use, compiled here and estimated once per
        `size_class`)."""
        request, host = self.placement(opts)
        if models is None:
            num_variants, make_variant = self.checked_variants(opts)
            check = memory.VariantMemoryCheck(lambda variant: self._estimate(num_envs, opts, [variant], request, host),
                                              refuse=False)
            for v in memory.used_variants(num_envs, num_variants, opts.env_id_offset):
                check(int(v), make_variant(int(v)).compile())
            return check.estimate  # type: ignore[return-value]
        return self._estimate(num_envs, opts, [models] if isinstance(models, mujoco.MjModel) else models,
                              request, host)

    def _estimate(self, num_envs: int, opts: TaskOptions, models: Sequence[mujoco.MjModel], request: BackendRequest,
                  host: bool) -> memory.MemoryEstimate:
        needs = self.env_class.memory_needs(opts)
        setup = self.cameras(opts)
        bound = needs.bound_fields + (() if setup is None else setup.bound_fields)
        images = {} if setup is None else {"images": setup.bytes_per_env()}
        return memory.largest([
            memory.estimate_memory(num_envs, request.estimate_memory(model, bound),
                                   task_bytes_per_env=needs.bytes_per_env, task_on_device=not host, extra=images)
            for model in models])


def _checked_variant(env_id: str, make_variant: Callable[[int], Any], v: int) -> mujoco.MjSpec:
    spec = make_variant(v)
    if not isinstance(spec, mujoco.MjSpec):
        hint = " (a compiled model: leave out .compile())" if isinstance(spec, mujoco.MjModel) else ""
        raise ConfigError(
            f"{env_id}: make_variant({v}) returned a {type(spec).__name__}; it must return a fresh mujoco.MjSpec "
            f"of variant {v}, which mjvec compiles itself{hint}"
        )
    return spec


def refuse_async_make_vec(env_id: str) -> None:
    """ConfigError if this single env is being built by ``gym.make_vec(env_id, vectorization_mode="async")``.

    Gymnasium's make_vec takes the mode itself and never passes it to an entry point, so the single
    env's entry point looks for make_vec's frame on the call stack: AsyncVectorEnv builds its first
    env in this process (to read the spaces) before it starts any worker, so nothing has started.
    A single env in an AsyncVectorEnv built by hand is left alone (the user asked for processes)."""
    import sys

    from gymnasium.envs.registration import VectorizeMode
    from gymnasium.envs.registration import make_vec as gym_make_vec

    frame = sys._getframe(1)
    while frame is not None and frame.f_code is not gym_make_vec.__code__:
        frame = frame.f_back
    if frame is None or frame.f_locals.get("vectorization_mode") is not VectorizeMode.ASYNC:
        return
    raise ConfigError(
        f"gym.make_vec({env_id!r}, vectorization_mode='async') would run one process per env, each a one-env "
        "mjvec batch: the opposite of what mjvec is for. An mjvec id builds ONE batched env of num_envs "
        "simulations in this process (stepped in parallel by the backend: num_threads on cpu, the device on "
        "warp): use vectorization_mode='vector_entry_point' (the default for mjvec ids: leave it out). "
        "vectorization_mode='sync' gives Gymnasium's SyncVectorEnv of num_envs one-env batches stepped one "
        "after another (for comparisons only). More processes: shard with env_id_offset, one make_vec each"
    )


def wrapper_bytes_per_env(env: Any) -> int:
    """What the randomization wrappers around an env will hold per env (`HookWrapper.per_env_bytes`)."""
    total = 0
    while hasattr(env, "env"):
        per_env = getattr(env, "per_env_bytes", None)
        total += int(per_env()) if callable(per_env) else 0
        env = env.env
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
    namespaces: Sequence[str] = ("numpy",),
    **removed: Any,
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
    The memory estimate needs nothing here: the env class declares what it holds
    (`MjVecEnv.memory_needs`), each wrapper reports its own state (`HookWrapper.per_env_bytes`), and
    the backend estimates itself.

    Returns the `Task`. Raises ConfigError for an id already registered (with Gymnasium or here)
    or a malformed argument.
    """
    if removed:
        raise ConfigError(
            f"register_task({env_id!r}) got {sorted(removed)}: the memory arguments were removed. Declare what the "
            "env holds per env on its class instead (override MjVecEnv.memory_needs(options) to return "
            "mjvec.envs.memory.MemoryNeeds(bound_fields=..., bytes_per_env=...)); wrappers report their own state"
        )
    if not isinstance(env_id, str) or not env_id:
        raise ConfigError(f"env_id must be a non-empty str such as 'MyTask-v0', got {env_id!r}")
    if env_id in _TASKS or env_id in gym.registry:
        raise ConfigError(
            f"{env_id!r} is already registered; pick another id (e.g. bump its version, 'Name-v1'), or call "
            "mjvec.envs.registry.unregister_task first to replace it"
        )
    callables = {"variants": variants, "env_kwargs": env_kwargs}
    presets, namespaces = _checked_task_args(env_id, env_class, options, presets, namespaces, callables)
    task = Task(env_id, env_class, options, presets=MappingProxyType(presets), namespaces=namespaces, **callables)
    gym.register(env_id, entry_point=task.make_single, vector_entry_point=task.make_vec, max_episode_steps=None)
    _TASKS[env_id] = task
    return task


def _checked_task_args(env_id: str, env_class: Any, options: Any, presets: Any, namespaces: Any,
                       callables: Mapping[str, Any]) -> tuple[dict[str, Preset], tuple[str, ...]]:
    """`register_task`'s arguments checked, each with the error that names it: (presets, namespaces)."""
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
    not_callable = [name for name, fn in callables.items() if not callable(fn)]
    if not_callable:
        raise ConfigError(f"register_task({env_id!r}): {not_callable} must be callables")
    if isinstance(namespaces, (str, bytes)):
        raise ConfigError(
            f"register_task({env_id!r}): namespaces must be a sequence of names, ('numpy',) or ('numpy', 'torch'), "
            f"not the str {namespaces!r}; write namespaces=({namespaces!r},)"
        )
    shadowed = sorted({f.name for f in fields(options)} & MAKE_VEC_ARGUMENTS)
    if shadowed:
        raise ConfigError(
            f"register_task({env_id!r}): options field {shadowed[0]!r} of {options.__name__} is an argument of "
            "gym.make_vec itself, so it would never reach the options (make_vec keeps it); rename it (e.g. "
            f"{shadowed[0] + '_' + 'task'!r}). make_vec's own arguments are {allowed(MAKE_VEC_ARGUMENTS)}"
        )
    namespaces = tuple(namespaces)
    if "numpy" not in namespaces or not set(namespaces) <= {"numpy", "torch"}:
        raise ConfigError(
            f"register_task({env_id!r}): namespaces must be ('numpy',) or ('numpy', 'torch'), got {namespaces!r}"
        )
    return presets, namespaces


def register_once(env_id: str, **kwargs: Any) -> Task:
    """`register_task(env_id, **kwargs)`, or the task already registered under `env_id` by an earlier
    call with the same env class (a task package's `register_envs` may run more than once: at
    ``import mjvec`` and when called again). Another class under the id raises ConfigError."""
    task = _TASKS.get(env_id)
    if task is None:
        return register_task(env_id, **kwargs)
    if task.env_class is not kwargs.get("env_class"):
        raise ConfigError(
            f"{env_id!r} is already registered with env class {task.env_class.__name__}, not "
            f"{getattr(kwargs.get('env_class'), '__name__', kwargs.get('env_class'))!r}; pick another id"
        )
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
