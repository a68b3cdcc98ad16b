"""Technique tags read from a kernel's code as compiled: what a GPU engineer would look for first.

Pure regexes over the code with comments and string literals removed, so a comment saying
"we could use warp shuffles" does not tag a kernel, but with the template strings of inline
assembly (`asm volatile("cp.async.cg.shared.global ...")`) kept: that text is code the GPU
runs. Where the worker listed the build's SASS, its opcodes tag too (`sass_techniques`): the
machine code shows what the compiler emitted whatever the source spelled. Tags are stable
identifiers; the labels are what pages show.
"""
import re

from .regex_prefilter import could_match, literal_first

TECHNIQUES: dict[str, tuple[str, str]] = {
    # tag: (label, pattern)
    "shared_memory_tiling": ("shared-memory tiling", r"__shared__"),
    "warp_shuffle": ("warp shuffles", r"__shfl(_xor|_down|_up)?(_sync)?\s*\(|cooperative_groups::reduce|\.shfl(_down|_xor)?\s*\("),
    "vectorized_loads": ("vectorised loads", r"\b(float4|float2|int4|half2|__half2|double2|uint4)\b|reinterpret_cast<\s*(const\s+)?(float4|int4|uint4|float2)"),
    "tensor_cores": ("tensor-core instructions", r"\bwmma::|\bmma\.sync|\bwgmma\b|nvcuda::wmma|\bmma_sync\s*\(|cute::|cutlass::gemm"),
    "wgmma": ("warpgroup MMA (wgmma)", r"\bwgmma\b"),
    "ldmatrix": ("ldmatrix (shared memory to MMA fragments)", r"\bldmatrix\b"),
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
# One scan, leftmost token first, so "asm(" inside a string or comment is not an asm statement.
_TOKENS = re.compile(
    r'(?P<comment>//[^\n]*|/\*.*?\*/)'
    r'|(?P<asm>\b(?:asm|__asm__|__asm)\b(?:\s*\b(?:volatile|__volatile__|inline|goto)\b)*\s*\()'
    r'|(?P<string>"(?:\\.|[^"\\\n])*")', re.S)
# SASS opcodes (the mnemonic before its first dot) and the tags they prove. HFMA2.MMA is an
# FMA on the MMA pipe, not a tensor-core op: the mnemonic is HFMA2, so it tags nothing.
SASS_OPCODES: dict[str, tuple[str, ...]] = {
    "LDGSTS": ("async_copy",),  # cp.async: global to shared without registers
    "LDGDEPBAR": ("async_copy",),
    "UTMALDG": ("async_copy",), "UTMASTG": ("async_copy",), "UTMAPF": ("async_copy",),  # TMA
    "UBLKCP": ("async_copy",),  # cp.async.bulk
    "HMMA": ("tensor_cores",), "IMMA": ("tensor_cores",), "DMMA": ("tensor_cores",), "BMMA": ("tensor_cores",),
    "HGMMA": ("tensor_cores", "wgmma"), "IGMMA": ("tensor_cores", "wgmma"),
    "QGMMA": ("tensor_cores", "wgmma"), "BGMMA": ("tensor_cores", "wgmma"),
    "LDSM": ("ldmatrix",),
}
# A listing line as the worker stores it ("/*0010*/ @!P0 LDGSTS.E [R1], ...") or as
# cuobjdump prints it (indented, with the encoding after the semicolon).
_SASS_OPCODE = re.compile(r"^\s*/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)", re.M)


def strip_comments_and_strings(code: str) -> str:
    return _COMMENTS_AND_STRINGS.sub(" ", code)


def code_as_compiled(code: str) -> str:
    """The code with comments and string literals blanked, except the template strings of
    inline assembly (`asm volatile("mma.sync..." : ...)`), whose text the GPU runs. Operand
    constraints after the first `:` ("=r", "l") are ordinary strings and go."""
    out: list[str] = []
    pos, in_template = 0, False
    for token in _TOKENS.finditer(code):
        gap = code[pos:token.start()]
        if gap.strip():  # anything but blanks between tokens ends the template
            in_template = False
        out.append(gap)
        kind = token.lastgroup
        if kind == "comment":
            out.append(" ")
        elif kind == "asm":
            out.append(token.group())
            in_template = True
        else:
            out.append(" %s " % token.group()[1:-1] if in_template else " ")
        pos = token.end()
    out.append(code[pos:])
    return "".join(out)


def detect_techniques(code: str) -> list[str]:
    """Tags whose pattern occurs in the code as compiled, in the order of TECHNIQUES."""
    body = code_as_compiled(code)
    # The same search, skipped where a string every match contains is absent (regex_prefilter).
    return [tag for tag, pattern in _COMPILED.items() if could_match(pattern, body) and literal_first(pattern).search(body)]


def sass_techniques(sass: str) -> list[str]:
    """Tags that the SASS listing's opcodes prove, in the order of TECHNIQUES."""
    found = {tag for opcode in _SASS_OPCODE.findall(sass) for tag in SASS_OPCODES.get(opcode, ())}
    return [tag for tag in TECHNIQUES if tag in found]


def listing_sass(listing) -> str:
    """All SASS text of a stored GPU-binary listing (Profile.parsed, verifier/gpu_binary.py)."""
    if not isinstance(listing, dict):
        return ""
    return "\n".join(str(row.get("sass") or "") for row in listing.get("functions") or [] if isinstance(row, dict))


def kernel_techniques(code: str, listings=()) -> list[str]:
    """A kernel's tags: from its code as compiled, and from the SASS of each listing of its build."""
    found = set(detect_techniques(code))
    for listing in listings:
        found.update(sass_techniques(listing_sass(listing)))
    return [tag for tag in TECHNIQUES if tag in found]


def encode_tags(tags: list[str]) -> str:
    """Stored as ',a,b,' so `technique_tags__contains=',a,'` filters on any database."""
    return f",{','.join(tags)}," if tags else ""


def decode_tags(stored: str) -> list[str]:
    return [tag for tag in stored.split(",") if tag]


def label(tag: str) -> str:
    return TECHNIQUES.get(tag, (tag, ""))[0]
