"""CPU backend: thousands of MuJoCo simulations on MuJoCo's own `mujoco.batch` thread pool.

The contract is `GroupedBackend`'s (mjvec.backends.grouped): the scene's variants are split into
groups of one MjData layout and one structure, each group one `mujoco.batch.Batch` (`CpuEngine`,
mjvec.backends.cpu.engine). The env sees global-order `(num_envs, ...)` numpy arrays: with one
group they are the Batch's own live views; with several, backend-owned arrays gathered from the
groups after every call (outputs) and scattered into them before every call (the state inputs).

Float64 throughout: every env steps bit-exactly like its own variant compiled alone and stepped
with plain `mujoco.mj_step` (tested over the whole tool catalog).
"""

from __future__ import annotations

import ctypes
import os
import warnings

import mujoco
import mujoco.batch as mjb

from mjvec.backends.base import Scene
from mjvec.backends.cpu.engine import CpuEngine
from mjvec.backends.determinism import check_deterministic
from mjvec.backends.grouped import GroupedBackend
from mjvec.errors import PerformanceWarning
from mjvec.validate import require_int


def default_num_threads() -> int:
    """The CPU affinity count of this process (what the OS lets it run on)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _warn_if_oversubscribed(threads: int) -> None:
    """A PerformanceWarning (a UserWarning, which Python shows once per message by default) when
    more threads are asked for than the cores this process may run on: the batch still steps
    bit-exactly, but its threads take turns on the cores and a step takes longer."""
    cores = default_num_threads()
    if threads > cores:
        warnings.warn(
            f"num_threads={threads} is more than the {cores} CPU cores this process may use "
            f"(os.sched_getaffinity): the extra threads share cores and the envs step slower; "
            f"pass num_threads={cores} or leave it None (the core count)",
            PerformanceWarning, stacklevel=3,
        )


def _return_freed_memory() -> None:
    """Give the heap freed by compiling every variant back to the OS (glibc keeps it otherwise, and
    it would count as this backend's resident memory). A no-op where malloc_trim does not exist."""
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass


class CpuBackend(GroupedBackend):
    """The `Backend` contract over `mujoco.batch` (see mjvec.backends.base.Backend).

    num_threads: threads per group's Batch, the caller's included (default: the CPU affinity count).
    forward_after_step: compute mj_forward's stages at the end of every step, so derived fields
        (xpos, site_xpos, ...) are current with qpos; otherwise they describe the start of the last
        substep, as after mj_step.
    deterministic: accepted for every backend's sake; `mujoco.batch` is bit-identical at any thread
        count either way, so `capabilities.determinism` is "bit_exact" whatever it is.

    With ``scene.rne_post_constraint`` the batches are persistent and ``bind("cfrc_ext")`` is
    computed by mj_rnePostConstraint after every step, reset and forward (`cpu.rne_post`).

    `step` returns a (num_envs,) bool numpy mask of envs whose simulation failed (a MuJoCo error or
    a divergence warning); a failed env keeps a finite state, the caller resets it.
    """

    _engine: CpuEngine

    def __init__(
        self,
        scene: Scene,
        *,
        num_threads: int | None = None,
        forward_after_step: bool = False,
        progress: bool = True,
        deterministic: bool = False,
    ) -> None:
        check_deterministic(deterministic)
        threads = require_int(num_threads, "num_threads", low=1, optional=True)
        threads = default_num_threads() if threads is None else threads
        _warn_if_oversubscribed(threads)
        stage = int(mujoco.mjtStage.mjSTAGE_ACC if forward_after_step else mujoco.mjtStage.mjSTAGE_NONE)
        super().__init__(scene, CpuEngine(threads, stage, scene.rne_post_constraint), progress=progress)
        _return_freed_memory()

    @property
    def num_threads(self) -> int:
        return self._engine.num_threads

    @property
    def group_batches(self) -> tuple[mjb.Batch, ...]:
        """The per-group `mujoco.batch.Batch`es (for tests and benchmarks; not a stable API)."""
        return tuple(self._engine.batches)
