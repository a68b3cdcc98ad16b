import torch
import torch.nn as nn


class Model(nn.Module):
    """Elementwise ReLU on 256 Ki fp32 elements: short and memory-bound, moving 2 MiB, whose
    bytes-moved floor on an H200 (under half a microsecond) is below an empty call's time."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


batch_size = 64
dim = 4096


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
