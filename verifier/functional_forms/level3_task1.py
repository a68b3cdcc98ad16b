"""Functional form of KernelBench level 3 task 1: a multi-layer perceptron.

Archive kernels for this task expose
``forward(x, const std::vector<torch::Tensor>& weights, const std::vector<torch::Tensor>& biases)``;
pybind11 turns Python lists of tensors into those vectors, so ``forward`` below passes
plain lists rather than the ParameterLists themselves.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

OP_NAME = "1_MLP"


def module_fn(x: torch.Tensor, weights: list, biases: list) -> torch.Tensor:
    """Linear + ReLU for every hidden layer, then a final Linear without activation."""
    for weight, bias in zip(weights[:-1], biases[:-1]):
        x = F.relu(F.linear(x, weight, bias))
    return F.linear(x, weights[-1], biases[-1])


class Model(nn.Module):
    def __init__(self, input_size, layer_sizes, output_size):
        super().__init__()
        # Same nn.Linear constructions in the same order as the reference's Sequential
        # (its nn.ReLU layers draw no random numbers), hence identical initial weights.
        self.weights = nn.ParameterList()
        self.biases = nn.ParameterList()
        current_input_size = input_size
        for layer_size in list(layer_sizes) + [output_size]:
            linear = nn.Linear(current_input_size, layer_size)
            self.weights.append(nn.Parameter(linear.weight.detach().clone()))
            self.biases.append(nn.Parameter(linear.bias.detach().clone()))
            current_input_size = layer_size

    def forward(self, x: torch.Tensor, fn=module_fn) -> torch.Tensor:
        return fn(x, list(self.weights), list(self.biases))


batch_size = 1
input_size = 1000
layer_sizes = [400, 800]
output_size = 500


def get_inputs():
    return [torch.randn(batch_size, input_size)]


def get_init_inputs():
    return [input_size, layer_sizes, output_size]
