"""SimToolReal-v0's randomization preset.

`paper`: exactly what the SimToolReal authors' training run turns on: grasp-box scale noise
U(0.9, 1.1) per reset, object-pose latency 0-9 steps with N(0, 1 cm) position noise and U(-5, 5)
deg rotation noise about a positive-octant axis, joint-velocity observation noise N(0, 0.1),
observation delay 0-2 steps, action delay 0-2 steps (the three delay queues refilled at every new
goal segment, as the source's), random pushes (independent force and torque, each with its own
p ~ log-U(0.001, 0.1) per env and reset, force N(0,1)^3 x m x 20, torque N(0,1)^3 x m x 2, only when
lifted, m the paper run's env-0 tool mass for every env). Physics-parameter DR is off in the
source and so here. The source's +-1 cm table-height DR is not included (the spec lists it as a
simplification); `table_height()` adds it (the task's spawn, lift reference and
first-goal floor then follow each env's table, as the source's).
"""

from __future__ import annotations

from gymnasium.vector import VectorEnv

from mjvec.randomization import (
    ActionDelay,
    EventTerm,
    ObjectPoseLatency,
    ObjectScaleNoise,
    ObservationDelay,
    ObservationNoise,
    RandomPushes,
)


def paper(env: VectorEnv) -> VectorEnv:
    """Wrap `env` with the paper's randomization (see the module docstring)."""
    env = ObjectScaleNoise(env, 0.9, 1.1)
    env = ObjectPoseLatency(env, max_delay=9, pos_std=0.01, rot_deg=5.0, refill_on_goal=True)
    env = ObservationNoise(env, "joint_vel", 0.1)  # before the delay: the source delays the noisy obs
    env = ObservationDelay(env, max_delay=2, refill_on_goal=True)
    env = ActionDelay(env, max_delay=2, refill_on_goal=True)
    return RandomPushes(env, prob_range=(0.001, 0.1), force_scale=20.0, torque_scale=2.0, mass_scale="reference")


def table_height(low: float = -0.01, high: float = 0.01, table: str = "table") -> EventTerm:
    """The source's table-height DR: the table geom moved by U(low, high) m in z at every reset.

    The backend refreshes the table's bounds and its body's collision BVH per env after each write.
    A task that measures from the table reads its height at each reset after this term's write
    (SimToolReal-v0's spawn, lift reference and first-goal floor follow it).
    """
    return EventTerm("geom_height", low, high, targets=(table,), operation="add", name="table_height")
