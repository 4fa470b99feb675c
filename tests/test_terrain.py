"""The terrain builder (mjvec.assets.terrain, mjvec.assets.subterrains).

Oracles: MuJoCo's own ray cast (mj_ray) onto the compiled hfield for every height the builder reports,
each sub-terrain's formula at the grid vertices (within the float32 rounding of the hfield's data),
MuJoCo's own loading of an MJCF ``<hfield file=...>`` for an image terrain (bit for bit), and the
documented env assignment written out again here.
"""

from __future__ import annotations

import dataclasses

import mujoco
import numpy as np
import pytest
from PIL import Image

from mjvec.assets.subterrains import (
    FlatTerrain,
    ImageTerrain,
    PyramidSlopeTerrain,
    PyramidStairsTerrain,
    RandomUniformTerrain,
)
from mjvec.assets.terrain import MAX_VERTICES, ImageHeightfield, Terrain, TerrainGridConfig, build_terrain
from mjvec.errors import ConfigError

KINDS = (FlatTerrain(), RandomUniformTerrain(amplitude_range=(0.02, 0.12)),
         RandomUniformTerrain(amplitude_range=(0.0, 0.1), cell=0.25, platform_width=0.5),
         PyramidSlopeTerrain(slope_range=(0.1, 0.5)), PyramidSlopeTerrain(slope_range=(0.1, 0.5), inverted=True),
         PyramidStairsTerrain(step_height_range=(0.05, 0.2), step_width=0.3),
         PyramidStairsTerrain(step_height_range=(0.05, 0.2), step_width=0.3, inverted=True))
CONFIG = TerrainGridConfig(types=KINDS, num_levels=4, tile_size=(3.0, 2.0), horizontal_scale=0.05, border_width=0.5)


@pytest.fixture(scope="module")
def terrain() -> Terrain:
    return build_terrain(CONFIG, rng=7)


def _compiled(terrain: Terrain) -> tuple[mujoco.MjModel, mujoco.MjData]:
    spec = mujoco.MjSpec()
    terrain.add_to_spec(spec)
    model = spec.compile()
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    return model, data


def _ray_heights(model: mujoco.MjModel, data: mujoco.MjData, xy: np.ndarray) -> np.ndarray:
    """The height MuJoCo's ray cast straight down hits at each point."""
    top, geomid, out = 10.0, np.array([-1], np.int32), []
    for x, y in np.asarray(xy).reshape(-1, 2):
        dist = mujoco.mj_ray(model, data, np.array([x, y, top]), np.array([0.0, 0.0, -1.0]), None, 1, -1, geomid)
        assert geomid[0] == model.geom("terrain").id
        out.append(top - dist)
    return np.array(out)


def _image(tmp_path, shape=(40, 60), seed=0, mode="L") -> str:
    rng = np.random.default_rng(seed)
    pixels = rng.integers(30, 220, shape).astype(np.uint8)
    path = tmp_path / f"hfield_{seed}.png"
    Image.fromarray(np.stack([pixels] * 3, -1) if mode == "RGB" else pixels).save(path)
    return str(path)


def test_heights_equal_mujocos_ray_on_the_compiled_hfield(terrain: Terrain) -> None:
    model, data = _compiled(terrain)
    np.testing.assert_array_equal(model.hfield_data, terrain.data.ravel())  # MuJoCo keeps the data bit for bit
    rng = np.random.default_rng(0)
    inside = rng.uniform(-1, 1, (1500, 2)) * np.array(terrain.size[:2]) * 0.999
    nrow, ncol = terrain.data.shape
    dx, dy = terrain.spacing
    cells = rng.integers(0, [ncol - 1, nrow - 1], (300, 2))
    near_diagonal = (cells + np.array([0.3, 0.31])) * [dx, dy] - terrain.size[:2]  # both triangles, close to the split
    for xy in (inside, near_diagonal, terrain.centers.reshape(-1, 2)):
        np.testing.assert_allclose(terrain.height_at(xy), _ray_heights(model, data, xy), rtol=0, atol=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(6))
def test_heights_equal_mujocos_ray_over_random_grids(seed: int) -> None:
    """Random grids (tile sizes, scales, borders, kinds, levels) and 3,000 random points each."""
    rng = np.random.default_rng(seed)
    scale = float(rng.choice([0.02, 0.05, 0.1, 0.2]))
    tile = tuple(float(scale * rng.integers(20, 60)) for _ in range(2))
    kinds = tuple(KINDS[int(k)] for k in rng.choice(len(KINDS), int(rng.integers(1, 4)), replace=False))
    kinds = tuple(k for k in kinds if not isinstance(k, PyramidStairsTerrain) or k.step_width >= 2 * scale)
    config = TerrainGridConfig(types=kinds or (FlatTerrain(),), num_levels=int(rng.integers(1, 5)), tile_size=tile,
                               horizontal_scale=scale, border_width=scale * int(rng.integers(0, 5)))
    terrain = build_terrain(config, rng=rng)
    model, data = _compiled(terrain)
    xy = rng.uniform(-1, 1, (3000, 2)) * np.array(terrain.size[:2]) * 0.999
    np.testing.assert_allclose(terrain.height_at(xy), _ray_heights(model, data, xy), rtol=0, atol=1e-9)


def test_vertices_hold_each_sub_terrains_formula(terrain: Terrain) -> None:
    """At the grid vertices the surface is each tile's formula, to the float32 rounding of the data
    (height range x 2**-24); tile edges are shared with the neighbour, so only interiors are compared."""
    scale, (nx, ny) = CONFIG.horizontal_scale, (60, 40)
    u, v = np.meshgrid(np.arange(1, nx) * scale - 1.5, np.arange(1, ny) * scale - 1.0)
    for t, kind in enumerate(KINDS):
        for level in range(CONFIG.num_levels):
            rng = np.random.default_rng(np.random.SeedSequence(7, spawn_key=(level, t)))
            want = kind.heights(u, v, CONFIG.tile_size, CONFIG.difficulty(level), rng, scale)
            r0, c0 = 10 + t * ny, 10 + level * nx
            got = terrain.heights[r0 + 1 : r0 + ny, c0 + 1 : c0 + nx]
            np.testing.assert_allclose(got, want, rtol=0, atol=terrain.size[2] * 2.0**-23)


def test_levels_get_harder_and_the_measured_terrain_shows_it(terrain: Terrain) -> None:
    """Per type, level by level: the configured hardness rises, and so does what the built tile
    measures (height range for noise, steepest slope for pyramids, tallest riser for stairs)."""
    scale, (nx, ny) = CONFIG.horizontal_scale, (60, 40)
    for t, kind in enumerate(KINDS):
        hardness = [kind.hardness(d) for d in terrain.difficulties]
        measured = []
        for level in range(CONFIG.num_levels):
            r0, c0 = 10 + t * ny, 10 + level * nx
            tile = terrain.heights[r0 + 1 : r0 + ny, c0 + 1 : c0 + nx]
            riser = max(np.abs(np.diff(tile, axis=0)).max(), np.abs(np.diff(tile, axis=1)).max())
            measured.append(riser / scale if isinstance(kind, PyramidSlopeTerrain) else
                            riser if isinstance(kind, PyramidStairsTerrain) else np.ptp(tile))
        if isinstance(kind, FlatTerrain):
            assert hardness == [0.0] * 4 and max(measured) == 0.0
            continue
        assert np.all(np.diff(hardness) > 0), (kind, hardness)
        assert np.all(np.diff(measured) > 0), (kind, measured)
        if not isinstance(kind, RandomUniformTerrain):  # the formula's own number, as built
            np.testing.assert_allclose(measured, hardness, rtol=1e-6, atol=1e-6)


def test_env_origins_are_tile_centres_on_the_surface_assigned_by_global_id(terrain: Terrain) -> None:
    ids = np.arange(5, 5 + 3 * 28)
    levels, types = terrain.tile_of_env(ids)
    np.testing.assert_array_equal(types, ids % len(KINDS))
    np.testing.assert_array_equal(levels, (ids // len(KINDS)) % CONFIG.num_levels)
    origins = terrain.env_origins(ids)
    model, data = _compiled(terrain)
    np.testing.assert_allclose(origins[:, 2], _ray_heights(model, data, origins[:, :2]), rtol=0, atol=1e-9)
    # Inside its own tile: within half a tile of the centre of the tile's vertex block.
    half_x, half_y = terrain.size[:2]
    x0 = -half_x + CONFIG.border_width + levels * CONFIG.tile_size[0]
    y0 = -half_y + CONFIG.border_width + types * CONFIG.tile_size[1]
    assert ((origins[:, 0] > x0) & (origins[:, 0] < x0 + CONFIG.tile_size[0])).all()
    assert ((origins[:, 1] > y0) & (origins[:, 1] < y0 + CONFIG.tile_size[1])).all()
    # A function of the global id alone: any subset, in any order, gets the same spawn points.
    np.testing.assert_array_equal(terrain.env_origins(ids[::-3]), origins[::-3])
    np.testing.assert_array_equal(terrain.tile_of_env(ids, max_level=1)[0], (ids // len(KINDS)) % 2)


def test_a_box_dropped_at_each_origin_comes_to_rest_there() -> None:
    """The spawn heights are where MuJoCo's contacts hold a body: a box released just above each
    pyramid's platform settles within a millimetre of the reported height."""
    config = TerrainGridConfig(types=(PyramidSlopeTerrain(), PyramidStairsTerrain()), num_levels=3,
                               tile_size=(4.0, 4.0), horizontal_scale=0.1)
    terrain = build_terrain(config, rng=0)
    origins = terrain.env_origins(np.arange(6))
    for xyz in origins:
        spec = mujoco.MjSpec()
        terrain.add_to_spec(spec)
        box = spec.worldbody.add_body(name="box", pos=[xyz[0], xyz[1], xyz[2] + 0.06])
        box.add_freejoint()
        box.add_geom(type=mujoco.mjtGeom.mjGEOM_BOX, size=[0.1, 0.1, 0.05])
        model = spec.compile()
        data = mujoco.MjData(model)
        mujoco.mj_step(model, data, 500)
        assert abs(data.qpos[2] - 0.05 - xyz[2]) < 1e-3, (xyz, data.qpos[:3])


def test_random_tiles_follow_the_seed_and_nothing_else() -> None:
    config = TerrainGridConfig(types=(RandomUniformTerrain(),), num_levels=2, tile_size=(1.0, 1.0),
                               horizontal_scale=0.1, difficulty_range=(0.5, 0.5))
    state = np.random.get_state()  # noqa: NPY002  (checking that the legacy global RNG stays untouched)
    a, b = build_terrain(config, rng=3), build_terrain(config, rng=3)
    assert np.random.get_state()[1].tobytes() == state[1].tobytes()  # noqa: NPY002
    np.testing.assert_array_equal(a.heights, b.heights)
    assert not np.array_equal(a.heights, build_terrain(config, rng=4).heights)
    # A tile does not depend on how many tiles there are: level 0 of a taller grid is the same.
    taller = build_terrain(dataclasses.replace(config, num_levels=5), rng=3)
    np.testing.assert_array_equal(taller.heights[:, :11], a.heights[:, :11])
    # A Generator gives one draw of entropy: the same generator state, the same terrain.
    g1, g2 = np.random.default_rng(9), np.random.default_rng(9)
    np.testing.assert_array_equal(build_terrain(config, rng=g1).heights, build_terrain(config, rng=g2).heights)


def test_an_image_terrain_compiles_like_an_mjcf_hfield_file(tmp_path) -> None:
    """Playground's rough terrain is ``<hfield file="hfield.png" size="10 10 .05 0.1"/>``: the
    built terrain compiles to the same hfield, bit for bit, and its heights are that surface's."""
    path = _image(tmp_path, mode="RGB")
    terrain = build_terrain(ImageHeightfield(path, size=(10.0, 10.0), height=0.05, base=0.1))
    xml = f"""<mujoco><asset><hfield name="hfield" file="{path}" size="10 10 .05 0.1"/></asset>
              <worldbody><geom name="terrain" type="hfield" hfield="hfield"/></worldbody></mujoco>"""
    mjcf = mujoco.MjModel.from_xml_string(xml)
    model, data = _compiled(terrain)
    for name in ("hfield_nrow", "hfield_ncol", "hfield_size", "hfield_data", "geom_pos", "geom_size", "geom_aabb"):
        np.testing.assert_array_equal(getattr(model, name), getattr(mjcf, name), err_msg=name)
    xy = np.random.default_rng(1).uniform(-9.9, 9.9, (500, 2))
    np.testing.assert_allclose(terrain.height_at(xy), _ray_heights(model, data, xy), rtol=0, atol=1e-9)
    np.testing.assert_array_equal(terrain.env_origins(np.arange(3))[:, :2], np.zeros((3, 2)))


def test_an_image_sub_terrain_scales_with_difficulty(tmp_path) -> None:
    """31 x 21 vertices per tile over a 31 x 21 image: one pixel per vertex, each level's tile the
    image's levels (as MuJoCo reads the file) times its height scale."""
    kind = ImageTerrain(_image(tmp_path, shape=(21, 31)), height_range=(0.1, 0.3))
    config = TerrainGridConfig(types=(kind,), num_levels=3, tile_size=(3.0, 2.0), horizontal_scale=0.1)
    terrain = build_terrain(config)
    levels = mujoco.MjModel.from_xml_string(
        f'<mujoco><asset><hfield name="h" file="{kind.path}" size="1 1 1 1"/></asset><worldbody>'
        '<geom type="hfield" hfield="h"/></worldbody></mujoco>').hfield_data.reshape(21, 31)
    for level, scale in enumerate((0.1, 0.2, 0.3)):  # the last column is the next tile's first
        tile = terrain.heights[:, 30 * level : 30 * level + 30]
        np.testing.assert_allclose(tile, scale * levels[:, :30], rtol=0, atol=terrain.size[2] * 2.0**-23)
    assert [kind.hardness(d) for d in terrain.difficulties] == pytest.approx([0.1, 0.2, 0.3])


def test_the_terrain_goes_into_a_variants_spec_as_one_hfield_and_geom(terrain: Terrain) -> None:
    spec = mujoco.MjSpec()
    body = spec.worldbody.add_body(name="floor")
    geom = terrain.add_to_spec(spec, name="ground", body=body)
    geom.friction = [0.8, 0.005, 0.0001]
    model = spec.compile()
    assert model.nhfield == 1 and model.geom("ground").bodyid == model.body("floor").id
    np.testing.assert_allclose(model.geom_friction[model.geom("ground").id], [0.8, 0.005, 0.0001])
    with pytest.raises(ConfigError, match=r"the spec already has an hfield named 'ground'; pass another name"):
        terrain.add_to_spec(spec, name="ground")


@pytest.mark.parametrize(("make", "match"), [
    (lambda: TerrainGridConfig(types=()), r"TerrainGridConfig\.types must be a non-empty tuple"),
    (lambda: TerrainGridConfig(types=("stairs",)), r"types holds 'stairs'; allowed kinds are \{FlatTerrain, "),
    (lambda: TerrainGridConfig(num_levels=0), r"num_levels must be an int >= 1, got 0"),
    (lambda: TerrainGridConfig(num_levels=2.0), r"num_levels must be an int >= 1, got 2\.0"),
    (lambda: TerrainGridConfig(horizontal_scale=0), r"horizontal_scale must be > 0\.0, got 0"),
    (lambda: TerrainGridConfig(tile_size=(8.0,)), r"tile_size must be an \(x, y\) pair"),
    (lambda: TerrainGridConfig(tile_size=(8.07, 8.0)), r"tile_size = 8\.07 must be a whole number of "
                                                       r"horizontal_scale = 0\.1 m cells; use 8\.1"),
    (lambda: TerrainGridConfig(border_width=-1), r"border_width must be >= 0\.0, got -1"),
    (lambda: TerrainGridConfig(difficulty_range=(0.8, 0.2)), r"difficulty_range must have low <= high"),
    (lambda: TerrainGridConfig(difficulty_range=(0.0, 1.5)), r"difficulty_range must lie in \[0, 1\]"),
    (lambda: TerrainGridConfig(base_thickness=0.0), r"base_thickness must be > 0\.0"),
    (lambda: TerrainGridConfig(num_levels=1000, horizontal_scale=0.01), rf"more than {MAX_VERTICES:,}; raise"),
    (lambda: TerrainGridConfig(types=(PyramidStairsTerrain(step_width=0.1),)),
     r"step_width = 0\.1 spans less than two horizontal_scale = 0\.1 m cells"),
    (lambda: RandomUniformTerrain(step=0.0), r"RandomUniformTerrain\.step must be > 0\.0"),
    (lambda: RandomUniformTerrain(amplitude_range=(0.1,)), r"amplitude_range must be a \(low, high\) pair"),
    (lambda: RandomUniformTerrain(amplitude_range=(-0.1, 0.1)), r"amplitude_range must be >= 0\.0, got -0\.1"),
    (lambda: PyramidSlopeTerrain(slope_range=(float("nan"), 1.0)), r"slope_range must be a finite number"),
    (lambda: PyramidSlopeTerrain(inverted=1), r"PyramidSlopeTerrain\.inverted must be True or False, got 1"),
    (lambda: PyramidStairsTerrain(step_width=0), r"PyramidStairsTerrain\.step_width must be > 0\.0"),
    (lambda: PyramidStairsTerrain(inverted="yes"), r"PyramidStairsTerrain\.inverted must be True or False"),
    (lambda: ImageTerrain("no/such.png"), r"heightfield image 'no/such.png' does not exist"),
    (lambda: ImageTerrain(""), r"a heightfield image path must be a non-empty str or Path"),
    (lambda: ImageHeightfield(__file__), r"cannot read the heightfield image .*test_terrain\.py"),
    (lambda: ImageHeightfield("x.png", size=(10,)), r"ImageHeightfield\.size must be \(x, y\) half extents"),
    (lambda: ImageHeightfield("x.png", height=-1), r"ImageHeightfield\.height must be > 0\.0, got -1"),
])
def test_invalid_configs_are_refused_naming_the_field(make, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        make()


def test_invalid_builds_and_queries_are_refused(terrain: Terrain) -> None:
    with pytest.raises(ConfigError, match=r"platform_width 4\.0 must be less than the tile's smaller side 2\.0"):
        build_terrain(TerrainGridConfig(types=(PyramidSlopeTerrain(platform_width=4.0),), num_levels=1,
                                        tile_size=(3.0, 2.0)))
    with pytest.raises(ConfigError, match=r"rng must be an int seed >= 0 or a numpy Generator, got -1"):
        build_terrain(CONFIG, rng=-1)
    with pytest.raises(ConfigError, match=r"build_terrain takes a TerrainGridConfig or an ImageHeightfield"):
        build_terrain("grid")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"point \[100\.0, 0\.0\] is off the terrain, which spans x in"):
        terrain.height_at(np.array([[0.0, 0.0], [100.0, 0.0]]))
    with pytest.raises(ConfigError, match=r"height_at takes \(\.\.\., 2\) points"):
        terrain.height_at(np.zeros(3))
    with pytest.raises(ConfigError, match=r"global_ids must be ints >= 0"):
        terrain.tile_of_env(np.array([-1]))
    with pytest.raises(ConfigError, match=r"max_level must be an int in \[0, 3\], got 4"):
        terrain.tile_of_env(np.arange(3), max_level=4)
    with pytest.raises(ConfigError, match=r"levels must be ints in \[0, 3\], got \[5\]"):
        terrain.origins(np.array([5]), np.array([0]))
    with pytest.raises(ConfigError, match=r"levels and types must have one shape"):
        terrain.origins(np.array([0, 1]), np.array([0]))
