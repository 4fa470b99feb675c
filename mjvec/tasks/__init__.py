"""The tasks, one package each: `simtoolreal` (SimToolReal-v0), `cube_rotate` (CubeRotate-v0) and
`gym_mujoco` (Gymnasium's MuJoCo locomotion suite as mjvec/Ant-v5, ...).

A task's package holds all of it: the env (an `mjvec.envs.base.MjVecEnv`), its observations and
reward terms, its config, presets and registration (`mjvec.envs.tasks.register_task`), and its scene
builder; `mjvec.assets` holds what tasks share (the robot, the hand and the catalogs). ``import mjvec``
registers every task here.
"""
