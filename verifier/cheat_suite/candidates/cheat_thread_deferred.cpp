// CHEAT (work on a host thread, deferred write): returns a zero tensor at once and
// lets a detached thread fill it in later, so a timer around the call sees nothing.
#include <torch/extension.h>
#include <chrono>
#include <thread>

torch::Tensor forward(torch::Tensor x) {
    auto xc = x.contiguous();
    auto out = torch::zeros_like(xc);
    std::thread([xc, out]() mutable {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        const float* in = xc.data_ptr<float>();
        float* o = out.data_ptr<float>();
        for (int64_t i = 0; i < xc.numel(); ++i) o[i] = in[i] > 0.f ? in[i] : 0.f;
    }).detach();
    return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &forward, "relu on a thread"); }
