"""MJCF files with their asset folders, loaded as `mujoco.MjSpec`s: the scene layer tasks built from
a robot's XML share (Gymnasium's MuJoCo suite, MuJoCo Playground's tasks).

- `package_dir`: a folder inside an installed package (Gymnasium's ``envs/mujoco/assets``, an asset
  wheel's tree), found with `importlib.util.find_spec` so that nothing is imported to locate it; a
  missing package raises one `ConfigError` naming the extra that installs it. Nothing is ever
  downloaded.
- `resolve_xml`: a file named the way Gymnasium's ``xml_file`` argument names one (a path, or a
  file name inside a default folder).
- `load_spec`: a fresh MjSpec of a file, its unnamed bodies, joints and actuators named
  (`name_unnamed`, so randomization terms can address them) and a deprecated ``settotalmass``
  baked into explicit inertials (`bake_total_mass`); compiled, it equals ``MjModel.from_xml_path``
  bit for bit in every numeric field.

MJCF resolves ``<include file=...>`` and asset files (meshes, textures, heightfield PNGs) relative
to the including file's folder, so a file loaded from an installed asset tree finds the files it
names where that tree keeps them (Playground's Go1 XMLs name Menagerie's meshes as
``../../../../../mujoco_menagerie/unitree_go1/assets/...``).
"""

from __future__ import annotations

import importlib.util
import os
import warnings
from pathlib import Path

import mujoco

from mjvec.errors import ConfigError

__all__ = ["bake_total_mass", "load_spec", "name_unnamed", "package_dir", "resolve_xml"]


def package_dir(package: str, *parts: str, extra: str, what: str) -> Path:
    """The folder `parts` inside the installed top-level `package`, without importing it.

    extra: the pip extra (or requirement) that installs it, named in the error; what: what the
        folder holds, for the error ("Gymnasium's MuJoCo assets", ...).
    Raises ConfigError when the package is not installed or lacks the folder.
    """
    spec = importlib.util.find_spec(package)
    locations = list(spec.submodule_search_locations or ()) if spec is not None else []
    if not locations:
        raise ConfigError(
            f"{what} come from the package {package!r}, which is not installed; install it with "
            f"pip install {extra!r} (nothing is downloaded at run time)"
        )
    path = Path(locations[0]).joinpath(*parts)
    if not path.is_dir():
        raise ConfigError(
            f"{what} are expected at {path}, which the installed {package!r} does not have; reinstall it with "
            f"pip install --force-reinstall {extra!r}"
        )
    return path


def resolve_xml(xml_file: str, folder: Path) -> Path:
    """The file `xml_file` names, by Gymnasium's rule (`MujocoEnv`'s ``expand_model_path``): a path
    starting with "." or "/" is taken as is, one starting with "~" is expanded, anything else is a
    file in `folder`. Raises ConfigError if it does not exist, listing the XML files of `folder`."""
    if not isinstance(xml_file, str) or not xml_file:
        raise ConfigError(f"xml_file must be a non-empty str (a path or a file name in {folder}), got {xml_file!r}")
    if xml_file.startswith((".", "/")):
        path = Path(xml_file)
    elif xml_file.startswith("~"):
        path = Path(os.path.expanduser(xml_file))
    else:
        path = folder / xml_file
    if not path.is_file():
        raise ConfigError(
            f"xml_file={xml_file!r} does not exist (looked at {path}); give a path starting with '.', '/' or '~', or "
            f"the name of a file in {folder} ({', '.join(sorted(p.name for p in folder.glob('*.xml')))})"
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
    """Replace a ``<compiler settotalmass>`` (Gymnasium's half_cheetah.xml has one) by the masses,
    inertias and inertial frames it compiles to, given as explicit inertials, so that compiling the
    spec does not warn on every build (MuJoCo 4 deprecates the attribute). Values are taken from one
    compile of the spec as written, so the result is the same model bit for bit; a spec without the
    attribute is left alone."""
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
