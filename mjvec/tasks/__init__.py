"""mjvec's tasks, one package per task (`gym_mujoco/`: Gymnasium's MuJoCo locomotion suite).

Each package holds its task whole (scene, options, terms, env, presets, registration) and registers
through the public task API (`mjvec.envs.tasks.register_task`).
"""
