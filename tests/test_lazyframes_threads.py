"""Frames of render()'s LazyFrames are drawn under the env's concurrency guard.

Before, indexing the frames drew with the env's renderer outside the guard, so a second thread's
close() or render_grid() could free or share the GL renderer mid-draw and kill the process
(signal 11). Now a frame drawn while another call runs raises `ConcurrentUseError`, a call made
while a frame is drawn raises it too, and a closed env's frames raise `ClosedError`.

The races run in a child process (a segfault there is this test's failure, not pytest's death),
several trials each. Oracle for the frames themselves: a frame drawn under contention equals the
same frame drawn alone.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from mjvec.errors import ClosedError
from tests.toy_env import ToyPendulumEnv, policy

ROOT = Path(__file__).resolve().parents[1]
CHILD = textwrap.dedent(
    """
    import sys, threading, time
    import numpy as np
    from mjvec.errors import ClosedError, ConcurrentUseError
    from tests.toy_env import ToyPendulumEnv

    other, trials = sys.argv[1], int(sys.argv[2])
    counts = {"drawn": 0, "refused": 0, "closed": 0, "other_done": 0, "other_refused": 0}
    for trial in range(trials):
        env = ToyPendulumEnv(6, render_mode="rgb_array", render_size=(48, 64))
        env.reset(seed=trial)
        alone = [np.array(f) for f in env.render()]  # the oracle: each frame drawn with nothing else running
        frames = env.render()
        drawn, grids, done = [0], [0], threading.Event()

        def draw():
            k, deadline = 0, time.monotonic() + 60
            while not done.is_set() and time.monotonic() < deadline:
                i, k = k % 6, k + 1
                try:
                    frame = frames[i]
                except ConcurrentUseError:
                    counts["refused"] += 1
                    time.sleep(0.001)
                    continue
                except ClosedError:
                    counts["closed"] += 1
                    return
                frames._frames.clear()  # draw again next time: keep the renderer busy
                assert np.array_equal(frame, alone[i]), i
                counts["drawn"] += 1
                drawn[0] += 1
                time.sleep(0.0005)  # a gap, so that the other thread's calls get through too

        def interfere():
            deadline = time.monotonic() + 60
            while other == "close" and drawn[0] < 3:
                time.sleep(0.001)  # close once the drawing thread is busy drawing
            while time.monotonic() < deadline:
                try:
                    if other == "close":
                        env.close()
                        counts["other_done"] += 1
                        return
                    env.render_grid([0, 1, 2])
                    counts["other_done"] += 1
                    grids[0] += 1
                    if grids[0] == 8:
                        done.set()
                        return
                except ConcurrentUseError:
                    counts["other_refused"] += 1
                time.sleep(0.001)

        threads = [threading.Thread(target=draw), threading.Thread(target=interfere)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        env.close()
    print(counts)
    """
)


@pytest.mark.parametrize("other", ["close", "render_grid"])
def test_drawing_frames_while_another_thread_closes_or_renders_never_crashes(other):
    child = subprocess.run(
        [sys.executable, "-c", CHILD, other, "3"], capture_output=True, text=True, timeout=240,
        env={**os.environ, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "osmesa"), "PYTHONPATH": str(ROOT)}, cwd=ROOT,
    )
    assert child.returncode == 0, f"child died with {child.returncode}: {child.stderr[-3000:]}"
    counts = ast.literal_eval(child.stdout.strip().splitlines()[-1])
    assert counts["drawn"] > 0 and counts["other_done"] == 3 * (1 if other == "close" else 8), counts
    if other == "close":
        assert counts["closed"] == 3, counts  # every trial's drawing thread met the closed env


def test_frames_of_a_closed_env_raise_closed_error():
    env = ToyPendulumEnv(2, render_mode="rgb_array", render_size=(32, 32))
    env.reset(seed=0)
    frames = env.render()
    first = frames[0]
    env.close()
    assert first.shape == (32, 32, 3)
    np.testing.assert_array_equal(frames[0], first)  # a frame drawn before close stays readable
    with pytest.raises(ClosedError, match="is closed; create a new env"):
        frames[1]


def test_a_frame_is_refused_while_another_call_runs():
    from mjvec.errors import ConcurrentUseError

    env = ToyPendulumEnv(2, render_mode="rgb_array", render_size=(32, 32))
    env.reset(seed=0)
    frames = env.render()
    seen = {}
    evaluate = env._evaluate

    def drawing_inside_step(active):  # as a second thread would, while step() runs
        with pytest.raises(ConcurrentUseError, match=r"render\(\) was called while step\(\) is running"):
            frames[0]
        seen["refused"] = True
        return evaluate(active)

    env._evaluate = drawing_inside_step
    env.step(policy(env.global_env_ids, 0))
    assert seen == {"refused": True}
    env.close()
