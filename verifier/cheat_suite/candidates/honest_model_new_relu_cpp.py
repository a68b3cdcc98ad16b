# Honest KernelBench-format candidate: ModelNew builds a C++ ReLU with load_inline.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_SRC = r"""
torch::Tensor relu_fwd(torch::Tensor x) {
    auto xc = x.contiguous();
    auto out = torch::empty_like(xc);
    const float* in = xc.data_ptr<float>();
    float* o = out.data_ptr<float>();
    const int64_t n = xc.numel();
    for (int64_t i = 0; i < n; ++i) o[i] = in[i] > 0.f ? in[i] : 0.f;
    return out;
}
"""

_ext = load_inline(name="cheat_suite_relu_model_new", cpp_sources=_SRC, functions=["relu_fwd"],
                   extra_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return _ext.relu_fwd(x)
