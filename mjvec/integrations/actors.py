"""The torch modules of a deterministic policy as mjvec loads and exports it: `Normalizer` (the
observation statistics a training run kept) and `Actor` (``clamp(body(normalizer(obs)), low, high)``)."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

__all__ = ["Actor", "Normalizer"]


class Normalizer(nn.Module):
    """``clamp((x - mean) / sqrt(var + eps), -clip, clip)`` in the statistics' dtype, back to float32."""

    def __init__(self, mean: torch.Tensor, var: torch.Tensor, eps: float, clip: float) -> None:
        super().__init__()
        self.register_buffer("mean", mean.detach().clone())
        self.register_buffer("var", var.detach().clone())
        self.eps, self.clip = float(eps), float(clip)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        x = (obs.to(self.mean.dtype) - self.mean) / torch.sqrt(self.var + self.eps)
        return torch.clamp(x, -self.clip, self.clip).to(torch.float32)


class Actor(nn.Module):
    """``clamp(body(normalizer(obs)), low, high)``: (N, obs_dim) float32 -> (N, action_dim) float32."""

    def __init__(self, normalizer: nn.Module, body: nn.Module, low: np.ndarray, high: np.ndarray) -> None:
        super().__init__()
        self.normalizer, self.body = normalizer, body
        self.register_buffer("low", torch.as_tensor(np.asarray(low, np.float32)))
        self.register_buffer("high", torch.as_tensor(np.asarray(high, np.float32)))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return torch.clamp(self.body(self.normalizer(obs)), self.low, self.high)
