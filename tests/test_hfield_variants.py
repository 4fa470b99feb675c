"""Heightfields as group-sharing assets (mjvec.backends.pooled) on the CPU backend.

Variants that differ only in their heightfield (its elevations, and also its grid and size) share one
`mujoco.batch` group: the template holds every variant's heightfield, and each simulation's own
`geom_dataid` selects its env's. Oracles: each variant compiled alone with plain `mujoco` and stepped
with `mj_step` (bit for bit), and a direct MjModel edit plus `mj_setConst` for a write. The Warp side
is tests/test_hfield_warp.py.
"""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from mjvec.backends.base import FieldWrite, Scene
from mjvec.backends.cpu import CpuBackend
from mjvec.backends.pooled import hfield_grid
from mjvec.errors import ConfigError
from tests.hfield_scenes import NUM_VARIANTS, drop_states, hfield_scene, maker
from tests.scenes import Oracle


def _backend(make, num_envs: int = 8, num_variants: int = NUM_VARIANTS) -> CpuBackend:
    scene = Scene(num_variants=num_variants, make_variant=make, num_envs=num_envs)
    return CpuBackend(scene, num_threads=2, progress=False)


def _hfield_of(model: mujoco.MjModel, hfield: int) -> tuple:
    return (int(model.hfield_nrow[hfield]), int(model.hfield_ncol[hfield]), model.hfield_size[hfield].tolist(),
            hfield_grid(model, hfield).tobytes())


@pytest.mark.parametrize("vary", ["data", "shape"])
def test_variants_differing_in_their_heightfield_share_one_group(vary: str) -> None:
    """One group; the template holds every variant's heightfield, and each env's geom_dataid row
    points at one equal (grid, size and data) to its own variant's compiled alone."""
    be = _backend(maker(vary=vary))
    assert be.num_groups == 1
    template = be._groups[0].template
    assert template.nhfield == NUM_VARIANTS
    ground = template.geom("ground").id
    dataid = be.group_batches[0].expanded("geom_dataid")
    assert dataid is not None  # expanded per simulation
    for env, v in enumerate(be.variant_of_env):
        alone = hfield_scene(int(v), vary=vary).compile()
        assert _hfield_of(template, int(dataid[env, ground])) == _hfield_of(alone, 0)
        np.testing.assert_array_equal(be.defaults("geom_size")[env], alone.geom_size)


@pytest.mark.parametrize("vary", ["data", "shape"])
def test_bodies_sliding_on_their_own_terrain_step_bit_exact_like_each_variant_alone(vary: str) -> None:
    make = maker(vary=vary)
    be = _backend(make)
    oracle = Oracle(be.variant_of_env, make=make)
    qpos, qvel = drop_states(oracle.models, np.random.default_rng(0), 0.02, slide=1.0, lowest=0.15)
    be.reset(np.arange(be.num_envs), qpos, qvel)
    for i in range(be.num_envs):
        oracle.reset(i, qpos[i], qvel[i])
    # The same drop on the next variant's terrain: where the contacts differ per heightfield.
    other = Oracle((be.variant_of_env + 1) % NUM_VARIANTS, make=make)
    for i in range(be.num_envs):
        other.reset(i, qpos[i], qvel[i])
    contacts = np.zeros(be.num_envs, np.int64)
    for _ in range(200):
        be.step(1)
        oracle.step(np.zeros((be.num_envs, 0)), 1)
        other.step(np.zeros((be.num_envs, 0)), 1)
        contacts += [d.ncon for d in oracle.datas]
    np.testing.assert_array_equal(be.qpos, oracle.qpos())
    np.testing.assert_array_equal(be.qvel, oracle.qvel())
    assert (contacts > 0).all()
    assert (np.abs(be.qpos - other.qpos()).max(axis=1) > 1e-2).all()  # another terrain: another path


def test_a_write_and_its_recompute_keep_each_envs_own_heightfield() -> None:
    """A mass and a friction write (one mj_setConst per env) equal a direct edit plus mj_setConst of
    the variant alone; the bodies then slide bit for bit like the edited oracle."""
    make = maker(vary="shape")
    be = _backend(make)
    oracle = Oracle(be.variant_of_env, make=make)
    envs = np.array([1, 2, 5, 6])
    body, ground = be.model.body("body").id, be.model.geom("ground").id
    mass = be.defaults("body_mass")[envs][:, [body]] * 1.5
    friction = be.defaults("geom_friction")[envs][:, [ground]] * 0.5
    be.write_fields([FieldWrite("body_mass", envs, np.array([body]), mass),
                     FieldWrite("geom_friction", envs, np.array([ground]), friction)])
    for k, i in enumerate(envs):
        oracle.models[i].body_mass[body] = mass[k, 0]
        oracle.models[i].geom_friction[ground] = friction[k, 0]
        mujoco.mj_setConst(oracle.models[i], oracle.datas[i])
    qpos, qvel = drop_states(oracle.models, np.random.default_rng(1), 0.02, slide=1.0, lowest=0.15)
    be.reset(np.arange(be.num_envs), qpos, qvel)
    for i in range(be.num_envs):
        oracle.reset(i, qpos[i], qvel[i])
    for _ in range(150):
        be.step(1)
        oracle.step(np.zeros((be.num_envs, 0)), 1)
    np.testing.assert_array_equal(be.qpos, oracle.qpos())
    np.testing.assert_array_equal(be.qvel, oracle.qvel())


def test_equal_heightfields_are_pooled_once() -> None:
    """Variants 0 and 4, 1 and 5 ... have the same terrain: the template holds each distinct one once."""

    def make(v: int) -> mujoco.MjSpec:
        return hfield_scene(v % 2, vary="shape")

    be = _backend(make, num_envs=8, num_variants=4)
    template = be._groups[0].template
    assert be.num_groups == 1 and template.nhfield == 2
    ground = template.geom("ground").id
    np.testing.assert_array_equal(be.group_batches[0].expanded("geom_dataid")[:, ground], be.variant_of_env % 2)


def test_a_heightfield_that_compiles_otherwise_in_the_template_is_refused() -> None:
    """make_variant must be pure: a first variant whose terrain changes between two calls is caught
    when the template (made from a fresh call) is checked asset by asset."""
    calls = {"n": 0}

    def impure(v: int) -> mujoco.MjSpec:
        if v == 0:
            calls["n"] += 1
            return hfield_scene(10 * calls["n"])
        return hfield_scene(v)

    with pytest.raises(ConfigError, match=r"hfield 'terrain' of a variant of group \[0, 1, 2, 3\] did not compile "
                                          r"to the same data inside the group's template as in its own variant"):
        _backend(impure)


def test_a_template_that_does_not_compile_is_refused_naming_the_group() -> None:
    calls = {"n": 0}

    def breaks(v: int) -> mujoco.MjSpec:
        spec = hfield_scene(v)
        if v == 0:
            calls["n"] += 1
            if calls["n"] > 1:  # the template's call: a geom naming a heightfield that does not exist
                spec.worldbody.add_geom(name="bad", type=mujoco.mjtGeom.mjGEOM_HFIELD, hfieldname="missing")
        return spec

    with pytest.raises(ConfigError, match=r"the template of variant group \[0, 1, 2, 3\] \(its first variant plus "
                                          r"the other variants' meshes and heightfields\) does not compile: .*missing"):
        _backend(breaks)


def test_terrains_from_the_builder_are_pooled_per_variant_and_step_like_each_alone() -> None:
    """Variant v holds the terrain grid built with seed v (mjvec.assets.terrain): one group, each
    env's heightfield its own variant's data, a box dropped on each env's spawn point bit for bit."""
    from mjvec.assets.subterrains import PyramidStairsTerrain, RandomUniformTerrain
    from mjvec.assets.terrain import TerrainGridConfig, build_terrain

    config = TerrainGridConfig(types=(RandomUniformTerrain(), PyramidStairsTerrain()), num_levels=2,
                               tile_size=(2.0, 2.0), horizontal_scale=0.1)
    terrains = [build_terrain(config, rng=v) for v in range(3)]

    def make(v: int) -> mujoco.MjSpec:
        spec = mujoco.MjSpec()
        terrains[v].add_to_spec(spec)
        box = spec.worldbody.add_body(name="box")
        box.add_freejoint()
        box.add_geom(type=mujoco.mjtGeom.mjGEOM_BOX, size=[0.08, 0.06, 0.04])
        return spec

    be = _backend(make, num_envs=6, num_variants=3)
    template = be._groups[0].template
    assert be.num_groups == 1 and template.nhfield == 3
    ground = template.geom("terrain").id
    dataid = be.group_batches[0].expanded("geom_dataid")[:, ground]
    for env, v in enumerate(be.variant_of_env):
        adr, n = template.hfield_adr[dataid[env]], terrains[v].data.size
        np.testing.assert_array_equal(template.hfield_data[adr : adr + n], terrains[v].data.ravel())
    oracle = Oracle(be.variant_of_env, make=make)
    qpos = np.tile(be.model.qpos0, (6, 1))
    footprint = np.stack(np.meshgrid(np.linspace(-0.1, 0.1, 9), np.linspace(-0.1, 0.1, 9)), -1).reshape(-1, 2)
    for env, v in enumerate(be.variant_of_env):
        xy = terrains[v].env_origins(np.array([env]))[0, :2] + [0.3, 0.2]  # off the platform
        qpos[env, :3] = [*xy, terrains[v].height_at(xy + footprint).max() + 0.04 + 0.05]  # 5 cm above
    be.reset(np.arange(6), qpos, np.zeros((6, 6)))
    for i in range(6):
        oracle.reset(i, qpos[i], np.zeros(6))
    for _ in range(150):
        be.step(1)
        oracle.step(np.zeros((6, 0)), 1)
    np.testing.assert_array_equal(be.qpos, oracle.qpos())
    assert (be.qpos[:, 2] < qpos[:, 2] - 0.03).all()  # every box fell onto its terrain
