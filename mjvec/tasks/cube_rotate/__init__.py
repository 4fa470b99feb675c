"""CubeRotate-v0: the 22-DoF hand, palm-up, spins a cube about the world z axis.

- `env`: `CubeRotateEnv`; `terms` (observation and reward terms), `config` (`CubeRotateConfig`);
- `scene`: the scene of one cube of the catalog (`mjvec.tasks.cube_rotate.catalog`);
- `presets`: `paper` (MuJoCo Playground's randomization); `registration`: options and `register_task`.
"""
