"""Heightfields as group-sharing assets on the Warp backend (warp's cpu device, or MJVEC_TEST_DEVICE).

One mujoco_warp Model holds every variant's heightfield; each world's row of the per-world
`geom_dataid` selects its env's. Oracles: each variant compiled alone and stepped by mujoco_warp
alone in a world of its own (`tests.warp_oracle.WarpOracle`: bit for bit on warp's cpu device), and
plain MuJoCo C (within the float32 tolerance stated below). The claim that mujoco_warp reads
`geom_dataid` per world wherever a simulation kernel resolves a heightfield or mesh is checked on the
installed sources.
"""

from __future__ import annotations

import re
from pathlib import Path

import mujoco_warp
import numpy as np
import pytest

from mjvec.backends.base import Scene
from mjvec.backends.warp import WarpBackend
from mjvec.backends.warp import build as B
from mjvec.errors import ConfigError
from tests.devices import np_of
from tests.hfield_scenes import NUM_VARIANTS, RADIUS, drop_states, maker
from tests.scenes import Oracle
from tests.warp_oracle import WARP_VS_ALONE, WarpOracle

_SRC = Path(mujoco_warp.__file__).parent / "_src"
# Sources that index geom_dataid by the template alone, and why that is not a simulation path:
# the batched renderer's scene BVH and its heightfield meshes (mjvec renders with MuJoCo C).
_RENDER_ONLY = {"bvh.py", "render_util.py"}
# A sphere dropped 3 mm onto a smooth terrain inside one of its triangles, 0.15 s (impact and first
# roll, on that one facet): MuJoCo C in float64 vs mujoco_warp in float32 with its own heightfield
# collider. Measured max |qpos error| over 256 drops (4 seeds x 64 envs) on mujoco-warp 4.0.0, warp's
# cpu device: 4.4e-6. Later the sphere rolls across facet edges, where the two colliders pick
# different contact sets (C up to 3 contacts where mujoco_warp has fewer): mm apart after 0.3 s. A
# drop onto an edge or vertex differs from the impact on (7.5e-5 at once), hence the facet points.
C_TOLERANCE = 2e-5
DROP_STEPS = 37


def _backend(make, num_envs: int, device: str) -> WarpBackend:
    scene = Scene(num_variants=NUM_VARIANTS, make_variant=make, num_envs=num_envs)
    return WarpBackend(scene, device=device, progress=False)


def _subscripts(text: str, name: str) -> list[list[str]]:
    """The top-level comma-separated indices of every `name[...]` in `text`."""
    out = []
    for match in re.finditer(rf"\b{name}\[", text):
        depth, start, parts = 1, match.end(), []
        for i in range(match.end(), len(text)):
            depth += {"[": 1, "(": 1, "]": -1, ")": -1}.get(text[i], 0)
            if (text[i] == "," and depth == 1) or depth == 0:
                parts.append(text[start:i].strip())
                start = i + 1
            if depth == 0:
                break
        out.append(parts)
    return out


def test_mujoco_warp_reads_geom_dataid_per_world_in_every_simulation_kernel() -> None:
    """Every read of geom_dataid in mujoco_warp's simulation sources takes the world's row
    (`worldid % geom_dataid.shape[0]`, directly or through a variable set to it), so a per-world
    geom_dataid selects each world's heightfield in collisions, rays, sensors and bounds."""
    world_rows, reads = {"worldid % geom_dataid.shape[0]"}, []
    for path in sorted(_SRC.glob("*.py")):
        if path.name.endswith("_test.py") or path.name in _RENDER_ONLY:
            continue
        text = path.read_text()
        world_rows |= set(re.findall(r"(\w+) = worldid % (?:geom_dataid\.shape\[0\]|ngeom_dataid)", text))
        reads += [(path.name, index) for index in _subscripts(text, "geom_dataid")]
        assert "mjm.geom_dataid" not in text, path.name  # no host-side read of the template's ids
    assert {f for f, _ in reads} >= {"collision_convex.py", "ray.py", "set_const.py"}  # heightfield paths
    assert all(len(index) == 2 and index[0] in world_rows for _, index in reads), reads
    assert "geom_dataid" in B.BATCHABLE


def test_a_mujoco_warp_without_per_world_geom_dataid_is_refused(monkeypatch: pytest.MonkeyPatch,
                                                                warp_device: str) -> None:
    monkeypatch.setattr(B, "BATCHABLE", B.BATCHABLE - {"geom_dataid"})
    with pytest.raises(ConfigError, match=r"variants \[0, 1, 2, 3\] use different meshes or heightfields, selected "
                                          r"per env through geom_dataid, but this mujoco_warp holds geom_dataid once "
                                          r"per Model; pin mujoco-warp==4.0.0"):
        _backend(maker(), 4, warp_device)


@pytest.mark.parametrize("vary", ["data", "shape"])
def test_bodies_sliding_on_their_own_terrain_step_like_each_variant_alone(vary: str, warp_device: str) -> None:
    """A box dropped onto random-noise terrain and sliding over it (a path that diverges at once on
    another terrain): the batched worlds equal each variant alone in mujoco_warp."""
    make = maker(vary=vary)
    be = _backend(make, 8, warp_device)
    assert be.num_groups == 1 and be.model.nhfield == NUM_VARIANTS
    m, _, _ = be.group_handles[0]
    ground = be.model.geom("ground").id
    np.testing.assert_array_equal(m.geom_dataid.numpy()[:, ground], be.variant_of_env)  # pooled in variant order
    qpos, qvel = drop_states(Oracle(be.variant_of_env, make=make).models, np.random.default_rng(0), 0.02,
                             slide=1.0, lowest=0.15)
    be.reset(np.arange(be.num_envs), qpos, qvel)
    oracle = WarpOracle(be.variant_of_env, make=make, device=warp_device).start()
    for i in range(be.num_envs):
        oracle.reset(i, qpos[i], qvel[i])
    for _ in range(100):
        be.step(1)
        oracle.step(np.zeros((be.num_envs, 0)), 1)
    np.testing.assert_allclose(np_of(be.qpos), oracle.qpos(), rtol=0, atol=WARP_VS_ALONE)
    np.testing.assert_allclose(np_of(be.qvel), oracle.qvel(), rtol=0, atol=WARP_VS_ALONE)
    assert (np_of(be.qpos)[:, 2] < qpos[:, 2] - 0.01).all()  # every box fell onto its terrain


@pytest.mark.parametrize("seed", [2, *(pytest.param(s, marks=pytest.mark.slow) for s in (0, 1, 3))])
def test_a_sphere_dropped_on_its_terrain_matches_mujoco_c(seed: int, warp_device: str) -> None:
    """The rest height after the drop is each terrain's own (the neighbour's terrain puts the same
    drop elsewhere by far more than the tolerance)."""
    make = maker(vary="shape", body="sphere", surface="smooth")
    be = _backend(make, 16, warp_device)
    c = Oracle(be.variant_of_env, make=make)
    qpos, qvel = drop_states(c.models, np.random.default_rng(seed), 0.003, lowest=RADIUS, on_facets=True)
    be.reset(np.arange(be.num_envs), qpos, qvel)
    for i in range(be.num_envs):
        c.reset(i, qpos[i], qvel[i])
    other = Oracle((be.variant_of_env + 1) % NUM_VARIANTS, make=make)
    for i in range(be.num_envs):
        other.reset(i, qpos[i], qvel[i])
    contacts = np.zeros(be.num_envs, np.int64)
    for _ in range(DROP_STEPS):
        be.step(1)
        c.step(np.zeros((be.num_envs, 0)), 1)
        other.step(np.zeros((be.num_envs, 0)), 1)
        contacts += [d.ncon for d in c.datas]
    err = np.abs(np_of(be.qpos) - c.qpos())
    assert err.max() < C_TOLERANCE, err.max(axis=1)
    assert (contacts > 0).all()
    assert (np.abs(c.qpos() - other.qpos())[:, :3].max(axis=1) > 100 * C_TOLERANCE).all()
