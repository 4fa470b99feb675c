"""ALL 600 tools batched through the CPU backend (tool_id = env_id % 600) step in lockstep with
`scene_spec(tool_id)` compiled alone and stepped by plain mujoco, for both tool geometries."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from mjvec.assets import scene_spec
from mjvec.assets.tools import ToolCatalog
from mjvec.backends.base import Scene
from mjvec.backends.cpu import CpuBackend

NUM_TOOLS = 600
STEPS = 60  # control steps of 2 substeps: the tools drop onto the table and settle


@pytest.mark.slow
@pytest.mark.parametrize("geometry", ["primitive", "mesh"])
def test_all_600_tools_step_like_each_scene_compiled_alone(geometry: str) -> None:
    catalog = ToolCatalog()

    def make(v: int) -> mujoco.MjSpec:
        return scene_spec(v, tool_geometry=geometry, catalog=catalog)

    backend = CpuBackend(Scene(NUM_TOOLS, make, NUM_TOOLS), num_threads=2, progress=False)
    assert backend.num_groups == 2  # tools with a head (box or capsule handle), tools without
    np.testing.assert_array_equal(backend.variant_of_env, np.arange(NUM_TOOLS))
    models = [make(v).compile() for v in range(NUM_TOOLS)]
    datas = [mujoco.MjData(m) for m in models]
    for m, d in zip(models, datas, strict=True):
        mujoco.mj_forward(m, d)
    t = np.arange(backend.model.nu)
    for k in range(STEPS):
        ctrl = 0.2 * np.sin(0.05 * k + t)[None, :] + 0.01 * np.arange(NUM_TOOLS)[:, None] % 0.1
        backend.ctrl[:] = ctrl
        backend.step(2)
        for i, (m, d) in enumerate(zip(models, datas, strict=True)):
            d.ctrl[:] = ctrl[i]
            mujoco.mj_step(m, d, 2)
    oracle = np.stack([d.qpos for d in datas])
    err = np.abs(backend.qpos - oracle).max(axis=1)
    assert (err == 0).all(), f"{(err > 0).sum()} envs differ, worst {err.max():.3g} at tool {err.argmax()}"
    # The tools fell onto the table: contacts were part of what was compared.
    obj_z = backend.qpos[:, 29 + 2]
    assert (obj_z < 0.75).all(), obj_z.max()
