import torch
import torch.nn as nn


class Model(nn.Module):
    """Elementwise ReLU (KernelBench level-1 style); relu.py's inputs made 8x smaller for CPU runs."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


batch_size = 128
dim = 4096


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
