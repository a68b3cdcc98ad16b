import torch
import torch.nn as nn


class Model(nn.Module):
    """Matrix product scaled by 1e-4: every output is below 0.01 in magnitude, so an
    absolute tolerance of 1e-2 accepts zeros (a near-zero task, as robust-kbench flags)."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B) * 1e-4


M, K, N = 128, 256, 128


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
