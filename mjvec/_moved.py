"""Import paths that moved when mjvec became one package per task, kept working.

`install()` puts a finder on `sys.meta_path` that serves each old module path of `MOVED_MODULES`
as the module at its new path (the same module object: its classes, registries and state are
shared), with a DeprecationWarning naming the new path. `moved_attribute` does the same for a
name looked up on a package (``from mjvec.assets import scene_spec``).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings
from types import ModuleType
from typing import Any

# old module path -> new module path
MOVED_MODULES = {
    "mjvec.envs.simtoolreal": "mjvec.tasks.simtoolreal.env",
    "mjvec.envs.simtoolreal_obs": "mjvec.tasks.simtoolreal.observations",
    "mjvec.envs.simtoolreal_hooks": "mjvec.tasks.simtoolreal.env",
    "mjvec.envs.config": "mjvec.tasks.simtoolreal.config",
    "mjvec.envs.registration": "mjvec.tasks.simtoolreal.registration",
    "mjvec.envs.task_math": "mjvec.tasks.simtoolreal.terms",
    "mjvec.envs.curriculum": "mjvec.tasks.simtoolreal.curriculum",
    "mjvec.assets.scene": "mjvec.tasks.simtoolreal.scene",
    "mjvec.envs.cube_rotate": "mjvec.tasks.cube_rotate.env",
    "mjvec.envs.cube_rotate_config": "mjvec.tasks.cube_rotate.config",
    "mjvec.envs.cube_rotate_terms": "mjvec.tasks.cube_rotate.terms",
    "mjvec.envs.cube_rotate_registration": "mjvec.tasks.cube_rotate.registration",
    "mjvec.assets.cube": "mjvec.tasks.cube_rotate.scene",
    "mjvec.envs.sb3": "mjvec.integrations.sb3",
    "mjvec.envs.adapters": "mjvec.integrations.adapters",
    "mjvec.envs.video": "mjvec.integrations.video",
    "mjvec.randomization.hooks": "mjvec.contract",
    "mjvec.envs.lifecycle": "mjvec.contract",
    "mjvec.cli_rollout": "mjvec.cli.rollout",
    "mjvec.envs.tasks": "mjvec.envs.registry",
    "mjvec.envs.hooks": "mjvec.envs.transforms",
    "mjvec.assets.tools": "mjvec.tasks.simtoolreal.catalog.tools",
    "mjvec.assets.cubes": "mjvec.tasks.cube_rotate.catalog",
}
# The old paths are served until this release, then removed (the warning names it).
REMOVED_IN = "0.3.0"


def _warn(old: str, new: str) -> None:
    warnings.warn(f"{old} moved to {new}; import it from there (the old path will be removed in mjvec {REMOVED_IN})",
                  DeprecationWarning, stacklevel=3)


class _MovedFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname not in MOVED_MODULES:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: Any) -> ModuleType:
        new = MOVED_MODULES[spec.name]
        _warn(spec.name, new)
        return importlib.import_module(new)

    def exec_module(self, module: ModuleType) -> None:
        """The new module is already executed."""


def install() -> None:
    """Serve the old module paths (idempotent)."""
    if not any(isinstance(f, _MovedFinder) for f in sys.meta_path):
        sys.meta_path.append(_MovedFinder())


def moved_attribute(package: str, name: str, moved: dict[str, str]) -> Any:
    """For a package's module `__getattr__`: the attribute `name` from the module it moved to, or
    the AttributeError Python would raise."""
    if name not in moved:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    _warn(f"{package}.{name}", f"{moved[name]}.{name}")
    return getattr(importlib.import_module(moved[name]), name)
