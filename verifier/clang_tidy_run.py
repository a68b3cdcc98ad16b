"""Lint a kernel's source with clang-tidy the way the archive did (no Django).

The archive's Clang_Tidy column is ``{'stdout', 'stderr', 'errored'}`` from clang-tidy 20
run on each ``base.cu`` as CUDA compiled for the host only, against torch's headers and a
CUDA toolkit at /usr/local/cuda. Its 102-row sample names only these checks:
bugprone-narrowing-conversions, bugprone-easily-swappable-parameters,
bugprone-macro-parentheses, bugprone-implicit-widening-of-multiplication-result,
performance-unnecessary-value-param, performance-unnecessary-copy-initialization,
concurrency-mt-unsafe, clang-analyzer-deadcode.DeadStores and clang-diagnostic-error; no
readability-, modernize-, misc- or cppcoreguidelines- check (they would fire on nearly every
kernel), and no alias pairs such as ``[bugprone-narrowing-conversions,cppcoreguidelines-...]``.
So CHECKS below is clang-tidy's defaults (clang-diagnostic-*, clang-analyzer-*) plus the
bugprone, performance and concurrency groups.

How a source is linted:
- ``model_new`` kernels are Python: nothing to lint, ``None``.
- ``cuda_forward`` sources with CUDA constructs go in ``kernel.cu`` and are linted with
  ``-x cuda --cuda-host-only``; pure C++ (the CPU candidates) goes in ``kernel.cpp``.
- torch's and Python's include dirs are passed with ``-isystem`` (as torch's own extension
  builds do), so warnings inside those headers are counted as "non-user code" and
  suppressed; only the kernel's own file is reported.
- With a CUDA toolkit (CUDA_HOME / CUDA_PATH, /usr/local/cuda, or nvcc on PATH) clang uses
  it through ``--cuda-path``. Two headers that a partial install may lack are supplied as
  stubs in a compat dir: ``curand_mtgp32_kernel.h`` (clang's CUDA wrapper force-includes it;
  CUDA 13 ships curand separately) and ``c10/cuda/impl/cuda_cmake_macros.h`` (generated only
  in CUDA builds of torch). CUDA 13's ``include/cccl`` (thrust, cub) is added when present.
- Without a toolkit (CI) clang runs with ``-nocudainc -nocudalib`` and a small stub of the
  CUDA runtime (qualifiers, threadIdx/blockIdx/... from clang's own builtin-vars header,
  dim3, streams, errors, common intrinsics and atomics). The checks that matter here
  (narrowing from ``threadIdx.x``, swappable parameters, macro parentheses, tensors by value)
  then give the same warnings as with a toolkit, but any CUDA API outside the stub is a
  ``clang-diagnostic-error``; ``errored`` is then true and stderr says the stub was used.

Output paths are rewritten from the temp dir to the bare file name (``kernel.cu:LINE:COL``),
so the kernel page can anchor warnings to its own line numbers.

A lint is a function of what goes in: with a cache folder (``cache_dir``, or ``$VERIFIER_LINT_CACHE_DIR``)
a finished lint is kept under the sha256 of the source, the kind, the full command (temp paths
left out), the clang-tidy binary (path, size, mtime), the toolkit, torch's and Python's versions,
this file and its CUDA stub (clang_tidy_cuda_stub.py), and the same lint again is read back instead of parsing torch's headers for
another half minute. A lint that timed out or could not start is never kept.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

from .core import environ_get
from .clang_tidy_cuda_stub import CUDA_STUB

CHECKS = ",".join(
    [
        "clang-diagnostic-*",
        "clang-analyzer-*",
        "bugprone-*",
        "performance-*",
        "concurrency-*",
    ]
)
# A lint's limits. Its cost is CPU (parsing torch's headers: ~30 s of a core), and on a loaded GPU
# host, where lints run niced beside builds and judges, its wall time is mostly waiting for a core:
# on the H200 worker (load average 40-150 on 16 cores) a 120 s wall limit stopped the lints of 24
# of 86 kernels (tests/fixtures/h200/worker_levers_2026_12_01.json). So the limit is on CPU time,
# with a generous wall backstop.
CPU_LIMIT_S = 120
WALL_LIMIT_S = 1800
TORCH_DEFINES = ["-DTORCH_EXTENSION_NAME=kernel", "-DTORCH_API_INCLUDE_EXTENSION_H"]
_CUDA_CONSTRUCT = re.compile(
    r"__global__|__device__|__shared__|<<<|\bthreadIdx\b|\bblockIdx\b|#\s*include\s*[<\"](?:cuda|ATen/cuda|c10/cuda)"
)
_NO_TOOLKIT_NOTE = (
    "note: no CUDA toolkit was found (CUDA_HOME, CUDA_PATH, /usr/local/cuda, nvcc on PATH); "
    "clang-tidy ran with -nocudainc and the project's minimal stub of the CUDA runtime "
    "(verifier/clang_tidy_run.py), so errors about CUDA names or headers may come from the stub, "
    "not from the kernel.\n"
)


LINT_CACHE_VARIABLE = "VERIFIER_LINT_CACHE_DIR"


def run_clang_tidy(source: str, *, kind: str, cpu_limit_s: float = CPU_LIMIT_S, timeout_s: float = WALL_LIMIT_S,
                   cuda_home: str | None = "auto", cache_dir: str | os.PathLike | None = "env") -> dict | None:
    """``{'stdout', 'stderr', 'errored'}`` like the archive's column, or None for Python kernels.

    cuda_home: "auto" finds a toolkit; None lints CUDA without one (the stub); a path uses it.
    cache_dir: "env" reads $VERIFIER_LINT_CACHE_DIR (unset: no cache); None: no cache; a folder.
    Never raises for bad code: a compile error, a limit reached or a missing binary is
    ``errored=True`` with the reason in stderr. ``cpu_limit_s`` bounds the lint's CPU time,
    ``timeout_s`` its wall time (a backstop for a lint that waits on nothing).
    """
    if kind == "model_new":
        return None
    if kind != "cuda_forward":
        raise ValueError(f"unknown kernel kind {kind!r}")
    is_cuda = bool(_CUDA_CONSTRUCT.search(source or ""))
    file_name = "kernel.cu" if is_cuda else "kernel.cpp"
    binary = clang_tidy_binary()
    if binary is None:
        return {"stdout": "", "stderr": "clang-tidy is not installed (pip install clang-tidy)\n", "errored": True}
    toolkit = find_cuda_home() if cuda_home == "auto" else cuda_home
    with tempfile.TemporaryDirectory(prefix="clang_tidy_") as tmp:
        work = Path(tmp)
        (work / file_name).write_text(source or "", encoding="utf-8")
        compat = work / "compat"
        flags = _compile_flags(is_cuda, toolkit, compat)
        command = [binary, file_name, f"-checks=-*,{CHECKS}", "--", *flags]
        cache = _LintCache(cache_dir, source, kind, command, work, toolkit)
        kept = cache.read()
        if kept is not None:
            return kept
        try:
            # Its own session: a worker stopping gracefully (SIGINT to its process group) lets the
            # jobs it is running finish, and this lint is part of one (seen killed at -2 on the H200).
            # At a lower CPU priority: the job waits for its lint only at its end, while the judges
            # beside it hold the GPU (LINT_NICE).
            done = subprocess.run(
                command, cwd=work, capture_output=True, text=True, errors="replace", timeout=timeout_s,
                env=_tool_env(), start_new_session=True, preexec_fn=lambda: _niced_with_cpu_limit(cpu_limit_s),
            )
        except subprocess.TimeoutExpired as exc:
            return {
                "stdout": _relative(_text(exc.stdout), work),
                "stderr": f"clang-tidy did not finish within {timeout_s:g} s (wall clock) and was stopped\n",
                "errored": True,
            }
        except OSError as exc:
            return {"stdout": "", "stderr": f"clang-tidy could not run: {exc}\n", "errored": True}
    if done.returncode == -signal.SIGXCPU:  # the CPU limit (_niced_with_cpu_limit)
        return {"stdout": _relative(done.stdout, work),
                "stderr": f"clang-tidy used more than {cpu_limit_s:g} s of CPU and was stopped\n", "errored": True}
    if done.returncode == -signal.SIGKILL:  # the CPU limit's hard stop, or the system (out of memory)
        return {"stdout": _relative(done.stdout, work), "errored": True,
                "stderr": f"clang-tidy was killed (SIGKILL: past its {cpu_limit_s:g} s CPU limit, or by the system)\n"}
    stdout, stderr = _relative(done.stdout, work), _relative(done.stderr, work)
    errored = done.returncode != 0 or bool(re.search(r"^\S+:\d+:\d+: (?:fatal )?error: ", stdout, re.M))
    if is_cuda and toolkit is None:
        stderr = _NO_TOOLKIT_NOTE + stderr
    if done.returncode != 0 and not stderr.strip():
        stderr = f"clang-tidy exited with status {done.returncode}\n"
    return cache.write({"stdout": stdout, "stderr": stderr, "errored": errored})


def _torch_version() -> str:
    """The installed torch's version (its headers are what clang-tidy parses), without importing it."""
    from importlib import metadata

    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return "none"


class _LintCache:
    """One lint's place in the cache folder (a no-op without one)."""

    def __init__(self, cache_dir, source: str, kind: str, command: list[str], work: Path, toolkit: str | None):
        folder = environ_get(LINT_CACHE_VARIABLE) if cache_dir == "env" else cache_dir
        self.path = None
        if not folder:
            return
        binary = Path(command[0])
        stat = binary.stat()
        what = {"source": source, "kind": kind, "command": [_relative(a, work) for a in command[1:]],
                "binary": [str(binary.resolve()), stat.st_size, stat.st_mtime_ns], "toolkit": toolkit,
                "torch": _torch_version(), "python": sys.version, "linter": Path(__file__).read_text(),
                "cuda_stub": CUDA_STUB}
        key = hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()
        self.path = Path(folder) / key[:2] / f"{key}.json"

    def read(self) -> dict | None:
        if self.path is None:
            return None
        try:
            kept = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return None
        shape_ok = isinstance(kept, dict) and set(kept) == {"stdout", "stderr", "errored"}
        return kept if shape_ok else None

    def write(self, result: dict) -> dict:
        if self.path is not None:
            try:  # written whole, then renamed: a reader never sees half a lint
                self.path.parent.mkdir(parents=True, exist_ok=True)
                part = self.path.with_suffix(".%d.part" % os.getpid())
                part.write_text(json.dumps(result))
                os.replace(part, self.path)
            except OSError:
                pass  # a cache that cannot be written costs the next lint its time, nothing else
        return result


LINT_NICE = 10


def _niced_with_cpu_limit(cpu_limit_s: float) -> None:
    try:
        os.nice(LINT_NICE)
    except OSError:
        pass
    soft = max(1, math.ceil(cpu_limit_s))
    resource.setrlimit(resource.RLIMIT_CPU, (soft, soft + 5))  # SIGXCPU, then SIGKILL 5 s later


def clang_tidy_binary() -> str | None:
    """The clang-tidy next to this interpreter (the PyPI package's entry point), else on PATH."""
    beside = Path(sys.executable).parent / "clang-tidy"
    return str(beside) if beside.exists() else shutil.which("clang-tidy")


def find_cuda_home() -> str | None:
    """A CUDA toolkit with headers: CUDA_HOME, CUDA_PATH, /usr/local/cuda, then nvcc on PATH."""
    candidates = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    nvcc = shutil.which("nvcc")
    if nvcc:
        candidates.append(str(Path(nvcc).resolve().parent.parent))
    for candidate in candidates:
        if candidate and (Path(candidate) / "include" / "cuda_runtime.h").is_file():
            return candidate
    return None


def include_dirs() -> list[str]:
    """torch's extension include dirs and Python's, as torch.utils.cpp_extension builds use."""
    from torch.utils.cpp_extension import include_paths

    return [*include_paths(), sysconfig.get_paths()["include"]]


def _compile_flags(is_cuda: bool, toolkit: str | None, compat: Path) -> list[str]:
    torch_dirs = include_dirs()
    flags = ["-std=c++17", *TORCH_DEFINES]
    compat_dirs = []
    if not any((Path(d) / "c10/cuda/impl/cuda_cmake_macros.h").is_file() for d in torch_dirs):
        _write(compat / "c10/cuda/impl/cuda_cmake_macros.h", "#pragma once\n#define C10_CUDA_BUILD_SHARED_LIBS\n")
        compat_dirs.append(compat)
    if is_cuda:
        flags += ["-x", "cuda", "--cuda-host-only"]
        if toolkit:
            flags.append(f"--cuda-path={toolkit}")
            if not (Path(toolkit) / "include" / "curand_mtgp32_kernel.h").is_file():
                _write(compat / "curand_mtgp32_kernel.h", "#pragma once\n")
                compat_dirs.append(compat)
            cccl = Path(toolkit) / "include" / "cccl"
            if cccl.is_dir():
                compat_dirs.append(cccl)
        else:
            stub = compat / "cuda_stub"
            for header in ("cuda.h", "cuda_runtime.h", "cuda_runtime_api.h", "device_launch_parameters.h"):
                _write(stub / header, '#pragma once\n#include "__kernel_lint_cuda_stub.h"\n')
            _write(stub / "__kernel_lint_cuda_stub.h", CUDA_STUB)
            flags += ["-nocudainc", "-nocudalib", "-include", str(stub / "__kernel_lint_cuda_stub.h")]
            compat_dirs.append(stub)
    seen = []
    for directory in [*torch_dirs, *map(str, compat_dirs)]:
        if directory not in seen:
            seen.append(directory)
    for directory in seen:
        flags += ["-isystem", directory]
    return flags


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _relative(text: str, work: Path) -> str:
    """Drop the temp dir from paths (its resolved form too: /tmp may be a symlink)."""
    for prefix in {str(work.resolve()), str(work)}:
        text = text.replace(prefix + os.sep, "")
    return text


def _text(value) -> str:
    if value is None:
        return ""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def _tool_env() -> dict:
    """clang-tidy needs no credentials: only the path, locale and temp dir."""
    return {key: value for key, value in os.environ.items() if key in ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR")}
