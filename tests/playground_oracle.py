"""The mjvec side of the MuJoCo Playground oracle (tests/test_go1_playground.py and
tests/test_go1_rough_playground.py): running Playground's code in its own environment
(tests/playground_driver.py), recording an mjvec rollout in the form the driver takes
(`TaskRecorder`, `lockstep_rollout`), comparing the two (`numeric_fields`, `assert_close`), and a
two-sample Kolmogorov-Smirnov test.

`TaskRecorder` wraps the env's `_evaluate` (the task's hook, called after the physics) to record,
for every step, the task state before it (what Playground keeps in ``state.info``), the physics
state after it (what Playground's step reads from ``data``), and mjvec's outputs.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from mjvec.xp import to_host

ROOT = Path(__file__).resolve().parents[1]
DRIVER = ROOT / "tests" / "playground_driver.py"
AFTER = ("qpos", "qvel", "sensordata", "site_xpos", "site_xmat", "actuator_force")
# Task values on identical states: float32 round-off (tests/test_go1_playground.py says why).
TOL = {"rtol": 4e-6, "atol": 1e-6}


def playground_python() -> Path:
    """The Playground environment's interpreter (MJVEC_PLAYGROUND_PYTHON, else .venv-playground);
    skips the calling test, saying how to make it, when it does not exist."""
    path = Path(os.environ.get("MJVEC_PLAYGROUND_PYTHON", ROOT / ".venv-playground" / "bin" / "python"))
    if not path.is_file():
        pytest.skip(f"MuJoCo Playground's environment is not at {path}: bash scripts/setup_playground.sh makes it")
    return path


def run_driver(jobs: list[dict[str, Any]], folder: Path, timeout: float = 900) -> None:
    """Run the driver's `jobs` in one Playground process (its stderr in the failure message)."""
    spec = folder / "jobs.json"
    spec.write_text(json.dumps(jobs))
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false"}
    done = subprocess.run([str(playground_python()), str(DRIVER), str(spec)], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=folder)
    if done.returncode:
        raise AssertionError(f"the Playground driver failed ({done.returncode}):\n{done.stderr[-6000:]}")


def pre_state(base: Any) -> dict[str, np.ndarray]:
    """The env's task state before a step, under Playground's ``state.info`` names."""
    cmd, feet, push = base.commands, base.feet, base.pushes
    values = {
        "command": cmd.command, "steps_until_next_cmd": cmd.steps_left, "last_act": base.last_act,
        "last_last_act": base.last_act * 0, "feet_air_time": feet.air_time, "last_contact": feet.last_contact,
        "swing_peak": feet.swing_peak, "steps_until_next_pert": push.steps_until_next,
        "pert_duration_seconds": push.duration_s, "pert_duration": push.duration_steps,
        "steps_since_last_pert": push.steps_since_last, "pert_steps": push.kick_steps, "pert_dir": push.direction,
        "pert_mag": push.magnitude,
    }
    return {k: np.array(to_host(v)) for k, v in values.items()}


class TaskRecorder:
    """Records every step of `env` (an mjvec Go1 env, NEXT_STEP autoreset) for the task driver."""

    def __init__(self, env: Any) -> None:
        self.env, self.base = env, env.unwrapped
        self.rows: list[dict[str, np.ndarray]] = []
        self._pre: dict[str, np.ndarray] = {}
        inner = self.base._evaluate

        def evaluate(active: Any) -> Any:
            out = inner(active)
            views = self.base._views
            after = {"qpos": self.base.backend.qpos, "qvel": self.base.backend.qvel,
                     **{k: views[k] for k in AFTER[2:]}}
            row = {f"after_{k}": np.array(to_host(v)) for k, v in after.items()}
            row["after_site_xmat"] = row["after_site_xmat"].reshape(-1, self.base.backend.model.nsite, 3, 3)
            row["active"] = np.array(to_host(active))
            row["mjvec_reward"], row["mjvec_done"] = np.array(to_host(out[0])), np.array(to_host(out[1]))
            row.update({f"mjvec_reward/{k}": np.array(to_host(v)) for k, v in out[3]["reward_terms"].items()})
            row.update({f"mjvec_post_{k}": v for k, v in pre_state(self.base).items()})
            row["mjvec_xfrc"] = np.array(to_host(self.base.backend.xfrc_applied[:, self.base.indices.torso]))
            row["mjvec_ctrl"] = np.array(to_host(self.base.backend.ctrl))
            self.rows.append({**{f"pre_{k}": v for k, v in self._pre.items()}, **row})
            return out

        self.base._evaluate = evaluate

    def step(self, actions: np.ndarray) -> None:
        self._pre = pre_state(self.base)
        self._pre["action"] = np.asarray(actions, np.float64)
        obs, *_ = self.env.step(actions)
        row = self.rows[-1]
        row["action"] = row.pop("pre_action")
        if isinstance(obs, dict):
            row["mjvec_obs"], row["mjvec_privileged"] = (np.array(to_host(obs[k])) for k in ("policy", "critic"))
        else:
            row["mjvec_obs"] = np.array(to_host(obs))

    def stacked(self) -> dict[str, np.ndarray]:
        return {k: np.stack([r[k] for r in self.rows]) for k in self.rows[0]}


def ks_statistic(a: np.ndarray, b: np.ndarray) -> float:
    """The two-sample Kolmogorov-Smirnov statistic sup |F_a - F_b| (ties handled: both CDFs are
    evaluated at every distinct value)."""
    a, b = np.sort(np.ravel(a)), np.sort(np.ravel(b))
    points = np.union1d(a, b)
    fa = np.searchsorted(a, points, side="right") / a.size
    fb = np.searchsorted(b, points, side="right") / b.size
    return float(np.abs(fa - fb).max())


def ks_critical(n: int, m: int, alpha: float) -> float:
    """The asymptotic critical value of the two-sample KS statistic at level `alpha`:
    sqrt(-ln(alpha / 2) / 2) x sqrt((n + m) / (n m)) (conservative for distributions with atoms)."""
    return math.sqrt(-math.log(alpha / 2) / 2) * math.sqrt((n + m) / (n * m))


def numeric_fields(model: Any) -> list[str]:
    """The MjModel's numeric arrays, names and file paths left out: they are not physics (mjvec names
    the unnamed free joint "joint_0", for randomization targets, and reads the meshes from another
    folder, which moves the name and path addresses)."""
    return [n for n in dir(model) if not n.startswith(("_", "name", "paths")) and not n.endswith("pathadr")
            and isinstance(getattr(model, n), np.ndarray)]


def lockstep_rollout(env_id: str, config: Any, num_envs: int, steps: int, actions: Any, seed: int
                     ) -> dict[str, np.ndarray]:
    """A recorded CPU-backend rollout (`TaskRecorder`) of `env_id` with `config` (noise off, as the
    driver's ``task`` job compares): reset with `seed`, then `steps` steps of ``actions(rng)``
    (rng: numpy Generator seeded 0)."""
    env = gym.make_vec(env_id, num_envs=num_envs, obs_mode="asymmetric", config=config, array_backend="numpy")
    recorder = TaskRecorder(env)
    env.reset(seed=seed)
    rng = np.random.default_rng(0)
    for _ in range(steps):
        recorder.step(actions(rng))
    env.close()
    return recorder.stacked()


def driver_inputs(rollout: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """What the driver's ``task`` job reads from a `lockstep_rollout`."""
    return {k: v for k, v in rollout.items() if k.startswith(("pre_", "after_")) or k == "action"}


def assert_close(ours: dict[str, np.ndarray], theirs: dict[str, np.ndarray], key_ours: str, key_theirs: str,
                 atol: float | np.ndarray | None = None, where: np.ndarray | None = None) -> None:
    """mjvec's `key_ours` equals Playground's `key_theirs` within TOL (atol replaced by `atol` when
    given) on the evaluated rows (``ours["active"]``, and `where`)."""
    mask = ours["active"] if where is None else ours["active"] & where
    a, b = ours[key_ours][mask], theirs[key_theirs][mask].astype(np.float64)
    bound = TOL["atol"] if atol is None else atol
    assert np.all(np.abs(a - b) <= bound + TOL["rtol"] * np.abs(b)), (
        f"{key_theirs}: max |mjvec - Playground| = {np.abs(a - b).max():.3g} over {mask.sum()} rows")
