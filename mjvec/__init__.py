"""mjvec: batched MuJoCo robot-learning environments that are real Gymnasium VectorEnvs.

`import mjvec` registers the environment ids (SimToolReal-v0, CubeRotate-v0 and Gymnasium's MuJoCo
suite as mjvec/Ant-v5, mjvec/HalfCheetah-v5, mjvec/Hopper-v5, mjvec/Walker2d-v5, mjvec/Humanoid-v5, and
MuJoCo Playground's playground/Go1JoystickFlatTerrain-v0, playground/Go1JoystickRoughTerrain-v0,
playground/LeapCubeReorient-v0, playground/PandaPickCube-v0 and playground/PandaPickCubeOrientation-v0)
with Gymnasium, so
`gym.make_vec("SimToolReal-v0", num_envs=N, backend="cpu")` works afterwards (equivalently,
`gym.register_envs(mjvec)` or the id `"mjvec:SimToolReal-v0"`). Tasks of your own register through
`mjvec.envs.registry.register_task`; an installed package's tasks register at import through a
``mjvec.tasks`` entry point (`mjvec.tasks`).
"""

from mjvec import _moved, tasks
from mjvec.errors import (
    ActionError,
    CapabilityError,
    ClosedError,
    ConcurrentUseError,
    ConfigError,
    FieldWriteError,
    InstallError,
    MjvecError,
    NotCopyableError,
    RenderError,
    ResetNeededError,
)
from mjvec.tasks.simtoolreal.registration import ENV_ID

__version__ = "0.1.0"



_moved.install()  # the module paths of before the one-package-per-task layout keep working


def register_envs() -> None:
    """Register mjvec's tasks, and those of installed ``mjvec.tasks`` entry points, with Gymnasium
    (idempotent; `mjvec.tasks.register_envs`)."""
    tasks.register_envs()


register_envs()

__all__ = [
    "ENV_ID",
    "ActionError",
    "CapabilityError",
    "ClosedError",
    "ConcurrentUseError",
    "ConfigError",
    "FieldWriteError",
    "InstallError",
    "MjvecError",
    "NotCopyableError",
    "RenderError",
    "ResetNeededError",
    "__version__",
    "register_envs",
]
