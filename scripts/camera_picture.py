"""Make docs/cameras_depth.png: a batch of depth observations, one row per camera, one tile per env.

Rows: SimToolReal-v0's "table" and "wrist" cameras (8 envs, 8 tools), CubeRotate-v0's "palm"
camera (8 cubes), Gymnasium Hopper's "track" camera; each after a reset and a few random steps,
at 96x96, uint8 depth (near = black, far or nothing hit = white), as the policy sees them.

    MUJOCO_GL=osmesa python scripts/camera_picture.py [--out docs/cameras_depth.png]
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

import gymnasium as gym
import numpy as np
from PIL import Image, ImageDraw

import mjvec  # noqa: F401  (registers the tasks)
from mjvec.envs.cameras import CameraObs

ROWS = (
    ("SimToolReal-v0", {"num_tools": 8, "randomization": None}, ("depth_table", "depth_wrist")),
    ("CubeRotate-v0", {"num_cubes": 8}, ("depth",)),
    ("mjvec/Hopper-v5", {}, ("depth",)),
)
SIDE, ENVS, STEPS, LABEL_W = 96, 8, 12, 150


def rows(seed: int) -> list[tuple[str, np.ndarray]]:
    """(label, (ENVS, SIDE, SIDE) uint8) per camera row."""
    out = []
    rng = np.random.default_rng(seed)
    for env_id, kwargs, keys in ROWS:
        env = gym.make_vec(env_id, num_envs=ENVS, cameras=CameraObs("depth", size=(SIDE, SIDE)), **kwargs)
        obs, _ = env.reset(seed=seed)
        for _ in range(STEPS):
            obs, *_ = env.step(0.3 * rng.uniform(-1, 1, env.action_space.shape))
        for key in keys:
            camera = key.split("_", 1)[1] if "_" in key else env.unwrapped.camera_images.setup.cameras[0].name
            out.append((f"{env_id}\n{camera}", np.asarray(obs[key])[:, -1]))
        env.close()
    return out


def picture(images: list[tuple[str, np.ndarray]]) -> Image.Image:
    gap = 4
    canvas = Image.new("L", (LABEL_W + ENVS * (SIDE + gap), len(images) * (SIDE + gap)), 255)
    draw = ImageDraw.Draw(canvas)
    for r, (label, tiles) in enumerate(images):
        y = r * (SIDE + gap)
        draw.multiline_text((6, y + SIDE // 2 - 12), label, fill=0)
        for c, tile in enumerate(tiles):
            canvas.paste(Image.fromarray(tile), (LABEL_W + c * (SIDE + gap), y))
    return canvas


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "docs" / "cameras_depth.png")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    logging.basicConfig(level=logging.INFO)
    picture(rows(args.seed)).save(args.out, optimize=True)
    logging.info("wrote %s", args.out)


if __name__ == "__main__":
    main()
