"""Writing rendered frames to disk: one PNG, or an animated GIF of a frame sequence.

Frames are (H, W, 3) uint8 arrays as returned by ``env.render()[i]`` or ``env.render_grid(ids)``.
Pillow is imported only when a file is written; without it `InstallError` says what to install.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mjvec.errors import ConfigError, InstallError
from mjvec.validate import require_number


def _image_module() -> Any:
    try:
        from PIL import Image
    except ImportError as error:
        raise InstallError(
            f"writing images needs Pillow, which is not importable ({error}); fix: pip install pillow"
        ) from error
    return Image


def _check_frame(frame: Any, what: str) -> np.ndarray:
    array = np.asarray(frame)
    if array.ndim != 3 or array.shape[2] != 3 or array.dtype != np.uint8:
        raise ConfigError(f"{what} must be an (H, W, 3) uint8 array, got shape {array.shape} dtype {array.dtype}")
    return array


def write_png(path: str | Path, frame: np.ndarray) -> Path:
    """Write one (H, W, 3) uint8 frame as a PNG (parent folders created); returns the path."""
    image = _image_module()
    path = Path(path)
    array = _check_frame(frame, "frame")
    path.parent.mkdir(parents=True, exist_ok=True)
    image.fromarray(array).save(path)
    return path


def write_gif(path: str | Path, frames: Sequence[np.ndarray], fps: float) -> Path:
    """Write frames (all of one (H, W, 3) uint8 shape) as a looping GIF played at `fps`.

    GIF stores frame durations in 10 ms units, so the played rate is rounded to that. Returns the path.
    """
    image = _image_module()
    if len(frames) == 0:
        raise ConfigError("write_gif needs at least one frame, got none")
    require_number(fps, "fps", low=0.0, low_open=True)
    arrays = [_check_frame(f, f"frame {i}") for i, f in enumerate(frames)]
    shapes = {a.shape for a in arrays}
    if len(shapes) != 1:
        raise ConfigError(f"all frames must have one shape, got {sorted(shapes)}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    images = [image.fromarray(a) for a in arrays]
    duration_ms = max(10, round(1000.0 / fps / 10) * 10)
    images[0].save(path, save_all=True, append_images=images[1:], duration=duration_ms, loop=0, optimize=False)
    return path
