"""CPU backend physics rate vs the physical limit `threads x r1`, measured in one run.

r1 = single-thread plain `mujoco.mj_step` rate of the SAME compiled model (one variant alone).
Prints, per thread count, the backend's physics steps/s divided by threads x r1, and the same
ratio for two references run on the same states:
- a plain `mujoco.batch.Batch` of one compiled model (no variants): the engine's own ceiling;
- `set_models`: one Batch per MjData layout with every env on its own tool model compiled alone
  (the engine's other way to hold variants), against the backend's expanded per-env fields.

    python -m benchmarks.cpu_backend [--scene simtoolreal|toy] [--num-envs 256] [--tools 600]
"""

from __future__ import annotations

import argparse
import logging

import mujoco
import mujoco.batch
import numpy as np

from benchmarks._timing import interleaved_rates
from mjvec.backends.base import Scene
from mjvec.backends.cpu import CpuBackend, default_num_threads


def _make_variant(scene: str):
    if scene == "toy":
        from tests.scenes import make_scene

        return make_scene
    from mjvec.tasks.simtoolreal.scene import scene_spec

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
    tool_models = [make(v).compile() for v in range(args.tools)]
    for threads in sorted({1, default_num_threads()}):
        # The engine alone, for reference: one plain mujoco.batch.Batch of tool 0's model (no
        # variants, no expanded fields, no global views). What the backend adds is measured against it.
        batch = mujoco.batch.Batch(model, args.num_envs, threads)
        batch.step(nstep=settle)
        raw[threads] = batch
        be = CpuBackend(Scene(args.tools, make, args.num_envs), num_threads=threads)
        be.step(settle)
        backends[threads] = be
        caller = _set_models_batches(tool_models, args.num_envs, threads, be)
        steps = max(1, 4000 // args.num_envs) * args.nstep

        def run(be=be, steps=steps) -> None:
            for _ in range(steps // args.nstep):
                be.step(args.nstep)

        cases[f"backend {threads} thread(s)"] = (run, steps * args.num_envs)

        def run_raw(batch=batch, steps=steps) -> None:
            for _ in range(steps // args.nstep):
                batch.step(nstep=args.nstep)

        cases[f"raw batch {threads} thread(s)"] = (run_raw, steps * args.num_envs)

        def run_caller(caller=caller, steps=steps) -> None:
            for _ in range(steps // args.nstep):
                for b in caller:
                    b.step(nstep=args.nstep)

        cases[f"set_models {threads} thread(s)"] = (run_caller, steps * args.num_envs)
    rates = interleaved_rates(cases, repeats=args.repeats)
    r1 = rates["mj_step (1 thread)"]
    print(f"scene={args.scene} tools={args.tools} num_envs={args.num_envs} nstep={args.nstep}")
    print(f"r1 (single-thread mj_step) = {r1:,.0f} steps/s")
    for threads in backends:
        rate = rates[f"backend {threads} thread(s)"]
        engine = rates[f"raw batch {threads} thread(s)"]
        caller = rates[f"set_models {threads} thread(s)"]
        print(f"threads={threads}: backend {rate:,.0f} physics steps/s; ratio to threads x r1 = "
              f"{rate / (threads * r1):.3f}; raw Batch of one model {engine / (threads * r1):.3f}; "
              f"set_models {caller / (threads * r1):.3f} (backend / set_models = {rate / caller:.3f})")


def _set_models_batches(models: list, num_envs: int, threads: int, like: CpuBackend) -> list:
    """One Batch per variant group of `like`, each sim on its own tool model (set_models), started
    from `like`'s current states so both run the same physics."""
    out = []
    for g, group in enumerate(like._groups):
        batch = mujoco.batch.Batch(group.template, group.num_envs, min(threads, group.num_envs))
        variants = np.asarray(group.variants)[group.rows]
        batch.set_models([models[int(v)] for v in variants])
        batch.state[...] = like.group_batches[g].state
        out.append(batch)
    return out


if __name__ == "__main__":
    main()
