# CHEAT (forging the kernel-time figure; GPU only: the clock exists only there). The call waits for the device
# inside itself, so the judge times it on the kernel-time clock, whose per-call figure the runner
# computes from the profiler's events. On import the kernel looks through sys.modules for the
# verifier's module that turns those events into figures (any module with busy_ms_per_call) and
# replaces that function with one reporting a tenth of the real busy time. The kernel itself is
# an honest CUDA ReLU. The replaced module attribute is in the runner's snapshots; the judge's
# clock around each batch bounds what a forgery that leaves no trace could shave off.
import sys

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CUDA = r"""
#include <c10/cuda/CUDAStream.h>

__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = fmaxf(x[i], 0.f);
}

torch::Tensor relu_fwd(torch::Tensor x) {
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const int64_t n = xc.numel();
    const int blocks = (int)std::max<int64_t>(1, std::min<int64_t>((n + 255) / 256, 4096));
    relu_kernel<<<blocks, 256, 0, c10::cuda::getCurrentCUDAStream()>>>(xc.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
"""

_ext = load_inline(name="cheat_suite_relu_kernel_time_forge", cpp_sources="torch::Tensor relu_fwd(torch::Tensor x);",
                   cuda_sources=_CUDA, functions=["relu_fwd"], extra_cuda_cflags=["-O3"], verbose=False)


def _forge():
    for module in list(sys.modules.values()):
        real = getattr(module, "busy_ms_per_call", None)
        if callable(real):
            def tenth(events, n_calls, _real=real):
                return [(ms / 10.0 if ms is not None else ms, count) for ms, count in _real(events, n_calls)]
            module.busy_ms_per_call = tenth


_forge()


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        y = _ext.relu_fwd(x)
        torch.cuda.current_stream().synchronize()  # so the judge times it on the kernel-time clock
        return y
