"""SimToolReal-v0: a KUKA iiwa14 arm with a 22-DoF hand moving one of 600 tools to 6-D goal poses.

- `env`: `SimToolRealEnv`, which holds the task's records and runs the phases, and implements the
  hooks the randomization wrappers act through;
- the records and the pure functions over them: `indices` (model ids and per-env tool arrays,
  the bound views), `state` (per-env task state and its row updates, the reset draws),
  `step_terms` (one step's measurement and terms, rewards, terminations), `observations` (the
  policy and critic blocks); `terms` (keypoints, goals, reward math), `curriculum`, `config`
  (`SimToolRealConfig`);
- `scene`: the scene of one tool (`scene_spec(tool_id)`), the oracle every env is checked against;
- `presets`: `paper`, the authors' randomization; `registration`: the task's options and its
  `register_task` call.
"""
