// Honest but slow CUDA linear + ReLU, weights as arguments (called through the task's
// functional form: forward(x, weight, bias)); out = relu(x @ weight^T + bias).
// One thread per output element; neighbouring threads walk different weight rows, so the
// weight loads are not coalesced.
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAException.h>

__global__ void linear_relu_naive(const float* __restrict__ X, const float* __restrict__ W,
                                  const float* __restrict__ bias, float* __restrict__ Y, int B, int I, int O) {
    const int b = blockIdx.y * blockDim.y + threadIdx.y;  // batch index
    const int o = blockIdx.x * blockDim.x + threadIdx.x;  // output feature
    if (b >= B || o >= O) return;
    float acc = bias[o];
    for (int k = 0; k < I; ++k) acc += X[(int64_t)b * I + k] * W[(int64_t)o * I + k];
    Y[(int64_t)b * O + o] = fmaxf(acc, 0.f);
}

torch::Tensor forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias) {
    TORCH_CHECK(x.is_cuda() && weight.is_cuda() && bias.is_cuda(), "CUDA tensors expected");
    TORCH_CHECK(x.dim() == 2 && weight.dim() == 2, "2-D input and weight expected");
    auto xc = x.contiguous(), w = weight.contiguous(), bc = bias.contiguous();
    const int B = (int)xc.size(0), I = (int)xc.size(1), O = (int)w.size(0);
    TORCH_CHECK(w.size(1) == I && bc.numel() == O, "shapes");
    auto out = torch::empty({B, O}, xc.options());
    if (B > 0 && O > 0) {
        dim3 block(32, 8), grid((O + 31) / 32, (B + 7) / 8);
        linear_relu_naive<<<grid, block, 0, c10::cuda::getCurrentCUDAStream()>>>(
            xc.data_ptr<float>(), w.data_ptr<float>(), bc.data_ptr<float>(), out.data_ptr<float>(), B, I, O);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &forward, "linear + relu (CUDA, naive)"); }
