"""The backend factory of the contract suites (tests/test_backend_contract.py, test_backend_reset.py):
`Contract` builds backends of one kind and their oracles (fixture `contract`, tests/conftest.py), plus
the small scenes and states those suites share.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import mujoco
import numpy as np

from mjvec.backends.base import Scene
from mjvec.backends.cpu import CpuBackend
from tests.devices import GPU_TOL, np_of
from tests.scenes import Oracle, make_scene


@dataclass
class Contract:
    """Builds backends of one kind and their oracles; closes the backends at teardown."""

    kind: str
    device: str
    made: list = field(default_factory=list)

    def backend(self, num_variants: int, num_envs: int, make=make_scene, offset: int = 0, **kw: Any) -> Any:
        scene = Scene(num_variants=num_variants, make_variant=make, num_envs=num_envs, env_id_offset=offset)
        if self.kind == "cpu":
            be = CpuBackend(scene, num_threads=2, progress=False, **kw)
        else:
            from mjvec.backends.warp import WarpBackend

            be = WarpBackend(scene, device=self.device, progress=False, **kw)
        self.made.append(be)
        return be

    def oracle(self, variants: np.ndarray, make=make_scene) -> Any:
        """Env i's variant alone, stepped by the same engine (see the module docstring)."""
        if self.kind == "cpu":
            return Oracle(variants, make=make)
        from tests.warp_oracle import WarpOracle

        return WarpOracle(variants, make=make, device=self.device).start()

    @property
    def alone_tol(self) -> float:
        """Batched vs `oracle`: bit-exact, except for a Warp backend on a GPU."""
        return GPU_TOL if self.kind == "warp" and self.device != "cpu" else 0.0

    @property
    def c_tol(self) -> float:
        """Kinematics of one state vs plain MuJoCo C: float64 is exact, float32 within round-off."""
        return 0.0 if self.kind == "cpu" else 1e-6

    def assert_alone(self, got: Any, want: np.ndarray) -> None:
        np.testing.assert_allclose(np_of(got), want, rtol=0, atol=self.alone_tol)


def random_state(rng: np.random.Generator, model: mujoco.MjModel) -> tuple[np.ndarray, np.ndarray]:
    """Arm joints and tool moved, tool in the air (no contact), random velocities."""
    qpos = model.qpos0.copy()
    qpos[:2] += rng.uniform(-0.5, 0.5, 2)
    qpos[2:5] += rng.uniform(-0.02, 0.02, 3)
    return qpos, rng.uniform(-0.3, 0.3, model.nv)


def random_states(rng: np.random.Generator, model: mujoco.MjModel, count: int) -> tuple[np.ndarray, np.ndarray]:
    states = [random_state(rng, model) for _ in range(count)]
    return np.stack([s[0] for s in states]), np.stack([s[1] for s in states])


def mocap_scene(v: int) -> mujoco.MjSpec:
    s = make_scene(v)
    goal = s.worldbody.add_body(name="goal", pos=[0.1, 0.2, 0.3], mocap=True)
    goal.add_geom(name="goal_geom", type=mujoco.mjtGeom.mjGEOM_SPHERE, size=[0.01, 0, 0], contype=0, conaffinity=0)
    return s


def inputs_scene(v: int) -> mujoco.MjSpec:
    """The mocap scene with activation dynamics on the first arm actuator (na = 1)."""
    s = mocap_scene(v)
    s.actuator("a_j1").set_to_position(kp=20.0, kv=1.0, timeconst=0.05)
    return s
