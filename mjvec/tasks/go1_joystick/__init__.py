"""MuJoCo Playground's Go1JoystickFlatTerrain and Go1JoystickRoughTerrain as
``playground/Go1JoystickFlatTerrain-v0`` and ``playground/Go1JoystickRoughTerrain-v0`` (the same
task on Playground's plane or its heightfield; `scene.TERRAINS`).

    import gymnasium as gym
    import mjvec  # registers it (its scene needs the playground extra: pip install -e ".[playground]" in the checkout)

    env = gym.make_vec("playground/Go1JoystickFlatTerrain-v0", num_envs=1024, obs_mode="asymmetric")
    obs, info = env.reset(seed=0)

Modules: `config` (Playground's constants), `scene` (its XML and model edits), `indices`,
`observations` (the policy and privileged states), `terms` (rewards, termination), `env`
(`Go1JoystickEnv`), `presets` ("paper": Playground's randomize.py), `registration`; `agents/` holds
the trainer configs (Playground's PPO settings). The shared terms are `mjvec.tasks.locomotion`'s.
"""

from mjvec.tasks.go1_joystick.config import Go1JoystickConfig, NoiseScales, RewardScales
from mjvec.tasks.go1_joystick.env import Go1JoystickEnv
from mjvec.tasks.go1_joystick.registration import ENV_ID, ENV_IDS, ROUGH_ENV_ID, Go1JoystickOptions, register_envs

__all__ = ["ENV_ID", "ENV_IDS", "ROUGH_ENV_ID", "Go1JoystickConfig", "Go1JoystickEnv", "Go1JoystickOptions",
           "NoiseScales", "RewardScales", "register_envs"]
