"""Cost of building the tool scenes one by one: the baseline a batched cold start is compared to.

Prints, per tool geometry, the mean time to build `scene_spec(k)` and to compile it (over
`--tools` tools, default all 600), the total for all of them, and the single-thread `mj_step` rate
of one compiled scene with the robot at home and the tool resting on the table.

    python -m benchmarks.cold_start_compile [--tools 600] [--steps 4000]
"""

from __future__ import annotations

import argparse
import time

import mujoco
import numpy as np

from benchmarks._timing import interleaved_rates
from mjvec.assets import TOOL_GEOMETRIES
from mjvec.tasks.simtoolreal.scene import HOME_KEYFRAME, OBJECT_JOINT_NAME, TABLE_TOP_Z, scene_spec


def _compile_times(geometry: str, tool_ids: range) -> tuple[float, float]:
    """Mean seconds per tool to build the spec and to compile it."""
    build = compile_ = 0.0
    for k in tool_ids:
        t0 = time.perf_counter()
        spec = scene_spec(k, geometry)
        t1 = time.perf_counter()
        spec.compile()
        t2 = time.perf_counter()
        build, compile_ = build + (t1 - t0), compile_ + (t2 - t1)
    return build / len(tool_ids), compile_ / len(tool_ids)


def _resting_scene(tool_id: int) -> tuple[mujoco.MjModel, mujoco.MjData]:
    """Robot at home, tool dropped from just above the table and settled for 2 s."""
    model = scene_spec(tool_id).compile()
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, model.key(HOME_KEYFRAME).id)
    adr = model.jnt_qposadr[model.joint(OBJECT_JOINT_NAME).id]
    data.qpos[adr : adr + 3] = (0.0, 0.0, TABLE_TOP_Z + 0.1)
    mujoco.mj_step(model, data, int(2.0 / model.opt.timestep))
    return model, data


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tools", type=int, default=600)
    p.add_argument("--steps", type=int, default=4000)
    args = p.parse_args()
    scene_spec(0).compile()  # warm-up: builds the cached robot spec and the default catalog
    for geometry in TOOL_GEOMETRIES:
        build, compile_ = _compile_times(geometry, range(args.tools))
        print(
            f"{geometry:9s} per tool: spec {build * 1e3:.2f} ms + compile {compile_ * 1e3:.2f} ms; "
            f"{args.tools} tools one by one: {(build + compile_) * args.tools:.2f} s"
        )
    model, data = _resting_scene(0)
    contacts = data.ncon

    def run() -> None:
        mujoco.mj_step(model, data, args.steps)

    rate = interleaved_rates({"mj_step": (run, args.steps)}, repeats=3)["mj_step"]
    tool_z = data.qpos[model.jnt_qposadr[model.joint(OBJECT_JOINT_NAME).id] + 2]
    print(
        f"single-thread mj_step, tool resting on the table (z {tool_z:.3f}, {contacts} contacts, "
        f"nv {model.nv}): {rate:,.0f} steps/s = {1e6 / rate:.1f} us/step; {np.round(rate / 120, 1)} x real time"
    )


if __name__ == "__main__":
    main()
