"""The throughput benchmark's r1 replays exactly the physics the env stepped: each recorded
pre-step state, stepped by plain mujoco on the env's tool compiled alone, lands bit-exactly on
the batch's next qpos (benchmarks/_replay.py). A perturbed record must not.

With random actions the hand hits the tools, so this also checks batching against each tool
alone under contact with the hand (it caught headless tools batched under a headed tool's body
structure flags: right only to rounding, which the settle-only catalog test did not see)."""

from __future__ import annotations

import gymnasium as gym
import mujoco
import numpy as np

import mjvec
from benchmarks._replay import StepRecorder, replay_passes, replay_seconds
from mjvec.tasks.simtoolreal.scene import default_catalog, scene_spec

N_ENVS, STEPS, SUBSTEPS = 8, 15, 2


def test_replay_of_recorded_steps_is_bit_exact_and_detects_a_change():
    headless = int(default_catalog().ids_of_topology("box_only")[0])
    env = gym.make_vec(mjvec.ENV_ID, num_envs=N_ENVS, num_tools=600, num_threads=2, randomization="paper",
                       env_id_offset=max(0, headless - 3))  # tools with and without a head
    try:
        base = env.unwrapped
        assert len({base.catalog[int(t)].head_dims is None for t in base.tool_ids}) == 2
        sample = np.arange(N_ENVS)
        recorder = StepRecorder(base.backend, sample)
        env.reset(seed=3)
        actions = np.random.default_rng(1).uniform(-1, 1, (STEPS, N_ENVS, 29))
        for a in actions:
            recorder.arm()
            env.step(a)
        assert len(recorder.records) == STEPS and recorder.step_seconds > 0
        catalog = default_catalog()
        models = [scene_spec(int(base.tool_ids[i]), catalog=catalog).compile() for i in sample]
        datas = [mujoco.MjData(m) for m in models]
        seconds, exact = replay_seconds(recorder.records, models, datas, SUBSTEPS)
        assert seconds > 0 and exact == STEPS * sample.size
        # Repeated passes load every state afresh: each lands exactly again, and they go on until the
        # timed seconds reach the minimum (one pass when it is 0).
        assert replay_passes(recorder.records, models, datas, SUBSTEPS, 0.0)[1:] == (1, STEPS * sample.size)
        timed, passes, exact = replay_passes(recorder.records, models, datas, SUBSTEPS, 5 * seconds)
        assert passes >= 2 and timed >= 5 * seconds and exact == STEPS * sample.size
        recorder.records[2].inputs["ctrl"][1] += 0.1  # a different control for one sample, one step
        _, exact = replay_seconds(recorder.records, models, datas, SUBSTEPS)
        assert exact == STEPS * sample.size - 1
    finally:
        env.close()
