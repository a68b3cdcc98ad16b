// Honest fast CUDA softmax over dim 1 of a 2-D tensor: one block of 256 threads per row,
// an online max-and-sum pass (float4 loads when the row allows), warp-shuffle reductions
// then one small shared-memory step across the 8 warps, and a second pass that writes.
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAException.h>
#include <cstdint>

#define THREADS 256
#define WARPS (THREADS / 32)

// (m, s): running max and the sum of exp(x - m) so far. Merge another pair into it.
__device__ __forceinline__ void merge(float& m, float& s, float om, float os) {
    const float nm = fmaxf(m, om);
    if (nm == -INFINITY) return;  // both empty
    s = s * expf(m - nm) + os * expf(om - nm);
    m = nm;
}

__device__ __forceinline__ void push(float& m, float& s, float v) {
    if (v > m) {
        s = s * expf(m - v) + 1.f;
        m = v;
    } else {
        s += expf(v - m);
    }
}

__global__ void softmax_rows_shfl(const float* __restrict__ x, float* __restrict__ y, int64_t cols, bool vec4) {
    __shared__ float wm[WARPS], ws[WARPS];
    __shared__ float row_m, row_inv;
    const float* in = x + (int64_t)blockIdx.x * cols;
    float* out = y + (int64_t)blockIdx.x * cols;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;

    float m = -INFINITY, s = 0.f;
    if (vec4) {
        const float4* in4 = reinterpret_cast<const float4*>(in);
        for (int64_t c = threadIdx.x; c < cols / 4; c += THREADS) {
            const float4 v = in4[c];
            push(m, s, v.x); push(m, s, v.y); push(m, s, v.z); push(m, s, v.w);
        }
    } else {
        for (int64_t c = threadIdx.x; c < cols; c += THREADS) push(m, s, in[c]);
    }
    for (int off = 16; off > 0; off >>= 1) {
        const float om = __shfl_xor_sync(0xffffffffu, m, off);
        const float os = __shfl_xor_sync(0xffffffffu, s, off);
        merge(m, s, om, os);
    }
    if (lane == 0) { wm[warp] = m; ws[warp] = s; }
    __syncthreads();
    if (warp == 0) {
        m = lane < WARPS ? wm[lane] : -INFINITY;
        s = lane < WARPS ? ws[lane] : 0.f;
        for (int off = 16; off > 0; off >>= 1) {
            const float om = __shfl_xor_sync(0xffffffffu, m, off);
            const float os = __shfl_xor_sync(0xffffffffu, s, off);
            merge(m, s, om, os);
        }
        if (lane == 0) { row_m = m; row_inv = 1.f / s; }
    }
    __syncthreads();
    const float rm = row_m, inv = row_inv;
    if (vec4) {
        const float4* in4 = reinterpret_cast<const float4*>(in);
        float4* out4 = reinterpret_cast<float4*>(out);
        for (int64_t c = threadIdx.x; c < cols / 4; c += THREADS) {
            float4 v = in4[c];
            v.x = expf(v.x - rm) * inv; v.y = expf(v.y - rm) * inv;
            v.z = expf(v.z - rm) * inv; v.w = expf(v.w - rm) * inv;
            out4[c] = v;
        }
    } else {
        for (int64_t c = threadIdx.x; c < cols; c += THREADS) out[c] = expf(in[c] - rm) * inv;
    }
}

torch::Tensor forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.dim() == 2 && x.scalar_type() == torch::kFloat32, "2-D CUDA float32 expected");
    auto xc = x.contiguous();
    auto out = torch::empty_like(xc);
    const int64_t rows = xc.size(0), cols = xc.size(1);
    TORCH_CHECK(rows <= 2147483647LL, "too many rows for one block per row");
    if (rows > 0 && cols > 0) {
        const bool vec4 = cols % 4 == 0 && reinterpret_cast<std::uintptr_t>(xc.data_ptr<float>()) % 16 == 0 &&
                          reinterpret_cast<std::uintptr_t>(out.data_ptr<float>()) % 16 == 0;
        softmax_rows_shfl<<<(unsigned)rows, THREADS, 0, c10::cuda::getCurrentCUDAStream()>>>(
            xc.data_ptr<float>(), out.data_ptr<float>(), cols, vec4);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &forward, "row softmax (CUDA, warp shuffles)"); }
