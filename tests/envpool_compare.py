"""What the EnvPool comparisons share (tests/test_go1_envpool.py, test_leap_envpool.py,
test_panda_envpool.py): the path to EnvPool's environment and its skip marker, EnvPool's side
(tests/envpool_driver.py run there, and its spec config), mjvec's side under the driver's names,
and the per-column distribution test.

The distribution test (`rejected`): a two-sample Kolmogorov-Smirnov test per column at level
`ALPHA`, 1e-6: 1e-3 spread over the about 1,000 columns a module compares (Bonferroni), so that
equal distributions pass all of them with probability 0.999 (fixed seeds on both sides, so the
verdict is deterministic; the asymptotic critical value is conservative for the atoms some columns
have). A column constant on both sides is compared as a value instead, within `CONSTANT_ATOL`.
"""

from __future__ import annotations

import json
import math
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from tests.playground_oracle import ks_critical, ks_statistic

ROOT = Path(__file__).resolve().parents[1]
ENVPOOL_PYTHON = ROOT / ".venv-envpool" / "bin" / "python"
DRIVER = ROOT / "tests" / "envpool_driver.py"
requires_envpool = pytest.mark.skipif(not ENVPOOL_PYTHON.is_file(), reason=(
    "EnvPool's environment is missing: run `bash scripts/setup_envpool.sh` (makes .venv-envpool with "
    "envpool==1.2.5; scripts/test.sh runs it unless MJVEC_SKIP_ENVPOOL=1)"))

ALPHA = 1e-6
CONSTANT_ATOL = 1e-5  # a column constant on both sides: float32 (mjvec) vs float64 (EnvPool) round-off
# The spec config's entries that set up the pool, not the task.
POOL_KEYS = frozenset({"num_envs", "batch_size", "num_threads", "max_num_players", "thread_affinity_offset",
                       "base_path", "seed", "env_seed", "gym_reset_return_info", "frame_stack", "task_name"})


def column_names(layout: Sequence[tuple[str, int]]) -> list[str]:
    """``block[i]`` for every entry of a (name, width) layout."""
    return [f"{block}[{i}]" for block, width in layout for i in range(width)]


def envpool_config(task: str) -> dict[str, Any]:
    """EnvPool's spec config of `task` (every constant its port reads, and the pool's settings)."""
    spec = subprocess.run([str(ENVPOOL_PYTHON), "-c", "import envpool, json, sys; print(json.dumps(envpool.make_spec("
                           "sys.argv[1]).config._asdict()))", task],
                          capture_output=True, text=True, timeout=300, check=True)
    return json.loads(spec.stdout)


def run_envpool(job: Mapping[str, Any], folder: Path) -> dict[str, np.ndarray]:
    """EnvPool's side: `job` (tests/envpool_driver.py's JOB.json, without "outputs") run by the
    driver in .venv-envpool; its outputs by name (see the driver's docstring)."""
    job = dict(job) | {"outputs": str(folder / "envpool.npz")}
    (folder / "job.json").write_text(json.dumps(job))
    done = subprocess.run([str(ENVPOOL_PYTHON), str(DRIVER), str(folder / "job.json")], capture_output=True,
                          text=True, timeout=600, cwd=folder)
    if done.returncode:
        raise AssertionError(f"the EnvPool driver failed ({done.returncode}):\n{done.stderr[-6000:]}")
    with np.load(folder / "envpool.npz") as data:
        return {k: data[k] for k in data.files}


def _observations(prefix: str, obs: Any) -> dict[str, np.ndarray]:
    if isinstance(obs, dict):
        return {f"{prefix}_state": np.asarray(obs["policy"]), f"{prefix}_privileged": np.asarray(obs["critic"])}
    return {f"{prefix}_state": np.asarray(obs)}


def run_mjvec(env_id: str, samples: int, actions: Mapping[str, Sequence[float]], *, steps: bool = True,
              reset_extra: Callable[[Any, dict], dict[str, np.ndarray]] | None = None,
              step_infos: Sequence[str] = (), **make_kwargs: Any) -> dict[str, np.ndarray]:
    """mjvec's side under the driver's names: `samples` resets (seed 7), then (with `steps`) per
    constant action a reset (seed 8, 9, ...) and one step: the observation (``state`` the policy's,
    ``privileged`` the critic's under obs_mode="asymmetric"), the reward, each of
    ``info["reward_terms"]`` (as ``<action>_reward_<term>``, their names as ``<action>_terms``) and
    the infos named in `step_infos`. `reset_extra(env, reset info)` adds entries after the reset."""
    env = gym.make_vec(env_id, num_envs=samples, array_backend="numpy", **make_kwargs)
    obs, info = env.reset(seed=7)
    out = _observations("reset", obs) | (reset_extra(env, info) if reset_extra else {})
    width = env.single_action_space.shape[0]
    for k, (name, action) in enumerate(actions.items() if steps else ()):
        env.reset(seed=8 + k)
        obs, reward, _, _, info = env.step(np.tile(np.asarray(action, np.float32).reshape(width), (samples, 1)))
        out |= _observations(name, obs) | {f"{name}_reward": np.asarray(reward)}
        terms = {t: v for t, v in info["reward_terms"].items() if not t.startswith("_")}  # "_x": Gymnasium's masks
        out |= {f"{name}_reward_{term}": np.asarray(v) for term, v in terms.items()}
        out |= {f"{name}_{key}": np.asarray(info[key]) for key in step_infos}
        out[f"{name}_terms"] = np.array(sorted(terms))
    env.close()
    return out


def episode_ends(env_id: str, num_envs: int, horizon: int, seed: int = 3, **make_kwargs: Any
                 ) -> tuple[np.ndarray, np.ndarray]:
    """(end, truncated), (num_envs,) each: the step at which each env's first episode ended under
    zero actions within `horizon` steps (0: not within it), and whether it ended truncated."""
    env = gym.make_vec(env_id, num_envs=num_envs, array_backend="numpy", **make_kwargs)
    env.reset(seed=seed)
    end, trunc = np.zeros(num_envs, np.int64), np.zeros(num_envs, bool)
    zero = np.zeros((num_envs, *env.single_action_space.shape), np.float32)
    for t in range(1, horizon + 1):
        _, _, terminated, truncated, _ = env.step(zero)
        first = (end == 0) & (terminated | truncated)
        end[first], trunc[first] = t, truncated[first] & ~terminated[first]
    env.close()
    return end, trunc


def rejected(ours: np.ndarray, theirs: np.ndarray, names: Sequence[str], alpha: float = ALPHA) -> list[str]:
    """The columns whose distributions differ: KS-rejected at `alpha`, or constant on one side only,
    or constant on both at different values."""
    ours, theirs = np.asarray(ours, np.float64).reshape(len(ours), -1), np.asarray(theirs, np.float64).reshape(
        len(theirs), -1)
    if ours.shape[1] != len(names) or theirs.shape[1] != len(names):
        raise ValueError(f"{len(names)} column names for {ours.shape[1]} columns (mjvec) and {theirs.shape[1]} "
                         "(EnvPool)")
    crit = ks_critical(len(ours), len(theirs), alpha)
    out = []
    for j, name in enumerate(names):
        a, b = ours[:, j], theirs[:, j]
        const_a, const_b = np.ptp(a) <= CONSTANT_ATOL, np.ptp(b) <= CONSTANT_ATOL
        if const_a and const_b:
            if abs(a[0] - b[0]) > CONSTANT_ATOL:
                out.append(f"{name}: constant {a[0]:.6g} vs EnvPool's {b[0]:.6g}")
        elif const_a or const_b:
            out.append(f"{name}: constant on one side only (spread {np.ptp(a):.3g} vs EnvPool's {np.ptp(b):.3g})")
        elif (d := ks_statistic(a, b)) > crit:
            out.append(f"{name}: KS {d:.3f} > {crit:.3f} (mean {a.mean():.4g} vs {b.mean():.4g}, "
                       f"std {a.std():.4g} vs {b.std():.4g})")
    return out


def largest_distance(ours: np.ndarray, theirs: np.ndarray) -> float:
    """The largest KS distance over the columns varying on both sides (what the docs report)."""
    ours, theirs = np.asarray(ours, np.float64).reshape(len(ours), -1), np.asarray(theirs, np.float64).reshape(
        len(theirs), -1)
    return max((ks_statistic(ours[:, j], theirs[:, j]) for j in range(ours.shape[1])
                if np.ptp(ours[:, j]) > CONSTANT_ATOL and np.ptp(theirs[:, j]) > CONSTANT_ATOL), default=0.0)


def as_observed(side: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """EnvPool's side with its observations (float64) rounded to float32, the dtype mjvec emits
    them in: an atom (a value many samples share exactly, e.g. a cube's free-fall velocity) would
    otherwise sit at two neighbouring numbers on the two sides, and the KS distance would count the
    atom's whole mass."""
    return {k: v.astype(np.float32) if k.endswith(("_state", "_privileged")) else v for k, v in side.items()}


def count_rejected(ours: np.ndarray, theirs: np.ndarray, name: str, alpha: float = ALPHA) -> list[str]:
    """A rare event's rate (a boolean column, e.g. a success at the first step: a few in 4,096 or
    none, where the KS test's constant-on-one-side rule would misfire): the exact conditional test
    of two binomial counts (given k = k_ours + k_theirs events, k_ours ~ Binomial(k, n_ours / (n_ours
    + n_theirs)) when the rates are equal), two-sided, at `alpha`."""
    k_a, k_b = int(np.count_nonzero(ours)), int(np.count_nonzero(theirs))
    k, p = k_a + k_b, len(ours) / (len(ours) + len(theirs))
    probs = [math.comb(k, i) * p ** i * (1 - p) ** (k - i) for i in range(k + 1)]
    p_value = sum(q for q in probs if q <= probs[k_a] * (1 + 1e-9))
    return [f"{name}: {k_a} of {len(ours)} vs EnvPool's {k_b} of {len(theirs)} (p = {p_value:.3g} < {alpha:g})"
            ] if p_value < alpha else []
