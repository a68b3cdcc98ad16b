// CHEAT (deferred write): a kernel on a side stream waits ~2 ms before writing the
// result, so the output is still being written after forward has returned.
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAException.h>

__global__ void late_relu(const float* __restrict__ x, float* __restrict__ y, int64_t n, long long delay) {
    const long long start = clock64();
    while (clock64() - start < delay) {
    }
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = fmaxf(x[i], 0.f);
}

torch::Tensor forward(torch::Tensor x) {
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    cudaStream_t side = c10::cuda::getStreamFromPool();
    late_relu<<<264, 256, 0, side>>>(xc.data_ptr<float>(), y.data_ptr<float>(), xc.numel(), 4000000LL);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &forward, "relu, written late"); }
