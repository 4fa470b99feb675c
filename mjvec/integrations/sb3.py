"""Stable-Baselines3 adapter: `SB3VecEnv(env)` makes an mjvec `VectorEnv` an SB3 `VecEnv`.

    env = gym.make_vec("SimToolReal-v0", num_envs=64, autoreset_mode="same_step")
    venv = VecNormalize(SB3VecEnv(env))
    PPO("MlpPolicy", venv, n_steps=32).learn(1_000_000, progress_bar=True)

Contract (what SB3's algorithms, `VecNormalize`, `evaluate_policy` and `ep_info_buffer` read):

- The env must use ``autoreset_mode="same_step"`` (else `ConfigError` at construction): SB3 expects
  a done env to be reset inside the done step. Any mjvec env works, also under Gymnasium
  `VectorWrapper`s (mjvec's randomization wrappers included).
- `step_wait` returns ``(obs, rewards (N,) float32, dones (N,) bool, infos)``; obs is a numpy
  array (float32 for float Box spaces), or a dict of them for a `Dict` space (use
  ``"MultiInputPolicy"``). Torch output (``array_backend="torch"``) is copied to host.
- ``infos`` is a list of N dicts; only done envs get keys: ``"terminal_observation"`` (the env's
  ``info["final_obs"]`` row: the pre-reset obs as the policy would have seen it, with the
  randomization wrappers' noise, delays and latency; per key for dict obs),
  ``"TimeLimit.truncated"`` (truncated and not terminated), ``"episode"`` ``{"r", "l", "t"}`` and
  ``"is_success"``. The episode record comes from the env's own ``info["episode"]`` when it writes
  one (``record_episode_statistics=True`` or Gymnasium's ``RecordEpisodeStatistics``); otherwise
  the adapter sums rewards itself, and ``"t"`` is the seconds since the adapter was created (SB3's
  `Monitor` convention). ``"is_success"``: the env's ``episode["success"]`` if present, else
  whether ``info[success_key]`` was True at any step of the episode. ``info_keys`` copies chosen
  step-info keys into the per-env dicts where their ``"_key"`` mask is True.
- `reset()` returns obs only; the per-env reset infos are in ``self.reset_infos``.
- `seed(s)` is stored and used by the next `reset()` as ``env.reset(seed=s)``: env i's random
  streams are keyed by (s, its global env id), so the returned list is ``[s] * num_envs``.
  ``seed(None)`` means the next reset does not reseed.
- Attributes and methods are those of ONE batched object: `get_attr` returns the (wrapper chain's)
  attribute once per requested index; `set_attr` and `env_method` act on the whole batch and accept
  only ``indices=None`` or every index. ``env_is_wrapped(Monitor)`` is True (the adapter writes
  Monitor's info keys itself); other classes are looked up in the Gymnasium wrapper chain.
- `get_images()` is the env's lazy ``render()`` sequence (``render_mode="rgb_array"``).

Only this module imports stable_baselines3; without it, importing this module raises
`InstallError` (``pip install -e '.[train]'`` in the mjvec checkout).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import VectorEnv

from mjvec.envs.arrays import to_numpy
from mjvec.errors import ConfigError, InstallError, install_hint
from mjvec.integrations._checks import require_same_step_box_env

try:
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import VecEnv
except ImportError as _error:
    raise InstallError(
        f"mjvec.integrations.sb3 needs stable-baselines3, which is not importable ({_error}); "
        f"fix: {install_hint('train')}"
    ) from _error

__all__ = ["SB3VecEnv"]


class SB3VecEnv(VecEnv):
    """An SB3 `VecEnv` over an mjvec vector env in SAME_STEP mode (see the module docstring).

    env: the Gymnasium `VectorEnv` (possibly wrapped); closed by `close()`.
    info_keys: step-info keys to copy into the per-env info dicts (where their mask is True).
    success_key: the step-info key whose any-True over an episode is ``is_success`` when the env
        writes no ``episode["success"]``; None: no ``is_success`` unless the env writes it.
    """

    def __init__(self, env: VectorEnv, *, info_keys: Sequence[str] = (), success_key: str | None = "success") -> None:
        if not isinstance(env, VectorEnv):
            raise ConfigError(
                f"SB3VecEnv wraps a gymnasium.vector.VectorEnv (e.g. gym.make_vec('SimToolReal-v0', ...)), "
                f"got {type(env).__name__}"
            )
        require_same_step_box_env(env, "SB3VecEnv", "SB3")
        if isinstance(info_keys, str) or not all(isinstance(k, str) for k in info_keys):
            raise ConfigError(f"info_keys must be a sequence of str, got {info_keys!r}")
        self.env = env
        self._info_keys = tuple(info_keys)
        self._success_key = success_key
        n = int(env.num_envs)
        self._next_seed: int | None = None
        self._actions: np.ndarray | None = None
        self._returns = np.zeros(n)
        self._lengths = np.zeros(n, np.int64)
        self._success = np.zeros(n, bool)
        self._t0 = time.perf_counter()
        super().__init__(n, _sb3_space(env.single_observation_space), env.single_action_space)

    # ---- reset / step ----------------------------------------------------------------------
    def reset(self) -> Any:
        """Reset every env (with the stored seed and options, then cleared); returns the obs."""
        options = self._options[0]
        if any(o != options for o in self._options):
            raise ConfigError("mjvec resets all envs with one options dict; call set_options(dict), not a list")
        obs, info = self.env.reset(seed=self._next_seed, options=dict(options) or None)
        self._next_seed = None
        self._reset_seeds()
        self._reset_options()
        self.reset_infos = [{} for _ in range(self.num_envs)]
        _copy_rows(info, info.keys(), self.reset_infos)
        self._returns[:] = 0.0
        self._lengths[:] = 0
        self._success[:] = False
        return self._obs(obs)

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = actions

    def step_wait(self) -> tuple[Any, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        if self._actions is None:
            raise ConfigError("step_wait() without a pending step_async(actions); call step(actions)")
        actions, self._actions = self._actions, None
        obs, reward, term, trunc, info = self.env.step(actions)
        reward = np.asarray(to_numpy(reward), np.float64)
        term = np.asarray(to_numpy(term), bool)
        trunc = np.asarray(to_numpy(trunc), bool)
        dones = term | trunc
        self._returns += reward
        self._lengths += 1
        if self._success_key is not None and self._success_key in info:
            self._success |= _masked(info, self._success_key)
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        if self._info_keys:
            _copy_rows(info, self._info_keys, infos)
        done_ids = np.flatnonzero(dones)
        if done_ids.size:
            self._fill_done(info, done_ids, term, trunc, infos)
        return self._obs(obs), reward.astype(np.float32), dones, infos

    def _fill_done(
        self, info: Mapping[str, Any], ids: np.ndarray, term: np.ndarray, trunc: np.ndarray, infos: list[dict]
    ) -> None:
        """Write terminal obs, time-limit flag, episode record and success into done envs' dicts."""
        final_obs, final_mask = info.get("final_obs"), info.get("_final_obs")
        if final_obs is None or final_mask is None or not np.asarray(final_mask)[ids].all():
            raise ConfigError(
                f"envs {ids[:16].tolist()} are done but info has no 'final_obs' rows for them; SB3VecEnv needs "
                "a SAME_STEP env whose wrappers keep info['final_obs']"
            )
        final_obs = self._obs(final_obs)
        native, native_mask = info.get("episode"), info.get("_episode")
        if native is not None and native_mask is not None and np.asarray(native_mask)[ids].all():
            r, lengths, t = (np.asarray(to_numpy(native[k]))[ids] for k in ("r", "l", "t"))
            success = np.asarray(to_numpy(native["success"]), bool)[ids] if "success" in native else None
        else:
            r, lengths = self._returns[ids], self._lengths[ids]
            t = np.full(ids.size, round(time.perf_counter() - self._t0, 6))
            success = None
        if success is None and self._success_key is not None:
            success = self._success[ids]
        time_limit = trunc[ids] & ~term[ids]
        for k, i in enumerate(ids.tolist()):
            row = infos[i]
            row["terminal_observation"] = _row(final_obs, i)
            row["TimeLimit.truncated"] = bool(time_limit[k])
            row["episode"] = {"r": float(r[k]), "l": int(lengths[k]), "t": float(t[k])}
            if success is not None:
                row["is_success"] = bool(success[k])
        self._returns[ids] = 0.0
        self._lengths[ids] = 0
        self._success[ids] = False

    def _obs(self, obs: Any) -> Any:
        obs = to_numpy(obs)
        space = self.observation_space
        if isinstance(space, gym.spaces.Dict):
            return {k: np.asarray(obs[k], dtype=s.dtype) for k, s in space.spaces.items()}
        return np.asarray(obs, dtype=space.dtype)

    # ---- seeding ---------------------------------------------------------------------------
    def seed(self, seed: int | None = None) -> list[int | None]:
        """Use `seed` at the next reset (None: do not reseed); returns ``[seed] * num_envs``."""
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0):
            raise ConfigError(f"seed must be None or a non-negative int, got {seed!r}")
        self._next_seed = None if seed is None else int(seed)
        return [self._next_seed] * self.num_envs

    # ---- attributes and methods ------------------------------------------------------------
    def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
        """The batch attribute `attr_name` (first wrapper of the chain that has it), once per index."""
        value = getattr(self._owner(attr_name), attr_name)
        return [value for _ in self._indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        """Set `attr_name` on the wrapper that has it (else the outermost env), for the whole batch."""
        self._whole_batch(indices, f"set_attr({attr_name!r})")
        try:
            owner = self._owner(attr_name)
        except AttributeError:
            owner = self.env
        setattr(owner, attr_name, value)

    def env_method(self, method_name: str, *method_args: Any, indices: Any = None, **method_kwargs: Any) -> list[Any]:
        """Call the batch method once; its result is repeated once per env."""
        self._whole_batch(indices, f"env_method({method_name!r})")
        result = getattr(self._owner(method_name), method_name)(*method_args, **method_kwargs)
        return [result] * self.num_envs

    def env_is_wrapped(self, wrapper_class: type, indices: Any = None) -> list[bool]:
        """True for SB3's Monitor (the adapter writes its info keys) or a wrapper in the chain."""
        wrapped = wrapper_class is Monitor or any(isinstance(e, wrapper_class) for e in self._chain())
        return [wrapped for _ in self._indices(indices)]

    def get_images(self) -> Sequence[np.ndarray]:
        """The env's ``render()``: a lazy sequence of num_envs (H, W, 3) uint8 frames."""
        return self.env.render()

    def close(self) -> None:
        self.env.close()

    # ---- helpers ---------------------------------------------------------------------------
    def _chain(self) -> list[Any]:
        """The Gymnasium wrapper chain, outermost first, ending with the unwrapped env."""
        chain, env = [self.env], self.env
        while hasattr(env, "env") and isinstance(env.env, VectorEnv):
            env = env.env
            chain.append(env)
        return chain

    def _owner(self, name: str) -> Any:
        for env in self._chain():
            if hasattr(env, name):
                return env
        raise AttributeError(f"no env in the wrapper chain {[type(e).__name__ for e in self._chain()]} has {name!r}")

    def _indices(self, indices: Any) -> list[int]:
        if indices is None:
            return list(range(self.num_envs))
        ids = [indices] if isinstance(indices, (int, np.integer)) else list(indices)
        bad = [i for i in ids if not isinstance(i, (int, np.integer)) or not 0 <= i < self.num_envs]
        if bad:
            raise ConfigError(f"env indices {bad[:8]} are out of range; allowed ints in [0, {self.num_envs})")
        return [int(i) for i in ids]

    def _whole_batch(self, indices: Any, what: str) -> None:
        if indices is not None and sorted(set(self._indices(indices))) != list(range(self.num_envs)):
            raise ConfigError(
                f"{what} acts on all {self.num_envs} envs at once (an mjvec env is one batched object); "
                "pass indices=None"
            )


def _sb3_space(space: gym.Space) -> gym.Space:
    """`space` with float Box spaces (also inside a Dict) made float32, as SB3's buffers expect."""
    if isinstance(space, gym.spaces.Dict):
        return gym.spaces.Dict({k: _sb3_space(s) for k, s in space.spaces.items()})
    if isinstance(space, gym.spaces.Box) and np.issubdtype(space.dtype, np.floating) and space.dtype != np.float32:
        return gym.spaces.Box(space.low.astype(np.float32), space.high.astype(np.float32), space.shape, np.float32)
    return space


def _row(value: Any, i: int) -> Any:
    """Row i of an (N, ...) array, or of every array of a (nested) dict."""
    if isinstance(value, Mapping):
        return {k: _row(v, i) for k, v in value.items() if not str(k).startswith("_")}
    return np.asarray(to_numpy(value))[i]


def _masked(info: Mapping[str, Any], key: str) -> np.ndarray:
    value = np.asarray(to_numpy(info[key]), bool)
    mask = info.get(f"_{key}")
    return value if mask is None else value & np.asarray(mask, bool)


def _copy_rows(info: Mapping[str, Any], keys: Iterable[str], infos: list[dict[str, Any]]) -> None:
    """infos[i][key] = row i of info[key] where the ``"_key"`` mask is True (all rows if no mask)."""
    n = len(infos)
    for key in keys:
        if str(key).startswith("_") or key not in info:
            continue
        mask = info.get(f"_{key}")
        rows = range(n) if mask is None else np.flatnonzero(mask).tolist()
        for i in rows:
            infos[i][key] = _row(info[key], i)
