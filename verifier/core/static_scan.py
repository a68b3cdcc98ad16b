"""Static scan of a candidate's source, comments stripped.

Findings are advisory - they say where to look - except ``no_custom_kernel``:
a ``cuda_forward`` source that defines no kernel at all (no ``__global__``
function or inline assembly on cuda; no loop on cpu) yet calls library compute
ops is a library call presented as a kernel, whatever its numbers say.  The
dynamic check (``library_call_replaces_kernel``, from the dispatcher) carries
the blocking verdict for everything subtler.

No Django imports here: this file ships inside the verification bundle.
"""
from __future__ import annotations

import io
import re
import tokenize
from typing import TYPE_CHECKING

from . import checks

if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

COMPUTE_NAMES = (
    "matmul|mm|bmm|addmm|baddbmm|addbmm|addmv|mv|dot|linear|einsum|tensordot|conv[123]d|convolution|"
    "conv_transpose[123]d|_convolution|relu|relu_|gelu|silu|sigmoid|tanh|softmax|log_softmax|_softmax|"
    "layer_norm|batch_norm|group_norm|instance_norm|rms_norm|dropout|sum|mean|amax|amin|max_pool[123]d|"
    "avg_pool[123]d|adaptive_avg_pool[123]d|scaled_dot_product_attention|cumsum|cumprod|logsumexp|"
    "exp|log|sqrt|rsqrt|pow|clamp|hardtanh|leaky_relu|elu|selu|softplus|mish|hardswish|norm|var|std|"
    "argmax|argmin|topk|sort|cross_entropy|nll_loss|mse_loss|smooth_l1_loss|kl_div|triplet_margin_loss|"
    "cosine_similarity|prod|lstm|gru|add|sub|mul|div|where|minimum|maximum")

_CPP_LIB = re.compile(r"\b(?:torch|at)::(?:nn::functional::|native::|cpu::|cuda::)?(%s)(?:_out)?\s*\(" % COMPUTE_NAMES)
_CPP_METHOD = re.compile(r"(?:\)|\w)\s*(?:\.|->)\s*(matmul|mm|bmm|addmm|linear|conv2d|softmax|log_softmax|relu|"
                         r"gelu|sigmoid|tanh|sum|mean|amax|exp|layer_norm|cumsum|logsumexp|norm)\s*\(")
_PY_LIB = re.compile(r"\b(?:torch|F|nn\.functional|torch\.nn\.functional|torch\.special|torch\.linalg)\.(%s)\s*\("
                     % COMPUTE_NAMES)
_PY_METHOD = re.compile(r"[\w\)\]]\s*\.(matmul|mm|bmm|addmm|softmax|log_softmax|relu|gelu|sigmoid|tanh|sum|mean|"
                        r"amax|exp|cumsum|logsumexp|conv2d)\s*\(")
_VENDOR = re.compile(r"\b(cublas\w*|cublasLt\w*|cudnn\w*|cusparse\w*|cufft\w*)\s*\(")

PATTERNS = [
    ("fallback_path_in_source", [r"\btry\s*\{", r"\bcatch\s*\(", r"(?m)^\s*try\s*:", r"(?m)^\s*except\b"],
     "try/catch or try/except: a failing custom path can silently fall back to the library"),
    ("side_stream_in_source", [r"cudaStreamCreate\w*", r"getStreamFromPool", r"cudaStreamNonBlocking",
                               r"torch\.cuda\.Stream\s*\(", r"torch\.cuda\.stream\s*\(", r"cudaStreamPerThread",
                               r"cudaLaunchHostFunc"],
     "work issued on a stream other than the caller's current stream"),
    ("threads_in_source", [r"std::thread", r"std::async", r"pthread_create", r"\.detach\s*\(\s*\)",
                           r"\bthreading\b", r"concurrent\.futures", r"\bmultiprocessing\b", r"\b_thread\b"],
     "host threads: work may still run after forward returns"),
    ("static_cache_in_source", [r"\bstatic\s+(?:const\s+)?(?:torch|at)::Tensor\b",
                                r"\bstatic\s+std::(?:unordered_)?map\b", r"\bstatic\s+std::vector\s*<\s*(?:torch|at)",
                                r"\bstatic\s+[\w:<>]+\s*\*\s*\w+", r"(?m)^(?:torch|at)::Tensor\s+\w+\s*;",
                                r"\bstd::(?:unordered_)?map\s*<\s*(?:void\s*\*|const\s+void\s*\*|int64_t|uintptr_t)",
                                r"(?m)^\s*global\s+\w+", r"functools\.lru_cache", r"@\s*(?:functools\.)?cache\b",
                                r"self\.\w*cache\w*\s*=", r"(?mi)^_*\w*cache\w*\s*=\s*(?:\{|dict\(|\[)",
                                r"\bid\s*\(\s*\w+\s*\)\s*(?:in|==)", r"data_ptr\s*\(\s*\)\s*(?:in|==|\])"],
     "state kept across calls (static tensors/pointers, global caches): outputs may be replayed"),
    ("cuda_graph_in_source", [r"cudaGraph\w*", r"cudaStreamBeginCapture", r"CUDAGraph", r"torch\.cuda\.graph\b",
                              r"make_graphed_callables"],
     "CUDA graphs: launches replayed from a capture"),
    ("monkeypatch_in_source", [r"(?m)^\s*(?:torch|time|F|nn|np|numpy)\.[\w.]+\s*=(?!=)",
                               r"setattr\s*\(\s*(?:torch|time|F|nn|builtins)\b", r"\bimport\s+builtins\b",
                               r"__builtins__", r"sys\.modules\s*\[", r"sys\.settrace|sys\.setprofile",
                               r"\bgc\.get_objects\b", r"inspect\.(?:stack|currentframe)|sys\._getframe"],
     "assigns into torch/time/builtins or inspects the caller: timers or checks may be patched"),
    ("torch_compile_in_source", [r"torch\.compile\s*\(", r"torch\._dynamo", r"torch\._inductor"],
     "torch.compile inside the candidate: the library generates the kernel"),
    ("reduced_precision_in_source", [r"__float2half", r"__float2bfloat16", r"\bwmma::", r"mma\.sync", r"\btf32\b",
                                     r"allow_tf32", r"\.half\s*\(\s*\)", r"\.bfloat16\s*\(\s*\)", r"torch\.float16",
                                     r"torch\.bfloat16", r"at::kHalf|at::kBFloat16|torch::kHalf|torch::kBFloat16",
                                     r"set_float32_matmul_precision"],
     "lower-precision arithmetic: check the measured error, not only the verdict"),
]


# Reaching into the process around the kernel: its objects, frames and code, the processes
# around it. No kernel needs any of it to compute its output, and every attack on the
# verification found so far (docs/attacks.md) starts with one, so it blocks.
INTERFERENCE = ("process_interference_in_source", [
    r"\bgc\.get_(?:objects|referrers|referents)\b", r"\bsys\._getframe\b",
    r"\binspect\.(?:stack|currentframe|getouterframes|getmembers)\b", r"\.f_back\b|\.f_locals\b|\.f_globals\b",
    r"__code__\s*=(?!=)", r"\bsys\.modules\b", r"/proc/", r"\bos\.(?:fork|forkpty|setsid|kill|killpg|getppid|_exit)\b",
    r"\bsignal\.(?:signal|pthread_kill|setitimer)\b", r"\batexit\b", r"\bsys\.excepthook\b",
    r"\bctypes\b", r"\bptrace\b", r"\bgetppid\s*\(", r"\bkill\s*\(\s*getppid",
    # hooks that run code when the harness does something (guard.trigger_state), and the profiler itself
    r"\bsys\.monitoring\b", r"\bgc\.callbacks\b", r"\bsys\.(?:setprofile|settrace|addaudithook)\b",
    r"\bthreading\.(?:setprofile|settrace)", r"\bsys\.(?:meta_path|path_hooks)\b", r"\.f_trace\b",
    r"\bcupti\w*|libcupti", r"TORCH_LIBRARY_IMPL\s*\(\s*aten\b", r"Library\s*\(\s*[\"']aten[\"']"],
    "reaches into the process or the processes around the kernel (objects, frames, code, hooks, signals, /proc)")


def _blank(text):
    return "".join(ch if ch == "\n" else " " for ch in text)


_CUDA_ONLY = re.compile(r"__global__|__device__|<<<|\bcuda_sources\s*=|#include\s*<cuda|\bcuda[A-Z]\w*\s*\(")


def needs_cuda(src: str, kind: str) -> bool:
    """Does this candidate contain CUDA device code (or build some)? Such code cannot be
    judged on the CPU: a CPU run would only report that the host compiler rejects it."""
    text = strip_python_comments(src) if kind == "model_new" else strip_cpp_comments(src)
    return bool(_CUDA_ONLY.search(text))


def strip_cpp_comments(src: str) -> str:
    """Blank // and /* */ comments (newlines kept, so line numbers hold); keep literals."""
    out, i, n = [], 0, len(src)
    while i < n:
        c = src[i]
        if c == "/" and i + 1 < n and src[i + 1] == "/":
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(_blank(src[i:j]))
            i = j
        elif c == "/" and i + 1 < n and src[i + 1] == "*":
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(_blank(src[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and src[j] != c and src[j] != "\n":
                j += 2 if src[j] == "\\" else 1
            out.append(src[i:j + 1])
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def strip_python_comments(src: str) -> str:
    """Blank # comments; C++ comments inside string literals (inline kernels) too."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(src).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return src
    starts, pos = [], 0
    for line in src.splitlines(True):
        starts.append(pos)
        pos += len(line)
    starts.append(pos)
    chars = list(src)
    for tok in tokens:
        if tok.type not in (tokenize.COMMENT, tokenize.STRING):
            continue
        a = starts[tok.start[0] - 1] + tok.start[1]
        b = starts[tok.end[0] - 1] + tok.end[1]
        if tok.type == tokenize.COMMENT:
            chars[a:b] = list(_blank(src[a:b]))
        elif "{" in tok.string or "#include" in tok.string:
            lit = src[a:b]
            q = min(i for i in (lit.find("'"), lit.find('"')) if i >= 0)
            ql = 3 if lit[q:q + 3] in ("'''", '"""') else 1
            body = lit[q + ql:len(lit) - ql]
            chars[a + q + ql:b - ql] = list(strip_cpp_comments(body))
    return "".join(chars)


def _line_of(text, pos):
    return text.count("\n", 0, pos) + 1


def _hits(regexes, text, limit=6):
    """'line N: snippet' for each match, one per line, in line order."""
    found = {}
    for rx in regexes:
        for m in re.finditer(rx, text):
            line = _line_of(text, m.start())
            if line not in found:
                found[line] = text[m.start():m.start() + 60].splitlines()[0].strip()
    return ["line %d: %s" % (ln, found[ln]) for ln in sorted(found)[:limit]]


# Calls of torch ops in Python source: torch.X(, F.X(, torch.nn.functional.X(, .X( methods,
# and nn.X( modules (by their functional names: Conv2d -> conv2d).
_PY_OP_CALL = re.compile(r"(?:\btorch\.(?:nn\.functional\.)?|\bF\.|\.)([a-z_][a-z0-9_]*)\s*\(")
_PY_MODULE = re.compile(r"\bnn\.([A-Z][A-Za-z0-9]*)\s*\(")
# Glue, not the task's arithmetic: what allocating, shaping and moving data is called.
_GLUE_OPS = {
    "tensor", "empty", "empty_like", "zeros", "zeros_like", "ones", "ones_like", "full", "full_like", "randn",
    "rand", "arange", "view", "reshape", "contiguous", "to", "cuda", "cpu", "float", "half", "double", "size",
    "dim", "numel", "clone", "detach", "copy_", "permute", "transpose", "unsqueeze", "squeeze", "flatten",
    "expand", "repeat", "cat", "stack", "chunk", "split", "item", "tolist", "device", "get_default_dtype",
    "manual_seed", "no_grad", "parameter", "super", "forward", "__init__", "sequential", "modulelist", "module",
    "register_buffer", "append", "items", "keys", "values", "get", "format", "range", "len", "is_contiguous",
    "data_ptr", "stride", "type", "new_empty", "new_zeros", "fill_", "zero_", "t", "narrow", "select",
}


def python_ops(text: str) -> set[str]:
    """Lower-case names of the torch ops a Python source calls, glue left out."""
    names = {m.group(1).rstrip("_") for m in _PY_OP_CALL.finditer(text) if not m.group(1).startswith("__")}
    names |= {m.group(1).lower() for m in _PY_MODULE.finditer(text)}
    return {n for n in names if n and n not in _GLUE_OPS}


# The scan's yes/no questions, each as alternatives (the text has one of them somewhere).
HAS_KERNEL = [r"__global__", r"\basm\s*(?:volatile\s*)?\(", r"\btriton\.jit\b", r"RawKernel", r"cuda\.jit"]
HAS_LOOP = [r"\bfor\s*\(", r"\bwhile\s*\(", r"parallel_for", r"#pragma\s+omp"]
BUILDS = [r"load_inline", r"cpp_extension", r"\bload\s*\(", r"triton", r"cupy", r"numba"]


class Finder:
    """How the scan looks for its patterns: with ``re``, each pattern over the whole text. The
    import's screening passes one that skips patterns which cannot match and so gives the same
    answers faster (kernels/screening_scan.py); the judge keeps this one."""

    hits = staticmethod(_hits)
    strip_cpp_comments = staticmethod(strip_cpp_comments)

    @staticmethod
    def has_any(alternatives: Iterable[str | re.Pattern[str]], text: str) -> bool:
        return any(re.search(pattern, text) for pattern in alternatives)


def scan(src: str, kind: str, device: str, reference_src: str | None = None,
         finder: type[Finder] = Finder) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Return (flags, summary) for the candidate source. With ``reference_src``, a ModelNew
    that builds no kernel and calls every op the reference's own code calls is a library
    call presented as a kernel: the judge decides that from text, where no trick at run
    time (hiding from an op recorder) can change it."""
    is_python = kind == "model_new"
    text = strip_python_comments(src) if is_python else finder.strip_cpp_comments(src)
    flags, summary = [], {}
    lib = finder.hits([_CPP_LIB, _CPP_METHOD, _VENDOR] + ([_PY_LIB, _PY_METHOD] if is_python else []), text,
                      limit=12)
    summary["library_ops"] = lib
    if lib:
        flags.append(checks.flag("library_ops_in_source", False,
                                 "library compute calls in the candidate: " + "; ".join(lib), source="static"))
    for name, regexes, why in PATTERNS:
        hits = finder.hits(regexes, text)
        summary[name] = hits
        if hits:
            flags.append(checks.flag(name, False, "%s (%s)" % ("; ".join(hits), why), source="static"))
    name, regexes, why = INTERFERENCE
    hits = finder.hits(regexes, text)
    summary[name] = hits
    if hits:
        flags.append(checks.flag(name, True, "%s (%s)" % ("; ".join(hits), why), source="static"))
    has_kernel = finder.has_any(HAS_KERNEL, text)
    has_loop = finder.has_any(HAS_LOOP, text)
    builds = finder.has_any(BUILDS, text)
    summary.update(has_kernel=has_kernel, has_loop=has_loop)
    if kind == "cuda_forward" and lib:
        kernelless = (not has_kernel) if device == "cuda" else (not has_kernel and not has_loop)
        if kernelless:
            flags.append(checks.flag("no_custom_kernel", True,
                                     "the source defines no kernel (%s) yet calls library compute ops (%s): the "
                                     "forward is a library call" % ("no __global__ function or inline asm"
                                                                    if device == "cuda" else "no loop",
                                                                    "; ".join(lib[:4])), source="static"))
    if kind == "model_new" and not builds and not has_kernel:
        key_ops = python_ops(strip_python_comments(reference_src)) if reference_src else set()
        reused = sorted(key_ops & python_ops(text))
        summary["reference_ops_called"] = reused
        if key_ops and reused == sorted(key_ops):
            flags.append(checks.flag("no_custom_kernel", True,
                                     "ModelNew builds no extension, defines no kernel and calls the reference's own "
                                     "op(s) %s: the library does the work" % ", ".join(reused), source="static"))
        else:
            flags.append(checks.flag("no_custom_kernel", False,
                                     "ModelNew builds no extension and defines no kernel: it runs PyTorch ops only",
                                     source="static"))
    return flags, summary
