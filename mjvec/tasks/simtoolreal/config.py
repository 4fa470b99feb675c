"""Task constants of SimToolReal-v0 (reference/simtoolreal.md §1 and §3), as one frozen config.

Every weight, threshold and range the task uses lives here, so a variant of the task is a
`dataclasses.replace(SimToolRealConfig(), ...)` rather than an edit. Values are validated in
`__post_init__`; a bad value raises `ConfigError` naming the field, the value and what is allowed.
Lengths are metres, angles radians, times control steps unless a name says otherwise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

from mjvec.errors import ConfigError

Vec3 = tuple[float, float, float]
# Every 3-vector field is a length or position in metres. The scene spans about 2 m, so anything
# farther than this is a typo, and squared distances of absurd values overflow to inf rewards.
MAX_LENGTH_M = 10.0


def _vec3(name: str, value: object) -> Vec3:
    try:
        if isinstance(value, (str, bytes)):
            raise TypeError("a string is not 3 numbers")
        out = tuple(float(v) for v in value)  # type: ignore[union-attr]
    except (TypeError, ValueError) as error:
        raise ConfigError(f"SimToolRealConfig.{name} must be 3 finite floats, got {value!r}") from error
    if len(out) != 3 or not all(math.isfinite(v) for v in out):
        raise ConfigError(f"SimToolRealConfig.{name} must be 3 finite floats, got {value!r}")
    if any(abs(v) > MAX_LENGTH_M for v in out):
        raise ConfigError(
            f"SimToolRealConfig.{name} must be within {MAX_LENGTH_M:g} metres from the origin per axis (the "
            f"scene spans about 2 m), got {value!r}"
        )
    return out  # type: ignore[return-value]


@dataclass(frozen=True)
class SimToolRealConfig:
    """Constants of the SimToolReal task. Defaults are the paper's training setting.

    Action pipeline (§1): the arm integrates `dof_speed_scale * control_dt * a` onto the previous
    target; the hand maps `a` absolutely onto the joint range; both are smoothed by an EMA whose
    weight on the new target is `arm_moving_average` / `hand_moving_average`.

    Reward (§3): approach `approach_weight`, lift `lift_weight` (+ `lift_bonus` once), keypoint
    progress `keypoint_weight`, success `success_bonus`, joint-speed L1 penalties. `lift_offset`,
    `lift_clip` and `lift_threshold` define z_lift = z - z_spawn + lift_offset.

    Goals: the first goal of an episode is uniform in [`goal_low`, `goal_high`], its height then
    raised to at least the spawn height plus `goal_min_height_above_spawn`; None (the default)
    derives that from the lift rule as the source does (spawn - `lift_offset` + `lift_threshold`:
    the height at which the tool counts as lifted), see `goal_floor_above_spawn`. Later goals
    move by U(+-`goal_delta_pos`) per axis and turn by U(+-`goal_delta_angle`).

    Success: the max fixed-size keypoint distance <= tolerance * `keypoint_scale` for
    `success_steps` consecutive control steps. Tolerance curriculum: starts at
    `tolerance_start`; once `curriculum_interval` control steps have passed since the last
    tightening, it is multiplied by `tolerance_decay` (never below `tolerance_min`) at the first
    step where the mean over envs of each env's latest recorded success count is at least
    `curriculum_min_successes`. A count is recorded at every reset of the env, as in the source
    (the episode that ended, or was cut short by a reset; 0 before the env's first one): see
    `mjvec.tasks.simtoolreal.curriculum.ToleranceCurriculum`.

    Episode: truncated after `max_episode_steps` control steps without a success (the step
    counter restarts at every success). The source's episodeLength is one more than this: its
    counter reaches episodeLength - 1 at its last step, so its episodes last as long as these.
    """

    # Timing.
    frame_skip: int = 2
    max_episode_steps: int = 599
    # Action pipeline.
    dof_speed_scale: float = 1.5
    arm_moving_average: float = 0.1
    hand_moving_average: float = 0.1
    # Observations.
    obs_clip: float = 10.0
    object_base_size: float = 0.04
    keypoint_scale: float = 1.5
    fixed_keypoint_size: Vec3 = (0.141, 0.03025, 0.0271)
    # Reward weights and shaping.
    approach_weight: float = 50.0
    approach_clip: float = 10.0
    lift_weight: float = 20.0
    lift_offset: float = 0.05
    lift_clip: float = 0.5
    lift_threshold: float = 0.15
    lift_bonus: float = 300.0
    keypoint_weight: float = 200.0
    keypoint_clip: float = 100.0
    success_bonus: float = 1000.0
    arm_speed_penalty: float = 0.03
    hand_speed_penalty: float = 0.003
    # Success and episode.
    success_steps: int = 10
    max_consecutive_successes: int = 50
    fall_z: float = 0.1
    fingertip_max_dist: float = 1.5
    # Tolerance curriculum.
    tolerance_start: float = 0.075
    tolerance_decay: float = 0.9
    tolerance_min: float = 0.01
    curriculum_interval: int = 3000
    curriculum_min_successes: float = 3.0
    # Goals.
    goal_low: Vec3 = (-0.35, -0.2, 0.6)
    goal_high: Vec3 = (0.35, 0.2, 0.95)
    goal_min_height_above_spawn: float | None = None
    goal_delta_pos: float = 0.1
    goal_delta_angle: float = math.pi / 2
    # Reset.
    spawn_pos_noise: Vec3 = (0.1, 0.1, 0.02)
    joint_pos_noise: float = 0.1
    joint_vel_noise: float = 0.5

    def __post_init__(self) -> None:
        for name in ("fixed_keypoint_size", "goal_low", "goal_high", "spawn_pos_noise"):
            object.__setattr__(self, name, _vec3(name, getattr(self, name)))
        ints = {"frame_skip": 1, "max_episode_steps": 1, "success_steps": 1,
                "max_consecutive_successes": 1, "curriculum_interval": 1}
        for name, low in ints.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ConfigError(f"SimToolRealConfig.{name} must be an int >= {low}, got {value!r}")
        for f in fields(self):
            if f.name in ints:
                continue
            value = getattr(self, f.name)
            if isinstance(value, tuple) or (value is None and f.name == "goal_min_height_above_spawn"):
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ConfigError(f"SimToolRealConfig.{f.name} must be a finite float, got {value!r}")
            object.__setattr__(self, f.name, float(value))
            if value < 0:
                raise ConfigError(f"SimToolRealConfig.{f.name} must be >= 0, got {value!r}")
        self._check_ranges()

    @property
    def goal_floor_above_spawn(self) -> float:
        """How far above the spawn height first goals are raised to: `goal_min_height_above_spawn`,
        or where it is None the source's ``-liftingBonusOffset + liftingBonusThreshold`` (first
        goals start where the tool counts as lifted)."""
        if self.goal_min_height_above_spawn is not None:
            return self.goal_min_height_above_spawn
        return -self.lift_offset + self.lift_threshold

    def _check_ranges(self) -> None:
        for name in ("arm_moving_average", "hand_moving_average", "tolerance_decay"):
            value = getattr(self, name)
            if not 0.0 < value <= 1.0:
                raise ConfigError(f"SimToolRealConfig.{name} must be in (0, 1], got {value!r}")
        for name in ("obs_clip", "object_base_size", "keypoint_scale", "tolerance_min", "fingertip_max_dist"):
            if getattr(self, name) <= 0.0:
                raise ConfigError(f"SimToolRealConfig.{name} must be > 0, got {getattr(self, name)!r}")
        if any(v <= 0 for v in self.fixed_keypoint_size):
            raise ConfigError(f"SimToolRealConfig.fixed_keypoint_size must be > 0, got {self.fixed_keypoint_size}")
        if not self.tolerance_min <= self.tolerance_start:
            raise ConfigError(
                f"SimToolRealConfig.tolerance_min ({self.tolerance_min}) must be <= tolerance_start "
                f"({self.tolerance_start})"
            )
        if any(lo >= hi for lo, hi in zip(self.goal_low, self.goal_high, strict=True)):
            raise ConfigError(
                f"SimToolRealConfig.goal_low {self.goal_low} must be < goal_high {self.goal_high} per axis"
            )
        if any(v < 0 for v in self.spawn_pos_noise):
            raise ConfigError(f"SimToolRealConfig.spawn_pos_noise must be >= 0, got {self.spawn_pos_noise}")
        if self.goal_delta_angle > math.pi:
            raise ConfigError(f"SimToolRealConfig.goal_delta_angle must be <= pi, got {self.goal_delta_angle}")
