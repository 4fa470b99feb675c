"""The Gymnasium vector-env interface that RL libraries expect beyond reset/step, for ONE batched env.

Gymnasium's own vector envs (`SyncVectorEnv`, `AsyncVectorEnv`) hold N sub-envs and expose
``call``, ``get_attr``, ``set_attr`` and ``autoreset_mode``; libraries rely on them (torchrl's
``GymWrapper`` reads ``env.autoreset_mode``, skrl's wrapper renders through ``env.call("render")``,
tianshou and others take ``len(env)``). An mjvec env is one batched object, and a stack of mjvec
wrappers is one too, so `VectorEnvAPI` gives both the same interface with these semantics:

- ``autoreset_mode``: ``metadata["autoreset_mode"]`` as an `AutoresetMode`.
- ``len(env)``: ``num_envs``.
- ``get_attr(name)``: the attribute of the first object in the wrapper chain (outermost first,
  ending with the unwrapped env) that has it, once per env: a tuple of ``num_envs`` references
  to the one batched value.
- ``call(name, *args, **kwargs)``: that attribute called once (or read, if not callable), its
  result once per env as above. ``call("render")`` is the env's ``render()`` itself: already one
  (lazily drawn) frame per env.
- ``set_attr(name, values)``: one value for the whole batch: a single value, or a list/tuple of
  ``num_envs`` equal values; differing per-env values raise `ConfigError`. It is set on the first
  object in the chain that has the attribute, else on the outermost one (as Gymnasium's
  ``set_wrapper_attr``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv

from mjvec.errors import ConfigError

__all__ = ["VectorEnvAPI"]


class VectorEnvAPI:
    """Mixin for `VectorEnv` classes (mjvec's base env and wrappers); see the module docstring."""

    @property
    def autoreset_mode(self) -> AutoresetMode:
        """The env's autoreset mode: ``metadata["autoreset_mode"]``."""
        return AutoresetMode(self.metadata["autoreset_mode"])  # type: ignore[attr-defined]

    def __len__(self) -> int:
        return int(self.num_envs)  # type: ignore[attr-defined]

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """The batch's attribute `name`, once per env (see the module docstring)."""
        return (getattr(self._attr_owner(name), name),) * len(self)

    def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """Call the batch's method `name` once; its result once per env (``render``: its frames)."""
        value = getattr(self._attr_owner(name), name)
        if name == "render":
            return value(*args, **kwargs)
        result = value(*args, **kwargs) if callable(value) else value
        return (result,) * len(self)

    def set_attr(self, name: str, values: Any) -> None:
        """Set `name` for the whole batch (one value, or num_envs equal values)."""
        if isinstance(values, (list, tuple)):
            if len(values) != len(self):
                raise ConfigError(
                    f"set_attr({name!r}) got {len(values)} values for {len(self)} envs; pass one value "
                    "or one per env"
                )
            if not all(_same(v, values[0]) for v in values):
                raise ConfigError(
                    f"set_attr({name!r}) got differing per-env values; an mjvec env is one batched object "
                    "whose attributes hold for every env: pass one value"
                )
            values = values[0] if values else values
        try:
            owner = self._attr_owner(name)
        except AttributeError:
            owner = self
        setattr(owner, name, values)

    def _chain(self) -> Sequence[Any]:
        """This env and the envs it wraps, outermost first, ending with the unwrapped env."""
        chain, env = [self], self
        while isinstance(getattr(env, "env", None), VectorEnv):
            env = env.env  # type: ignore[attr-defined]
            chain.append(env)
        return chain

    def _attr_owner(self, name: str) -> Any:
        for env in self._chain():
            if hasattr(env, name):
                return env
        raise AttributeError(
            f"no env in the wrapper chain {[type(e).__name__ for e in self._chain()]} has an attribute {name!r}"
        )


def _same(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return bool(np.array_equal(a, b))
    return bool(a == b)
