"""Rendering many envs: a lazy frame sequence and a tiled grid, each env with its own model.

Env i is drawn with the model it is simulated with: the backend writes env i's model (its
group's template with env i's own per-env values: its tool, and any domain randomization in
effect) into a scratch copy of the template (`backend.write_env_model`). One scratch model,
`MjData` and `mujoco.Renderer` exist per template actually rendered (a backend has a handful,
whatever the number of tools), created lazily and freed by close(). What is drawn is the env's
qpos and mocap poses at the time of the snapshot.

Headless use: MuJoCo picks its GL backend from the ``MUJOCO_GL`` environment variable, read when
mujoco is first imported; set ``MUJOCO_GL=egl`` (GPU) or ``MUJOCO_GL=osmesa`` (CPU, needs
libosmesa6) before importing mjvec. mjvec never sets it for you.
"""

from __future__ import annotations

import atexit
import copy
import math
import os
import weakref
from collections.abc import Sequence
from typing import Any, overload

import gymnasium as gym
import mujoco
import numpy as np

from mjvec.backends.base import Backend
from mjvec.envs.arrays import to_numpy
from mjvec.envs.guard import call_exclusive, exclusive
from mjvec.errors import ClosedError, ConfigError, RenderError
from mjvec.validate import require_int

# Frames larger than this per side exceed the framebuffer limit of common GL drivers (MuJoCo then
# fails with "Offscreen framebuffer is not complete"), so they are refused at construction.
MAX_RENDER_SIDE = 4096

# Renderers not closed yet. A script that exits without env.close() would leave mujoco.Renderer's
# __del__ to free the GL context during interpreter teardown, when OSMesa's ctypes bindings are
# already gone ("Exception ignored in Renderer.__del__" and a traceback): close them at exit instead.
_OPEN: weakref.WeakSet[VariantRenderer] = weakref.WeakSet()


@atexit.register
def _close_open_renderers() -> None:
    for renderer in list(_OPEN):
        renderer.close()


class VariantRenderer:
    """Renders env i from a snapshot of its state with its own model (see the module docstring).

    backend: provides `env_template(i)` and `write_env_model(i, model)`.
    size: (height, width) of each frame in pixels.
    camera: a camera name or id of the scene, or -1 for MuJoCo's default free camera.
    """

    def __init__(self, backend: Backend, size: tuple[int, int], camera: str | int = -1) -> None:
        if (
            not isinstance(size, tuple)
            or len(size) != 2
            or not all(isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in size)
        ):
            raise ConfigError(f"render_size must be a tuple (height, width) of positive ints, got {size!r}")
        if max(size) > MAX_RENDER_SIDE:
            raise ConfigError(
                f"render_size={size!r} is too large: each side must be at most {MAX_RENDER_SIDE} pixels (larger "
                "frames exceed common GL framebuffer limits); render smaller frames, or tile them with render_grid"
            )
        self._backend = backend
        self._size = size
        self._camera = camera
        self._num_envs = int(backend.num_envs)
        self._cache: dict[int, tuple[mujoco.MjModel, mujoco.MjData, mujoco.Renderer]] = {}
        self._mocap = backend.model.nmocap > 0
        self._closed = False
        self.num_renders = 0  # frames drawn so far (for tests and profiling)
        _OPEN.add(self)

    def _scratch(self, env_id: int) -> tuple[mujoco.MjModel, mujoco.MjData, mujoco.Renderer]:
        """The scratch model, data and renderer of env `env_id`'s template, with env_id's model in it."""
        template = self._backend.env_template(env_id)
        cached = self._cache.get(id(template))
        if cached is None:
            model = copy.deepcopy(template)  # private: the backend writes each env's values into it
            height, width = self._size
            # The offscreen buffer must hold the frame.
            model.vis.global_.offheight = max(model.vis.global_.offheight, height)
            model.vis.global_.offwidth = max(model.vis.global_.offwidth, width)
            cached = self._cache[id(template)] = (model, mujoco.MjData(model), _make_renderer(model, height, width))
        self._backend.write_env_model(env_id, cached[0])
        return cached

    def snapshot(self) -> dict[str, np.ndarray]:
        """Copies of the state rendering needs (qpos, qvel, mocap poses), taken now."""
        self._check_open()
        state = {"qpos": to_numpy(self._backend.qpos).copy(), "qvel": to_numpy(self._backend.qvel).copy()}
        if self._mocap:
            for name in ("mocap_pos", "mocap_quat"):
                state[name] = to_numpy(self._backend.bind(name)).copy()
        return state

    def render_env(self, env_id: int, state: dict[str, np.ndarray]) -> np.ndarray:
        """(H, W, 3) uint8 frame of local env `env_id` in `state` (from `snapshot`)."""
        self._check_open()
        model, data, renderer = self._scratch(int(env_id))
        mujoco.mj_resetData(model, data)
        for name, rows in state.items():
            getattr(data, name)[...] = rows[env_id]
        mujoco.mj_forward(model, data)
        renderer.update_scene(data, camera=self._camera)
        self.num_renders += 1
        return renderer.render()

    def grid(self, env_ids: Sequence[int] | np.ndarray, ncols: int | None = None) -> np.ndarray:
        """(rows*H, ncols*W, 3) uint8: frames of `env_ids` (local, now) tiled row-major, black padding.

        env_ids: a non-empty 1-D sequence or array of ints in [-n, n) (negative counts from the end);
        floats, bools, strings and None are refused.
        """
        ids = _grid_ids(env_ids, self._num_envs)
        if ncols is None:
            ncols = math.ceil(math.sqrt(ids.size))
        ncols = min(require_int(ncols, "render_grid ncols", low=1), ids.size)
        nrows = math.ceil(ids.size / ncols)
        height, width = self._size
        out = np.zeros((nrows * height, ncols * width, 3), np.uint8)
        state = self.snapshot()
        for k, env_id in enumerate(ids):
            r, c = divmod(k, ncols)
            out[r * height : (r + 1) * height, c * width : (c + 1) * width] = self.render_env(int(env_id), state)
        return out

    def close(self) -> None:
        """Free the renderers (GL contexts); idempotent."""
        if self._closed:
            return
        self._closed = True
        _OPEN.discard(self)
        for _, _, renderer in self._cache.values():
            renderer.close()
        self._cache.clear()

    def _check_open(self) -> None:
        if self._closed:
            raise ClosedError("the env is closed; its renderers were freed. Create a new env to render.")


def _grid_ids(env_ids: Any, n: int) -> np.ndarray:
    """Validated local ids of render_grid, in [0, n)."""
    def refuse() -> ConfigError:
        return ConfigError(
            f"render_grid env_ids must be a non-empty 1-D list or array of ints in [0, {n}) (negative ints count "
            f"from the end), got {env_ids!r}"
        )

    if env_ids is None or isinstance(env_ids, (str, bytes)):
        raise refuse()
    try:
        ids = np.asarray(env_ids)
    except ValueError as error:
        raise refuse() from error
    if ids.ndim != 1 or ids.size == 0 or ids.dtype.kind not in "iu" or ((ids < -n) | (ids >= n)).any():
        raise refuse()
    return ids.astype(np.int64) % n


def _make_renderer(model: mujoco.MjModel, height: int, width: int) -> mujoco.Renderer:
    """A `mujoco.Renderer`, or RenderError saying how to get an OpenGL context on this machine."""
    try:
        return mujoco.Renderer(model, height, width)
    except Exception as error:  # GLFW, EGL and OSMesa failures have no common type
        backend = os.environ.get("MUJOCO_GL")
        hint = (
            "set MUJOCO_GL=egl (GPU) or MUJOCO_GL=osmesa (CPU, needs libosmesa6) before importing mjvec"
            if backend is None
            else f"MUJOCO_GL={backend!r} could not create a {height}x{width} context; allowed values are egl, "
            "osmesa and glfw (needs a display). For osmesa install libosmesa6; for egl a GPU driver"
        )
        raise RenderError(f"could not create an OpenGL renderer ({type(error).__name__}: {error}); {hint}") from error


class LazyFrames(Sequence):
    """The frames of all envs at the time `render()` was called; env i is drawn when indexed.

    len() is num_envs; indexing takes an int (negative allowed) and returns an (H, W, 3) uint8
    array, or a slice and returns a list of them. A frame, once drawn, is cached in this sequence.
    Drawing uses the env's renderer, so it is a call of the env (`mjvec.envs.guard`): indexing an
    undrawn frame while another call of the env runs (a step, a close, a render_grid in another
    thread) raises `ConcurrentUseError`, and once the env is closed raises `ClosedError` (frames
    drawn before stay readable).
    """

    def __init__(self, env: Any, renderer: VariantRenderer) -> None:
        self._env = env
        self._renderer = renderer
        self._num_envs = int(env.num_envs)
        self._state = renderer.snapshot()
        self._frames: dict[int, np.ndarray] = {}

    def __len__(self) -> int:
        return self._num_envs

    @overload
    def __getitem__(self, index: int) -> np.ndarray: ...

    @overload
    def __getitem__(self, index: slice) -> list[np.ndarray]: ...

    def __getitem__(self, index: int | slice) -> np.ndarray | list[np.ndarray]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self._num_envs))]
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)):
            raise TypeError(f"frame index must be an int or a slice, got {type(index).__name__}")
        i = int(index)
        if not -self._num_envs <= i < self._num_envs:
            raise IndexError(f"frame index {i} out of range for {self._num_envs} envs")
        i %= self._num_envs
        frame = self._frames.get(i)
        if frame is None:
            frame = self._frames[i] = call_exclusive(self._env, "render", self._draw, i)
        return frame

    def _draw(self, i: int) -> np.ndarray:
        self._env._check_open()
        return self._renderer.render_env(i, self._state)


class RenderMixin:
    """`MjVecEnv`'s rendering API, over the env's `_renderer` (a `VariantRenderer` or None)."""

    _renderer: VariantRenderer | None
    render_mode: str | None

    @exclusive
    def render(self) -> LazyFrames | None:
        """A lazy sequence of num_envs (H, W, 3) uint8 frames of the current state (env i drawn on index).

        Without a render mode it returns None and warns (``gymnasium.logger.warn``, a UserWarning),
        Gymnasium's own convention, so trainers that call ``render()`` every step (skrl's) run on.
        """
        self._check_open()
        if self._renderer is None:
            gym.logger.warn(
                "You are calling render method without specifying any render mode. You can specify the "
                "render_mode at initialization, e.g. gym.make_vec(..., render_mode=\"rgb_array\")"
            )
            return None
        return LazyFrames(self, self._renderer)

    @exclusive
    def render_grid(self, env_ids: Any, ncols: int | None = None) -> np.ndarray:
        """(rows*H, ncols*W, 3) uint8: the current frames of local `env_ids`, tiled row-major."""
        self._check_open()
        return self._require_renderer().grid(env_ids, ncols)

    def _require_renderer(self) -> VariantRenderer:
        if self._renderer is None:
            raise ConfigError(
                f"render_mode is {self.render_mode!r}; construct the env with render_mode='rgb_array' to render"
            )
        return self._renderer
