"""mjvec: batched MuJoCo robot-learning environments that are real Gymnasium VectorEnvs.

`import mjvec` registers the environment ids with Gymnasium (see `mjvec.envs.registration`).
"""

from mjvec.errors import (
    ActionError,
    CapabilityError,
    ClosedError,
    ConfigError,
    FieldWriteError,
    InstallError,
    MjvecError,
)

__version__ = "0.1.0"

__all__ = [
    "ActionError",
    "CapabilityError",
    "ClosedError",
    "ConfigError",
    "FieldWriteError",
    "InstallError",
    "MjvecError",
    "__version__",
]
