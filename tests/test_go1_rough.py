"""playground/Go1JoystickRoughTerrain-v0 on its own (Playground is the oracle in
tests/test_go1_rough_playground.py): the registration and its refusals, the heightfield floor the
paper preset randomizes, the spawn above the terrain, and the CPU and Warp backends on the hfield.

CPU vs Warp on the heightfield, measured (16 envs settled on the terrain for 20 control steps, then
one physics step of each engine from the same state, the solver converged with 100 iterations):
where MuJoCo C's and mujoco-warp's heightfield colliders return the same contacts (8 of the 16
states: same geom pairs, depths within 1e-5) the two agree within 2.1e-7 in qpos; where they do not
(C finds one to three more foot contacts in 6 states, mujoco-warp one more in 1, and in 1 a depth
differs: 3.2 cm vs 0.6 mm) they are 2.4e-5 to 7.2e-3 apart after that one step. So on this terrain the engines agree
where the colliders agree, and the colliders differ: asserted below, with the reset observations
(the robot in the air above the terrain) equal within float32 round-off.
"""

from __future__ import annotations

import gymnasium as gym
import mujoco
import numpy as np
import pytest

import mjvec  # noqa: F401  (registers the task)
from mjvec.backends.base import Scene
from mjvec.backends.registry import make_backend
from mjvec.envs.registry import get_task
from mjvec.errors import ConfigError
from mjvec.tasks.go1_joystick import ENV_ID, ENV_IDS, ROUGH_ENV_ID, Go1JoystickConfig
from mjvec.tasks.go1_joystick.scene import scene_spec
from tests.devices import np_of

QUIET = Go1JoystickConfig(noise_level=0.0)
SETTLE_STEPS, SOLVER_ITERATIONS = 20, 100
SAME_CONTACTS_ATOL = 1e-6  # one float32 physics step from the same state and the same contacts


def _make(n: int = 4, **kw):
    return gym.make_vec(ROUGH_ENV_ID, num_envs=n, **{"array_backend": "numpy", **kw})


def test_both_terrains_are_registered_as_playgrounds_names() -> None:
    assert ENV_IDS == {"flat_terrain": ENV_ID, "rough_terrain": ROUGH_ENV_ID}
    assert ROUGH_ENV_ID == "playground/Go1JoystickRoughTerrain-v0" and ROUGH_ENV_ID in gym.registry


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"randomization": "flat"}, r"randomization='flat' is not a preset of playground/Go1JoystickRoughTerrain-v0; "
                                r"its presets are \{paper\}"),
    ({"obs_mode": "critic"}, r"obs_mode='critic' is not supported; allowed values are \{asymmetric, policy\}"),
    ({"config": Go1JoystickConfig().noise_scales}, r"config must be a Go1JoystickConfig or None, got NoiseScales"),
])
def test_the_rough_options_are_validated(kwargs, match) -> None:
    with pytest.raises(ConfigError, match=match):
        _make(2, **kwargs)


def test_the_rough_scene_is_the_flat_one_on_playgrounds_heightfield() -> None:
    flat, rough = (scene_spec(Go1JoystickConfig(), t).compile() for t in ("flat_terrain", "rough_terrain"))
    assert flat.geom_type[0] == mujoco.mjtGeom.mjGEOM_PLANE and rough.geom_type[0] == mujoco.mjtGeom.mjGEOM_HFIELD
    assert (rough.nhfield, rough.geom_dataid[0], flat.nhfield) == (1, 0, 0)
    # Playground's rough XML: floor friction 1.0 (flat 0.6) and the home pose 0.35 m up (flat 0.278).
    assert (rough.geom_friction[0, 0], flat.geom_friction[0, 0]) == (1.0, 0.6)
    assert (rough.key("home").qpos[2], flat.key("home").qpos[2]) == (0.35, 0.278)
    robot = slice(1, None)  # everything but the floor is the same robot, the same sensors
    np.testing.assert_array_equal(rough.geom_size[robot], flat.geom_size[robot])
    np.testing.assert_array_equal(rough.body_mass, flat.body_mass)
    np.testing.assert_array_equal(rough.sensor_type, flat.sensor_type)


def test_the_paper_preset_draws_the_heightfields_friction() -> None:
    env = _make(8, randomization="paper")
    env.reset(seed=1)
    be = env.unwrapped.backend
    floor = be.model.geom("floor").id
    assert be.model.geom_type[floor] == mujoco.mjtGeom.mjGEOM_HFIELD
    friction = be.field_values("geom_friction")[:, floor, 0]
    assert ((0.4 <= friction) & (friction <= 1.0)).all() and np.unique(friction).size == 8
    values, defaults = be.field_values("geom_friction")[:, floor], be.defaults("geom_friction")[:, floor]
    np.testing.assert_array_equal(values[:, 1:], defaults[:, 1:])  # torsional and rolling: as compiled
    env.close()


def test_resets_spawn_above_the_terrain_and_the_feet_land_on_it() -> None:
    env = _make(8, config=QUIET)
    env.reset(seed=2)
    be = env.unwrapped.backend
    np.testing.assert_array_equal(be.qpos[:, 2], 0.35)
    for _ in range(SETTLE_STEPS):
        env.step(np.zeros((8, 12)))
    model = be.model
    feet = [model.site(f).id for f in ("FR", "FL", "RR", "RL")]
    foot_z = env.unwrapped._views["site_xpos"][:, feet, 2]
    contact = env.unwrapped.feet.last_contact
    assert contact.mean() > 0.75 and (foot_z[contact] < 0.05 + 0.03).all()  # resting on the relief (0 to 5 cm)
    env.close()


def test_the_memory_estimate_shares_the_heightfield_and_sizes_warps_buffers_for_it() -> None:
    """The hfield (256 KB) is in the model once, not per env: on the CPU backend an env of the rough
    task costs what a flat one does. mujoco-warp's per-world contact and constraint buffers follow
    the model (128 contacts on the hfield, 48 on the plane), so a Warp world costs more (the
    estimate's measured growth: tests/test_memory.py, slow set)."""
    flat, rough = get_task(ENV_ID), get_task(ROUGH_ENV_ID)
    cpu = [t.estimate_memory(100, t.parse_options({"num_threads": 1})) for t in (flat, rough)]
    assert dict(cpu[0].per_env) == dict(cpu[1].per_env) and cpu[0].total_bytes == cpu[1].total_bytes
    warp = [t.estimate_memory(100, t.parse_options({"backend": "warp", "device": "cpu"})) for t in (flat, rough)]
    assert warp[1].total_bytes > 1.5 * warp[0].total_bytes


# ---- both backends --------------------------------------------------------------------------
@pytest.mark.device
def test_rough_reset_observations_agree_on_both_backends(warp_device: str) -> None:
    cpu = _make(8, config=QUIET, obs_mode="asymmetric")
    warp = _make(8, config=QUIET, obs_mode="asymmetric", backend="warp", device=warp_device)
    oc, _ = cpu.reset(seed=5)
    ow, _ = warp.reset(seed=5)
    for key in oc:
        np.testing.assert_allclose(oc[key], ow[key], rtol=1e-5, atol=1e-5, err_msg=key)
    cpu.close()
    warp.close()


def _settled(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(qpos, qvel, ctrl) of n envs standing on the terrain after SETTLE_STEPS zero actions (CPU)."""
    env = _make(n, config=QUIET)
    env.reset(seed=4)
    for _ in range(SETTLE_STEPS):
        env.step(np.zeros((n, 12)))
    be = env.unwrapped.backend
    state = (be.qpos.copy(), be.qvel.copy(), be.ctrl.copy())
    env.close()
    return state


def _converged(v: int) -> mujoco.MjSpec:
    spec = scene_spec(Go1JoystickConfig(), "rough_terrain")
    spec.option.iterations = spec.option.ls_iterations = SOLVER_ITERATIONS
    return spec


def _one_physics_step(kind: str, device: str, state: tuple) -> np.ndarray:
    n = state[0].shape[0]
    be = make_backend(kind, Scene(1, _converged, n), progress=False,
                      **({"device": device} if kind == "warp" else {"num_threads": 1}))
    if kind == "warp":
        import torch

        state = tuple(torch.as_tensor(a, dtype=torch.float32, device=device) for a in state)
    be.reset(np.arange(n), state[0], state[1], ctrl=state[2])
    be.step(1)
    qpos = np_of(be.qpos)
    be.close()
    return qpos


def _same_contacts(state: tuple, device: str) -> np.ndarray:
    """(n,) bool: MuJoCo C's and mujoco-warp's colliders return the same contacts (geom pairs, and
    depths within 1e-5) at each state; each engine alone (plain mujoco, plain mujoco_warp)."""
    import mujoco_warp as mjw
    import warp as wp

    model = _converged(0).compile()
    data = mujoco.MjData(model)
    same = []
    with wp.ScopedDevice(device):
        warp_model = mjw.put_model(model)
        for qpos, qvel, ctrl in zip(*state, strict=True):
            data.qpos[:], data.qvel[:], data.ctrl[:] = qpos, qvel, ctrl
            mujoco.mj_forward(model, data)
            warp_data = mjw.put_data(model, data, nconmax=64, njmax=600)
            mjw.forward(warp_model, warp_data)
            count = int(warp_data.nacon.numpy()[0])
            ours = sorted((tuple(data.contact.geom[j]), float(data.contact.dist[j])) for j in range(data.ncon))
            theirs = sorted((tuple(g), float(d)) for g, d in zip(warp_data.contact.geom.numpy()[:count],
                                                                 warp_data.contact.dist.numpy()[:count], strict=True))
            same.append(len(ours) == len(theirs) and all(
                a[0] == b[0] and abs(a[1] - b[1]) < 1e-5 for a, b in zip(ours, theirs, strict=True)))
    return np.array(same)


@pytest.mark.device
def test_cpu_and_warp_agree_on_the_heightfield_where_their_colliders_agree(warp_device: str) -> None:
    state = _settled(16)
    same = _same_contacts(state, warp_device)
    cpu, warp = (_one_physics_step(kind, warp_device, state) for kind in ("cpu", "warp"))
    error = np.abs(cpu - warp).max(axis=1)
    assert same.sum() >= 4 and (~same).sum() >= 4, same  # both cases occur on these states
    assert error[same].max() < SAME_CONTACTS_ATOL, error[same]
    assert error[~same].max() > 100 * SAME_CONTACTS_ATOL, error[~same]  # other contacts: another step
