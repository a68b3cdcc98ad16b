import torch
import torch.nn as nn


class Model(nn.Module):
    """sigmoid(x * 1e-3): outputs stay within 0.5 +- 0.002 whatever the input, so the task
    is insensitive to its inputs (per-element std across seeds << 0.01)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(x * 1e-3)


batch_size = 64
dim = 4096


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
