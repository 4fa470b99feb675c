"""Warp backend: thousands of MuJoCo simulations as worlds of mujoco_warp, on a GPU or warp's CPU.

The contract is `GroupedBackend`'s (mjvec.backends.grouped): the scene's variants are split into
groups by everything mujoco_warp cannot hold per world (`build.WARP_PER_ENV`: e.g. geom types, so
box-headed and capsule-handled tools are separate groups), each group one mujoco_warp Model + Data
(`WarpEngine`, mjvec.backends.warp.engine).

State views are torch tensors on the device. With one group (its worlds are envs 0..N-1 in order)
they are zero-copy `wp.to_torch` views of the Data; with several groups they are backend-owned
tensors, gathered from the groups after every call (outputs) and scattered into them before every
call (the state inputs). Float32 throughout: each world steps like its variant compiled alone with
mujoco_warp, and like plain MuJoCo within float32 tolerance (tests/test_backend_contract.py,
tests/test_backend_warp.py and tests/test_warp_engine.py state the measured bounds).
"""

from __future__ import annotations

import numpy as np

from mjvec.backends.base import Scene
from mjvec.backends.determinism import check_deterministic
from mjvec.backends.grouped import GroupedBackend
from mjvec.backends.warp import build as warp_build
from mjvec.backends.warp.cache import check_kernel_cache, kernel_cache_errors
from mjvec.backends.warp.engine import WarpEngine
from mjvec.validate import require_bool, require_int


class WarpBackend(GroupedBackend):
    """The `Backend` contract over mujoco_warp (see mjvec.backends.base.Backend).

    device: a warp device ("cuda:0", "cpu"); None means "cuda:0". State views live there.
    nconmax: contacts per world (pooled over worlds, so an average); default mujoco_warp's guess.
    njmax: constraint rows per world (a hard bound); default covers nconmax contacts plus every
        limit, dof friction and equality row. A step that overflows either raises ConfigError.
    use_graph: replay captured graphs for step/forward/reset (False: launch eagerly, for debugging).
    overflow_check_interval: steps between host checks of the device's buffer-overflow flags (1:
        every step, which reads a mask back each step and so waits for the device).
    deterministic: set mujoco_warp's deterministic mode (``opt.deterministic = DeterminismType.ALL``)
        on every group's Model before any kernel is loaded or graph captured. What that buys on this
        device is `capabilities.determinism` (see mjvec.backends.determinism: on a GPU, mujoco-warp
        4.0.0 fixes the order of float atomics but not of contacts and constraint rows).

    `step` returns the (num_envs,) bool DEVICE mask of envs whose step failed (a non-finite or huge
    state, or a buffer overflow). Nothing is read back to the host: a failed world's state and bound
    outputs are put back to their values before the step as array ops, and the caller resets it.
    Buffer overflows are counted on the device and checked every `overflow_check_interval` steps,
    where a ConfigError names the envs and the fix (raise nconmax / njmax).

    `reset` also takes a (num_envs,) bool device mask (see `GroupedBackend.reset`): then the reset,
    the state writes and the forward run for every world (the others keep their state and outputs).
    When every bound output is kinematic (body, geom and site poses, COM quantities, cvel), the
    masked reset runs only the kinematics stages instead of the whole forward; the reset worlds'
    other derived fields (contacts, qacc, ...) are then stale until their next step.
    """

    _engine: WarpEngine

    def __init__(
        self,
        scene: Scene,
        *,
        device: str | None = "cuda:0",
        nconmax: int | None = None,
        njmax: int | None = None,
        use_graph: bool = True,
        overflow_check_interval: int = 1000,
        progress: bool = True,
        deterministic: bool = False,
    ) -> None:
        deterministic = check_deterministic(deterministic)
        _check_interval(overflow_check_interval)
        nconmax = require_int(nconmax, "nconmax", low=1, optional=True)
        njmax = require_int(njmax, "njmax", low=1, optional=True)
        use_graph = require_bool(use_graph, "use_graph")
        check_kernel_cache()
        wp_device = warp_build.resolve_device("cuda:0" if device is None else device)
        engine = WarpEngine(wp_device, nconmax=nconmax, njmax=njmax, use_graph=use_graph,
                            deterministic=deterministic, overflow_check_interval=overflow_check_interval,
                            rne_post_constraint=scene.rne_post_constraint)
        with kernel_cache_errors():
            super().__init__(scene, engine, progress=progress)

    @property
    def device(self) -> str:
        return self._capabilities.device

    @property
    def deterministic(self) -> bool:
        """Whether mujoco_warp's deterministic mode is on in every group (the constructor's option)."""
        return self._engine.deterministic

    @property
    def overflow_check_interval(self) -> int:
        """Steps between host checks of the buffer-overflow flags (settable)."""
        return self._engine.overflow_check_interval

    @overflow_check_interval.setter
    def overflow_check_interval(self, value: int) -> None:
        _check_interval(value)
        self._engine.overflow_check_interval = value

    @property
    def group_handles(self) -> tuple:
        """(mujoco_warp Model, Data, env_ids) per group (for tests and benchmarks; not a stable API)."""
        return tuple((w.m, w.d, w.env_ids) for w in self._engine.worlds)

    def check_overflow(self) -> None:
        """Raise ConfigError if any world overflowed a buffer since the last check (reads one device
        mask back to the host). Those worlds' steps were undone and reported failed."""
        self._engine.check_overflow()

    def model_values(self, name: str) -> np.ndarray:
        """(num_envs, ...) float copy of any per-world model field, derived ones included
        (body_subtreemass, body_invweight0, dof_invweight0, actuator_acc0, geom_rbound, ...).
        For tests and diagnostics; geom fields use the canonical slot layout."""
        self._check_open()
        for worlds in self._engine.worlds:
            warp_build.model_view(worlds, name)  # ConfigError for a field that is not per world
        return self._gather_field(name)


def _check_interval(value: object) -> None:
    require_int(value, "overflow_check_interval", low=1)
