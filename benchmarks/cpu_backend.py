"""CPU backend physics rate vs the physical limit `threads x r1`, measured in one run.

r1 = single-thread plain `mujoco.mj_step` rate of the SAME compiled model (one variant alone).
Prints, per thread count, the backend's physics steps/s divided by threads x r1 (target >= 0.85),
and the same ratio for a plain `mjbatch.Batch` of one compiled model: the engine's own ceiling.

    python -m benchmarks.cpu_backend [--scene simtoolreal|toy] [--num-envs 256] [--tools 600]
"""

from __future__ import annotations

import argparse
import logging

import mujoco

from benchmarks._timing import interleaved_rates
from mjvec.backends.base import Scene
from mjvec.backends.cpu import CpuBackend, default_num_threads


def _make_variant(scene: str):
    if scene == "toy":
        from tests.scenes import make_scene

        return make_scene
    from mjvec.assets import scene_spec

    return lambda v: scene_spec(v)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scene", choices=("simtoolreal", "toy"), default="simtoolreal")
    p.add_argument("--num-envs", type=int, default=256)
    p.add_argument("--tools", type=int, default=600)
    p.add_argument("--nstep", type=int, default=2)
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args()
    logging.basicConfig(level=logging.INFO)
    make = _make_variant(args.scene)
    model = make(0).compile()
    data = mujoco.MjData(model)
    settle = 200
    mujoco.mj_step(model, data, settle)  # let the tool land, as in the batched run
    block = 50

    def plain() -> None:
        mujoco.mj_step(model, data, block)

    cases = {"mj_step (1 thread)": (plain, block)}
    backends = {}
    raw = {}
    for threads in sorted({1, default_num_threads()}):
        # The engine alone, for reference: one plain mjbatch.Batch of tool 0's model (no variants,
        # no expanded fields, no global views). What the backend adds is measured against it.
        import mjbatch

        batch = mjbatch.Batch(model, args.num_envs, num_threads=threads)
        batch.step(nstep=settle)
        raw[threads] = batch
        be = CpuBackend(Scene(args.tools, make, args.num_envs), num_threads=threads)
        be.step(settle)
        backends[threads] = be
        steps = max(1, 4000 // args.num_envs) * args.nstep

        def run(be=be, steps=steps) -> None:
            for _ in range(steps // args.nstep):
                be.step(args.nstep)

        cases[f"backend {threads} thread(s)"] = (run, steps * args.num_envs)

        def run_raw(batch=batch, steps=steps) -> None:
            for _ in range(steps // args.nstep):
                batch.step(nstep=args.nstep)

        cases[f"raw mjbatch {threads} thread(s)"] = (run_raw, steps * args.num_envs)
    rates = interleaved_rates(cases, repeats=args.repeats)
    r1 = rates["mj_step (1 thread)"]
    print(f"scene={args.scene} tools={args.tools} num_envs={args.num_envs} nstep={args.nstep}")
    print(f"r1 (single-thread mj_step) = {r1:,.0f} steps/s")
    for threads in backends:
        rate = rates[f"backend {threads} thread(s)"]
        engine = rates[f"raw mjbatch {threads} thread(s)"]
        print(f"threads={threads}: backend {rate:,.0f} physics steps/s; ratio to threads x r1 = "
              f"{rate / (threads * r1):.3f}; raw mjbatch.Batch of one model {engine / (threads * r1):.3f}")


if __name__ == "__main__":
    main()
