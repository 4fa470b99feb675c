"""MuJoCo Playground's PandaPickCube as ``playground/PandaPickCube-v0``: a Franka Panda picks up a
cube and brings it to a sampled target position; ``playground/PandaPickCubeOrientation-v0``
(Playground's PandaPickCubeOrientation) also samples the target's orientation.

    import gymnasium as gym
    import mjvec  # registers it (its scene needs the playground extra: pip install -e ".[playground]" in the checkout)

    env = gym.make_vec("playground/PandaPickCube-v0", num_envs=1024)
    obs, info = env.reset(seed=0)

Modules: `config` (Playground's constants), `scene` (its XML and model edit), `indices`, `terms`
(observation, rewards, termination), `env` (`PandaPickCubeEnv`), `registration`; `agents/` holds
the trainer configs (Playground's PPO settings). No presets and no privileged state: Playground has
neither for this task (docs/panda_pick_cube.md).
"""

from mjvec.tasks.panda_pick_cube.config import PandaPickCubeConfig, RewardScales
from mjvec.tasks.panda_pick_cube.env import PandaPickCubeEnv
from mjvec.tasks.panda_pick_cube.registration import ENV_ID, ORIENTATION_ENV_ID, PandaPickCubeOptions, register_envs

__all__ = ["ENV_ID", "ORIENTATION_ENV_ID", "PandaPickCubeConfig", "PandaPickCubeEnv", "PandaPickCubeOptions",
           "RewardScales", "register_envs"]
