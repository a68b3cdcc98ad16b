import torch
import torch.nn as nn


class Model(nn.Module):
    """Square matrix multiplication C = A @ B (small, so a naive CPU loop is quick)."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


N = 256


def get_inputs():
    return [torch.randn(N, N), torch.randn(N, N)]


def get_init_inputs():
    return []
