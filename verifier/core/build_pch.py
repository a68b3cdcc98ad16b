"""A precompiled ``torch/extension.h`` for host-compiler builds (``--device cpu``).

Parsing torch's headers is most of a C++ extension's build: about 19 of 29 CPU seconds for a
ten-line kernel with GCC 12 and torch 2.13. GCC reads a ``.gch`` beside a header named by
``-include`` instead, when it was compiled with the same options; when it does not match, GCC
ignores it (``-Winvalid-pch`` says why in the build log) and parses the header: a mismatch
costs time, never correctness. The candidate's source is compiled exactly as before:
``load_inline`` puts the same ``#include <torch/extension.h>`` first; the header guards make
that second include a no-op.

The judge builds it, never the runner: it sits beside the build cache, outside the folders the
runner may write (verifier/core/confine.py), so a candidate cannot plant code into later builds
through it. Built once per compiler, flags and torch, under a lock; concurrent judges wait.
"""
from __future__ import annotations

import fcntl
import hashlib
import inspect
import os
import re
import subprocess
import sysconfig

from . import environ_get

HEADER_TEXT = "#include <torch/extension.h>\n"
BUILD_TIMEOUT_S = 600


def pch_dir_for(build_dir: str) -> str:
    """Beside the build cache, not inside it: the runner may write the build cache.
    ``VERIFIER_PCH_DIR`` names one folder for many build caches (a test session whose tests
    each build into a folder of their own); it is ignored when it and the build cache overlap."""
    build = os.path.abspath(build_dir).rstrip(os.sep)
    shared = environ_get("VERIFIER_PCH_DIR")
    if shared:
        shared = os.path.abspath(shared).rstrip(os.sep)
        if not _overlap(shared, build):
            return shared
    return build + "-pch"


def _overlap(a, b):
    return a == b or a.startswith(b + os.sep) or b.startswith(a + os.sep)


def _cxx_standard():
    # The standard load_inline compiles with (c++17 before torch 2.10, c++20 since), read from
    # the very function that writes its build file, so the PCH matches this torch.
    from torch.utils import cpp_extension

    try:
        source = inspect.getsource(cpp_extension._write_ninja_file_to_build_library)
    except (AttributeError, OSError, TypeError):
        return "-std=c++17"
    found = re.search(r"'(-std=c\+\+\d+)'", source)
    return found.group(1) if found else "-std=c++17"


def compile_flags(extra_cflags: list[str]) -> list[str]:
    """load_inline's host-compiler flags for a CPU extension, but for the extension's name."""
    from torch.utils.cpp_extension import include_paths

    includes = include_paths("cpu") + [sysconfig.get_path("include", scheme="posix_prefix")]
    flags = ["-DTORCH_API_INCLUDE_EXTENSION_H"]
    for path in includes:
        flags += ["-isystem", path]
    return flags + ["-fPIC", _cxx_standard()] + list(extra_cflags)


def ensure(build_dir: str, extra_cflags: list[str], log: list[str] | None = None) -> str | None:
    """Path of the header to ``-include`` (its ``.gch`` built), or None when it cannot be built
    here (no GCC, a read-only cache): the build then parses torch's headers as usual."""
    import torch

    compiler = os.environ.get("CXX", "c++")
    try:
        version = subprocess.run([compiler, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    if "Free Software Foundation" not in version:  # GCC's PCH; clang's differ
        return None
    flags = compile_flags(extra_cflags)
    signature = hashlib.sha256("\0".join([version, torch.__version__] + flags).encode()).hexdigest()[:20]
    folder = os.path.join(pch_dir_for(build_dir), signature)
    header = os.path.join(folder, "torch_extension.h")
    try:
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, ".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # one judge builds; the others wait for it
            if not os.path.exists(header + ".gch"):
                _build(compiler, flags, folder, header)
    except (OSError, subprocess.SubprocessError) as exc:
        if log is not None:
            log.append("precompiled torch/extension.h unavailable: %s" % str(exc)[-500:])
        return None
    return header


def _build(compiler, flags, folder, header):
    tmp_header = os.path.join(folder, "building.h")
    with open(tmp_header, "w") as fh:
        fh.write(HEADER_TEXT)
    subprocess.run([compiler, "-x", "c++-header"] + flags + [tmp_header, "-o", tmp_header + ".gch"],
                   check=True, capture_output=True, timeout=BUILD_TIMEOUT_S)
    with open(header, "w") as fh:
        fh.write(HEADER_TEXT)
    os.replace(tmp_header + ".gch", header + ".gch")  # the .gch appears whole or not at all
    os.remove(tmp_header)


def include_flags(header: str | None) -> list[str]:
    """What the extension's build adds: the header (GCC takes its .gch) and a warning in the
    build log when GCC could not use it."""
    return ["-include", header, "-Winvalid-pch"] if header else []
