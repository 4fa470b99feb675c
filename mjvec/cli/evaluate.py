"""``python -m mjvec eval --checkpoint PATH``: a trained policy on held-out envs (see
`mjvec.integrations.evaluate`), optionally exporting it (``--export PREFIX``: ONNX + TorchScript).

The env id and options default to those the checkpoint records (examples/ppo.py's args, rsl_rl's
``params/agent.json``, an exported file's metadata); ``--option`` overrides them, and another
``--env-id`` than the checkpoint's starts from no options; ``--backend`` and ``--device`` pick the
backend and its device.

Before the first step the policy's contract is compared with the env's
(`mjvec.integrations.contract_check`): a mismatch is refused with one line naming the first
difference unless ``--allow-mismatch``; a policy without a contract runs with a warning.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from mjvec.cli.options import parse_options, resolve_env_id
from mjvec.cli.rollout import check_output_path


def run_eval(args: argparse.Namespace) -> dict[str, Any]:
    """Load, optionally export, evaluate; returns the summary (with ``exported`` paths if any)."""
    from mjvec.integrations.evaluate import evaluate
    from mjvec.integrations.policies import load_policy

    for flag, path in (("--grid", args.grid), ("--gif", args.gif)):
        if path is not None:
            check_output_path(path, flag)
    policy = load_policy(args.checkpoint, args.kind)
    env_id = args.env_id or policy.metadata.get("env_id") or "SimToolReal-v0"
    env_id = resolve_env_id(env_id)
    # The checkpoint's env options belong to its own task: another --env-id starts from none.
    recorded = policy.metadata.get("env_options", {}) if env_id == policy.metadata.get("env_id") else {}
    options = {**recorded, **parse_options(args.option, "eval")}
    for name in ("backend", "device"):
        if getattr(args, name) is not None:
            options[name] = getattr(args, name)
    exported = None
    if args.export:
        exported = _export(policy, args.export, env_id, options)
    summary = evaluate(policy, env_id, num_envs=args.num_envs, env_id_offset=args.env_id_offset, seed=args.seed,
                       options=options, gif=args.gif, grid=args.grid, video_envs=args.grid_envs,
                       video_steps=args.video_steps, render_size=tuple(args.render_size),
                       allow_mismatch=args.allow_mismatch)
    if exported:
        summary["exported"] = exported
    return summary


def _export(policy: Any, prefix: str, env_id: str, options: dict[str, Any]) -> list[str]:
    """Export with the contract of a one-env instance of the env evaluated (its id and options)."""
    import gymnasium as gym

    from mjvec.integrations.export import export_policy

    env = gym.make_vec(env_id, num_envs=1, **options)
    try:
        return [str(p) for p in export_policy(policy, prefix, env=env)] + [str(Path(prefix).with_suffix(
            ".contract.json"))]
    finally:
        env.close()


def format_summary(summary: dict[str, Any], max_variants: int = 24) -> str:
    """The summary as lines for the terminal (per-variant details folded into the failing list)."""
    lines = [f"{summary['env_id']}: {summary['episodes']} held-out episodes (global env ids "
             f"{summary['env_id_offset']}..{summary['env_id_offset'] + summary['num_envs'] - 1}), "
             f"{summary['policy']} policy",
             f"success rate: {summary['success_rate']:.3f} ({summary['success_definition']})",
             f"return: {summary['return_mean']:.4g} +- {summary['return_std']:.4g}",
             f"episode length: {summary['length_mean']:.1f} control steps"]
    for category, row in summary["per_category"].items():
        lines.append(f"  {category}: {row['successes']}/{row['episodes']} succeeded")
    failing = summary["failing_variants"]
    shown = ", ".join(map(str, failing[:max_variants])) + (" ..." if len(failing) > max_variants else "")
    lines.append(f"variants evaluated: {len(summary['per_variant'])}; never succeeded: {len(failing)}"
                 + (f" ({shown})" if failing else ""))
    if summary.get("contract"):
        lines.append(f"contract: {summary['contract']}")
    lines += [f"{key}: {summary[key]}" for key in ("gif", "grid", "exported") if key in summary]
    return "\n".join(lines)
