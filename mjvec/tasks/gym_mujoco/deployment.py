"""The suite's deployment declarations (`mjvec.envs.deployment`): Gymnasium's ``_get_obs`` blocks
as MjData slices and the motor commands as torque actions, exactly as `GymMujocoEnv` computes them."""

from __future__ import annotations

from typing import Any

import mujoco

from mjvec.envs.deployment import ActionDim, DeploymentSpec, ObsBlock, ObsSource
from mjvec.tasks.gym_mujoco.specs import QVEL_CLIP

# block -> (the MjData field, its first row): the body blocks leave out the world body, the
# actuator forces Humanoid's free root's six dofs.
_DATA_BLOCKS = {"cinert": ("cinert", 1), "cvel": ("cvel", 1), "qfrc_actuator": ("qfrc_actuator", 6),
                "cfrc_ext": ("cfrc_ext", 1)}
_UNITS = {"qpos": "m or rad (each joint's own)", "qvel": "m/s or rad/s (each dof's own)",
          "cinert": "MuJoCo's com-based inertia (10 per body)", "cvel": "MuJoCo's com-based velocity (6 per body)",
          "qfrc_actuator": "N or N m (per dof)", "cfrc_ext": "N, N m (com-based wrench, 6 per body)"}


def deployment_spec(env: Any) -> DeploymentSpec:
    """The spec of a `GymMujocoEnv` (its task, options, layout and model)."""
    task, opts, model = env.task, env.opts, env.backend.model
    blocks = []
    for name, width in env.policy_layout:
        if name == "qpos":
            source, clip = ObsSource("qpos", index=(model.nq - width, model.nq)), None
        elif name == "qvel":
            source, clip = ObsSource("qvel", index=(0, model.nv)), (-QVEL_CLIP, QVEL_CLIP) if task.clip_qvel else None
        else:
            field, first = _DATA_BLOCKS[name]
            rows = getattr(mujoco.MjData(model), field).shape[0]
            source = ObsSource("data", field=field, index=(first, rows))
            clip = tuple(opts.contact_force_range) if name == "cfrc_ext" and task.contact == "ant" else None
        frame = "world" if name in ("cinert", "cvel", "cfrc_ext") else "none"
        blocks.append(ObsBlock(name, width, source, frame=frame, units=_UNITS[name], clip=clip))
    action = tuple(
        ActionDim(model.actuator(i).name, _joint(model, i), "torque", "affine", scale=1.0, offset=0.0)
        for i in range(model.nu)
    )
    after = ("mj_rnePostConstraint",) if "cfrc_ext" in dict(env.policy_layout) else ()
    return DeploymentSpec({None: tuple(blocks)}, None, "float64", action, after_step=after)


def _joint(model: mujoco.MjModel, actuator: int) -> str | None:
    if model.actuator_trntype[actuator] != mujoco.mjtTrn.mjTRN_JOINT:
        return None
    return model.joint(int(model.actuator_trnid[actuator, 0])).name


class DeploymentHooks:
    """`MjVecEnv.deployment_spec` of `GymMujocoEnv` (the suite's tasks take no commands)."""

    def deployment_spec(self) -> DeploymentSpec:
        """Gymnasium's observation blocks as MjData slices, torque actions (`deployment_spec`)."""
        return deployment_spec(self)
