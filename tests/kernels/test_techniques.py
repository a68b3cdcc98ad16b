from kernels.techniques import decode_tags, detect_techniques, encode_tags

TILED = """
__global__ void k(const float* __restrict__ a, float* out) {
    __shared__ float tile[32][32];
    #pragma unroll
    for (int i = 0; i < 4; ++i) {}
    float4 v = reinterpret_cast<const float4*>(a)[0];
    out[0] = __shfl_down_sync(0xffffffff, v.x, 16);
}
"""


def test_tags_come_from_code_not_comments_or_strings():
    assert detect_techniques(TILED) == ["shared_memory_tiling", "warp_shuffle", "vectorized_loads", "loop_unrolling"]
    commented = "// __shared__ float4 cudaStreamCreate\n/* wmma:: */ const char* s = \"__shfl_down_sync(\";"
    assert detect_techniques(commented) == []


def test_library_calls_and_tensor_cores():
    assert "library_calls" in detect_techniques("return at::matmul(a, b);")
    assert "library_calls" in detect_techniques("cublasSgemm(handle, ...);")
    assert "tensor_cores" in detect_techniques("wmma::mma_sync(c, a, b, c);")
    assert "streams" in detect_techniques("cudaStream_t s; cudaStreamCreate(&s);")


def test_archive_kernels_get_tags(archive_rows):
    tags = {row["Kernel_Name"]: detect_techniques(row["CUDA_Code"]) for row in archive_rows}
    assert "shared_memory_tiling" in tags["matmul_shared_tiled_32"] and "loop_unrolling" in tags["matmul_shared_tiled_32"]
    assert "warp_shuffle" in tags["softmax_warp_shuffle_online"] and "warp_shuffle" in tags["mlp_warp_shuffle_dot"]
    assert "library_calls" in tags["mlp_torch_linear_relu"] and "library_calls" in tags["matmul_library_call"]
    assert "shared_memory_tiling" not in tags["matmul_naive_untiled"]


def test_encoding_round_trip():
    assert decode_tags(encode_tags(["a", "b"])) == ["a", "b"]
    assert encode_tags([]) == "" and decode_tags("") == []
