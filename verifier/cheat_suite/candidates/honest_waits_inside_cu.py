# Honest KernelBench-format candidate whose call waits for the device inside itself: a CUDA ReLU
# (load_inline), then a synchronize before it returns, as kernels that read a flag or a size back
# from the device do. Its launch cannot be queued behind the judge's spin, so the judge ranks it
# on the kernel-time clock (the device's busy time from the profiler); it must pass.
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

_ext = load_inline(name="cheat_suite_relu_waits_inside_cu", cpp_sources="torch::Tensor relu_fwd(torch::Tensor x);",
                   cuda_sources=_CUDA, functions=["relu_fwd"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        y = _ext.relu_fwd(x)
        torch.cuda.current_stream().synchronize()  # the wait inside the call
        return y
