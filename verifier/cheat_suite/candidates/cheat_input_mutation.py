# CHEAT (mutating inputs): uses the input as scratch space for the softmax.  Under
# an evaluator that hands the same tensor to the reference afterwards, the
# reference then computes softmax of already-normalised values.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x.sub_(x.amax(dim=1, keepdim=True)).exp_()
        return x / x.sum(dim=1, keepdim=True)
