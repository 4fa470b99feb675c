"""An oracle for the Warp backend: each env's variant compiled alone, stepped by mujoco_warp alone in a
world of its own. The batched worlds must match it to float32 round-off (bit for bit on warp's CPU
device, measured on mujoco-warp 4.0; within tests.devices.GPU_TOL on a GPU). Imports warp: import it
only where the Warp backend is tested.
"""

from __future__ import annotations

import mujoco_warp as mjw
import numpy as np
import torch
import warp as wp

from tests.scenes import make_scene

# Batched worlds vs the same variant alone in mujoco_warp: same kernels, same float32 inputs, so
# bit-identical on warp's cpu device (measured on mujoco-warp 4.0); on a GPU within GPU_TOL (tests/devices.py).
WARP_VS_ALONE = 0.0


class WarpOracle:
    """N single-world mujoco_warp simulations: env i is variant `variants[i]` compiled alone.

    `models` are the compiled MjModels; edit them before `start()` to get an edited oracle.
    """

    def __init__(self, variants: np.ndarray, make=make_scene, device: str = "cpu") -> None:
        self.models = [make(int(v)).compile() for v in variants]
        self.device = device

    def start(self) -> WarpOracle:
        self.worlds, self.graphs = [], []
        with wp.ScopedDevice(self.device):
            for mjm in self.models:
                m, d = mjw.put_model(mjm), mjw.make_data(mjm, nworld=1)
                mjw.reset_data(m, d)
                mjw.step(m, d)  # load the kernels, then start over from the initial state
                mjw.reset_data(m, d)
                mjw.forward(m, d)
                with wp.ScopedCapture(device=self.device, force_module_load=False) as capture:
                    mjw.step(m, d)
                self.worlds.append((m, d))
                self.graphs.append(capture.graph)
        return self

    def step(self, ctrl: np.ndarray, nstep: int, xfrc: np.ndarray | None = None) -> None:
        for i, ((_, d), graph) in enumerate(zip(self.worlds, self.graphs, strict=True)):
            wp.to_torch(d.ctrl)[0] = torch.as_tensor(ctrl[i], dtype=torch.float32)
            if xfrc is not None:
                wp.to_torch(d.xfrc_applied)[0] = torch.as_tensor(xfrc[i], dtype=torch.float32)
            with wp.ScopedDevice(self.device):
                for _ in range(nstep):
                    wp.capture_launch(graph)

    def reset(self, i: int, qpos: np.ndarray, qvel: np.ndarray) -> None:
        m, d = self.worlds[i]
        with wp.ScopedDevice(self.device):
            mjw.reset_data(m, d)
            wp.to_torch(d.qpos)[0] = torch.as_tensor(qpos, dtype=torch.float32)
            wp.to_torch(d.qvel)[0] = torch.as_tensor(qvel, dtype=torch.float32)
            mjw.forward(m, d)

    def qpos(self) -> np.ndarray:
        return np.stack([d.qpos.numpy()[0] for _, d in self.worlds])

    def qvel(self) -> np.ndarray:
        return np.stack([d.qvel.numpy()[0] for _, d in self.worlds])
