"""examples/evaluate_go1.py: held commands, the per-command table, the GIF and the error path.

Oracles: the same held-out envs stepped in a plain loop here (same seed, same held commands, zero
actions, no rendering): the script's achieved velocities are their means over the scored steps,
its errors those minus the commands; the command each step reports is the held one (no
resampling); and the physics of a robot given zero actions (the default pose under PD): it stands,
so its achieved velocities stay near zero whatever it is commanded.
"""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

from tests.policy_files import example_module

COMMANDS = ((0.0, 0.0, 0.0), (0.8, 0.0, 0.5))
K, SECONDS, WARMUP = 2, 0.6, 0.2


def _module():
    return example_module("evaluate_go1.py", "evaluate_go1")


def _plain_loop(module) -> tuple[np.ndarray, float]:
    """(len(COMMANDS), 3) mean local velocity of each command's envs over the scored steps, and
    the control dt, from a plain loop over the same envs."""
    from mjvec.tasks.go1_joystick import Go1JoystickConfig
    from mjvec.tasks.locomotion import CommandConfig

    args = module.Args()
    env = gym.make_vec(args.env_id, num_envs=len(COMMANDS) * K, env_id_offset=args.env_id_offset, num_threads=1,
                       config=Go1JoystickConfig(commands=CommandConfig(mean_resample_s=1e9)),
                       autoreset_mode="same_step", obs_mode="asymmetric")
    env.reset(seed=args.seed)
    held = np.repeat(np.asarray(COMMANDS), K, axis=0)
    env.unwrapped.set_command(held)
    dt = env.unwrapped.control_dt
    scored = []
    for t in range(round(SECONDS / dt)):
        _, _, terminated, truncated, info = env.step(np.zeros((env.num_envs, 12), np.float32))
        assert not (terminated | truncated).any()
        np.testing.assert_array_equal(np.asarray(info["command"], np.float64), held)  # held, not resampled
        if t >= round(WARMUP / dt):
            scored.append(np.asarray(info["velocity"], np.float64).copy())
    env.close()
    velocity = np.stack(scored, axis=1)  # (envs, steps, 3)
    return velocity.reshape(len(COMMANDS), K, -1, 3).mean(axis=(1, 2)), dt


def test_zero_policy_table_equals_a_plain_loop_over_the_same_envs(tmp_path):
    module = _module()
    args = module.Args(policy="zero", commands=COMMANDS, envs_per_command=K, seconds=SECONDS, warmup_s=WARMUP,
                       num_threads=1, json=tmp_path / "r.json", markdown=tmp_path / "r.md", gif=tmp_path / "g.gif",
                       gif_commands=2, gif_seconds=0.2, gif_size=(48, 64))
    result = module.main(args)
    expected, dt = _plain_loop(module)
    rows = result["commands"]
    assert [tuple(r["command"]) for r in rows] == list(COMMANDS)
    achieved = np.array([r["achieved"] for r in rows])
    # Rendering the GIF's frames does not move the physics: the same numbers as the loop without it.
    np.testing.assert_array_equal(achieved, expected)
    np.testing.assert_allclose([r["error"] for r in rows], achieved - np.asarray(COMMANDS), atol=1e-15)
    assert all(r["fell"] == 0.0 for r in rows)
    # The default pose under PD stands: commanded 0.8 m/s forward and 0.5 rad/s, it stays put.
    assert np.abs(achieved).max() < 0.1, achieved
    assert rows[1]["error"][0] < -0.7 and rows[1]["error"][2] < -0.4
    assert json.loads((tmp_path / "r.json").read_text())["commands"] == rows
    table = (tmp_path / "r.md").read_text().strip().splitlines()
    assert len(table) == 2 + len(COMMANDS) and table[2].startswith("| (+0.00, +0.00, +0.00) |")
    from PIL import Image

    with Image.open(tmp_path / "g.gif") as gif:
        frames, size = gif.n_frames, gif.size
    assert frames == len(range(0, round(0.2 / dt), args.gif_every)) and size == (2 * 64, 48)


def test_a_checkpoint_policy_without_a_checkpoint_is_refused():
    module = _module()
    with pytest.raises(SystemExit, match=r"--checkpoint is needed \(or --policy zero\)"):
        module.evaluate(module.Args(policy="checkpoint", checkpoint=None))
