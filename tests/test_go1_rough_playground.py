"""playground/Go1JoystickRoughTerrain-v0 against MuJoCo Playground's own code (``playground`` 0.2.0,
``registry.load("Go1JoystickRoughTerrain")``), run in its own environment by
tests/playground_driver.py, with the flat task's oracle machinery (tests/playground_oracle.py; the
tolerances and why: tests/test_go1_playground.py). Skipped when that environment is missing, except
the checks that need only mjvec's side.

- The model: Playground's compiled, edited MjModel equals mjvec's rough scene in every numeric field,
  the heightfield included (hfield_nrow, hfield_ncol, hfield_size, hfield_data bit for bit), although
  the asset wheel's ``hfield.png`` is a different file from Playground's own (re-encoded: other
  bytes, the same pixels). mjvec's own image reader (`mjvec.assets.terrain.ImageHeightfield`) gives
  the same elevations from the wheel's PNG.
- Task logic on identical states (CPU backend) on the heightfield: the observation and privileged
  state (noise off), every weighted reward term, the reward, the termination, the motor targets,
  the kick force, the feet state and the command countdown equal Playground's within float32
  round-off (`TOL`, `KICK_ATOL`), with the feet landing at terrain heights a plane never has.
"""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import mujoco
import numpy as np
import pytest

import mjvec  # noqa: F401  (registers the task)
from mjvec.assets.playground import playground_file
from mjvec.assets.terrain import ImageHeightfield, build_terrain
from mjvec.errors import ConfigError
from mjvec.tasks.go1_joystick import ROUGH_ENV_ID, Go1JoystickConfig
from mjvec.tasks.go1_joystick.scene import ROUGH_TERRAIN_XML, scene_spec
from mjvec.tasks.go1_joystick.terms import REWARD_TERMS
from tests.playground_oracle import (
    TOL,
    assert_close,
    driver_inputs,
    lockstep_rollout,
    numeric_fields,
    playground_python,
    run_driver,
)
from tests.test_go1_playground import KICK_ATOL, LOCKSTEP, PG_LOCKSTEP, PUSH_FORCE, _adopt_start

PG_ENV = "Go1JoystickRoughTerrain"
NUM_ENVS, STEPS = 12, 50
# The flat lockstep's config (short timers and kick waits, soft limits at 0.7), with resampled
# components zeroed more often (b = 0.3: Playground's command_config.b, set on both sides), so that
# all-zero commands, which the stand_still term needs, occur within the short rollout.
KEEP = (0.3, 0.3, 0.3)
ROUGH_LOCKSTEP = dataclasses.replace(LOCKSTEP, commands=dataclasses.replace(LOCKSTEP.commands, keep_probability=KEEP))
PG_ROUGH_LOCKSTEP = {**PG_LOCKSTEP, "command_config.b": list(KEEP)}
HFIELD_PNG = ROUGH_TERRAIN_XML.rsplit("/", 1)[0] + "/assets/hfield.png"
# Playground's <hfield size="10 10 .05 1.0">: half extents (m), elevation range (m), base (m).
HFIELD_SIZE = (10.0, 10.0, 0.05, 1.0)


def _actions(rng: np.random.Generator) -> np.ndarray:
    """Half the envs with full-range random actions (they fall), half with small ones (they step about)."""
    scale = np.where(np.arange(NUM_ENVS) % 2 == 0, 1.0, 0.3)[:, None]
    return rng.uniform(-1, 1, (NUM_ENVS, 12)) * scale


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, np.ndarray]]:
    """One Playground process for the module: its rough-terrain model and its step on mjvec's rollout."""
    playground_python()  # skips first when Playground's environment is missing
    folder = tmp_path_factory.mktemp("playground_rough")
    rollout = lockstep_rollout(ROUGH_ENV_ID, ROUGH_LOCKSTEP, NUM_ENVS, STEPS, _actions, seed=7)
    np.savez(folder / "task_in.npz", seed=5, **driver_inputs(rollout))
    run_driver([
        {"job": "model", "env": PG_ENV, "outputs": str(folder / "model.mjb"), "overrides": {"impl": "jax"}},
        {"job": "task", "env": PG_ENV, "inputs": str(folder / "task_in.npz"),
         "outputs": str(folder / "task_out.npz"), "overrides": PG_ROUGH_LOCKSTEP},
    ], folder)
    return {"mjvec": rollout, "task": dict(np.load(folder / "task_out.npz")),
            "model": {"path": np.array(str(folder / "model.mjb"))}}


def _playgrounds_png() -> bytes:
    """Playground's own hfield.png, from its installed package."""
    found = sorted((playground_python().parents[1] / "lib").glob(f"python*/site-packages/{HFIELD_PNG}"))
    assert found, f"{HFIELD_PNG} not found in Playground's environment"
    return found[0].read_bytes()


def test_playgrounds_rough_model_equals_mjvecs_scene_heightfield_included(oracle) -> None:
    theirs = mujoco.MjModel.from_binary_path(str(oracle["model"]["path"]))
    ours = scene_spec(Go1JoystickConfig(), "rough_terrain").compile()
    fields = numeric_fields(theirs)
    assert {"hfield_data", "hfield_size", "hfield_nrow", "hfield_ncol", "geom_dataid", "key_qpos"} <= set(fields)
    assert [n for n in fields if not np.array_equal(getattr(ours, n), getattr(theirs, n))] == []
    assert theirs.nhfield == 1 and (int(theirs.hfield_nrow[0]), int(theirs.hfield_ncol[0])) == (256, 256)
    floor = theirs.geom("floor")
    assert floor.type[0] == mujoco.mjtGeom.mjGEOM_HFIELD and floor.id == 0  # randomize.py's FLOOR_GEOM_ID
    np.testing.assert_array_equal(theirs.hfield_size[0], HFIELD_SIZE)
    assert np.ptp(theirs.hfield_data) == 1.0 and np.unique(theirs.hfield_data).size > 200  # a real relief
    # The wheel's PNG is not Playground's file, yet it compiles to the same elevations (above).
    assert playground_file(HFIELD_PNG).read_bytes() != _playgrounds_png()
    for name in ("timestep", "ccd_iterations", "iterations", "ls_iterations", "integrator", "cone"):
        assert getattr(ours.opt, name) == getattr(theirs.opt, name), name


def test_mjvecs_image_heightfield_reader_gives_the_compiled_elevations() -> None:
    """`ImageHeightfield` of the wheel's PNG (mjvec's reader, not MuJoCo's) equals the hfield MuJoCo
    compiles from the scene XML, bit for bit, and its surface model is the one the feet land on."""
    model = scene_spec(Go1JoystickConfig(), "rough_terrain").compile()
    terrain = build_terrain(ImageHeightfield(playground_file(HFIELD_PNG), size=HFIELD_SIZE[:2],
                                             height=HFIELD_SIZE[2], base=HFIELD_SIZE[3]))
    np.testing.assert_array_equal(terrain.data.ravel(), model.hfield_data)
    assert terrain.size == tuple(model.hfield_size[0]) and terrain.data.shape == (256, 256)
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    rng = np.random.default_rng(0)  # points 1 m or more from the robot (at the origin)
    xy = rng.choice([-1.0, 1.0], (32, 2)) * rng.uniform(1.0, 9.0, (32, 2))
    down = np.array([0.0, 0.0, -1.0])
    hits = [mujoco.mj_ray(model, data, np.array([x, y, 1.0]), down, None, 1, -1, np.zeros(1, np.int32))
            for x, y in xy]
    np.testing.assert_allclose(1.0 - np.array(hits), terrain.height_at(xy), rtol=0, atol=1e-6)


def test_an_unknown_terrain_is_refused_naming_the_allowed_ones() -> None:
    with pytest.raises(ConfigError, match=r"terrain='stairs' is not a Go1 joystick scene; allowed values are "
                                          r"\{flat_terrain, rough_terrain\}"):
        scene_spec(Go1JoystickConfig(), "stairs")


def _close(oracle, ours: str, theirs: str, atol: float | np.ndarray | None = None, where: np.ndarray | None = None
           ) -> None:
    assert_close(oracle["mjvec"], oracle["task"], ours, theirs, atol, where)


def test_the_rough_rollout_exercises_the_terms_on_the_terrain(oracle) -> None:
    ours, theirs, mask = oracle["mjvec"], oracle["task"], oracle["mjvec"]["active"]
    assert ours["mjvec_done"][mask].sum() >= 2  # falls
    assert (ours["pre_steps_until_next_cmd"][mask] <= 1).sum() >= 10  # command resamples
    assert (np.abs(ours["mjvec_xfrc"][mask]).max(axis=-1) > 0).sum() >= 10  # kicks
    assert [t for t in REWARD_TERMS if not np.any(theirs[f"reward/{t}"][mask])] == []
    # The feet touch the heightfield at heights that differ by centimetres (a plane: one height).
    model = scene_spec(Go1JoystickConfig(), "rough_terrain").compile()
    feet = np.array([model.site(f).id for f in ("FR", "FL", "RR", "RL")])
    contact = ours["mjvec_post_last_contact"]
    foot_z = ours["after_site_xpos"][:, :, feet, 2]
    assert np.ptp(foot_z[contact & mask[..., None]]) > 0.01


def test_observation_and_privileged_state_equal_playgrounds_on_the_terrain(oracle) -> None:
    _close(oracle, "mjvec_obs", "obs")
    atol = np.full(123, TOL["atol"])
    atol[PUSH_FORCE] = KICK_ATOL
    _close(oracle, "mjvec_privileged", "privileged", atol)


@pytest.mark.parametrize("term", REWARD_TERMS)
def test_each_reward_term_equals_playgrounds_on_the_terrain(oracle, term: str) -> None:
    _close(oracle, f"mjvec_reward/{term}", f"reward/{term}")


def test_reward_termination_targets_kicks_and_feet_equal_playgrounds_on_the_terrain(oracle) -> None:
    ours, theirs, mask = oracle["mjvec"], oracle["task"], oracle["mjvec"]["active"]
    _close(oracle, "mjvec_reward", "reward")
    np.testing.assert_array_equal(ours["mjvec_done"][mask], theirs["done"][mask] > 0)
    _close(oracle, "mjvec_ctrl", "targets")
    _close(oracle, "mjvec_xfrc", "xfrc", KICK_ATOL)
    for name in ("feet_air_time", "swing_peak", "last_act"):
        _close(oracle, f"mjvec_post_{name}", f"info_{name}")
    for name in ("last_contact", "steps_since_last_pert", "pert_steps"):
        np.testing.assert_array_equal(ours[f"mjvec_post_{name}"][mask], theirs[f"info_{name}"][mask], err_msg=name)
    keep = mask & (ours["pre_steps_until_next_cmd"] - 1 > 0) & ~ours["mjvec_done"]
    assert keep.sum() > 100
    timers = ours["mjvec_post_steps_until_next_cmd"], theirs["info_steps_until_next_cmd"]
    np.testing.assert_array_equal(timers[0][keep], timers[1][keep])


# ---- trajectories: Playground's Warp and mjvec's Warp on the heightfield -----------------------
TRAJ_ENVS, TRAJ_STEPS, TRAJ_FALL = 8, 10, 2


@pytest.mark.slow
@pytest.mark.device
def test_warp_trajectories_on_the_terrain_agree_with_playgrounds_warp_until_touch_down(tmp_path,
                                                                                        warp_device: str) -> None:
    """Playground (impl="warp": MJX's own copy of mujoco-warp) and mjvec's Warp backend from
    Playground's reset states, the same actions, noise off. Measured (8 envs): through the fall
    from the home pose (the first two control steps) qpos within 2.4e-7 rad, the observation within
    2.1e-5, the reward within 2.3e-8; from the touch-down on the relief the envs part one by one (7
    of 8 within 1e-4 rad at step 3, 4 at step 6, 1 at step 11: the two copies' heightfield contacts
    and the one-iteration solve), the terminations staying equal. Asserted: the fall, and equal
    terminations over TRAJ_STEPS."""
    actions = np.random.default_rng(1).uniform(-1, 1, (TRAJ_STEPS, TRAJ_ENVS, 12)) * 0.5
    np.savez(tmp_path / "in.npz", seed=2, action=actions)
    run_driver([{"job": "trajectory", "env": PG_ENV, "inputs": str(tmp_path / "in.npz"),
                 "outputs": str(tmp_path / "out.npz"), "overrides": {"noise_config.level": 0.0}}], tmp_path,
               timeout=1800)
    theirs = dict(np.load(tmp_path / "out.npz"))
    env = gym.make_vec(ROUGH_ENV_ID, num_envs=TRAJ_ENVS, backend="warp", device=warp_device, obs_mode="asymmetric",
                       config=Go1JoystickConfig(noise_level=0.0), array_backend="numpy")
    env.reset(seed=0)
    _adopt_start(env, theirs)
    for t in range(TRAJ_STEPS):
        obs, reward, term, _, _ = env.step(actions[t])
        np.testing.assert_array_equal(term, theirs["done"][t] > 0)
        if t < TRAJ_FALL:
            qpos = np.asarray(env.unwrapped.backend.qpos.cpu())
            np.testing.assert_allclose(qpos, theirs["qpos"][t], rtol=0, atol=5e-6)
            np.testing.assert_allclose(obs["policy"], theirs["obs"][t], rtol=0, atol=2e-4)
            np.testing.assert_allclose(reward, theirs["reward"][t], rtol=0, atol=1e-6)
    env.close()
