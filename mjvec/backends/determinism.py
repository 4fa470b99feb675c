"""What a backend promises about repeating a run bit for bit, and its `deterministic` option.

Every backend takes ``deterministic: bool`` (`make_vec(..., deterministic=True)`) and declares, in
`Capabilities.determinism`, the level of `DETERMINISM` it keeps as built: what a second run with the
same seed, options and actions reproduces. Code above `mjvec.backends` reads the level; it never
infers it from a backend's name.

- CPU backend: "bit_exact" whatever the option (`mujoco.batch` is bit-identical to a loop of
  `mj_step` at any thread count, and each env to its tool compiled alone).
- Warp backend on warp's CPU device: "run_to_run" whatever the option (warp runs a launch's
  threads one after another there, so every atomic lands in the same order); not "bit_exact",
  because an env's float32 results depend on which other worlds share its variant group.
- Warp backend on a GPU: "none". ``deterministic=True`` sets mujoco-warp's ``opt.deterministic``
  to ``DeterminismType.ALL`` on every group's Model before any kernel is loaded or graph captured,
  but mujoco-warp 4.0.0 implements only the ATOMICS part of it (float atomics reduced in a fixed
  order): its CONTACTS and CONSTRAINT parts are empty placeholders (``collision_driver._sort_contacts``,
  ``constraint._sort_constraints``) and contacts and constraint rows take their slots from atomic
  counters, so with contacts two GPU runs are not promised to agree bit for bit.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

import numpy as np

from mjvec.errors import ConfigError

# Strongest first.
DETERMINISM = MappingProxyType({
    "bit_exact": "bit-identical run to run at any thread count, and an env's results do not depend on which "
                 "other envs share its batch (num_envs, shards)",
    "run_to_run": "bit-identical run to run for the same configuration (the same envs on the same device); an "
                  "env's float results may depend on which other envs share its batch",
    "none": "no bitwise promise: runs agree statistically (e.g. float atomics in an order a GPU picks)",
})


def check_deterministic(value: Any) -> bool:
    """The `deterministic` option of a backend as a bool, or ConfigError naming the value."""
    if not isinstance(value, (bool, np.bool_)):
        raise ConfigError(
            f"deterministic must be True or False, got {value!r}; True asks the engine for run-to-run "
            "bit-identical results (Capabilities.determinism says what a backend keeps)"
        )
    return bool(value)
