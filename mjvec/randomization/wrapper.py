"""`HookWrapper`: the base of mjvec's randomization wrappers (see `mjvec.contract`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from gymnasium.vector import VectorEnv, VectorWrapper

from mjvec.contract import Release
from mjvec.errors import ConfigError, allowed
from mjvec.vector_api import VectorEnvAPI

# What a wrapper can do to a policy's inputs or world (see `WrapperEffect`).
EFFECT_KINDS = ("obs_noise", "obs_delay", "action_delay", "pose_latency", "scale_noise", "pushes", "model")


@dataclass(frozen=True)
class WrapperEffect:
    """What one randomization wrapper does, for the policy contract (`mjvec.integrations.policy_contract`).

    kind: one of `EFFECT_KINDS`. applies_to: what it acts on: an observation block's name
    ("obs_noise"), "observation" (the whole policy observation), "action", a perceived quantity
    the task declares ("object_pose", "object_scales"), "physics" or "model". parameters: its
    settings (JSON-ready numbers, strings, bools and lists), as the wrapper was built.
    """

    kind: str
    applies_to: str
    parameters: Mapping[str, Any]

    def __post_init__(self) -> None:
        if self.kind not in EFFECT_KINDS:
            raise ConfigError(f"WrapperEffect.kind={self.kind!r} is not one of {allowed(EFFECT_KINDS)}")
        object.__setattr__(self, "parameters", MappingProxyType(dict(self.parameters)))


class HookWrapper(VectorEnvAPI, VectorWrapper):
    """Base of mjvec's randomization wrappers: the Gymnasium vector-env interface RL libraries
    expect (`mjvec.vector_api`), and release on close of everything registered through `_register`.

    Subclasses name `VectorWrapper` again among their bases (``class W(HookWrapper, VectorWrapper)``):
    some libraries recognise a Gymnasium env by the module of its class's direct bases (skrl's
    ``wrap_env``), so an mjvec wrapper must show a ``gymnasium`` base there.
    """

    def __init__(self, env: VectorEnv) -> None:
        super().__init__(env)
        self._releases: list[Release] = []

    def _register(self, *registrations: Callable[[], Release]) -> None:
        """Run the registrations in order, keeping each release for close(). If one raises, the
        ones already made are released before the error propagates: a refused wrapper leaves the
        env as it found it."""
        try:
            for register in registrations:
                self._releases.append(register())
        except BaseException:
            self.release_hooks()
            raise

    def per_env_bytes(self) -> int:
        """The bytes of per-env state this wrapper will hold (its queues, draws and buffers), for the
        memory check `make_vec` runs once the wrappers are built. Default: none."""
        return 0

    def describe(self) -> WrapperEffect | None:
        """What this wrapper does (`WrapperEffect`), for the policy contract; None: not described
        (the contract then names the wrapper as undescribed)."""
        return None

    def release_hooks(self) -> None:
        """Unregister everything this wrapper registered on the env (idempotent)."""
        while self._releases:
            self._releases.pop()()

    def close(self, **kwargs: Any) -> None:
        """Release this wrapper's hooks, then close what it wraps; refused (`ConcurrentUseError`, nothing
        released) while another call on the env runs: it runs as the env's close() (`run_exclusive`)."""
        run_exclusive = getattr(self.unwrapped, "run_exclusive", None)
        if run_exclusive is None:
            self._close(**kwargs)
        else:
            run_exclusive("close", self._close, **kwargs)

    def _close(self, **kwargs: Any) -> None:
        self.release_hooks()
        super().close(**kwargs)
