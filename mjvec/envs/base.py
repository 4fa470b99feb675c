"""`MjVecEnv`: the generic batched MuJoCo env, a real `gymnasium.vector.VectorEnv`.

A task subclasses it and implements five hooks (`_apply_action`, `_evaluate`, `_observe`,
`_reset_envs`, optionally `_success`)::

    import gymnasium as gym, mujoco, numpy as np
    from mjvec.envs.base import MjVecEnv
    from mjvec.envs.registry import register_task

    XML = ('<mujoco><worldbody><body><joint name="x" type="slide"/><geom size=".1"/></body></worldbody>'
           '<actuator><motor joint="x"/></actuator></mujoco>')

    class Slide(MjVecEnv):                    # push a body along x to the origin
        def __init__(self, backend, **options):   # options: make_vec's shared ones (autoreset_mode, ...)
            super().__init__(backend, frame_skip=2, single_action_space=gym.spaces.Box(-1, 1, (1,)),
                             single_observation_space=gym.spaces.Box(-np.inf, np.inf, (2,), np.float64), **options)
        def _apply_action(self, actions):     # (N, 1), validated and clipped
            self.backend.ctrl[:] = actions
        def _observe(self):                   # (N, 2): a pure function of the state
            return self.xp.concat([self.backend.qpos, self.backend.qvel], axis=1)
        def _evaluate(self, active):          # after the physics: reward, terminated, truncated, info
            dist = self.xp.abs(self.backend.qpos[:, 0])
            return -dist, dist < 0.01, dist > 1.0, {}
        def _reset_envs(self, rows):          # initial states of these envs, from their own streams
            qpos = self.rng.uniform(rows, "reset/x", -0.5, 0.5, (1,))
            self.backend.reset(rows.ids, qpos, np.zeros_like(qpos))

    register_task("Slide-v0", env_class=Slide, variants=lambda o: (1, lambda v: mujoco.MjSpec.from_string(XML)))
    obs, info = gym.make_vec("Slide-v0", num_envs=8).reset(seed=0)

tests/third_task.py is a complete task, with options, presets and a device path. What a subclass
may use besides the hooks: ``backend`` (`mjvec.backends.base.Backend`: its state views and
``reset``), ``num_envs``, ``global_env_ids`` (N,) int64, ``rng`` (`EnvRandom`, the ONLY source of
randomness), ``xp`` and ``arrays`` (`mjvec.envs.records.ArraySpace`: ``zeros``, ``asarray``,
``all_rows``, ``device``, ``like``), ``slots`` (`mjvec.contract.HookSlots`: the named one-source
hooks it declares for wrappers), ``lifecycle``, ``episode_steps``, ``frame_skip``, ``control_dt``,
and the class attributes ``render_camera``, ``policy_layout`` / ``<key>_layout``.
Everything else on the base is private.

The base does everything Gymnasium expects of a vector env:

- Spaces are ``batch_space`` of the single spaces; ``metadata`` (per instance) has ``render_modes``,
  ``render_fps`` (1 / control_dt) and ``autoreset_mode`` (an `AutoresetMode`).
- ``reset(seed=, options={"reset_mask": m})``: env i's random streams are keyed by (seed, global env
  id i), so trajectories do not depend on num_envs, thread count or which other envs reset (the
  Gymnasium convention of ``seed + i`` is replaced by this keying; a list of num_envs seeds gives
  env i the seed list[i]). With a reset mask only those envs are reset (and, if a seed is given,
  reseeded) and their pending autoreset is cancelled; the returned obs has every env's row, the
  envs not reset returning the rows they returned last (observation transforms draw only for the
  envs reset).
  ``options`` is never mutated. ``seed=None`` never reseeds (the first streams come from OS entropy).
- ``step(actions)``: actions (numpy or torch) are validated, and a step that DISABLED mode refuses is
  refused, before any state, queue or random stream moves (action transforms included); then the
  actions are clipped to the action space. Autoreset follows ``metadata["autoreset_mode"]``:
  NEXT_STEP (default): an env done at step t returns its terminal obs at t; at t+1 it is reset after
  the physics step (its action is ignored; a backend that declares ``partial_step``, the CPU one,
  does not step it at all, the others step it and the reset discards that) and returns its reset
  obs, reward 0, term = trunc = False.
  SAME_STEP: a done env is reset inside the done step; ``info["final_obs"]`` (dense (N, ...) numpy,
  rows meaningful where ``info["_final_obs"]``) holds its terminal obs as the policy would have seen
  it had the env not reset: the task's terminal obs through the observation transforms as a normal
  step (`ObsEvent` stepped=True), so noise, delays and latency are in it and it draws exactly what
  that step would have drawn; the reset envs' returned rows are then reset obs, transformed as by
  ``reset(options={"reset_mask": done})`` (so per-step streams advance once per step, autoreset or
  not). ``info["final_info"]`` is a shallow copy of that step's info (``info["_final_info"]`` = done).
  DISABLED: stepping while an env is done raises `ResetNeededError`; reset it with a reset mask.
- Simulation errors: an env whose physics failed in a step (``backend.step``'s mask) is reset in that
  same step and returns reward 0, terminated False, truncated True and its POST-reset obs (its
  terminal state is meaningless; in SAME_STEP its ``final_obs`` row is the obs of the failed, finite
  state). ``info["sim_error"]`` (bool, N) is in every step info. It is logged at WARNING on the host
  (on a device nothing is read back to log it). It is never reset again on the next step, in any
  mode. A failure during a NEXT_STEP autoreset step is ignored
  (that step's physics is skipped or discarded for the env anyway).
- Episode steps: ``episode_steps`` is the live (N,) int64 counter of each env's current episode
  (the state's namespace): the base zeroes it at every reset (before `_reset_envs`) and adds 1 for
  every env the task evaluates in a step (before `_evaluate`, so the task sees this step counted).
  With ``max_episode_steps`` set, the base truncates an evaluated env whose counter has reached it
  (unless it terminated in that step), so a value written into the counter (``env.episode_steps =
  values``, or in place) moves that env's time limit: rsl_rl's ``init_at_random_ep_len`` staggers
  episodes this way. A task may write it too (SimToolReal-v0 zeroes it on every success, as its
  source does). A NEXT_STEP autoreset step counts for nothing; the reset sets 0.
- Infos: the task's (N, ...) arrays, each with a ``"_key"`` mask that is True for the envs the task
  evaluated this step (False for NEXT_STEP autoreset envs and failed envs). Reset infos hold what the
  task knows at reset (`_reset_info`, e.g. tool ids), masked True for the envs that were reset. In
  NEXT_STEP and DISABLED modes the envs reset inside a step (autoresets, failures) also bring their
  reset info into that step's info, as SyncVectorEnv's NEXT_STEP autoreset does: their rows of the
  reset-info keys are the reset values and those keys' masks are True for them.
- ``record_episode_statistics=True`` adds ``info["episode"] = {"r", "l", "t", "success"}`` (+
  ``info["_episode"]``) at done steps (on a device: at every step, rows meaningful where
  ``"_episode"``, since knowing whether any env is done would wait for the device; SAME_STEP's
  ``final_obs``/``final_info`` likewise). Off by
  default: gymnasium's RecordEpisodeStatistics raises if
  the env already writes ``"episode"``. A simulation-error truncation ends an episode too.
- Where it runs: the state's namespace (``backend.qpos``'s): numpy on the host, torch on a device,
  where nothing in a step reads a device value back (see `mjvec.xp`; DISABLED mode's refusal and
  host-side hooks excepted). Env subsets reach the task as `mjvec.xp.Rows`. On a device a
  non-finite row in an action tensor is not read back: that env ends as a simulation error.
- Output: ``array_backend`` "numpy" or "torch" (on ``device``, default the backend's) for obs,
  reward (float64), terminated and truncated; infos stay in the state's namespace unless the
  output is numpy.
- ``render()`` (render_mode="rgb_array"): a lazy sequence of num_envs frames, env i drawn only when
  indexed, each with its own variant's model (see `mjvec.envs.render`); ``render_grid`` tiles frames.
  Without a render mode, ``render()`` returns None with a warning (Gymnasium's convention) and
  ``render_grid`` raises `ConfigError`.
- Camera observations (``camera_setup``, which `make_vec` builds from the ``cameras=`` option): the
  observation becomes a Dict of the task's observation and its images, computed after each step's
  physics and after each reset (`mjvec.envs.camera_images`); ``camera_images`` is None without them.
- ``lifecycle``: the startup / reset / interval events wrappers subscribe to (`mjvec.contract.Lifecycle`).
- Hooks for wrappers (`mjvec.contract.EnvHooks`): observation and action transforms,
  named one-source slots a task declares, and ``hook_registrations()`` counting all of them.
- ``deployment_spec()``: what a policy trained on the task needs outside mjvec (the policy
  contract's task part, `mjvec.envs.deployment`); a task overrides it to declare its sources.
- The vector-env interface RL libraries expect (`mjvec.vector_api`): ``autoreset_mode``,
  ``len(env)``, ``call``, ``get_attr``, ``set_attr``.
- ``close()`` is idempotent; afterwards reset/step/render raise `ClosedError`.
- Not thread-safe, and misuse is detected (`mjvec.envs.guard`): a call to reset/step/render/
  render_grid/close while another of them is running (from a second thread) raises
  `ConcurrentUseError` and changes nothing (a wrapper's close() included: it is refused before any
  hook is released); copies (``copy.copy``/``deepcopy``) are refused.
- Interrupts (Ctrl-C): an interrupted call never leaves the env locked for its thread (Ctrl-C lands
  in the main thread). A step() or reset() that a ``BaseException`` ended part way leaves the envs'
  state unknown: step() and masked resets then raise `ResetNeededError` until a full reset(); an
  interrupted close() is finished by calling close() again. A refused call is never taken for one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from mjvec.backends.base import Backend
from mjvec.contract import HookSlots, Lifecycle, ObsEvent
from mjvec.envs.arguments import check_env_args, parse_autoreset_mode, parse_reset_options, parse_seed
from mjvec.envs.camera_images import CameraImages
from mjvec.envs.deployment import DeploymentMixin
from mjvec.envs.guard import CallGuard, call_exclusive, exclusive, not_copyable
from mjvec.envs.infos import check_task_info, masked_info
from mjvec.envs.memory import MemoryNeeds
from mjvec.envs.records import ActionSpec, ArraySpace, Episodes, Output
from mjvec.envs.render import RenderMixin, VariantRenderer
from mjvec.envs.stepping import StepMixin
from mjvec.envs.transforms import TransformHooksMixin, Transforms
from mjvec.errors import ClosedError, ConfigError, ResetNeededError
from mjvec.rng import EnvRandom
from mjvec.vector_api import VectorEnvAPI
from mjvec.xp import Rows, copy_array

__all__ = ["MjVecEnv", "ResetNeededError"]

log = logging.getLogger(__name__)

RENDER_MODES = ("rgb_array",)
MAX_GLOBAL_ID = 2**63 - 1  # global env ids are int64


class MjVecEnv(StepMixin, TransformHooksMixin, RenderMixin, DeploymentMixin, VectorEnvAPI, VectorEnv):
    """Base of every mjvec task (see the module docstring for the contract and what a subclass may
    use). ``render_camera``: a camera name or id of the scene (-1 is MuJoCo's free camera)."""

    render_camera: str | int = -1
    camera_images: CameraImages | None = None

    def __init__(
        self,
        backend: Backend,
        *,
        single_observation_space: gym.Space,
        single_action_space: gym.spaces.Box,
        frame_skip: int,
        autoreset_mode: str | AutoresetMode = "next_step",
        render_mode: str | None = None,
        array_backend: str = "numpy",
        device: str | None = None,
        record_episode_statistics: bool = False,
        render_size: tuple[int, int] = (240, 320),
        max_episode_steps: int | None = None,
        camera_setup: Any = None,
    ) -> None:
        self._guard = CallGuard()
        check_env_args(frame_skip, single_observation_space, single_action_space, render_mode,
                       record_episode_statistics, RENDER_MODES, max_episode_steps)
        mode = parse_autoreset_mode(autoreset_mode)
        self.backend, self.num_envs = backend, int(backend.num_envs)
        self.global_env_ids = global_env_ids(backend)
        # The task runs where the backend's state lives: numpy on the host, torch on a device.
        self.arrays = ArraySpace.of_state(backend.qpos, self.num_envs)
        self.xp = self.arrays.xp
        self.output = Output.resolve(array_backend, device, backend.capabilities.device, self.arrays.host)
        self.array_backend, self.device = array_backend, self.output.device
        self.rng = EnvRandom(self.global_env_ids, None, like=self.arrays.like)
        self.lifecycle = Lifecycle()
        self.frame_skip = int(frame_skip)
        self.control_dt = self.frame_skip * float(backend.model.opt.timestep)
        # Camera observations (`mjvec.envs.cameras`): the images join the task's observation.
        self.camera_images = None if camera_setup is None else CameraImages(backend, camera_setup)
        if self.camera_images is not None:
            single_observation_space = self.camera_images.space(single_observation_space)
        self.single_observation_space, self.single_action_space = single_observation_space, single_action_space
        self.observation_space = batch_space(single_observation_space, self.num_envs)
        self.action_space = batch_space(single_action_space, self.num_envs)
        self.metadata = {"render_modes": list(RENDER_MODES), "render_fps": 1.0 / self.control_dt,
                         "autoreset_mode": mode}
        self.render_mode = render_mode
        self._renderer = VariantRenderer(backend, render_size, self.render_camera) if render_mode else None
        self.action_spec = ActionSpec.of(single_action_space, self.arrays, backend.qpos.dtype)
        self.episodes = Episodes.create(self.arrays, max_episode_steps, bool(record_episode_statistics))
        self.max_episode_steps = self.episodes.max_steps
        self.transforms = Transforms()
        self.slots = HookSlots(type(self).__name__, self.rng)  # named one-source hooks wrappers fill
        self._has_reset = False
        self._checked: set[str] = set()  # the first observation and step result, checked once
        self._task_info: Mapping[str, Any] = {}

    # ---- hooks the task implements ---------------------------------------------------------
    def _apply_action(self, actions: Any) -> None:
        """(N, A) validated and clipped actions in the state's namespace (float64 on the host, the
        state's dtype on a device; a fresh array each step). Write backend.ctrl."""
        raise NotImplementedError(f"{type(self).__name__} must implement _apply_action")

    def _evaluate(
        self, active: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        """After physics: (reward (N,), terminated (N,), truncated (N,), info of (N, ...) arrays).

        Update task state only where `active` is True; rows of inactive envs are ignored.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement _evaluate")

    def _observe(self) -> Any:
        """(N, ...) float observation (or a dict of them), a fresh array matching the single space.

        A pure function of the state: the base calls it for every row after a partial reset and
        twice in a SAME_STEP autoreset step, so it draws no randomness itself (a draw here raises
        ConfigError). Observation noise belongs in an observation transform
        (`add_observation_transform`), which is told which rows are new (`ObsEvent`), or in a hook
        slot's source (`HookSlots`), which draws for the envs it concerns.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement _observe")

    def _reset_envs(self, rows: Rows) -> None:
        """Sample initial states for the envs of `rows` from self.rng; call self.backend.reset."""
        raise NotImplementedError(f"{type(self).__name__} must implement _reset_envs")

    @classmethod
    def scene_options(cls, options: Any) -> dict[str, Any]:
        """Extra `mjvec.backends.base.Scene` fields this task needs from every backend, for the task's
        options (e.g. ``{"rne_post_constraint": True}`` for contact forces as mj_rnePostConstraint
        gives them). Default: none."""
        return {}

    @classmethod
    def task_cameras(cls, options: Any) -> tuple:
        """The cameras this task declares for camera observations (`mjvec.assets.cameras.CameraSpec`s,
        for the task's options); ``cameras=`` picks, replaces or adds to them. Default: none."""
        return ()

    @classmethod
    def memory_needs(cls, options: Any) -> MemoryNeeds:
        """What one env of this task holds, for the memory estimate `make_vec` checks before
        building (`mjvec.envs.memory`): the MjData fields it binds and its own per-env bytes, for
        the task's options. Default: nothing beyond the backend's."""
        return MemoryNeeds()

    def _reset_info(self, rows: Rows) -> dict[str, Any]:
        """(N, ...) arrays known at reset (e.g. tool ids); only the rows of `rows` are read. Default: {}."""
        return {}

    def _success(self) -> np.ndarray | None:
        """(N,) bool success used by episode statistics; default: this step's info["success"]."""
        return self._task_info.get("success")

    # ---- Gymnasium API ---------------------------------------------------------------------
    @exclusive
    def reset(self, *, seed: Any = None, options: Mapping[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """Reset all envs, or those in ``options["reset_mask"]``; returns (obs, info).

        info: the task's `_reset_info` arrays with ``"_key"`` masks True for the envs reset now.

        seed: None (no reseed), an int (env i keyed by (seed, global id i)) or a list of num_envs
        ints (env i gets list[i]); with a reset mask only the masked envs are reseeded.
        """
        self._check_open()
        seed = parse_seed(seed, self.num_envs)
        mask = parse_reset_options(options, self.num_envs)
        if mask is not None:
            self._check_not_interrupted("a reset with a reset_mask")
        if mask is not None and not self._has_reset:
            raise ResetNeededError(
                "the first reset() must reset every env; call reset() without a reset_mask first"
            )
        super().reset(seed=seed if isinstance(seed, int) else None)
        ids = np.arange(self.num_envs, dtype=np.int64) if mask is None else np.flatnonzero(mask).astype(np.int64)
        if isinstance(seed, int):
            self.rng.seed(seed, env_ids=ids)
        elif seed is not None:
            self.rng.seed([seed[i] for i in ids], env_ids=ids)
        self.lifecycle.fire_startup()
        rows = self.arrays.all_rows if mask is None else self.arrays.rows_of_host_mask(mask)
        self._reset_rows(rows)
        self._has_reset = True
        obs = self._observation(self._task_obs(), ObsEvent(False, rows), previous=self.transforms.last_obs)
        info = self._reset_info(rows)
        check_task_info(info, self.num_envs, f"{type(self).__name__}._reset_info")
        if mask is None:
            self._guard.clear_interrupted()  # every env was reset: the state is consistent again
        return self._finish_obs(obs), self.output.info(masked_info(info, rows.mask))

    def _task_obs(self) -> Any:
        """The task's `_observe`, with the random streams refusing draws."""
        with self.rng.refused(
            f"{type(self).__name__}._observe drew from self.rng: an observation is recomputed for every "
            "row (after a partial reset, twice in a same_step autoreset), so a draw there would add noise "
            "that does not follow each env's own stream. Draw noise in an observation transform instead "
            "(mjvec.randomization.ObservationNoise, or env.add_observation_transform)"
        ):
            obs = self._observe()
        return obs if self.camera_images is None else self.camera_images.observe(obs)

    @property
    def all_rows(self) -> Rows:
        """The `mjvec.xp.Rows` of every env (a dense mask on a device, all ids on the host)."""
        return self.arrays.all_rows

    def zeros(self, tail: tuple[int, ...], dtype: Any) -> Any:
        """A (num_envs, *tail) zero array in the state's namespace and device (`ArraySpace.zeros`)."""
        return self.arrays.zeros(tail, dtype)

    def asarray(self, value: Any, dtype: Any = None) -> Any:
        """`value` (host data) as an array in the state's namespace and device (`ArraySpace.asarray`)."""
        return self.arrays.asarray(value, dtype)

    @exclusive
    def step(self, actions: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        """Advance every env by one control step (see the module docstring for autoreset)."""
        self._check_open()
        if not self._has_reset:
            raise ResetNeededError("call reset() before step()")
        self._check_not_interrupted("step()")
        actions, bad = self.action_spec.check(actions)
        mode = self.autoreset_mode
        if mode is AutoresetMode.DISABLED:
            self._refuse_done_envs()
        pending = self.episodes.needs_reset if mode is AutoresetMode.NEXT_STEP else self.zeros((), self.xp.bool)
        self.episodes.autoresetting = copy_array(pending)  # pending itself is cleared as those envs reset
        actions = self.transforms.on_actions(actions)

        self._apply_action(actions)
        failed = self._step_physics(pending)
        if self.camera_images is not None:
            self.camera_images.after_step()
        if bad is not None:  # device: non-finite action rows were zeroed; those envs end like failures
            failed = failed | (bad & ~pending)
        self.lifecycle.fire_interval(self.control_dt)
        active = ~pending & ~failed
        rewards, terminated, truncated, info = self._evaluate_step(active, failed)
        done = terminated | truncated
        stats = self.episodes.stats
        if stats is not None:
            episode = stats.record(~pending, rewards, done, self._success() if self.arrays.maybe(done) else None)
            if episode is not None:
                info["episode"], info["_episode"] = episode, self.xp.asarray(done, copy=True)
        if self.arrays.host and failed.any():
            ids = np.flatnonzero(failed)
            log.warning(
                "simulation error in envs %s (global ids %s): reset them and returned truncated=True",
                ids.tolist(), self.global_env_ids[ids].tolist(),
            )
        obs = self._same_step_obs(done, info) if mode is AutoresetMode.SAME_STEP else self._reset_then_observe(
            pending | failed if mode is AutoresetMode.NEXT_STEP else failed, done & ~failed, info
        )
        return (self._finish_obs(obs), self.output(rewards), self.output(terminated), self.output(truncated),
                self.output.info(info))

    # ---- lifetime --------------------------------------------------------------------------
    @exclusive
    def close(self, **kwargs: Any) -> None:
        """Free the renderers and the backend; idempotent (see `close_extras`). A close() that was
        interrupted (Ctrl-C) part way is finished by calling close() again."""
        super().close(**kwargs)
        self._guard.clear_interrupted()

    def run_exclusive(self, name: str, fn: Callable, /, *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)`` as this env's call `name` (e.g. "close"), under the guard that makes
        reset/step/render/close refuse a concurrent call (`mjvec.envs.guard`): a wrapper's own close()
        runs through it, so a close refused while a step runs releases nothing. Inside a running
        close() on the same thread, a nested close (the wrapper's, then the env's) runs under it."""
        return call_exclusive(self, name, fn, *args, **kwargs)

    def close_extras(self, **kwargs: Any) -> None:
        """Free the renderers and the backend (called once by VectorEnv.close)."""
        if self._renderer is not None:
            self._renderer.close()
        if self.camera_images is not None:
            self.camera_images.close()
        self.backend.close()

    def _check_open(self) -> None:
        if self.closed:
            raise ClosedError(f"this {type(self).__name__} is closed; create a new env")
        if self._guard.interrupted == "close":
            raise ClosedError(
                f"close() of this {type(self).__name__} was interrupted (KeyboardInterrupt) before it finished, so "
                "some of its resources may be freed; call close() again to finish it, then create a new env"
            )

    def _check_not_interrupted(self, call: str) -> None:
        """Refuse `call` after a step() or reset() that was interrupted part way (Ctrl-C): which envs
        stepped or reset, and which queues and random streams moved, is unknown until a full reset."""
        interrupted = self._guard.interrupted
        if interrupted in ("step", "reset"):
            raise ResetNeededError(
                f"the last {interrupted}() of this {type(self).__name__} was interrupted (KeyboardInterrupt) before "
                f"it finished, so its envs' state is not known to be consistent (some may have stepped or reset, "
                f"queues and random streams may have moved); {call} needs it: call reset() (all envs, e.g. "
                "env.reset(seed=...)) to go on"
            )

    def __copy__(self) -> MjVecEnv:
        raise not_copyable(self)

    def __deepcopy__(self, memo: dict) -> MjVecEnv:
        raise not_copyable(self)


def global_env_ids(backend: Backend) -> np.ndarray:
    """(num_envs,) int64, read-only: env_id_offset + i, refused when the last id exceeds int64."""
    num_envs = int(backend.num_envs)
    last_id = int(backend.env_id_offset) + num_envs - 1
    if last_id > MAX_GLOBAL_ID:
        raise ConfigError(
            f"global env ids env_id_offset + num_envs - 1 = {last_id} exceed 2**63 - 1 (they are int64); "
            "lower env_id_offset or num_envs"
        )
    ids = int(backend.env_id_offset) + np.arange(num_envs, dtype=np.int64)
    ids.setflags(write=False)
    return ids
