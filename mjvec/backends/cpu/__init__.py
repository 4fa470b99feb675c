"""The CPU backend: `mujoco.batch` thread pools over compiler-coherent variant groups."""

from mjvec.backends.cpu.backend import CpuBackend, default_num_threads

__all__ = ["CpuBackend", "default_num_threads"]
