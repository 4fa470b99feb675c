"""SimToolReal-v0: a KUKA iiwa14 arm with a 22-DoF hand moving one of 600 tools to 6-D goal poses.

- `env`: `SimToolRealEnv`; `observations`, `terms` (keypoints, goals, rewards), `curriculum`,
  `hooks` (what the randomization wrappers act through), `config` (`SimToolRealConfig`);
- `scene`: the scene of one tool (`scene_spec(tool_id)`), the oracle every env is checked against;
- `presets`: `paper`, the authors' randomization; `registration`: the task's options and its
  `register_task` call.
"""
