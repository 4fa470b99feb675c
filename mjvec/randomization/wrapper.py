"""`HookWrapper`: the base of mjvec's randomization wrappers (see `mjvec.contract`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gymnasium.vector import VectorEnv, VectorWrapper

from mjvec.contract import Release
from mjvec.vector_api import VectorEnvAPI


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
