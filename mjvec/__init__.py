"""mjvec: batched MuJoCo robot-learning environments that are real Gymnasium VectorEnvs.

`import mjvec` registers the environment ids (SimToolReal-v0, CubeRotate-v0 and Gymnasium's MuJoCo
suite as mjvec/Ant-v5, mjvec/HalfCheetah-v5, mjvec/Hopper-v5, mjvec/Walker2d-v5, mjvec/Humanoid-v5, and
MuJoCo Playground's playground/Go1JoystickFlatTerrain-v0) with Gymnasium, so
`gym.make_vec("SimToolReal-v0", num_envs=N, backend="cpu")` works afterwards (equivalently,
`gym.register_envs(mjvec)` or the id `"mjvec:SimToolReal-v0"`). Tasks of your own register through
`mjvec.envs.tasks.register_task`.
"""

from mjvec import _moved
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
from mjvec.tasks import gym_mujoco
from mjvec.tasks.cube_rotate import registration as cube_rotate_registration
from mjvec.tasks.go1_joystick import registration as go1_joystick_registration
from mjvec.tasks.simtoolreal import registration
from mjvec.tasks.simtoolreal.registration import ENV_ID

__version__ = "0.1.0"



_moved.install()  # the module paths of before the one-package-per-task layout keep working


def register_envs() -> None:
    """Register mjvec's tasks with Gymnasium (idempotent)."""
    registration.register_envs()
    cube_rotate_registration.register_envs()
    gym_mujoco.register_envs()
    go1_joystick_registration.register_envs()


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
