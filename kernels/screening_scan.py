"""The harness's static scan (verifier/static_scan.py), the same findings computed fast enough
to screen a 30,000-kernel import (no ORM).

`scan(src, kind, device, reference_src=None)` returns what `verifier.static_scan.scan` returns,
flag for flag and hit for hit: it reads the verifier's own patterns and runs them in the same
order, but skips each regex that cannot match (kernels/regex_prefilter.py: a string every
match contains is absent) and blanks C++ comments with one regex instead of a loop over
characters. The verifier's scan took ~2-8 ms per kernel, most of it spent trying forty-odd
patterns that begin with `\\b` at every position; this one ~0.3 ms. tests/kernels/
test_screening_scan.py checks both give the same answer on every real and generated source.
"""
import re

from verifier import checks
from verifier import static_scan as harness

from .regex_prefilter import could_match, filter_possible, literal_first

# strip_cpp_comments as one pass of a regex: at each position the loop tries `//`, `/*`, then
# a quote (kept, up to its closing quote or the end of its line, a backslash skipping the next
# character), else copies one character; alternatives are tried in that order here too.
_CPP_TOKEN = re.compile(r"""//[^\n]*|/\*(?:.*?\*/|.*)|"(?:\\.?|[^"\\\n])*["\n]?|'(?:\\.?|[^'\\\n])*['\n]?""", re.S)
_LIB_CPP = [harness._CPP_LIB, harness._CPP_METHOD, harness._VENDOR]
_LIB_PY = _LIB_CPP + [harness._PY_LIB, harness._PY_METHOD]
# The scan's three yes/no searches, each `A|B|...` written as its alternatives: A|B matches
# somewhere exactly when one of A, B does, and a literal alternative is found at C speed.
_HAS_KERNEL = [r"__global__", r"\basm\s*(?:volatile\s*)?\(", r"\btriton\.jit\b", r"RawKernel", r"cuda\.jit"]
_HAS_LOOP = [r"\bfor\s*\(", r"\bwhile\s*\(", r"parallel_for", r"#pragma\s+omp"]
_BUILDS = [r"load_inline", r"cpp_extension", r"\bload\s*\(", r"triton", r"cupy", r"numba"]


def strip_cpp_comments(src: str) -> str:
    """verifier.static_scan.strip_cpp_comments, the same text."""
    return _CPP_TOKEN.sub(_blank_comment, src)


def _blank_comment(match) -> str:
    token = match.group()
    if token[0] == "/":  # harness._blank: spaces for every character but newlines
        return "\n".join(" " * len(line) for line in token.split("\n"))
    return token


def _hits(regexes, text, limit=6):
    return harness._hits([literal_first(regex) for regex in filter_possible(regexes, text)], text, limit=limit)


def _search(alternatives, text) -> bool:
    return any(could_match(pattern, text) and literal_first(pattern).search(text) for pattern in alternatives)


def scan(src, kind, device, reference_src=None):
    """verifier.static_scan.scan, the same (flags, summary)."""
    is_python = kind == "model_new"
    text = harness.strip_python_comments(src) if is_python else strip_cpp_comments(src)
    flags, summary = [], {}
    lib = _hits(_LIB_PY if is_python else _LIB_CPP, text, limit=12)
    summary["library_ops"] = lib
    if lib:
        flags.append(checks.flag("library_ops_in_source", False,
                                 "library compute calls in the candidate: " + "; ".join(lib), source="static"))
    for name, regexes, why in harness.PATTERNS:
        hits = _hits(regexes, text)
        summary[name] = hits
        if hits:
            flags.append(checks.flag(name, False, "%s (%s)" % ("; ".join(hits), why), source="static"))
    name, regexes, why = harness.INTERFERENCE
    hits = _hits(regexes, text)
    summary[name] = hits
    if hits:
        flags.append(checks.flag(name, True, "%s (%s)" % ("; ".join(hits), why), source="static"))
    has_kernel = _search(_HAS_KERNEL, text)
    has_loop = _search(_HAS_LOOP, text)
    summary.update(has_kernel=has_kernel, has_loop=has_loop)
    if kind == "cuda_forward" and lib:
        kernelless = (not has_kernel) if device == "cuda" else (not has_kernel and not has_loop)
        if kernelless:
            flags.append(checks.flag("no_custom_kernel", True,
                                     "the source defines no kernel (%s) yet calls library compute ops (%s): the "
                                     "forward is a library call" % ("no __global__ function or inline asm"
                                                                    if device == "cuda" else "no loop",
                                                                    "; ".join(lib[:4])), source="static"))
    if kind == "model_new" and not has_kernel and not _search(_BUILDS, text):
        key_ops = harness.python_ops(harness.strip_python_comments(reference_src)) if reference_src else set()
        reused = sorted(key_ops & harness.python_ops(text)) if key_ops else []
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
