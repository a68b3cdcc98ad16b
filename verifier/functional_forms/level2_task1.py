"""Functional form of KernelBench level 2 task 1: Conv2d, ReLU, then a bias add.

Archive kernels for this task expose ``forward(x, conv_weight, conv_bias, bias)``.
The parameters are created by the very same ``nn.Conv2d`` and ``torch.randn`` calls,
in the same order, as the reference ``Model``, so under the same seed both hold
identical values and their outputs can be compared element by element.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

OP_NAME = "1_Conv2D_ReLU_BiasAdd"


def module_fn(
    x: torch.Tensor,
    conv_weight: torch.Tensor,
    conv_bias: torch.Tensor,
    bias: torch.Tensor,
) -> torch.Tensor:
    """relu(conv2d(x, conv_weight, conv_bias)) + bias, with bias of shape (C_out, 1, 1)."""
    x = F.conv2d(x, conv_weight, conv_bias)
    x = torch.relu(x)
    x = x + bias
    return x


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, bias_shape):
        super().__init__()
        # Build the reference's layer so the weights come out of the same RNG draws.
        conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.conv_weight = nn.Parameter(conv.weight.detach().clone())
        self.conv_bias = nn.Parameter(conv.bias.detach().clone())
        self.bias = nn.Parameter(torch.randn(bias_shape) * 0.02)

    def forward(self, x: torch.Tensor, fn=module_fn) -> torch.Tensor:
        return fn(x, self.conv_weight, self.conv_bias, self.bias)


batch_size = 128
in_channels = 3
out_channels = 16
height, width = 32, 32
kernel_size = 3
bias_shape = (out_channels, 1, 1)


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, bias_shape]
