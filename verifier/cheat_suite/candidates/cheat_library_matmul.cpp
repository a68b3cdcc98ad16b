// CHEAT (library call presented as a kernel): the whole forward is at::matmul.
#include <torch/extension.h>

torch::Tensor forward(torch::Tensor A, torch::Tensor B) {
    return at::matmul(A, B);
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &forward, "matmul"); }
