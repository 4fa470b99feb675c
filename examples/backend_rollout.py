"""A batched rollout on the CPU backend: N envs of a small arm + tool scene, 3 tool topologies.

Prints env-steps/s. This is the backend alone (no task logic); see examples/rollout.py for the
SimToolReal-v0 environment.

    python -m examples.backend_rollout --num-envs 512 --steps 200
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from tqdm import tqdm

from mjvec.backends.base import Scene
from mjvec.backends.cpu import CpuBackend
from tests.scenes import make_scene


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--num-envs", type=int, default=512)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--num-threads", type=int, default=None)
    args = p.parse_args()
    backend = CpuBackend(Scene(num_variants=9, make_variant=make_scene, num_envs=args.num_envs),
                         num_threads=args.num_threads)
    rng = np.random.default_rng(0)
    t0 = time.perf_counter()
    for _ in tqdm(range(args.steps), desc="rollout"):
        backend.ctrl[:] = rng.uniform(-1, 1, backend.ctrl.shape)
        backend.step(2)
    dt = time.perf_counter() - t0
    print(f"{args.num_envs} envs x {args.steps} steps: {args.num_envs * args.steps / dt:,.0f} env-steps/s "
          f"({backend.num_groups} topology groups, {backend.num_threads} threads)")


if __name__ == "__main__":
    main()
