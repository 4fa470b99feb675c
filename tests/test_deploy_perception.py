"""With SimToolReal-v0's paper preset on, mjvec.deploy's `Perception` reproduces the contract's noise and
delays in distribution: the env (its wrappers) and the plain-MuJoCo loop (the contract only) run the
same ONNX policy from the same start states, and what each delivered is measured the same way:

- action delay: which of the last three policy outputs produced each step's PD targets (recomputed
  with the contract's action pipeline, exact match), as an age histogram;
- observation delay: which recent state the delivered joint_pos block is (exact float32 match
  with the block recomputed from recorded qpos), as an age histogram;
- joint-velocity noise: delivered joint_vel minus the recorded qvel at that age;
- object-pose noise, on steps where the object lay still: the perceived position (the mean of the
  four keypoints) minus the true one, and the angle between the perceived and true orientations;
- grasp-box scale noise: delivered object_scales over the true ones, one sample per reset.

Statistical test, alpha = 0.001 for every comparison: ages by a chi-square test of homogeneity (env vs
loop) and of goodness of fit to U{0, 1, 2}; the continuous samples by two-sample Kolmogorov-Smirnov
(env vs loop) and one-sample KS against the contract's law (N(0, 0.1); N(0, 0.01) per axis; the
rotation angle U(0, 5 deg); U(0.9, 1.1)). The samples drawn are i.i.d. within each test (fresh draws
every step; one scale draw per reset). The seeds are fixed, so the verdict is reproducible; the
same statistics computed on a loop run with a contract whose noise and delays were altered by 30 %
or one step must be rejected (the test can fail).
"""

from __future__ import annotations

import copy
import math

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("onnxruntime")
pytest.importorskip("onnxscript")

import mjvec  # noqa: F401  (registers the tasks)
from mjvec.deploy import ActionMapper, Deployment, OnnxPolicy, load_contract
from mjvec.integrations import export_policy, load_policy
from tests import policy_files as pf

NUM_ENVS, STEPS, NUM_TOOLS = 32, 90, 4
RESETS = 10  # extra resets per env for the scale-noise samples (one draw per reset)
ALPHA = 1e-3
KS_C = math.sqrt(-math.log(ALPHA / 2) / 2)  # the asymptotic two-sided KS critical constant
CHI2 = {1: 10.83, 2: 13.82}  # chi-square critical values at ALPHA by degrees of freedom


def ks_two(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two-sample KS keeps 'same distribution' at ALPHA."""
    both = np.sort(np.concatenate([a, b]))
    d = np.max(np.abs(np.searchsorted(np.sort(a), both, "right") / a.size
                      - np.searchsorted(np.sort(b), both, "right") / b.size))
    return d <= KS_C * math.sqrt((a.size + b.size) / (a.size * b.size))


def ks_one(a: np.ndarray, cdf) -> bool:
    """Whether one-sample KS keeps 'distributed as cdf' at ALPHA."""
    x = np.sort(a)
    f = cdf(x)
    n = x.size
    d = max(np.max(np.arange(1, n + 1) / n - f), np.max(f - np.arange(n) / n))
    return d <= KS_C / math.sqrt(n)


def chi2_same(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether a chi-square test of homogeneity keeps 'same age distribution' for two count vectors."""
    table = np.stack([a, b]).astype(float)
    expected = table.sum(1, keepdims=True) * table.sum(0, keepdims=True) / table.sum()
    return ((table - expected) ** 2 / expected).sum() <= CHI2[table.shape[1] - 1]


def chi2_uniform(a: np.ndarray) -> bool:
    expected = a.sum() / a.size
    return ((a - expected) ** 2 / expected).sum() <= CHI2[a.size - 1]


def normal_cdf(std: float):
    return lambda x: 0.5 * (1 + np.vectorize(math.erf)(x / (std * math.sqrt(2))))


def uniform_cdf(low: float, high: float):
    return lambda x: np.clip((x - low) / (high - low), 0, 1)


class Recorder:
    """One episode's delivered observations, actions, targets and true state, and the measurements."""

    def __init__(self, contract: dict, model, true_scales: np.ndarray) -> None:
        self.mapper = ActionMapper(contract, model)
        blocks = {b["name"]: slice(b["start"], b["start"] + b["size"]) for b in contract["observation"]["blocks"]}
        self.blocks = blocks
        joints = {j["name"]: j for j in contract["model"]["joints"]}
        names = contract["observation"]["blocks"][0]["source"]["elements"]
        self.qadr = np.array([joints[n]["qposadr"] for n in names])
        self.dadr = np.array([joints[n]["dofadr"] for n in names])
        ranges = np.array([joints[n]["range"] for n in names])
        self.lower, self.upper = ranges[:, 0], ranges[:, 1]
        obj = joints["object_freejoint"]["qposadr"]
        self.obj = slice(obj, obj + 7)
        self.true_scales = true_scales
        self.obs, self.actions, self.targets, self.qpos, self.qvel = [], [], [], [], []

    def record(self, obs, action, targets, qpos, qvel) -> None:
        for store, value in ((self.obs, obs), (self.actions, action), (self.targets, targets), (self.qpos, qpos),
                             (self.qvel, qvel)):
            store.append(None if value is None else np.array(value))

    def joint_pos(self, qpos: np.ndarray) -> np.ndarray:
        q = qpos[self.qadr]
        return np.clip((2.0 * q - self.upper - self.lower) / (self.upper - self.lower), -1.0, 1.0).astype(np.float32)

    def measure(self, out: dict) -> None:
        """Add this episode's samples to `out` (lists by measurement). An age several recent values
        explain (equal actions or states: e.g. a delayed observation delivered twice) is counted
        fractionally among them: the age drawn does not depend on the values, so that keeps the
        histogram's expectation."""
        for t in range(4, len(self.obs)):  # queues refilled at the reset and the segment's first steps before
            candidates = [self.mapper.targets(self.actions[t - k], self.targets[t - 1]) for k in range(3)]
            hits = [k for k in range(3) if np.array_equal(candidates[k], self.targets[t])]
            out["action_age"][hits] += 1.0 / max(len(hits), 1)
            seen = self.obs[t][self.blocks["joint_pos"]]
            hits = [k for k in range(3) if np.array_equal(seen, self.joint_pos(self.qpos[t - k]))]
            out["obs_age"][hits] += 1.0 / max(len(hits), 1)
            if len(hits) != 1:
                continue
            age = hits[0]
            velocity = self.qvel[t - age][self.dadr]
            out["joint_vel"].append(self.obs[t][self.blocks["joint_vel"]] - velocity.astype(np.float32))
            still = [self.qpos[t - age - k][self.obj] for k in range(min(12, t - age))]
            if len(still) == 12 and np.abs(np.ptp(still, axis=0)).max() < 1e-5:
                self._pose_noise(self.obs[t], self.qpos[t - age][self.obj], out)

    def _pose_noise(self, obs: np.ndarray, true: np.ndarray, out: dict) -> None:
        keypoints = obs[self.blocks["keypoints_rel_palm"]].reshape(4, 3).astype(np.float64)
        seen = keypoints.mean(axis=0) + obs[self.blocks["palm_pos"]]
        out["pos"].append(seen - true[:3])
        x, y, z, w = obs[self.blocks["object_rot"]].astype(np.float64)
        dot = abs(float(np.dot([w, x, y, z], true[3:]) / math.sqrt(w * w + x * x + y * y + z * z)))
        out["angle"].append(math.degrees(2 * math.acos(min(1.0, dot))))


def _samples() -> dict:
    return {"action_age": np.zeros(3), "obs_age": np.zeros(3), "joint_vel": [], "pos": [], "angle": [], "scale": []}


def _finish(out: dict) -> dict:
    return {k: (np.concatenate([np.ravel(x) for x in v]) if isinstance(v, list) else v) for k, v in out.items()}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The env's and the loop's samples, and the loop's with an altered contract."""
    tmp = tmp_path_factory.mktemp("perception")
    env = gym.make_vec("SimToolReal-v0", num_envs=NUM_ENVS, num_tools=NUM_TOOLS, autoreset_mode="disabled")
    onnx_path, _ = export_policy(pf.mlp_policy("SimToolReal-v0", seed=3, num_tools=NUM_TOOLS), tmp / "policy",
                                 env=env)
    contract = load_contract(onnx_path)
    policy = load_policy(onnx_path, env=env)
    base = env.unwrapped
    models = [base.backend.scene.make_variant(v).compile() for v in range(NUM_TOOLS)]
    obs, _ = env.reset(seed=5)
    commands = base.command_values()
    starts = [(base.backend.qpos[i].copy(), base.backend.qvel[i].copy(), {k: v[i] for k, v in commands.items()})
              for i in range(NUM_ENVS)]
    recorders = [Recorder(contract, models[i % NUM_TOOLS], base.object_scales[i]) for i in range(NUM_ENVS)]
    for i, r in enumerate(recorders):
        r.record(obs[i], None, base.targets[i], base.backend.qpos[i], base.backend.qvel[i])
    alive = np.ones(NUM_ENVS, bool)
    for _ in range(STEPS):
        actions = policy(obs)
        obs, _, terminated, truncated, _ = env.step(actions)
        for i in np.flatnonzero(alive):
            recorders[i].record(obs[i], actions[i], base.targets[i], base.backend.qpos[i], base.backend.qvel[i])
        alive &= ~(terminated | truncated)  # an ended episode keeps its samples up to its end
        if not alive.any():
            break
        if (terminated | truncated).any():  # DISABLED mode: reset them to keep the batch stepping
            obs, _ = env.reset(options={"reset_mask": terminated | truncated})
    lengths = [len(r.obs) for r in recorders]
    env_out = _samples()
    for r in recorders:
        r.measure(env_out)
    scales = recorders[0].blocks["object_scales"]
    for r in range(RESETS):
        obs, _ = env.reset(seed=100 + r)
        env_out["scale"].append(obs[:, scales] / base.object_scales)
    env.close()
    altered = copy.deepcopy(contract)
    for effect in altered["observation"]["perception"]:
        p = effect["parameters"]
        if effect["kind"] == "obs_noise":
            p["scale"] *= 1.3
        elif effect["kind"] == "obs_delay":
            p["max_delay"] = 1
        elif effect["kind"] == "pose_latency":
            p["pos_std"] *= 1.3
            p["rot_deg"] *= 1.3
        elif effect["kind"] == "scale_noise":
            p["low"], p["high"] = 0.87, 1.13
    altered["action"]["delay"]["parameters"]["max_delay"] = 1
    return {"env": _finish(env_out), "loop": _loop(contract, onnx_path, models, starts, lengths),
            "altered": _loop(altered, onnx_path, models, starts, lengths)}


def _loop(contract: dict, onnx_path, models, starts, lengths) -> dict:
    """The loop from each env's start state, as long as that env's episode lasted."""
    out = _samples()
    policy = OnnxPolicy(onnx_path)
    for i, (qpos, qvel, commands) in enumerate(starts):
        loop = Deployment(contract, models[i % NUM_TOOLS], policy, perception=True, seed=1000 + i)
        recorder = Recorder(contract, models[i % NUM_TOOLS], commands["object_scales"])
        obs = loop.reset(qpos, qvel, commands)
        recorder.record(obs, None, loop.targets, loop.data.qpos, loop.data.qvel)
        for _ in range(lengths[i] - 1):
            action = policy(obs)
            obs = loop.step(action, commands)
            recorder.record(obs, action, loop.targets, loop.data.qpos, loop.data.qvel)
        recorder.measure(out)
        for _ in range(RESETS):
            out["scale"].append(loop.reset(qpos, qvel, commands)[recorder.blocks["object_scales"]]
                                / commands["object_scales"])
    return _finish(out)


def test_enough_samples_of_every_kind(runs):
    for name in ("env", "loop"):
        samples = runs[name]
        assert samples["action_age"].sum() > 1000 and samples["obs_age"].sum() > 1000, name
        assert samples["joint_vel"].size > 20_000 and samples["pos"].size > 300, name
        assert samples["scale"].size == 3 * NUM_ENVS * RESETS, name


@pytest.mark.parametrize("what", ["action_age", "obs_age"])
def test_delays_are_reproduced_in_distribution(runs, what):
    env, loop, altered = runs["env"][what], runs["loop"][what], runs["altered"][what]
    assert chi2_uniform(env) and chi2_uniform(loop), (env, loop)
    assert chi2_same(env, loop), (env, loop)
    assert not chi2_same(env, altered), (env, altered)


@pytest.mark.parametrize("what, law", [
    ("joint_vel", normal_cdf(0.1)),
    ("pos", normal_cdf(0.01)),
    ("angle", uniform_cdf(0.0, 5.0)),
    ("scale", uniform_cdf(0.9, 1.1)),
])
def test_noise_is_reproduced_in_distribution(runs, what, law):
    env, loop, altered = runs["env"][what], runs["loop"][what], runs["altered"][what]
    assert ks_one(env, law) and ks_one(loop, law)
    assert ks_two(env, loop)
    assert not ks_two(env, altered)
