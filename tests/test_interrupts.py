"""Ctrl-C and a second thread never brick an env or change it behind a refusal.

- A KeyboardInterrupt injected before every bytecode the concurrency guard runs (a trace function
  with opcode events on the guard module's frames) leaves the env usable: the next call is never
  refused as concurrent, and after at most the named recovery (a full reset) the env steps exactly
  like a twin that was never interrupted.
- An interrupt inside a step's body leaves its state unknown: the next step says so and names the
  recovery; an interrupted close() is finished by calling close() again.
- A close() refused because a step runs in another thread releases nothing: the paper-preset env
  keeps every hook and steps on exactly like a twin that was never asked to close.

Oracles: a twin env driven the same way without interrupts, and the env's own hook counts.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import gymnasium as gym
import numpy as np
import pytest

import mjvec
from mjvec.envs import guard
from mjvec.errors import ClosedError, ConcurrentUseError, ResetNeededError
from tests.interleave import opcodes_of
from tests.toy_env import ToyPendulumEnv, policy

_GUARD_FILE = guard.__file__


def _interrupt_at(k: int, call: Callable[[], object]) -> bool:
    """Run `call`, raising KeyboardInterrupt before the k-th bytecode (1-based) executed in the guard
    module's frames; True if the interrupt was raised (False: the call ran fewer bytecodes there)."""
    seen = [0]

    def count() -> None:
        seen[0] += 1
        if seen[0] == k:
            raise KeyboardInterrupt

    try:
        with opcodes_of(_GUARD_FILE, count):
            call()
    except KeyboardInterrupt:
        return True
    return False


def _assert_usable(env: ToyPendulumEnv, twin: ToyPendulumEnv, t: int) -> None:
    """The next step is never refused as concurrent; after at most the named recovery (a full reset)
    the env steps exactly like the twin."""
    action = policy(env.global_env_ids, t)
    try:
        env.step(action)
    except ResetNeededError as error:
        assert "was interrupted (KeyboardInterrupt)" in str(error) and "call reset()" in str(error)
    for e in (env, twin):
        e.reset(seed=t)
    got, want = env.step(action), twin.step(action)
    for a, b in zip(got[:4], want[:4], strict=True):
        np.testing.assert_array_equal(a, b)


def _sweep(env: ToyPendulumEnv, twin: ToyPendulumEnv, call: Callable[[], object],
           before: Callable[[], object] | None = None) -> int:
    """Interrupt `call` before each guard bytecode in turn (after `before`, if given); returns how
    many points were tried."""
    k = 1
    while True:
        if before is not None:
            before()
        if not _interrupt_at(k, call):
            _assert_usable(env, twin, k)
            return k - 1
        _assert_usable(env, twin, k)
        k += 1


def test_an_interrupt_at_any_point_of_the_guard_leaves_the_env_usable():
    env, twin = ToyPendulumEnv(4, max_steps=1000), ToyPendulumEnv(4, max_steps=1000)
    for e in (env, twin):
        e.reset(seed=1)
    action = policy(env.global_env_ids, 0)
    points = {
        "step": _sweep(env, twin, lambda: env.step(action)),
        "reset": _sweep(env, twin, lambda: env.reset(seed=2)),
    }
    assert min(points.values()) > 10, points  # the guard really was traced

    # A claim left behind by an interrupt, then every point of the next call (which takes it over).
    # The claim is dropped in a finally, so only an interrupt there (after the body) leaves one; an
    # earlier point interrupts the body, and the documented recovery (a full reset) comes first.
    def leave_a_stale_claim() -> None:
        k = 1
        while True:
            env.reset(seed=0)
            if _interrupt_at(k, lambda: env.step(action)) and env._guard._claims:
                return
            k += 1

    assert _sweep(env, twin, lambda: env.step(action), before=leave_a_stale_claim) > 10
    env.close()
    twin.close()


def test_an_interrupt_inside_a_step_says_the_state_is_unknown_until_a_full_reset():
    env, twin = ToyPendulumEnv(4, max_steps=1000), ToyPendulumEnv(4, max_steps=1000)
    for e in (env, twin):
        e.reset(seed=3)
    evaluate = env._evaluate

    def interrupted(active):
        raise KeyboardInterrupt  # after the physics step: the envs have stepped, no obs returned

    env._evaluate = interrupted
    action = policy(env.global_env_ids, 0)
    with pytest.raises(KeyboardInterrupt):
        env.step(action)
    env._evaluate = evaluate
    message = r"last step\(\) of this ToyPendulumEnv was interrupted \(KeyboardInterrupt\).*call reset\(\)"
    with pytest.raises(ResetNeededError, match=message):
        env.step(action)
    with pytest.raises(ResetNeededError, match=message):
        env.reset(options={"reset_mask": np.array([True, False, False, False])})
    for e in (env, twin):
        e.reset(seed=4)
    np.testing.assert_array_equal(env.step(action)[0], twin.step(action)[0])
    env.close()
    twin.close()


def test_an_interrupted_close_is_finished_by_closing_again():
    env = ToyPendulumEnv(2)
    env.reset(seed=0)
    backend_close = env.backend.close

    def interrupted() -> None:
        raise KeyboardInterrupt

    env.backend.close = interrupted  # the renderers are freed, the backend not yet
    with pytest.raises(KeyboardInterrupt):
        env.close()
    env.backend.close = backend_close
    with pytest.raises(ClosedError, match=r"close\(\) of this ToyPendulumEnv was interrupted.*call close\(\) again"):
        env.step(policy(env.global_env_ids, 0))
    env.close()
    assert env.closed and env.backend._closed
    with pytest.raises(ClosedError, match="is closed; create a new env"):
        env.step(policy(env.global_env_ids, 0))


def _paper_env() -> gym.vector.VectorEnv:
    return gym.make_vec(mjvec.ENV_ID, num_envs=2, num_tools=2, num_threads=1, randomization="paper")


def test_a_close_refused_during_a_step_releases_no_hook():
    env, twin = _paper_env(), _paper_env()
    base = env.unwrapped
    hooks = base.hook_registrations()
    assert sum(hooks.values()) > 0  # the paper preset registered delays, noise, pushes, DR
    for e in (env, twin):
        e.reset(seed=5)
    rng = np.random.default_rng(0)
    actions = [rng.uniform(-1, 1, env.action_space.shape).astype(np.float32) for _ in range(4)]

    entered, attempted = threading.Event(), threading.Event()
    apply = base._apply_action

    def held_apply(a):
        entered.set()
        assert attempted.wait(30)  # the step goes on only once close() has been refused
        apply(a)

    base._apply_action = held_apply
    result = {}
    worker = threading.Thread(target=lambda: result.setdefault("step", env.step(actions[0])), name="stepper")
    worker.start()
    assert entered.wait(30)
    try:
        refused = r"close\(\) was called while step\(\) is running in thread 'stepper'"
        with pytest.raises(ConcurrentUseError, match=refused):
            env.close()
    finally:
        attempted.set()
        worker.join(30)
    base._apply_action = apply
    assert base.hook_registrations() == hooks and not env.closed
    np.testing.assert_array_equal(result["step"][0], twin.step(actions[0])[0])
    for a in actions[1:]:  # the delays, noise and pushes still act: the obs stay the twin's bit for bit
        got, want = env.step(a), twin.step(a)
        for x, y in zip(got[:4], want[:4], strict=True):
            np.testing.assert_array_equal(x, y)
    env.close()
    assert sum(base.hook_registrations().values()) == 0
    twin.close()


def test_real_ctrl_c_at_random_times_never_leaves_the_env_claimed_for_another_thread():
    """Real interrupts (``_thread.interrupt_main``: what Ctrl-C does) land at random moments of a
    main-thread loop of guarded calls with tiny bodies, so that many land in the guard itself; after
    each, with no call running, a call from another thread is never refused as concurrent (no claim
    was left behind: released with a ``get`` then a ``pop``, 92 of 3,000 such interrupts left one),
    and the env then steps exactly like a twin after the documented full reset."""
    import _thread
    import signal
    import time

    env, twin = ToyPendulumEnv(4, max_steps=1000), ToyPendulumEnv(4, max_steps=1000)
    for e in (env, twin):
        e.reset(seed=0)
    rng = np.random.default_rng(0)
    refused, trials = [], 600

    def noop() -> None:
        pass

    def other_thread(trial: int) -> None:
        try:
            env.run_exclusive("probe", noop)
        except ConcurrentUseError as error:
            refused.append((trial, str(error)))

    def interrupt(delay: float) -> None:
        time.sleep(delay)
        _thread.interrupt_main()

    # A process started in the background by a non-interactive shell inherits SIGINT ignored, and
    # then interrupt_main() does nothing: the test installs Python's own handler for its duration.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        for trial in range(trials):
            timer = threading.Thread(target=interrupt, args=(float(rng.uniform(0, 2e-4)),))
            deadline = time.monotonic() + 30.0
            try:
                timer.start()
                while True:
                    env.run_exclusive("probe", noop)
                    if time.monotonic() > deadline:
                        pytest.fail(f"trial {trial}: the interrupt never arrived")
            except KeyboardInterrupt:
                pass
            timer.join()
            worker = threading.Thread(target=other_thread, args=(trial,))
            worker.start()
            worker.join()
    finally:
        signal.signal(signal.SIGINT, previous)
    assert not refused, (len(refused), refused[:3])
    _assert_usable(env, twin, 0)
    env.close()
    twin.close()
