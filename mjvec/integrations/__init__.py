"""Adapters between mjvec's vector envs and RL libraries, one module per library (imported lazily:
``import mjvec`` imports none of them).

- `sb3`: `SB3VecEnv`, Stable-Baselines3's `VecEnv` over a SAME_STEP env;
- `adapters`: `FlattenInfo` (torchrl) and `TianshouVecEnv` (tianshou);
- `video`: PNG grids and GIFs of rendered frames.
"""
