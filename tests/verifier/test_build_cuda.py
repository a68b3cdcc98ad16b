"""The CUDA build without a GPU: what verifier/core/build.py hands to ninja (nothing is compiled here)."""
import os
import types

import torch.utils.cpp_extension as cpp_extension

from verifier.core import build

SOURCE = "#include <torch/extension.h>\n__global__ void k(float* x) { x[0] = 1; }\n" \
         "torch::Tensor forward(torch::Tensor x) { return x; }\n" \
         "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def(\"forward\", &forward); }\n"


def test_a_cuda_build_compiles_load_inlines_cuda_file_once_for_the_devices_own_arch(tmp_path, monkeypatch):
    """Only cuda.cu, with the three lines load_inline puts first (gpu_binary maps lines past them):
    load_inline's main.cpp held only ``#include <torch/extension.h>`` and cost a second compile of
    torch's headers. nvcc builds SASS for the device's architecture and its PTX, nothing else."""
    toolkit = tmp_path / "cuda"
    (toolkit / "bin").mkdir(parents=True)
    (toolkit / "lib64").mkdir()
    monkeypatch.setattr(cpp_extension, "CUDA_HOME", str(toolkit))
    monkeypatch.setattr(cpp_extension, "_run_ninja_build", lambda *args, **kwargs: None)
    monkeypatch.setattr(cpp_extension, "_import_module_from_library",
                        lambda *args, **kwargs: types.SimpleNamespace(forward=lambda *a: None))
    monkeypatch.setattr(build, "cuda_arch", lambda device: "9.0")
    monkeypatch.delenv("TORCH_CUDA_ARCH_LIST", raising=False)

    _, info = build.build_cuda_forward(SOURCE, "cuda", str(tmp_path / "builds"), [])

    folder = tmp_path / "builds" / info["name"]
    assert info["build_directory"] == str(folder) and info["arch"] == "9.0"
    assert not (folder / "main.cpp").exists()
    assert (folder / "cuda.cu").read_text() == "\n".join(build.CUDA_SOURCE_PREFIX + (SOURCE,))
    ninja = (folder / "build.ninja").read_text()
    assert "main.cpp" not in ninja and "main.o" not in ninja
    assert "build cuda.cuda.o: cuda_compile %s/cuda.cu" % folder in ninja
    assert "build %s.so: link cuda.cuda.o\n" % info["name"] in ninja
    gencodes = [word for word in ninja.split() if word.startswith("-gencode")]
    assert sorted(gencodes) == ["-gencode=arch=compute_90,code=compute_90", "-gencode=arch=compute_90,code=sm_90"]
    assert "-lineinfo" in ninja and "TORCH_CUDA_ARCH_LIST" not in os.environ  # put back as it was
