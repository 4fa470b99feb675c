"""Gymnasium's own MJCF files, loaded as `mujoco.MjSpec`s (nothing copied, nothing downloaded).

The suite's scenes are the XML files of the INSTALLED ``gymnasium`` package
(``gymnasium/envs/mujoco/assets/``), found with `importlib.resources` so that importing mjvec does
not import ``gymnasium.envs.mujoco`` (which needs ``imageio``, Gymnasium's ``mujoco`` extra). A
user's own file is resolved as Gymnasium's ``xml_file`` argument is (`resolve_xml`).
"""

from __future__ import annotations

import functools
import importlib.resources
import os
import warnings
from pathlib import Path

import mujoco

from mjvec.errors import ConfigError

__all__ = ["asset_dir", "load_spec", "name_unnamed", "resolve_xml"]


@functools.lru_cache(maxsize=1)
def asset_dir() -> Path:
    """The installed gymnasium's MuJoCo asset folder."""
    path = Path(str(importlib.resources.files("gymnasium") / "envs" / "mujoco" / "assets"))
    if not path.is_dir():
        raise ConfigError(
            f"the installed gymnasium has no MuJoCo assets at {path}; mjvec's Gymnasium suite reads the XML files "
            "gymnasium ships (gymnasium>=1.4): reinstall gymnasium"
        )
    return path


def resolve_xml(xml_file: str) -> Path:
    """The file `xml_file` names, by Gymnasium's rule (`MujocoEnv`'s ``expand_model_path``): a path
    starting with "." or "/" is taken as is, one starting with "~" is expanded, anything else is a
    file in gymnasium's asset folder. Raises ConfigError if it does not exist."""
    if not isinstance(xml_file, str) or not xml_file:
        raise ConfigError(f"xml_file must be a non-empty str (a path or a file name in gymnasium's assets), "
                          f"got {xml_file!r}")
    if xml_file.startswith((".", "/")):
        path = Path(xml_file)
    elif xml_file.startswith("~"):
        path = Path(os.path.expanduser(xml_file))
    else:
        path = asset_dir() / xml_file
    if not path.is_file():
        raise ConfigError(
            f"xml_file={xml_file!r} does not exist (looked at {path}); give a path starting with '.', '/' or '~', or "
            f"the name of a file in gymnasium's assets ({', '.join(sorted(p.name for p in asset_dir().glob('*.xml')))})"
        )
    return path.resolve()


def load_spec(path: Path) -> mujoco.MjSpec:
    """A fresh MjSpec of the MJCF file at `path` (each call parses anew, so every spec is independent),
    its unnamed bodies, joints and actuators named (`name_unnamed`) and a ``settotalmass`` baked in
    (`bake_total_mass`). Compiled, it is ``MjModel.from_xml_path(path)`` bit for bit in every numeric
    field and steps like it (tested): names are not physics."""
    spec = mujoco.MjSpec.from_file(str(path))
    name_unnamed(spec)
    bake_total_mass(spec)
    return spec


def bake_total_mass(spec: mujoco.MjSpec) -> None:
    """Replace a ``<compiler settotalmass>`` (half_cheetah.xml has one) by the masses, inertias and
    inertial frames it compiles to, given as explicit inertials, so that compiling the spec does not
    warn on every build (MuJoCo 4 deprecates the attribute; Gymnasium's own env still uses it, and
    prints MuJoCo's warning). Values are taken from one compile of the spec as written, so the
    result is the same model bit for bit; a spec without the attribute is left alone."""
    if spec.compiler.settotalmass <= 0:
        return
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*settotalmass.*deprecated", category=UserWarning)
        model = spec.compile()
    for index, body in enumerate(spec.bodies):
        if index == 0:  # the world body has no inertial
            continue
        body.mass = model.body_mass[index]
        body.ipos = model.body_ipos[index]
        body.iquat = model.body_iquat[index]
        body.inertia = model.body_inertia[index]
        body.explicitinertial = True
    spec.compiler.settotalmass = -1
    spec.compiler.inertiafromgeom = mujoco.mjtInertiaFromGeom.mjINERTIAFROMGEOM_FALSE


def name_unnamed(spec: mujoco.MjSpec) -> None:
    """Name each unnamed body, joint and actuator ``<kind>_<index>`` (its id in the compiled model;
    e.g. Ant's leg tips ``body_4`` ... and its motors ``actuator_0`` ...), so that randomization terms,
    which address entities by name, can reach them. A name already taken is left alone."""
    for kind, elements in (("body", spec.bodies), ("joint", spec.joints), ("actuator", spec.actuators)):
        taken = {e.name for e in elements}
        for index, element in enumerate(elements):
            if not element.name and f"{kind}_{index}" not in taken:
                element.name = f"{kind}_{index}"
