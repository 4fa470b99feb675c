"""Terms two or more locomotion tasks share (not a registered task): velocity commands with their
resampling timers, feet contact / air time / swing height, the base-motion and regularisation
reward terms, and timed velocity-kick pushes, each as MuJoCo Playground's locomotion tasks define
them (its Go1 joystick is the first user; `mjvec.tasks.go1_joystick`).

Everything is written once for either array namespace (`mjvec.xp`: numpy on the host, torch on a
device) over (N, ...) arrays:

- `rewards`: pure functions of (N, ...) arrays returning (N,) unweighted terms.
- `feet`: `FeetState` (air time, last contact, swing peak) and the feet terms.
- `commands`: `CommandConfig` and `CommandState` (the command in force, the steps left until the
  next resample), drawing from the env's per-env streams.
- `pushes`: `PushConfig` and `PushState` (Playground's timed kicks: a half-sine force on one body).

A stateful record holds (N, ...) arrays of the state's namespace, updated in place; it draws only
for the envs concerned (`mjvec.xp.Rows`), so an env's draws depend on its own history alone.
"""

from mjvec.tasks.locomotion.commands import CommandConfig, CommandState, resample_command
from mjvec.tasks.locomotion.feet import FeetState, FeetStep
from mjvec.tasks.locomotion.pushes import PushConfig, PushState

__all__ = ["CommandConfig", "CommandState", "FeetState", "FeetStep", "PushConfig", "PushState", "resample_command"]
