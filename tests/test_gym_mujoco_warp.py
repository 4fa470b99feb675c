"""The suite on the Warp backend (warp's cpu device, float32) vs the CPU backend (float64).

Measured on mujoco-warp 4.0 with this file's protocol (8 envs, uniform random actions over the whole
action range, envs compared until either side ends them), over 16 seeds:
- HalfCheetah-v5, 5 control steps: observation qpos block 3.9e-5, qvel block 2.9e-3, reward
  1.7e-5; 10 steps already reach 1.6e-2 on qvel for one seed (contact chaos in float32);
- Ant-v5 with an elliptic friction cone (Gymnasium's ant.xml with cone="elliptic"), 15 steps: qpos
  4.1e-5, qvel 8.4e-4, cfrc_ext 6.3e-3, reward 2.4e-4;
- Ant-v5 as Gymnasium ships it (pyramidal cone): equal within float32 (qvel 3.1e-6) until the first
  foot contact, then O(0.1-1) apart: mujoco-warp orients a plane contact's tangent frame along the
  world axes where MuJoCo C aligns it with the capsule's axis, and a four-edge friction pyramid is
  not invariant to that rotation (an elliptic cone is, hence the test above).
Tolerances are about 10x those maxima; terminations must agree exactly.
"""

from __future__ import annotations

import os

os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import mjvec  # noqa: F401  (registers the suite)
from mjvec.errors import ConfigError
from mjvec.tasks.gym_mujoco.specs import asset_dir

pytestmark = pytest.mark.filterwarnings("ignore:.*settotalmass.*:UserWarning")
N = 8


def _compare(name: str, seed: int, steps: int, tol: dict[str, float], **options) -> int:
    cpu = gym.make_vec(f"mjvec/{name}", num_envs=N, num_threads=1, **options)
    warp = gym.make_vec(f"mjvec/{name}", num_envs=N, backend="warp", device="cpu", array_backend="numpy", **options)
    assert cpu.single_observation_space == warp.single_observation_space
    layout = cpu.unwrapped.policy_layout
    oc, _ = cpu.reset(seed=seed)
    ow, _ = warp.reset(seed=seed)
    np.testing.assert_allclose(oc, ow, atol=1e-6)
    rng = np.random.default_rng(seed)
    low, high = cpu.single_action_space.low, cpu.single_action_space.high
    alive, compared = np.ones(N, bool), 0
    for _ in range(steps):
        a = rng.uniform(low, high, (N, low.size)).astype(np.float32)
        oc, rc, tc, _, _ = cpu.step(a)
        ow, rw, tw, _, _ = warp.step(a)
        np.testing.assert_array_equal(tc[alive], tw[alive])
        start = 0
        for block, width in layout:
            np.testing.assert_allclose(oc[alive, start:start + width], ow[alive, start:start + width],
                                       atol=tol[block], err_msg=block)
            start += width
        np.testing.assert_allclose(rc[alive], rw[alive], atol=tol["reward"])
        compared += int(alive.sum())
        alive &= ~(tc | tw)
    cpu.close()
    warp.close()
    return compared


@pytest.mark.parametrize("seed", [3, 4])
def test_halfcheetah_cpu_and_warp_agree_within_float32_tolerance(seed):
    compared = _compare("HalfCheetah-v5", seed, 5, {"qpos": 5e-4, "qvel": 3e-2, "reward": 2e-4})
    assert compared == 5 * N


@pytest.mark.parametrize("seed", [3, 4])
def test_ant_with_an_elliptic_cone_cpu_and_warp_agree_within_float32_tolerance(seed, tmp_path):
    source = (asset_dir() / "ant.xml").read_text()
    option = '<option integrator="RK4" timestep="0.01"/>'
    assert option in source
    xml = Path(tmp_path) / "ant_elliptic.xml"
    xml.write_text(source.replace(option, '<option integrator="RK4" timestep="0.01" cone="elliptic"/>'))
    compared = _compare("Ant-v5", seed, 15, {"qpos": 5e-4, "qvel": 1e-2, "cfrc_ext": 0.1, "reward": 3e-3},
                        xml_file=str(xml))
    assert compared > 10 * N  # most envs stay up for the whole horizon


def test_gymnasiums_ant_agrees_until_the_first_contact():
    compared = _compare("Ant-v5", 3, 1, {"qpos": 2e-6, "qvel": 3e-5, "cfrc_ext": 1e-6, "reward": 2e-6})
    assert compared == N


def test_humanoid_is_refused_on_warp_naming_the_solver():
    with pytest.raises(ConfigError, match="mjSOL_PGS is unsupported"):
        gym.make_vec("mjvec/Humanoid-v5", num_envs=2, backend="warp", device="cpu")
