"""Run an exported policy on plain MuJoCo with `mjvec.deploy`: the template for a robot's control loop.

    python -m mjvec eval --checkpoint out/ppo_cube/checkpoint.pt --export out/ppo_cube/policy
    python examples/deploy_mujoco.py --policy out/ppo_cube/policy.onnx --check

The loop itself (`mjvec.deploy.Deployment`) uses only the contract (embedded in the ONNX file, and
beside it as ``policy.contract.json``), a ``mujoco.MjModel`` + ``MjData`` and onnxruntime. What it
needs from elsewhere: the model the policy was trained on (``--model`` an MJB or MJCF file; without
it, the contract's variant is compiled through mjvec's task registry), a start state and the
commands (a goal, an object's size: on a robot, the task; here, by default, those of the env
reset with ``--seed``). ``--check`` also steps that env beside the loop and reports the largest
observation difference (0: bit for bit); ``--perception`` adds the contract's train-time noise and
delays. Prints one line per ``--print-every`` steps, then a summary.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

import mujoco
import numpy as np

from mjvec.deploy import Deployment, OnnxPolicy, load_contract


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--policy", required=True, help="the exported .onnx policy")
    p.add_argument("--contract", default=None, help="its .contract.json (default: the one the .onnx carries)")
    p.add_argument("--model", default=None, help="the MJB or MJCF file of the trained model (default: the registry's)")
    p.add_argument("--steps", type=int, default=200, help="control steps")
    p.add_argument("--seed", type=int, default=0, help="reset seed of the env the start state comes from")
    p.add_argument("--command", action="append", default=[], metavar="NAME=V1,V2,...",
                   help="a command's values (repeatable); with --model, every command the contract lists")
    p.add_argument("--perception", action="store_true", help="the contract's train-time noise and delays")
    p.add_argument("--check", action="store_true", help="step the env beside the loop and compare observations")
    p.add_argument("--print-every", type=int, default=50, help="a progress line every N steps")
    return p.parse_args()


def registry_env(contract: dict):
    """A one-env instance of the contract's env (its options that JSON keeps as they are), autoreset off."""
    import gymnasium as gym

    import mjvec  # noqa: F401  (registers the tasks)

    plain = {k: v for k, v in contract["options"].items() if v is None or isinstance(v, (bool, int, float, str))}
    return gym.make_vec(contract["task"]["env_id"], num_envs=1, autoreset_mode="disabled", **plain)


def load_model(path: Path) -> mujoco.MjModel:
    return mujoco.MjModel.from_binary_path(str(path)) if path.suffix == ".mjb" else mujoco.MjModel.from_xml_path(
        str(path))


def policy_obs(obs):
    return obs["policy"] if isinstance(obs, dict) else obs


def main() -> None:
    args = parse_args()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    contract = load_contract(args.contract or args.policy)
    commands = {name: np.array([float(v) for v in values.split(",")])
                for name, values in (c.split("=", 1) for c in args.command)}
    env = registry_env(contract) if args.model is None or args.check else None
    if env is None:  # a model of your own: start at its qpos0, at rest
        model = load_model(Path(args.model))
        qpos, qvel = model.qpos0.copy(), np.zeros(model.nv)
    else:  # the start state and the commands of the env reset with --seed
        base = env.unwrapped
        model = load_model(Path(args.model)) if args.model else base.backend.scene.make_variant(
            contract["model"]["variant"]).compile()
        obs_env, _ = env.reset(seed=args.seed)
        qpos, qvel = base.backend.qpos[0].copy(), base.backend.qvel[0].copy()
        commands = {**{k: v[0] for k, v in base.command_values().items()}, **commands}
    loop = Deployment(contract, model, OnnxPolicy(args.policy), perception=args.perception, seed=args.seed)
    obs = loop.reset(qpos, qvel, commands)
    worst = 0.0
    for t in range(1, args.steps + 1):
        action = loop.policy(obs)
        loop.apply(action)  # the action into ctrl, then the physics
        new_segment = False
        if args.check:  # the env steps its own copy; the commands it holds after the step drive the loop
            obs_env, _, terminated, truncated, info = env.step(loop.policy(policy_obs(obs_env)[0])[None])
            commands = {k: v[0] for k, v in env.unwrapped.command_values().items()}
            new_segment = bool(np.asarray(info.get("success", [False]))[0])  # a goal reached: a new segment
        obs = loop.observe(commands, new_segment)
        if args.check:
            worst = max(worst, float(np.abs(policy_obs(obs_env)[0].astype(np.float64) - obs).max()))
            if terminated[0] or truncated[0]:
                print(f"step {t}: the env's episode ended")
                break
        if t % args.print_every == 0:
            print(f"step {t}: |action| max {np.abs(action).max():.3f}, ctrl[:3] {np.round(loop.data.ctrl[:3], 4)}")
    print(f"{t} steps of {contract['task']['env_id']} on plain MuJoCo (control dt "
          f"{contract['timing']['control_dt']:.4g} s, {loop.substeps} substeps), model "
          f"{'as hashed' if loop.same_model else 'not the hashed one'}"
          + (f"; largest observation difference to the env: {worst:.3g}" if args.check else ""))
    if env is not None:
        env.close()


if __name__ == "__main__":
    main()
