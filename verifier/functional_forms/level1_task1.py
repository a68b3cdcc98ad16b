"""Functional form of KernelBench level 1 task 1: square matrix multiplication.

Archive kernels for this task expose ``forward(A, B)``; the harness calls them in
place of ``module_fn`` through ``Model.forward(..., fn=kernel.forward)``.
"""
import torch
import torch.nn as nn

OP_NAME = "1_Square_matrix_multiplication_"


def module_fn(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    """C = A @ B for square matrices A and B of shape (N, N)."""
    return torch.matmul(A, B)


class Model(nn.Module):
    """Same interface as the reference Model; the computation is delegated to ``fn``."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor, fn=module_fn) -> torch.Tensor:
        return fn(A, B)


N = 2048


def get_inputs():
    A = torch.randn(N, N)
    B = torch.randn(N, N)
    return [A, B]


def get_init_inputs():
    return []
