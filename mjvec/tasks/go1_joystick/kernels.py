"""Compiled host kernels of the Go1 joystick task: its reward (the 16 terms of `terms.reward_terms`,
their weighting and the clipped total of `terms.reward`) and its observations
(`observations.observe`), each in one pass over the envs instead of dozens of numpy calls.

The kernels compute the SAME IEEE-754 operations, in the same order, as those namespace-generic
functions (`mjvec.tasks.locomotion`'s rewards and feet terms): `mjvec._jit` compiles without
fast-math, sums along an axis run in numpy's pairwise order (`mjvec._jit.pairwise_sum`), and the
exponentials are `mjvec.portable.exp`'s (`mjvec._portable_host.exp_any`). So its results are their
bits; tests/test_go1_kernels.py compares them on episode states, adversarial values and whole
episodes. They run where the state is float64 numpy (the CPU backend's default); torch on a device
and any other dtype take the generic functions, which stay the oracle.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from mjvec._jit import clip, host_arrays, inline, kernel, maximum, minimum, pairwise_sum
from mjvec._portable_host import exp_any

NUM_TERMS = 16  # terms.REWARD_TERMS, in its order (a test checks the count and the order below)


@inline
def _moving(c: np.ndarray) -> float:
    """1.0 where the command's norm exceeds 0.01 (`feet.moving`), else 0.0."""
    return 1.0 if np.sqrt(c[0] * c[0] + c[1] * c[1] + c[2] * c[2]) > 0.01 else 0.0


@kernel
def _reward_kernel(command: np.ndarray, sensordata: np.ndarray, sensor_adr: np.ndarray, foot_vel_adr: np.ndarray,
                   qpos: np.ndarray, qvel: np.ndarray, site_xpos: np.ndarray, foot_sites: np.ndarray,
                   force: np.ndarray, action: np.ndarray, last_action: np.ndarray, contact: np.ndarray,
                   first_contact: np.ndarray, air_time: np.ndarray, swing_peak: np.ndarray, done: np.ndarray,
                   default_pose: np.ndarray, pose_weight: np.ndarray, soft_lower: np.ndarray,
                   soft_upper: np.ndarray, params: np.ndarray, weights: np.ndarray, weighted: np.ndarray,
                   reward: np.ndarray) -> None:
    sigma, foot_height, ctrl_dt, max_reward = params[0], params[1], params[2], params[3]
    lin, gyro, glin, gang, up = sensor_adr[0], sensor_adr[1], sensor_adr[2], sensor_adr[3], sensor_adr[4]
    nj, nf = default_pose.shape[0], foot_sites.shape[0]
    work, terms = np.empty(nj), np.empty(NUM_TERMS)
    for e in range(command.shape[0]):
        c, s = command[e], sensordata[e]
        moving = _moving(c)
        d0, d1 = c[0] - s[lin], c[1] - s[lin + 1]
        terms[0] = exp_any(-(d0 * d0 + d1 * d1) / sigma)  # tracking_lin_vel
        d2 = c[2] - s[gyro + 2]
        terms[1] = exp_any(-(d2 * d2) / sigma)  # tracking_ang_vel
        terms[2] = s[glin + 2] * s[glin + 2]  # lin_vel_z
        terms[3] = s[gang] * s[gang] + s[gang + 1] * s[gang + 1]  # ang_vel_xy
        terms[4] = s[up] * s[up] + s[up + 1] * s[up + 1]  # orientation
        for j in range(nj):
            work[j] = abs(qpos[e, 7 + j] - default_pose[j])
        terms[5] = pairwise_sum(work) * (1.0 - moving)  # stand_still
        terms[6] = 1.0 if done[e] else 0.0  # termination
        for j in range(nj):
            q = qpos[e, 7 + j] - default_pose[j]
            work[j] = q * q * pose_weight[j]
        terms[7] = exp_any(-pairwise_sum(work))  # pose
        for j in range(nj):
            work[j] = force[e, j] * force[e, j]
        torque_l2 = np.sqrt(pairwise_sum(work))
        for j in range(nj):
            work[j] = abs(force[e, j])
        terms[8] = torque_l2 + pairwise_sum(work)  # torques
        for j in range(nj):
            a = action[e, j] - last_action[e, j]
            work[j] = a * a
        terms[9] = pairwise_sum(work)  # action_rate
        for j in range(nj):
            work[j] = abs(qvel[e, 6 + j]) * abs(force[e, j])
        terms[10] = pairwise_sum(work)  # energy
        slip, clearance, height, air = 0.0, 0.0, 0.0, 0.0  # np.sum starts from +0.0
        for f in range(nf):
            vx, vy = s[foot_vel_adr[f, 0]], s[foot_vel_adr[f, 1]]
            speed_sq = vx * vx + vy * vy
            slip += speed_sq * (1.0 if contact[e, f] else 0.0)
            clearance += abs(site_xpos[e, foot_sites[f], 2] - foot_height) * np.sqrt(np.sqrt(speed_sq))
            landing = 1.0 if first_contact[e, f] else 0.0
            error = swing_peak[e, f] / foot_height - 1.0
            height += error * error * landing
            air += (air_time[e, f] - 0.1) * landing
        terms[11], terms[12] = slip * moving, clearance  # feet_slip, feet_clearance
        terms[13], terms[14] = height * moving, air * moving  # feet_height, feet_air_time
        for j in range(nj):
            q = qpos[e, 7 + j]
            work[j] = -minimum(q - soft_lower[j], 0.0) + maximum(q - soft_upper[j], 0.0)
        terms[15] = pairwise_sum(work)  # dof_pos_limits
        total = 0.0  # Python's sum() of the weighted terms starts from 0
        for t in range(NUM_TERMS):
            weighted[t, e] = weights[t] * terms[t]
            total += weighted[t, e]
        reward[e] = clip(total * ctrl_dt, 0.0, max_reward)


@kernel
def _observe_kernel(qpos: np.ndarray, qvel: np.ndarray, sensordata: np.ndarray, site_xmat: np.ndarray,
                    imu_site: int, sensor_adr: np.ndarray, foot_vel_adr: np.ndarray, default_pose: np.ndarray,
                    force: np.ndarray, push_force: np.ndarray, push_due: np.ndarray, last_act: np.ndarray,
                    command: np.ndarray, last_contact: np.ndarray, air_time: np.ndarray, noise: np.ndarray,
                    policy: np.ndarray, critic: np.ndarray) -> None:
    lin, gyro, accel, gang = sensor_adr[0], sensor_adr[1], sensor_adr[5], sensor_adr[3]
    nj, noisy = default_pose.shape[0], noise.shape[1]
    with_critic = critic.shape[0] > 0
    for e in range(qpos.shape[0]):
        p, s = policy[e], sensordata[e]
        for i in range(3):  # linvel, gyro, gravity (R^T (0, 0, -1): minus R's third row)
            p[i] = s[lin + i]
            p[3 + i] = s[gyro + i]
            p[6 + i] = -site_xmat[e, imu_site, 6 + i]
        for j in range(nj):
            p[9 + j] = qpos[e, 7 + j] - default_pose[j]
            p[9 + nj + j] = qvel[e, 6 + j]
            p[9 + 2 * nj + j] = last_act[e, j]
        for i in range(3):
            p[9 + 3 * nj + i] = command[e, i]
        if with_critic:  # the clean blocks, read before the noise is added
            c = critic[e]
            col = p.shape[0]
            for i in range(3):
                c[col + i] = s[gyro + i]
                c[col + 3 + i] = s[accel + i]
                c[col + 6 + i] = p[6 + i]
                c[col + 9 + i] = s[lin + i]
                c[col + 12 + i] = s[gang + i]
            col += 15
            for j in range(nj):
                c[col + j] = p[9 + j]
                c[col + nj + j] = qvel[e, 6 + j]
                c[col + 2 * nj + j] = force[e, j]
            col += 3 * nj
            feet = last_contact.shape[1]
            for f in range(feet):
                c[col + f] = 1.0 if last_contact[e, f] else 0.0
                for i in range(3):
                    c[col + feet + 3 * f + i] = s[foot_vel_adr[f, i]]
                c[col + 4 * feet + f] = air_time[e, f]
            col += 5 * feet
            for i in range(3):
                c[col + i] = push_force[e, i]
            c[col + 3] = push_due[e]
        for i in range(noisy):  # float32 noise on the float32 policy state
            p[i] = p[i] + np.float32(noise[e, i])
        if with_critic:
            for i in range(p.shape[0]):
                critic[e, i] = p[i]


SENSORS = ("local_linvel", "gyro", "global_linvel", "global_angvel", "upvector", "accelerometer")


def applies(*arrays: Any) -> bool:
    """True where the kernels stand in for the generic functions: every array numpy, float64 (or bool
    for the contact flags)."""
    return host_arrays(arrays, (np.float64, np.bool_))


@functools.lru_cache(maxsize=16)
def _reward_constants(cfg: Any, names: tuple[str, ...], max_reward: float) -> tuple[np.ndarray, np.ndarray]:
    """(weights in `names` order, (tracking sigma, max foot height, control dt, max reward)), made once
    per config: no config reads in the step."""
    scales = cfg.reward_scales.as_dict()
    weights = np.array([scales[name] for name in names], np.float64)
    return weights, np.array([cfg.tracking_sigma, cfg.max_foot_height, cfg.ctrl_dt, max_reward], np.float64)


@functools.lru_cache(maxsize=16)
def _addresses(idx: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(the `SENSORS`' sensordata addresses, foot velocity addresses (F, 3), foot site ids), int64,
    made once per indices."""
    adr = np.array([idx.sensor[name][0] for name in SENSORS], np.int64)
    return adr, np.asarray(idx.foot_vel_adr, np.int64).copy(), np.asarray(idx.foot_sites, np.int64).copy()


def reward(cfg: Any, idx: Any, qpos: np.ndarray, qvel: np.ndarray, sensordata: np.ndarray, site_xpos: np.ndarray,
           force: np.ndarray, action: np.ndarray, last_action: np.ndarray, command: np.ndarray, feet: Any,
           done: np.ndarray, names: tuple[str, ...], max_reward: float) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """`terms.reward(cfg, terms.reward_terms(...))` for float64 numpy inputs: (reward (N,), the
    weighted terms by name, (N,) each, in `names` order), new arrays."""
    n = qpos.shape[0]
    weights, params = _reward_constants(cfg, names, max_reward)
    adr, foot_vel_adr, foot_sites = _addresses(idx)
    weighted, total = np.empty((len(names), n)), np.empty(n)
    _reward_kernel(command, sensordata, adr, foot_vel_adr, qpos, qvel, site_xpos, foot_sites, force, action,
                   last_action, feet.contact, feet.first_contact, feet.air_time, feet.swing_peak, done,
                   idx.default_pose, idx.pose_weight, idx.soft_lower, idx.soft_upper, params, weights, weighted,
                   total)
    return total, dict(zip(names, weighted, strict=True))


def observe(qpos: np.ndarray, qvel: np.ndarray, sensordata: np.ndarray, site_xmat: np.ndarray,
            actuator_force: np.ndarray, push_force: np.ndarray, push_due: np.ndarray, idx: Any, shown: Any,
            critic: bool, policy_width: int, critic_width: int) -> Any:
    """`observations.observe` for float64 numpy inputs: (N, policy_width) float32, with `critic`
    {"policy": ..., "critic": (N, critic_width)}; new arrays."""
    n = qpos.shape[0]
    policy = np.empty((n, policy_width), np.float32)
    privileged = np.empty((n if critic else 0, critic_width), np.float32)
    adr, foot_vel_adr, _ = _addresses(idx)
    _observe_kernel(qpos, qvel, sensordata, site_xmat, int(idx.imu_site), adr, foot_vel_adr, idx.default_pose,
                    actuator_force, push_force, push_due, shown.last_act, shown.command, shown.last_contact,
                    shown.air_time, shown.noise, policy, privileged)
    return {"policy": policy, "critic": privileged} if critic else policy
