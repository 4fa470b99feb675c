"""SizedPole-v0: PoleBalance-v0 (tests/third_task.py) whose variants differ in size, for the memory tests.

Variant 0 is the bare pole (one geom); every other variant hangs `EXTRA_GEOMS` small spheres on it
(non-colliding, sizes depending on v, so the variants of that larger class differ in their geom
rows too). Env i holds variant ``(env_id_offset + i) % NUM_VARIANTS``, so the first env's variant is
the smallest: an estimate that saw only the first variant would miss most of the memory.
"""

from __future__ import annotations

import mujoco

from mjvec.envs.registry import register_task, registered_tasks
from tests.third_task import PoleBalanceEnv, PoleBalanceOptions, pole_spec

ENV_ID = "SizedPole-v0"
NUM_VARIANTS = 3
EXTRA_GEOMS = 400


def sized_spec(v: int) -> mujoco.MjSpec:
    spec = pole_spec(0)
    if v > 0:
        pole = spec.body("pole")
        for k in range(EXTRA_GEOMS):
            pole.add_geom(name=f"bead{k}", type=mujoco.mjtGeom.mjGEOM_SPHERE, size=[0.005 + 0.001 * v, 0, 0],
                          pos=[0.0, 0.0, 0.001 * k], contype=0, conaffinity=0, density=10.0)
    return spec


def register() -> None:
    """Register SizedPole-v0 once per process."""
    if ENV_ID in registered_tasks():
        return
    register_task(ENV_ID, env_class=PoleBalanceEnv, options=PoleBalanceOptions,
                  variants=lambda opts: (NUM_VARIANTS, sized_spec),
                  env_kwargs=lambda opts: {"threshold": opts.threshold, "max_steps": 50})


register()
