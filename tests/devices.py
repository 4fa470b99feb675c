"""Tolerances of the device tests (the `warp_device` fixture, tests/conftest.py).

Where a backend promises bit-identical runs (`capabilities.determinism` "bit_exact" or
"run_to_run": the CPU backend, Warp on warp's CPU device) two runs given the same inputs are
compared bit for bit. A GPU sums float atomics, and orders contacts and constraint rows, in an order
it picks, so there two runs (or a world batched and alone) agree within GPU_TOL: a bound not yet
measured (no GPU was lent so far; benchmarks/gpu_run.sh runs the device tests on one and reports
what fails), and far below what a wrong reset, a lost input or a cross-talking env would move.
"""

from __future__ import annotations

from typing import Any

import numpy as np

GPU_TOL = 1e-4


def run_to_run_atol(backend: Any) -> float:
    """0 where `backend` promises bit-identical runs, else GPU_TOL."""
    return 0.0 if backend.capabilities.determinism != "none" else GPU_TOL


def np_of(x: Any) -> np.ndarray:
    """A numpy copy of a backend array (numpy, or a torch tensor on any device)."""
    # .cpu() of a tensor already on the host is the tensor itself, and .numpy() a view of its memory:
    # copy, so the result outlives the backend's buffer.
    return x.detach().cpu().numpy().copy() if hasattr(x, "detach") else np.array(x)


def put(view: Any, values: np.ndarray) -> None:
    """Write host values into a backend view (numpy, or a torch tensor on its device)."""
    if hasattr(view, "detach"):
        import torch

        view[...] = torch.as_tensor(values, dtype=view.dtype, device=view.device)
    else:
        view[...] = values
