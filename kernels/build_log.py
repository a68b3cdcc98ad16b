"""The first real compiler error in a build log, and the kernel line it points at. No ORM.

An archive's error text is the whole `load_inline`/ninja output: extension paths, nvcc command
lines, warnings, then somewhere `kernel.cu(14): error: identifier "tid" is undefined`, then
"Error building extension". Readers want that one line and a link to the source line.

Recognised: nvcc/EDG `file(LINE): error: ...`, gcc/clang `file:LINE:COL: error: ...` and
`fatal error`, ptxas `ptxas error : ...`, the linker's `undefined reference`. When the build
itself did not fail, the first runtime error line (`CUDA error: ...`, `RuntimeError: ...`).

Line numbers: `load_inline` writes its sources after a few lines of its own includes (see
LOAD_INLINE_PREFIX_LINES), so a line number is trusted only when the source line nvcc echoes
under the error, or the error's own identifiers, are found on that line of the kernel;
otherwise the echoed line is looked up in the kernel, and failing that the error is shown
without a link.
"""
import re
from dataclasses import dataclass

_NVCC = re.compile(r"^(?P<file>[^\s(][^(]*?)\((?P<line>\d+)\): (?P<kind>error|catastrophic error)\s*:?\s*(?P<message>.+)$")
_GCC = re.compile(r"^(?P<file>[^\s:][^:]*?):(?P<line>\d+):(?:(?P<column>\d+):)? (?P<kind>error|fatal error): (?P<message>.+)$")
_PTXAS = re.compile(r"^ptxas (?:fatal|error)\s*:\s*(?P<message>.+)$")
_LINKER = re.compile(r"(?P<message>undefined (?:reference|symbol).+)$")
_RUNTIME = re.compile(r"(?P<message>(?:CUDA error|RuntimeError|Error testing CUDA kernel|illegal memory access|"
                      r"an illegal instruction).*)$")
# How many lines load_inline puts in front of the CUDA source it compiles (torch's includes).
LOAD_INLINE_PREFIX_LINES = (0, 3, 4, 1, 2)
_QUOTED = re.compile(r'"([A-Za-z_]\w*)"')


@dataclass(frozen=True)
class BuildError:
    message: str  # the error as the compiler wrote it, without the file part
    kind: str  # "compile", "ptxas", "link" or "runtime"
    file: str = ""  # base name of the file the compiler named
    line: int | None = None  # the kernel's line it points at, when it could be placed
    log_line: int = 0  # 1-based line of the log it was found on
    excerpt: str = ""  # the source line nvcc echoed under it, if any

    @property
    def anchor(self) -> str:
        return f"L-{self.line}" if self.line else ""


def first_build_error(log: str, code: str) -> BuildError | None:
    """The first compiler (then ptxas, linker, runtime) error of `log`, placed on `code`'s lines."""
    if not log:
        return None
    lines = log.splitlines()
    for number, raw in enumerate(lines, start=1):
        text = raw.strip()
        match = _NVCC.match(text) or _GCC.match(text)
        if match:
            excerpt = lines[number].strip() if number < len(lines) and _looks_like_echo(lines[number]) else ""
            return BuildError(message=match.group("message").strip(), kind="compile",
                              file=match.group("file").rsplit("/", 1)[-1], log_line=number, excerpt=excerpt,
                              line=_place(int(match.group("line")), match.group("message"), excerpt, code))
    for pattern, kind in ((_PTXAS, "ptxas"), (_LINKER, "link"), (_RUNTIME, "runtime")):
        for number, raw in enumerate(lines, start=1):
            match = pattern.search(raw.strip())
            if match:
                return BuildError(message=match.group("message").strip(), kind=kind, log_line=number)
    return None


def _looks_like_echo(line: str) -> bool:
    # nvcc prints the offending source line indented, then a caret line.
    return line.startswith(" ") and bool(line.strip()) and not line.strip().startswith("^")


def _place(reported: int, message: str, excerpt: str, code: str) -> int | None:
    source = code.splitlines()
    if excerpt:
        for offset in LOAD_INLINE_PREFIX_LINES:
            line = reported - offset
            if 1 <= line <= len(source) and source[line - 1].strip() == excerpt:
                return line
        found = [n for n, text in enumerate(source, start=1) if text.strip() == excerpt]
        if len(found) == 1:
            return found[0]
    names = _QUOTED.findall(message)
    if names:
        for offset in LOAD_INLINE_PREFIX_LINES:
            line = reported - offset
            if 1 <= line <= len(source) and all(re.search(rf"\b{re.escape(n)}\b", source[line - 1]) for n in names):
                return line
        return None
    return reported if 1 <= reported <= len(source) else None
