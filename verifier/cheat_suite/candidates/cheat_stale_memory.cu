// CHEAT (stale reference memory, the case found in the AI CUDA Engineer archive):
// allocate the output, write nothing.  Under KernelBench's order the caching
// allocator returns the block the reference's output was just freed from.
#include <torch/extension.h>

torch::Tensor forward(torch::Tensor x) {
    return torch::empty_like(x);
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &forward, "relu?"); }
