"""MuJoCo Playground's LeapCubeReorient as ``playground/LeapCubeReorient-v0``: a LEAP hand turns a
cube to goal orientations that move on after each success (Playground's task, not mjvec's own
CubeRotate-v0).

    import gymnasium as gym
    import mjvec  # registers it (its scene needs the playground extra: pip install -e ".[playground]" in the checkout)

    env = gym.make_vec("playground/LeapCubeReorient-v0", num_envs=1024, obs_mode="asymmetric")
    obs, info = env.reset(seed=0)

Modules: `config` (Playground's constants), `scene` (its XML and model edits), `terms` (model ids,
orientation error, rewards, termination, the goal's spin), `observations` (the policy and
privileged states), `env` (`LeapCubeReorientEnv`), `presets` ("paper": Playground's
``domain_randomize``), `registration`; `agents/` holds the trainer configs (Playground's PPO
settings).
"""

from mjvec.tasks.leap_cube_reorient.config import LeapCubeReorientConfig, LeapNoiseScales, LeapRewardScales
from mjvec.tasks.leap_cube_reorient.env import LeapCubeReorientEnv
from mjvec.tasks.leap_cube_reorient.registration import ENV_ID, LeapCubeReorientOptions, register_envs

__all__ = ["ENV_ID", "LeapCubeReorientConfig", "LeapCubeReorientEnv", "LeapCubeReorientOptions", "LeapNoiseScales",
           "LeapRewardScales", "register_envs"]
