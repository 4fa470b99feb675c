"""The whole SimToolReal-v0 env on the batched CPU backend vs the same task code on N plain
MjModel/MjData pairs stepped by plain mujoco (benchmarks/plain_backend.py): bit-identical."""

from __future__ import annotations

import gymnasium as gym
import numpy as np

import mjvec
from benchmarks.plain_backend import make_plain_vec


def test_batched_env_equals_plain_mujoco_env_with_paper_randomization() -> None:
    plain = make_plain_vec(6, num_tools=600, randomization="paper")
    batched = gym.make_vec(mjvec.ENV_ID, num_envs=6, autoreset_mode="disabled", num_threads=2)
    op, _ = plain.reset(seed=4)
    ob, _ = batched.reset(seed=4)
    np.testing.assert_array_equal(op, ob)
    rng = np.random.default_rng(0)
    for _ in range(40):
        a = rng.uniform(-1, 1, (6, 29))
        op, rp, tp, up, _ = plain.step(a)
        ob, rb, tb, ub, _ = batched.step(a)
        np.testing.assert_array_equal(op, ob)
        np.testing.assert_array_equal(rp, rb)
        np.testing.assert_array_equal(tp | up, tb | ub)
        if (tp | up).any():
            mask = tp | up
            plain.reset(options={"reset_mask": mask})
            batched.reset(options={"reset_mask": mask})
