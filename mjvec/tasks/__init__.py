"""The tasks, one package each: `simtoolreal` (SimToolReal-v0), `cube_rotate` (CubeRotate-v0) and
`gym_mujoco` (Gymnasium's MuJoCo locomotion suite as mjvec/Ant-v5, ...).

A task's package holds all of it: the env (an `mjvec.envs.base.MjVecEnv`), its observations and
reward terms, its config, presets and registration (`mjvec.envs.registry.register_task`), and its scene
builder; `mjvec.assets` holds what two or more tasks share.

Tasks are found, not listed: `register_envs` registers every subpackage here that has a
``registration`` module with a ``register_envs()`` (a package without one, such as shared terms, is
no task), then every ``mjvec.tasks`` entry point of the installed distributions, so a third-party
package's tasks register at ``import mjvec`` too. Such a package declares, in its pyproject.toml::

    [project.entry-points."mjvec.tasks"]
    my_tasks = "my_package.registration:register_envs"

and its callable registers its ids (with `mjvec.envs.registry.register_once`, which may run twice).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import pkgutil

from mjvec.errors import ConfigError

ENTRY_POINT_GROUP = "mjvec.tasks"


def task_packages() -> list[str]:
    """The names of this package's task subpackages (those with a ``registration`` module), sorted."""
    found = []
    for info in pkgutil.iter_modules(__path__):
        if info.ispkg and importlib.util.find_spec(f"{__name__}.{info.name}.registration") is not None:
            found.append(info.name)
    return sorted(found)


def register_envs() -> None:
    """Register every task of mjvec and of the installed ``mjvec.tasks`` entry points (idempotent).

    An entry point that fails to load or to register raises ConfigError naming it and its package:
    an installed task package that is broken is not skipped in silence.
    """
    for name in task_packages():
        importlib.import_module(f"{__name__}.{name}.registration").register_envs()
    for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            entry.load()()
        except Exception as error:
            package = entry.dist.name if entry.dist is not None else "an unknown distribution"
            raise ConfigError(
                f"the {ENTRY_POINT_GROUP!r} entry point {entry.name!r} ({entry.value}) of {package} failed to register "
                f"its tasks: {type(error).__name__}: {error}. Fix or uninstall that package (pip uninstall {package})"
            ) from error
