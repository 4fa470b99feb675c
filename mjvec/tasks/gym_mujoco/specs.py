"""What differs between the five tasks, as data: one `TaskDef` each (read with Gymnasium's sources).

| task | file | frame_skip | velocity from | healthy | contact cost | qvel noise | qvel in obs |
|---|---|---|---|---|---|---|---|
| Ant-v5 | ant.xml | 5 | main_body's xpos xy | finite, z in [lo, hi] | clipped cfrc_ext | normal | as is |
| HalfCheetah-v5 | half_cheetah.xml | 5 | qpos[0] | (never ends) | none | normal | as is |
| Hopper-v5 | hopper.xml | 4 | qpos[0] | state, z, angle | none | uniform | clipped to +-10 |
| Walker2d-v5 | walker2d_v5.xml | 4 | qpos[0] | z, angle | none | uniform | clipped to +-10 |
| Humanoid-v5 | humanoid.xml | 5 | mass centre xy | z | clip(sum cfrc_ext^2) | uniform | as is |
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from mjvec.tasks.gym_mujoco import options as gym_options
from mjvec.tasks.gym_mujoco import terms as gym_terms

__all__ = ["TASKS", "TaskDef", "observation_layout"]

QVEL_CLIP = 10.0  # Hopper and Walker2d observe np.clip(qvel, -10, 10)


@dataclass(frozen=True)
class TaskDef:
    """One task of the suite.

    name: Gymnasium's id ("Ant-v5"); registered by mjvec as ``"mjvec/" + name``.
    xml: the default file in gymnasium's assets. options: its options class.
    planar: the root moves in x only (x_velocity from qpos[0]; infos without y); else in xy.
    velocity: "qpos" (qpos[0]), "body" (xpos of options.main_body) or "mass_center".
    healthy: (opts, qpos, qvel) -> (N,) bool, None for a task that never terminates.
    contact: "ant" / "humanoid" (the cost form), None for no contact cost.
    ctrl_cost_on: "action" (the float32 action, Gymnasium's ``np.square(action)``) or "ctrl"
        (Humanoid's ``np.square(data.ctrl)``, float64).
    qvel_noise: "normal" (qvel0 + scale x N(0, 1)) or "uniform" (U(-scale, scale)).
    clip_qvel: observe qvel clipped to +-QVEL_CLIP. z_distance: infos have z_distance_from_origin.
    tendons: infos have tendon_length and tendon_velocity.
    """

    name: str
    xml: str
    options: type[gym_options.GymMujocoOptions]
    planar: bool
    velocity: str
    healthy: Callable[[Any, np.ndarray, np.ndarray], np.ndarray] | None
    contact: str | None
    ctrl_cost_on: str
    qvel_noise: str
    clip_qvel: bool = False
    z_distance: bool = False
    tendons: bool = False

    @property
    def env_id(self) -> str:
        return f"mjvec/{self.name}"

    def needs_contact_forces(self, opts: Any) -> bool:
        """Whether cfrc_ext is read (observation or a nonzero contact cost): the backend then runs
        mj_rnePostConstraint after every step."""
        if self.contact is None:
            return False
        return bool(opts.include_cfrc_ext_in_observation) or opts.contact_cost_weight != 0.0


TASKS: dict[str, TaskDef] = {t.name: t for t in (
    TaskDef("Ant-v5", "ant.xml", gym_options.AntOptions, planar=False, velocity="body", healthy=gym_terms.ant_healthy,
            contact="ant", ctrl_cost_on="action", qvel_noise="normal"),
    TaskDef("HalfCheetah-v5", "half_cheetah.xml", gym_options.HalfCheetahOptions, planar=True, velocity="qpos",
            healthy=None, contact=None, ctrl_cost_on="action", qvel_noise="normal"),
    TaskDef("Hopper-v5", "hopper.xml", gym_options.HopperOptions, planar=True, velocity="qpos",
            healthy=gym_terms.hopper_healthy, contact=None, ctrl_cost_on="action", qvel_noise="uniform",
            clip_qvel=True, z_distance=True),
    TaskDef("Walker2d-v5", "walker2d_v5.xml", gym_options.Walker2dOptions, planar=True, velocity="qpos",
            healthy=gym_terms.walker_healthy, contact=None, ctrl_cost_on="action", qvel_noise="uniform", clip_qvel=True,
            z_distance=True),
    TaskDef("Humanoid-v5", "humanoid.xml", gym_options.HumanoidOptions, planar=False, velocity="mass_center",
            healthy=gym_terms.humanoid_healthy, contact="humanoid", ctrl_cost_on="ctrl", qvel_noise="uniform",
            tendons=True),
)}


def observation_layout(task: TaskDef, opts: Any, nq: int, nv: int, nbody: int) -> tuple[tuple[str, int], ...]:
    """The (block, width) sequence of the observation, Gymnasium's ``_get_obs`` order.

    Blocks: qpos (minus the skipped root x / xy), qvel, then Ant's cfrc_ext (clipped) or Humanoid's
    cinert, cvel, qfrc_actuator (minus the root's 6 dofs) and cfrc_ext, each where its option is on;
    the body blocks leave out the world body.
    """
    skipped = (1 if task.planar else 2) if opts.exclude_current_positions_from_observation else 0
    layout = [("qpos", nq - skipped), ("qvel", nv)]
    if task.name == "Humanoid-v5":
        for block, width, flag in (("cinert", 10 * (nbody - 1), opts.include_cinert_in_observation),
                                   ("cvel", 6 * (nbody - 1), opts.include_cvel_in_observation),
                                   ("qfrc_actuator", nv - 6, opts.include_qfrc_actuator_in_observation)):
            if flag:
                layout.append((block, width))
    if task.contact is not None and opts.include_cfrc_ext_in_observation:
        layout.append(("cfrc_ext", 6 * (nbody - 1)))
    return tuple(layout)
