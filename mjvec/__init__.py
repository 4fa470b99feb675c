"""mjvec: batched MuJoCo robot-learning environments that are real Gymnasium VectorEnvs.

`import mjvec` registers the environment ids with Gymnasium, so
`gym.make_vec("SimToolReal-v0", num_envs=N, backend="cpu")` works afterwards (equivalently,
`gym.register_envs(mjvec)` or the id `"mjvec:SimToolReal-v0"`).
"""

from mjvec.envs.registration import ENV_ID, register_envs
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

__version__ = "0.1.0"

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
