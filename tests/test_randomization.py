"""Model-field DR vs independent oracles: each env's own variant compiled alone, edited directly,
mj_setConst, stepped with plain mujoco; unwrapped runs for the untouched / zero-width cases."""

from __future__ import annotations

import re

import gymnasium as gym
import mujoco
import numpy as np
import pytest

import mjvec
from mjvec.errors import CapabilityError, ConfigError
from mjvec.randomization import DomainRandomization, EventTerm
from tests.arm_env import ArmEnv, actions
from tests.scenes import make_scene

TERMS = (
    EventTerm("body_mass", 0.5, 1.5, targets=("obj",)),
    EventTerm("geom_friction", 0.3, 1.2, targets=("handle", "head")),
    EventTerm("dof_damping", 0.5, 2.0, targets=("j.",)),
    EventTerm("dof_armature", 0.0, 0.05, targets=("j1", "j2"), operation="add"),
    EventTerm("actuator_kp", 0.5, 2.0, targets=("a_j1", "a_j2")),
    EventTerm("actuator_kd", 0.5, 2.0, targets=("a_j.*",)),
    EventTerm("gravity", -0.5, 0.5, operation="add"),
)


def _ids(m: mujoco.MjModel, obj: mujoco.mjtObj, *names: str) -> list[int]:
    return [mujoco.mj_name2id(m, obj, n) for n in names]


def _oracle_model(variant: int, draws: dict[str, np.ndarray], i: int) -> mujoco.MjModel:
    """Env i's variant compiled alone and edited directly from its draws, then mj_setConst."""
    m = make_scene(variant).compile()
    d = mujoco.MjData(m)
    (obj,) = _ids(m, mujoco.mjtObj.mjOBJ_BODY, "obj")
    ratio = draws["body_mass"][i, 0]
    m.body_mass[obj] *= ratio
    m.body_inertia[obj] *= ratio
    geoms = [g for g in _ids(m, mujoco.mjtObj.mjOBJ_GEOM, "handle", "head") if g >= 0]
    # dr_params columns follow the canonical geom order; a box-only tool has no head slot.
    for k, g in enumerate(geoms):
        m.geom_friction[g, 0] *= draws["geom_friction"][i, k, 0]
    m.dof_damping[:2] *= draws["dof_damping"][i]
    m.dof_armature[:2] += draws["dof_armature"][i]
    kp = m.actuator_gainprm[:2, 0] * draws["actuator_kp"][i, :, 0]
    m.actuator_gainprm[:2, 0] = kp
    m.actuator_biasprm[:2, 1] = -kp
    m.actuator_biasprm[:2, 2] *= draws["actuator_kd"][i, :, 0]
    m.opt.gravity[:] += draws["gravity"][i]
    mujoco.mj_setConst(m, d)
    return m


def test_writes_equal_direct_edit_and_trajectories_equal_models_stepped_alone() -> None:
    env = DomainRandomization(ArmEnv(6), TERMS)
    env.reset(seed=3)
    be = env.unwrapped.backend
    for i, v in enumerate(be.variant_of_env):
        m = _oracle_model(int(v), env.dr_params, i)
        np.testing.assert_array_equal(be.field_values("body_mass")[i], m.body_mass)
        np.testing.assert_array_equal(be.field_values("actuator_biasprm")[i], m.actuator_biasprm)
    oracles = []
    for i, v in enumerate(be.variant_of_env):
        m = _oracle_model(int(v), env.dr_params, i)
        d = mujoco.MjData(m)
        d.qpos[:], d.qvel[:] = be.qpos[i], be.qvel[i]
        mujoco.mj_forward(m, d)
        oracles.append((m, d))
    for t in range(60):
        a = actions(env.unwrapped.global_env_ids, t)
        env.step(a)
        for i, (m, d) in enumerate(oracles):
            d.ctrl[:] = a[i]
            mujoco.mj_step(m, d, 2)
    np.testing.assert_array_equal(be.qpos, np.stack([d.qpos for _, d in oracles]))


def _run(env, steps: int, mask_at: int | None = None) -> np.ndarray:
    env.reset(seed=1)
    out = []
    for t in range(steps):
        if t == mask_at:
            env.reset(options={"reset_mask": np.arange(env.num_envs) == 1})
        out.append(env.step(actions(env.unwrapped.global_env_ids, t))[0])
    return np.stack(out)


def test_partial_reset_randomizes_only_that_env() -> None:
    plain = _run(DomainRandomization(ArmEnv(6), TERMS), 30)
    masked = _run(DomainRandomization(ArmEnv(6), TERMS), 30, mask_at=10)
    others = np.arange(6) != 1
    np.testing.assert_array_equal(masked[:, others], plain[:, others])
    assert not np.array_equal(masked[10:, 1], plain[10:, 1])


def test_zero_width_ranges_are_bit_identical_to_unwrapped() -> None:
    neutral = (
        EventTerm("body_mass", 1.0, 1.0, targets=("obj", "link.")),
        EventTerm("geom_friction", 1.0, 1.0, targets=(".*",)),
        EventTerm("dof_armature", 0.0, 0.0, targets=("j1",), operation="add"),
        EventTerm("actuator_kp", 1.0, 1.0, targets=("a_j1",)),
        EventTerm("gravity", 0.0, 0.0, operation="add"),
    )
    np.testing.assert_array_equal(_run(DomainRandomization(ArmEnv(6), neutral), 40), _run(ArmEnv(6), 40))


def test_same_seed_same_params_across_num_envs_and_threads() -> None:
    a = DomainRandomization(ArmEnv(4, num_threads=1), TERMS)
    b = DomainRandomization(ArmEnv(8, num_threads=2), TERMS)
    a.reset(seed=7)
    b.reset(seed=7)
    for name in a.dr_params:
        np.testing.assert_array_equal(a.dr_params[name], b.dr_params[name][:4])
    c = DomainRandomization(ArmEnv(4, env_id_offset=4), TERMS)
    c.reset(seed=7)
    np.testing.assert_array_equal(c.dr_params["body_mass"], b.dr_params["body_mass"][4:])


def test_scale_and_add_do_not_drift_over_100_resets() -> None:
    env = DomainRandomization(ArmEnv(4), TERMS)
    be = env.unwrapped.backend
    obj = mujoco.mj_name2id(be.model, mujoco.mjtObj.mjOBJ_BODY, "obj")
    default_mass = be.defaults("body_mass")[:, obj].copy()
    default_arm = be.defaults("dof_armature")[:, :2].copy()
    for k in range(100):
        env.reset(seed=k)
        np.testing.assert_array_equal(be.field_values("body_mass")[:, obj],
                                      default_mass * env.dr_params["body_mass"][:, 0])
        np.testing.assert_array_equal(be.field_values("dof_armature")[:, :2],
                                      default_arm + env.dr_params["dof_armature"])


def test_interval_terms_fire_per_env_at_sampled_times_and_startup_once() -> None:
    interval = EventTerm("gravity", -1.0, 1.0, operation="add", mode="interval", interval_s=(0.1, 0.3))
    startup = EventTerm("body_mass", 0.5, 1.5, targets=("obj",), mode="startup")
    env = DomainRandomization(ArmEnv(4), (interval, startup))
    be = env.unwrapped.backend
    env.reset(seed=0)
    first_mass = be.field_values("body_mass").copy()
    dt = env.unwrapped.control_dt
    timers = env._timers[0].copy()
    fired = np.zeros(4, int)
    last = env.dr_params.get("gravity")
    for t in range(60):
        env.step(actions(env.unwrapped.global_env_ids, t))
        timers -= dt
        expect = timers <= 0
        now = env.dr_params["gravity"] if "gravity" in env.dr_params else None
        if now is not None:
            same = (now == last) | (np.isnan(now) & np.isnan(last)) if last is not None else np.isnan(now)
            changed = ~np.all(same, axis=1)
            np.testing.assert_array_equal(changed, expect)
            last = now.copy()
        fired += expect
        timers[expect] = env._timers[0][expect]
    assert (fired >= 60 * dt / 0.3 - 1).all() and (fired <= 60 * dt / 0.1 + 1).all()
    env.reset(seed=1)
    np.testing.assert_array_equal(be.field_values("body_mass"), first_mass)  # startup fired once only


@pytest.mark.parametrize(
    ("make", "error", "match"),
    [
        (lambda: EventTerm("nope", 0, 1, targets=("obj",)), ConfigError, "kind 'nope' is not one of"),
        (lambda: EventTerm("body_mass", 2.0, 1.0, targets=("obj",)), ConfigError, "inverted range"),
        (lambda: EventTerm("body_mass", 0.0, 1.0, targets=("obj",)), ConfigError, "masses must be positive"),
        (lambda: EventTerm("body_mass", 1.0, 0.1, targets=("obj",), distribution="gaussian"), ConfigError,
         "gaussian is unbounded"),
        (lambda: EventTerm("body_mass", 1.0, 2.0), ConfigError, "give targets"),
        (lambda: EventTerm("gravity", 0, 1, targets=("x",)), ConfigError, "gravity has no targets"),
        (lambda: EventTerm("gravity", 0, 1, mode="interval"), ConfigError, "needs interval_s"),
        (lambda: EventTerm("gravity", 0, 1, interval_s=(0.1, 0.2)), ConfigError, "only for mode 'interval'"),
        (lambda: EventTerm("gravity", 0, 1, operation="mul"), ConfigError, "operation 'mul' is not one of"),
        (lambda: EventTerm("body_mass", 0.0, 2.0, targets=("obj",), distribution="log_uniform"), ConfigError,
         "log_uniform needs low > 0"),
    ],
)
def test_term_config_errors(make, error, match) -> None:
    with pytest.raises(error, match=match):
        term = make()
        DomainRandomization(ArmEnv(2), (term,))


def test_wrapper_validation_errors() -> None:
    with pytest.raises(ConfigError, match="target 'nobody' matches no body; body names are"):
        DomainRandomization(ArmEnv(2), (EventTerm("body_mass", 0.5, 1.5, targets=("nobody",)),))
    with pytest.raises(ConfigError, match="term names must be unique"):
        DomainRandomization(ArmEnv(2), (EventTerm("gravity", 0, 1), EventTerm("gravity", 0, 1)))
    with pytest.raises(ConfigError, match="not a valid regex"):
        DomainRandomization(ArmEnv(2), (EventTerm("body_mass", 0.5, 1.5, targets=("(",)),))
    with pytest.raises(ConfigError, match="can make a mass <= 0"):
        DomainRandomization(ArmEnv(2), (EventTerm("body_mass", -100.0, 1.0, targets=("obj",), operation="add"),))


def test_undeclared_field_fails_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    env = ArmEnv(2)
    caps = env.backend.capabilities
    fields = {k: v for k, v in caps.fields.items() if k != "dof_damping"}
    monkeypatch.setattr(env.backend, "_capabilities", type(caps)(caps.backend, fields, caps.array_namespace,
                                                                 caps.device, caps.exact_variants))
    with pytest.raises(CapabilityError, match="'dof_damping' is not writable on the 'cpu' backend"):
        DomainRandomization(env, (EventTerm("dof_damping", 0.5, 1.5, targets=("j1",)),))


# ---- construction-time refusals of terms that could only fail later -----------------------------------
@pytest.mark.parametrize("targets", [(".*",), ("goal",)])
def test_mass_term_on_massless_bodies_is_refused_at_construction(targets) -> None:
    import gymnasium as gym

    import mjvec

    term = EventTerm("body_mass", 0.5, 2.0, targets=targets, name="masses")
    massless = r"\{camera_mount, goal, world\}" if targets == (".*",) else r"\{goal\}"
    with pytest.raises(ConfigError, match=rf"term 'masses' \(body_mass\): targets {re.escape(repr(targets))} match "
                                          rf"massless bodies {massless}.*Fix: target only bodies with mass; bodies "
                                          r"with mass in every env are \{.*iiwa14_link_0"):
        gym.make_vec(mjvec.ENV_ID, num_envs=2, num_tools=6, num_threads=1, randomization=[term])


def test_mass_term_on_bodies_with_mass_resets_with_finite_inertia() -> None:
    """The positive side of the refusal: the bodies the error suggests are accepted, and every reset
    writes finite masses and inertias equal to the defaults times the drawn factor (hand computation)."""
    env = ArmEnv(3)
    wrapped = DomainRandomization(env, (EventTerm("body_mass", 0.5, 2.0, targets=("link1", "link2", "obj")),))
    wrapped.reset(seed=1)
    ids = [env.backend.model.body(n).id for n in ("link1", "link2", "obj")]
    factor = wrapped.dr_params["body_mass"]
    np.testing.assert_allclose(env.backend.field_values("body_mass")[:, ids],
                               env.backend.defaults("body_mass")[:, ids] * factor, rtol=1e-12)
    inertia = env.backend.field_values("body_inertia")[:, ids]
    assert np.isfinite(inertia).all()
    np.testing.assert_allclose(inertia, env.backend.defaults("body_inertia")[:, ids] * factor[..., None], rtol=1e-12)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"mode": "interval", "interval_s": (1.0, 2.0, 3.0)},
         r"term 'body_mass': interval_s must be a pair \(min, max\) of finite seconds .*got \(1.0, 2.0, 3.0\)"),
        ({"mode": "interval", "interval_s": ("a", "b")},
         r"term 'body_mass': interval_s\[0\] must be a real number \(int or float\), got str 'a'"),
        ({"mode": "interval", "interval_s": (2.0, 1.0)}, r"interval_s must be a pair .*0 < min <= max"),
        ({"targets": "object"}, r"targets must be a tuple of names or regex patterns, got the str 'object'.*"
                                r"write targets=\('object',\)"),
        ({"targets": ("obj", 3)}, r"every target must be a non-empty str \(a name or regex\), got \[3\]"),
        ({"targets": 5}, r"targets must be a tuple of names or regex patterns, got int 5"),
        ({"low": "0.5"}, r"term 'body_mass': low must be a real number \(int or float\), got str '0.5'"),
        ({"low": None}, r"term 'body_mass': low must be a real number \(int or float\), got NoneType None"),
        ({"high": True}, r"high must be a real number \(int or float\), got bool True"),
        ({"kind": ["body_mass"]}, r"kind \['body_mass'\] is not one of \{actuator_kd"),
        ({"recompute_inertia": "yes"}, r"recompute_inertia must be True or False, got 'yes'"),
        ({"name": 3}, r"EventTerm name must be a str, got int 3"),
    ],
)
def test_term_argument_types_are_checked_at_construction(kwargs, match) -> None:
    args = {"kind": "body_mass", "low": 0.5, "high": 2.0, "targets": ("obj",), **kwargs}
    with pytest.raises(ConfigError, match=match):
        EventTerm(**args)


@pytest.mark.parametrize(
    ("randomization", "match"),
    [
        (5, r"randomization must be None, one of the task's presets or a sequence of EventTerm; got int 5"),
        (EventTerm("gravity", 0, 1), r"got EventTerm .*wrap a single term in a list: randomization=\[term\]"),
        ({EventTerm("gravity", 0, 1)}, r"or a sequence of EventTerm; got set"),
        ([EventTerm("gravity", 0, 1), "paper"], r"entries \['1: str'\] are not EventTerm"),
    ],
)
def test_randomization_option_types_are_checked(randomization, match) -> None:
    import gymnasium as gym

    import mjvec

    with pytest.raises(ConfigError, match=match):
        gym.make_vec(mjvec.ENV_ID, num_envs=1, num_tools=6, randomization=randomization)


def test_dr_params_exist_before_the_first_reset_as_nan_and_fill_per_env() -> None:
    terms = [EventTerm("body_mass", 0.5, 1.5, targets=("object",)),
             EventTerm("geom_friction", 0.7, 1.3, targets=("object_.*",)),
             EventTerm("gravity", -0.3, 0.3, operation="add")]
    env = gym.make_vec(mjvec.ENV_ID, num_envs=3, num_tools=3, randomization=terms)
    before = {name: value.copy() for name, value in env.dr_params.items()}
    assert sorted(before) == ["body_mass", "geom_friction", "gravity"]
    assert all(np.isnan(v).all() for v in before.values())
    env.reset(seed=0)
    for name, value in env.dr_params.items():
        assert value.shape == before[name].shape and np.isfinite(value).all(), name
