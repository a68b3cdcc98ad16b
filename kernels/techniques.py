"""Technique tags read from a kernel's source: what a GPU engineer would look for first.

Pure regexes over the code with comments and string literals removed, so a comment saying
"we could use warp shuffles" does not tag a kernel. Tags are stable identifiers; the
labels are what pages show.
"""
import re

from .regex_prefilter import could_match, literal_first

TECHNIQUES: dict[str, tuple[str, str]] = {
    # tag: (label, pattern)
    "shared_memory_tiling": ("shared-memory tiling", r"__shared__"),
    "warp_shuffle": ("warp shuffles", r"__shfl(_xor|_down|_up)?(_sync)?\s*\(|cooperative_groups::reduce|\.shfl(_down|_xor)?\s*\("),
    "vectorized_loads": ("vectorised loads", r"\b(float4|float2|int4|half2|__half2|double2|uint4)\b|reinterpret_cast<\s*(const\s+)?(float4|int4|uint4|float2)"),
    "tensor_cores": ("tensor-core instructions", r"\bwmma::|\bmma\.sync|\bwgmma\b|nvcuda::wmma|\bmma_sync\s*\(|cute::|cutlass::gemm"),
    "async_copy": ("cp.async / TMA", r"cp\.async|__pipeline_memcpy_async|cuda::memcpy_async|cp\.async\.bulk|cuTensorMapEncode|\bTMA\b"),
    "streams": ("CUDA streams", r"cudaStreamCreate|getStreamFromPool|cudaStream_t\s+\w+\s*\[|at::cuda::CUDAStream"),
    "cuda_graphs": ("CUDA graphs", r"cudaGraph(Create|Launch|Instantiate)|cudaStreamBeginCapture|CUDAGraph"),
    "atomics": ("atomics", r"\batomic(Add|Max|Min|CAS|Exch)\s*\("),
    "constant_memory": ("constant memory", r"__constant__"),
    "loop_unrolling": ("unrolled loops", r"#pragma\s+unroll"),
    "read_only_cache": ("read-only cache loads", r"__ldg\s*\("),
    "fused_operators": ("fused operators", r"\bfmaxf?\s*\(\s*0|relu|\bexpf?\s*\(|tanhf?\s*\(|gelu|sigmoid"),
    "library_calls": ("library calls (cuBLAS, cuDNN, at::)", r"\bcublas\w*\s*\(|\bcudnn\w*\s*\(|\b(at|torch)::(matmul|mm|bmm|addmm|linear|conv\dd|convolution|relu|softmax|layer_norm|batch_norm)\s*\("),
}
_COMPILED = {tag: re.compile(pattern) for tag, (_, pattern) in TECHNIQUES.items()}
_COMMENTS_AND_STRINGS = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"', re.S)


def strip_comments_and_strings(code: str) -> str:
    return _COMMENTS_AND_STRINGS.sub(" ", code)


def detect_techniques(code: str) -> list[str]:
    """Tags whose pattern occurs in the code, in the order of TECHNIQUES."""
    body = strip_comments_and_strings(code)
    # The same search, skipped where a string every match contains is absent (regex_prefilter).
    return [tag for tag, pattern in _COMPILED.items() if could_match(pattern, body) and literal_first(pattern).search(body)]


def encode_tags(tags: list[str]) -> str:
    """Stored as ',a,b,' so `technique_tags__contains=',a,'` filters on any database."""
    return f",{','.join(tags)}," if tags else ""


def decode_tags(stored: str) -> list[str]:
    return [tag for tag in stored.split(",") if tag]


def label(tag: str) -> str:
    return TECHNIQUES.get(tag, (tag, ""))[0]
