"""What text represents a kernel, and the model loading offline from its package."""
import socket
import sysconfig
from pathlib import Path

import numpy as np

from search import embedding

KERNEL = """#include <torch/extension.h>
#define TILE 32
// a comment about warp shuffles
__global__ void matmul_tiled(const float* A, const float* B, float* C, int N) {
    __shared__ float As[TILE][TILE];
    C[0] = A[0] * B[0];
}
torch::Tensor forward(torch::Tensor A, torch::Tensor B) {
    TORCH_CHECK(A.is_cuda(), "A must be CUDA");
    return A;
}
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &forward, "matmul"); }
"""


def test_the_real_model_loads_offline_from_site_packages(monkeypatch):
    import os

    assert os.environ["HF_HUB_OFFLINE"] == "1" and os.environ["TRANSFORMERS_OFFLINE"] == "1"
    site_packages = Path(sysconfig.get_paths()["purelib"]).resolve()
    assert embedding.model_dir().resolve().is_relative_to(site_packages)
    assert (embedding.model_dir() / "model.safetensors").exists()

    def no_network(*args, **kwargs):
        raise AssertionError(f"the model tried to reach the network: {args}")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    model = embedding.load_model_uncached()
    vectors = embedding.embed_texts(["tiled matrix multiplication"], model=model)
    assert vectors.shape == (1, embedding.EMBEDDING_DIM) and vectors.dtype == np.float32
    assert abs(float(np.linalg.norm(vectors[0])) - 1.0) < 1e-5
    assert model.max_seq_length == embedding.EMBEDDING_MAX_TOKENS


def test_identifier_words():
    assert embedding.words("1_Square_matrix_multiplication_") == "Square matrix multiplication"
    assert embedding.words("warpShuffleSoftmax_base") == "warp Shuffle Softmax base"


def test_clean_code_keeps_the_kernel_and_drops_boilerplate():
    cleaned = embedding.clean_code(KERNEL)
    assert cleaned.startswith("__global__ void matmul_tiled(")
    assert "#include" not in cleaned and "PYBIND11_MODULE" not in cleaned and "TORCH_CHECK" not in cleaned
    assert "warp shuffles" not in cleaned  # comments carry claims, not code


def test_summary_text_leads_with_task_name_and_techniques():
    text = embedding.kernel_text("1_Square_matrix_multiplication_", "tiled_matmul_base",
                                 ["shared_memory_tiling"], KERNEL)
    assert text.startswith("Square matrix multiplication. tiled matmul base. techniques: shared-memory tiling. __global__")


def test_pasted_code_is_represented_like_a_kernel():
    assert embedding.looks_like_code(KERNEL)
    assert embedding.query_text(KERNEL).startswith("techniques: shared-memory tiling. __global__ void matmul_tiled")
    assert embedding.query_text("  warp-shuffle softmax ") == "warp-shuffle softmax"


def test_vectors_round_trip_through_bytes():
    vectors = np.random.default_rng(0).standard_normal((3, 384)).astype(np.float32)
    blobs = [embedding.vector_to_bytes(v) for v in vectors]
    assert all(len(blob) == 384 * 4 for blob in blobs)
    assert np.array_equal(embedding.vectors_from_bytes(blobs), vectors)


def test_text_hash_depends_on_model_and_budget():
    assert embedding.text_sha256("a") != embedding.text_sha256("b")
    assert len(embedding.text_sha256("a")) == 64
