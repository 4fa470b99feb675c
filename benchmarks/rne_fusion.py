"""The CPU backend's contact-force pass, fused into the step or not: time per step, ratios in one run.

Three persistent `mujoco.batch.Batch`es of one Gymnasium model, the same states and controls, each
stepped `frame_skip` substeps per call, interleaved (the order alternates each repeat), medians:

- fused: `RnePostConstraint.run` (one mjb_apply: the substeps, then mj_rnePostConstraint, on each
  simulation in turn; then the outputs copied), the CPU backend's default;
- unfused: `Batch.step`, then the pass as a call of its own (`RnePostConstraint(fuse=False).update`);
- step only: `Batch.step` without the pass (the floor both are compared with).

The three batches step the same trajectory (asserted bit for bit at the end), so every repeat times
the same work. With one thread the clock is the calling thread's CPU time (which is where a
1-thread batch runs, and what other processes on the machine disturb least); with more, wall time.

    python -m benchmarks.rne_fusion [--xml ant.xml humanoid.xml] [--num-envs 64 1024] [--threads 1 2]
"""

from __future__ import annotations

import argparse
import statistics
import time

import mujoco
import mujoco.batch as mjb
import numpy as np
from tqdm import tqdm

from mjvec.backends.cpu.rne_post import RnePostConstraint
from mjvec.tasks.gym_mujoco.specs import xml_path


def measure(xml: str, num_envs: int, threads: int, repeats: int, calls: int, frame_skip: int) -> dict[str, float]:
    """Median milliseconds per step of each side (see the module docstring)."""
    model = mujoco.MjModel.from_xml_path(str(xml_path(xml)))
    batches = [mjb.Batch(model, num_envs, threads, persistent=True) for _ in range(3)]
    fused, unfused = RnePostConstraint([model], [batches[0]]), RnePostConstraint([model], [batches[1]], fuse=False)
    if not fused.fused:
        raise SystemExit("the fused callback is not available here (see the INFO log of mjvec.backends.cpu.rne_post)")
    rng = np.random.default_rng(0)
    qpos = model.qpos0 + rng.uniform(-0.1, 0.1, (num_envs, model.nq))
    ctrl = rng.uniform(-0.4, 0.4, (num_envs, model.nu))
    for batch in batches:
        batch.bind("qpos")[:] = qpos
        batch.forward()
        batch.bind("ctrl")[:] = ctrl
    sides = {
        "fused": lambda: fused.run(0, None, frame_skip),
        "unfused": lambda: (batches[1].step(None, nstep=frame_skip), unfused.update(0)),
        "step only": lambda: batches[2].step(None, nstep=frame_skip),
    }
    clock = time.thread_time if threads == 1 else time.perf_counter
    samples: dict[str, list[float]] = {name: [] for name in sides}
    for r in tqdm(range(repeats), desc=f"{xml} {num_envs} x {threads}", leave=False):
        order = list(sides.items()) if r % 2 else list(sides.items())[::-1]
        for name, call in order:
            start = clock()
            for _ in range(calls):
                call()
            samples[name].append((clock() - start) / calls * 1e3)
    for name in ("qpos", "qvel"):  # the same trajectory on every side, so the same work was timed
        assert np.array_equal(batches[0].bind(name), batches[1].bind(name))
        assert np.array_equal(batches[0].bind(name), batches[2].bind(name))
    assert np.array_equal(batches[0].bind("cfrc_ext"), batches[1].bind("cfrc_ext"))
    return {name: statistics.median(values) for name, values in samples.items()}


def main() -> None:
    p = argparse.ArgumentParser(description="mj_rnePostConstraint fused into the CPU step or not (ratios)")
    p.add_argument("--xml", nargs="+", default=["ant.xml", "humanoid.xml"])
    p.add_argument("--num-envs", type=int, nargs="+", default=[64, 1024])
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--repeats", type=int, default=11)
    p.add_argument("--frame-skip", type=int, default=5)
    args = p.parse_args()
    for xml in args.xml:
        for n in args.num_envs:
            for t in args.threads:
                calls = max(1, 2048 // n)
                ms = measure(xml, n, t, args.repeats, calls, args.frame_skip)
                fused, unfused, floor = ms["fused"], ms["unfused"], ms["step only"]
                print(f"{xml} {n} envs x {t} threads, ms per step: fused {fused:.3f}, unfused {unfused:.3f}, step "
                      f"only {floor:.3f} | unfused / fused {unfused / fused:.3f} | the pass's share of the step: "
                      f"unfused {(unfused - floor) / unfused:.3f}, fused {(fused - floor) / fused:.3f}", flush=True)


if __name__ == "__main__":
    main()
