"""The Warp engine's step and masked reset as device work only, and how it keeps bound outputs.

mujoco_warp runs a launch over every world of a group. The step and the masked reset therefore run
every group's captured graph over all of its worlds and then select per world with `torch.where`
on device masks, so the host never learns which worlds failed or were reset. A forward or set_const
of some worlds keeps the others' bound outputs (`outputs_kept`). Torch and warp work is ordered by
stream waits on the device (`build.torch_to_warp` / `warp_to_torch`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any

import mujoco_warp as mjw
import numpy as np
import torch
import warp as wp

from mjvec.backends.base import STATE_INPUTS
from mjvec.backends.groupviews import GroupViews
from mjvec.backends.warp.build import torch_to_warp, warp_to_torch
from mjvec.backends.warp.runtime import BACKUP_FIELDS, GroupRuntime
from mjvec.errors import ConfigError

# Never changed by forward or set_const: not outputs that need keeping for untouched worlds.
_STATE_FIELDS = STATE_INPUTS | set(BACKUP_FIELDS)
# What mujoco_warp's kinematics, com_pos and com_vel compute from qpos, qvel and mocap: a masked
# reset that only these outputs are bound to needs no collision or constraint solve.
KINEMATIC_OUTPUTS = frozenset({
    "xpos", "xquat", "xmat", "xipos", "ximat", "xanchor", "xaxis", "geom_xpos", "geom_xmat",
    "site_xpos", "site_xmat", "subtree_com", "cinert", "cdof", "cvel", "cdof_dot",
})


def _rows_where(mask: Any, like: Any) -> Any:
    """`mask` (nworld,) shaped to broadcast over `like` (nworld, ...)."""
    return mask.reshape(-1, *([1] * (like.dim() - 1)))


def bound_outputs(views: GroupViews) -> dict[str, list[Any]]:
    """The bound outputs (not state fields) of every group, by name."""
    return {name: gvs for name, gvs in views.group_views.items() if name not in _STATE_FIELDS}


@contextlib.contextmanager
def outputs_kept(views: GroupViews, runtimes: list[GroupRuntime], keep: list[np.ndarray],
                 device: Any) -> Iterator[None]:
    """Bound outputs of group g's worlds keep[g] are put back after the block.

    A forward or set_const runs on every world of a group; this keeps what the untouched envs
    see exactly as it was (e.g. one substep behind after a step), whoever else was reset.
    """
    saved = []
    for g, rows in enumerate(keep):
        if rows.size == 0:
            continue
        index = runtimes[g].rows(rows)
        for gvs in bound_outputs(views).values():
            saved.append((gvs[g], index, gvs[g][index].clone()))
    torch_to_warp(device)
    yield
    warp_to_torch(device)
    for target, index, values in saved:
        target[index] = values


def step_groups(views: GroupViews, runtimes: list[GroupRuntime], wp_device: Any, nstep: int) -> tuple[Any, Any]:
    """`nstep` physics steps of every world (inputs scattered); returns (failed, overflowed)
    (num_envs,) device masks.

    A failed world (non-finite or huge state, or a buffer overflow) has its state and bound outputs
    put back to their values before the step; the caller resets it.
    """
    outputs = {name: [v.clone() for v in gvs] for name, gvs in bound_outputs(views).items()}
    torch_to_warp(wp_device)
    with wp.ScopedDevice(wp_device):
        for rt in runtimes:
            rt.launch_step(nstep)
    warp_to_torch(wp_device)
    failed_groups = [rt.failed() for rt in runtimes]
    for g, (rt, failed) in enumerate(zip(runtimes, failed_groups, strict=True)):
        rt.restore_where(failed)
        for name, saved in outputs.items():
            current = views.group_views[name][g]
            current.copy_(torch.where(_rows_where(failed, current), saved[g], current))
    overflowed = views.to_global([rt.overflowed() for rt in runtimes])
    return views.to_global(failed_groups), overflowed


def reset_where(views: GroupViews, runtimes: list[GroupRuntime], wp_device: Any, mask: Any,
                state: Mapping[str, Any]) -> None:
    """mj_resetData, then the state arrays (name -> (num_envs, ...): the masked rows are used), for
    the worlds of the (num_envs,) bool device `mask`, then what the bound outputs need: the
    kinematics stages if every bound output is kinematic (`KINEMATIC_OUTPUTS`), else a whole
    forward. Other worlds keep their state and bound outputs (inputs scattered, shapes checked)."""
    mask = mask.to(runtimes[0].tensor("qpos").device)
    masks = views.to_groups(mask)
    per_group = {name: views.to_groups(value) for name, value in state.items()}
    outputs = {name: [v.clone() for v in gvs] for name, gvs in bound_outputs(views).items()}
    # The reset worlds' next step recomputes everything from their state: with only kinematic
    # outputs bound they need no collision or constraint solve now.
    kinematic = set(outputs) <= KINEMATIC_OUTPUTS
    with wp.ScopedDevice(wp_device):
        for rt, m in zip(runtimes, masks, strict=True):
            rt.launch_reset_where(m)
        warp_to_torch(wp_device)
        for g, (rt, m) in enumerate(zip(runtimes, masks, strict=True)):
            rt.set_state_where(m, {name: values[g] for name, values in per_group.items()})
        torch_to_warp(wp_device)
        for rt in runtimes:
            if kinematic:
                rt.launch_kinematics()
            else:
                rt.launch_forward()
        warp_to_torch(wp_device)
    for name, saved in outputs.items():
        for g, m in enumerate(masks):
            current = views.group_views[name][g]
            current.copy_(torch.where(_rows_where(m, current), current, saved[g]))


def overflow_error(kinds: int, envs: np.ndarray) -> ConfigError:
    """The error for mujoco_warp buffer overflows of `kinds` (OverflowType bits) in local `envs`."""
    names = [k.name for k in mjw.OverflowType if kinds & k and k.name != "ALL"]
    return ConfigError(
        f"mujoco_warp's buffers overflowed ({names}; NEFC/NJMAX_NNZ: raise njmax, BROADPHASE/NARROWPHASE/CCD: "
        f"raise nconmax) in envs {envs[:8].tolist()} ({envs.size} in all); those steps were undone and "
        "reported as failed. Fix: build the env with a larger nconmax and/or njmax: gym.make_vec(..., "
        "nconmax=..., njmax=...) (python -m mjvec rollout ... --nconmax N --njmax N; a backend of your own: "
        "WarpBackend(..., nconmax=..., njmax=...))"
    )
