import json
from pathlib import Path

from kernels.techniques import (
    code_as_compiled, decode_tags, detect_techniques, encode_tags, kernel_techniques, listing_sass, sass_techniques,
)

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


# Inline PTX written for these tests: a cp.async double buffer and an mma.sync tile.
INLINE_PTX = r'''
__device__ void stage(float* smem, const float* g) {
    unsigned s = __cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" :: "r"(s), "l"(g));
    asm volatile("cp.async.commit_group;\n" ::);
}
__device__ void tile(unsigned* a, unsigned* b, float* c) {
    __asm__ __volatile__(
        "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
        : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3]) : "r"(b[0]));
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "  // adjacent literals: one template
        "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};" : "+f"(c[0]));
}
'''


def test_inline_ptx_in_asm_templates_tags():
    assert detect_techniques(INLINE_PTX) == ["tensor_cores", "ldmatrix", "async_copy"]
    hopper = 'asm volatile("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {...};");'
    assert detect_techniques(hopper) == ["tensor_cores", "wgmma"]
    tma = 'asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1];" :: "r"(d), "l"(m));'
    assert detect_techniques(tma) == ["async_copy"]


def test_only_asm_templates_count_not_other_strings_or_constraints():
    # A log message, a comment and a string that merely mentions asm are not code the GPU runs.
    decoy = ('printf("no cp.async here, mma.sync planned\\n");\n'
             '// asm volatile("cp.async.cg.shared.global [%0], [%1], 16;");\n'
             'const char* s = "asm(\\"ldmatrix.sync\\")";\n'
             'int my_asm("wgmma");\n')
    assert detect_techniques(decoy) == []
    # The template ends at the first operand list: a constraint string is not PTX.
    assert code_as_compiled('asm("add.s32 %0, %1, 1;" : "=r"(x) : "r"(y));').count("=r") == 0


SASS_FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "h200" / "gpu_binary"
# SASS lines as the worker stores them, with predicates, written for this test.
SASS_SM90 = """//## cuda.cu:12
/*0100*/ LDGSTS.E.BYPASS.LTC128B.128 [R5], desc[UR4][R2.64] ;
/*0110*/ LDGDEPBAR ;
/*0200*/ @!P0 LDSM.16.M88.4 R8, [R20] ;
/*0210*/ HMMA.16816.F32 R12, R8, R16, R12 ;
/*0300*/ @P1 UTMALDG.2D [UR8], [UR4] ;
/*0400*/ HGMMA.64x128x16.F32 R24, gdesc[UR12], R24 ;
"""


def test_sass_opcodes_tag():
    assert sass_techniques(SASS_SM90) == ["tensor_cores", "wgmma", "ldmatrix", "async_copy"]
    assert sass_techniques("/*0000*/ LDGSTS.E [R1], [R2.64] ;") == ["async_copy"]


def test_real_h200_sass_of_a_plain_tiled_matmul_tags_nothing():
    # cuobjdump -sass as printed: LDS/FFMA only, and HFMA2.MMA, an FMA on the MMA pipe that
    # is no tensor-core op, so a test that matched "MMA" anywhere would fail here.
    sass = (SASS_FIXTURES / "matmul_shared_tiled_32.sass.txt").read_text()
    assert "HFMA2.MMA" in sass and "LDS" in sass
    assert sass_techniques(sass) == []
    listings = json.loads((SASS_FIXTURES / "listings_spill_and_model_new.json").read_text())
    assert all(sass_techniques(listing_sass(listing)) == [] for listing in listings.values())
    assert sass_techniques(sass.replace("HFMA2.MMA", "HMMA.16816.F32")) == ["tensor_cores"]


def test_kernel_techniques_joins_source_and_sass():
    listing = {"functions": [{"name": "k", "sass": SASS_SM90}, "not a row"]}
    assert kernel_techniques("__global__ void k() { __shared__ float t[32]; }", [listing, None]) == [
        "shared_memory_tiling", "tensor_cores", "wgmma", "ldmatrix", "async_copy"]
