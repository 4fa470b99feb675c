"""The Warp backend's step and masked reset as device work only: nothing is read back to the host.

Both run every group's captured graph over all of its worlds and then select per world with
`torch.where` on device masks, so the host never learns which worlds failed or were reset. Torch
and warp work is ordered by stream waits on the device (`build.torch_to_warp` / `warp_to_torch`).
"""

from __future__ import annotations

from typing import Any

import mujoco
import mujoco_warp as mjw
import numpy as np
import torch
import warp as wp

from mjvec.backends.warp.views import KINEMATIC_OUTPUTS, GroupRuntime, StateViews
from mjvec.errors import ConfigError


def _rows_where(mask: Any, like: Any) -> Any:
    """`mask` (nworld,) shaped to broadcast over `like` (nworld, ...)."""
    return mask.reshape(-1, *([1] * (like.dim() - 1)))


def step_groups(views: StateViews, runtimes: list[GroupRuntime], wp_device: Any, nstep: int) -> tuple[Any, Any]:
    """`nstep` physics steps of every world; returns (failed, overflowed) (num_envs,) device masks.

    A failed world (non-finite or huge state, or a buffer overflow) has its state and bound outputs
    put back to their values before the step; the caller resets it.
    """
    views.scatter_inputs()
    outputs = {name: [v.clone() for v in gvs] for name, gvs in views.outputs().items()}
    views.torch_to_warp()
    with wp.ScopedDevice(wp_device):
        for rt in runtimes:
            rt.launch_step(nstep)
    views.warp_to_torch()
    failed_groups = [rt.failed() for rt in runtimes]
    for g, (rt, failed) in enumerate(zip(runtimes, failed_groups, strict=True)):
        rt.restore_where(failed)
        for name, saved in outputs.items():
            current = views.group_views[name][g]
            current.copy_(torch.where(_rows_where(failed, current), saved[g], current))
    overflowed = views.to_global([rt.overflowed() for rt in runtimes])
    views.gather()
    return views.to_global(failed_groups), overflowed


def reset_where(views: StateViews, runtimes: list[GroupRuntime], wp_device: Any, model: mujoco.MjModel,
                mask: Any, qpos: Any, qvel: Any) -> None:
    """mj_resetData, then qpos/qvel, for the worlds of the (num_envs,) bool device `mask` (qpos/qvel
    (num_envs, ...): the masked rows are used), then what the bound outputs need: the kinematics
    stages if every bound output is kinematic (`KINEMATIC_OUTPUTS`), else a whole forward. Other
    worlds keep their state and bound outputs."""
    num_envs, nq, nv = views.num_envs, model.nq, model.nv
    if mask.dtype != torch.bool or tuple(mask.shape) != (num_envs,) or \
            tuple(qpos.shape) != (num_envs, nq) or tuple(qvel.shape) != (num_envs, nv):
        raise ConfigError(
            f"a masked reset takes a ({num_envs},) bool mask and qpos ({num_envs}, {nq}), qvel ({num_envs}, {nv}); "
            f"got {mask.dtype} {tuple(mask.shape)}, {tuple(qpos.shape)}, {tuple(qvel.shape)}"
        )
    device = views.torch_device
    mask, qpos, qvel = mask.to(device), qpos.to(device), qvel.to(device)
    views.scatter_inputs()
    masks = views.to_groups(mask)
    outputs = {name: [v.clone() for v in gvs] for name, gvs in views.outputs().items()}
    # The reset worlds' next step recomputes everything from qpos/qvel: with only kinematic outputs
    # bound they need no collision or constraint solve now.
    kinematic = set(outputs) <= KINEMATIC_OUTPUTS
    with wp.ScopedDevice(wp_device):
        for rt, m in zip(runtimes, masks, strict=True):
            rt.launch_reset_where(m)
        views.warp_to_torch()
        for rt, m, q, v in zip(runtimes, masks, views.to_groups(qpos), views.to_groups(qvel), strict=True):
            rt.set_state_where(m, q, v)
        views.torch_to_warp()
        for rt in runtimes:
            if kinematic:
                rt.launch_kinematics()
            else:
                rt.launch_forward()
        views.warp_to_torch()
    for name, saved in outputs.items():
        for g, m in enumerate(masks):
            current = views.group_views[name][g]
            current.copy_(torch.where(_rows_where(m, current), current, saved[g]))
    views.gather()


def overflow_error(kinds: int, envs: np.ndarray) -> ConfigError:
    """The error for mujoco_warp buffer overflows of `kinds` (OverflowType bits) in local `envs`."""
    names = [k.name for k in mjw.OverflowType if kinds & k and k.name != "ALL"]
    return ConfigError(
        f"mujoco_warp's buffers overflowed ({names}; NEFC/NJMAX_NNZ: raise njmax, BROADPHASE/NARROWPHASE/CCD: "
        f"raise nconmax) in envs {envs[:8].tolist()} ({envs.size} in all); those steps were undone and "
        "reported as failed. Fix: build the backend with a larger nconmax and/or njmax (WarpBackend(..., "
        "nconmax=..., njmax=...))"
    )
