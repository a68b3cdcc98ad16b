"""Turning source text into callables: modules from Python source, extensions from
C++/CUDA source (``load_inline``, cached by code hash), and the environment record.

No Django imports here: this file ships inside the verification bundle.
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.util
import os
import platform
import subprocess
import sys
import tempfile
from typing import TYPE_CHECKING

import torch

from . import build_pch
from . import environ_get

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from types import ModuleType
    from typing import Any


class BuildError(Exception):
    """The candidate's extension did not build; the message carries the compiler output."""


def default_build_dir() -> str:
    base = environ_get("VERIFIER_BUILD_DIR")
    if base:
        return base
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "kb_harness", "builds")


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _atomic_write(path, text):
    if os.path.exists(path):
        with open(path, encoding="utf-8", errors="surrogateescape") as fh:
            if fh.read() == text:
                return
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape") as fh:
        fh.write(text)
    os.replace(tmp, path)


def module_from_source(src: str, role: str, build_dir: str) -> ModuleType:
    """Import Python source as a real module file (tracebacks and inspect work)."""
    digest = sha256_text(src)[:16]
    src_dir = os.path.join(build_dir, "sources")
    os.makedirs(src_dir, exist_ok=True)
    path = os.path.join(src_dir, "%s_%s.py" % (role, digest))
    _atomic_write(path, src)
    name = "kb_%s_%s" % (role, digest)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


@contextlib.contextmanager
def exclusive_build(folder: str) -> Iterator[None]:
    """Hold ``folder`` for one build at a time, and clear torch's build locks left in it.

    torch's own lock is a file (``lock``) that a build killed half-way (a timeout, a crash, a
    runner stopped by its judge) leaves behind; every later build of the same source then
    waits for it for ever, and a hostile runner could plant one for a source it expects to be
    verified later. An flock is released by the kernel when its holder dies, so under it any
    ``lock`` file is a leftover and goes."""
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, ".kb_build.flock"), "a") as holder:
        fcntl.flock(holder, fcntl.LOCK_EX)
        for root, _dirs, files in os.walk(folder):
            if "lock" in files:
                os.remove(os.path.join(root, "lock"))
        yield


@contextlib.contextmanager
def captured_output(sink: list[str], limit: int = 20000) -> Iterator[None]:
    """Capture fd 1 and 2 (compiler output, prints from C++) into sink, echo to stderr."""
    sys.stdout.flush()
    sys.stderr.flush()
    tmp = tempfile.TemporaryFile()
    saved = os.dup(1), os.dup(2)
    os.dup2(tmp.fileno(), 1)
    os.dup2(tmp.fileno(), 2)
    try:
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.close(saved[0])
        os.close(saved[1])
        tmp.seek(0)
        text = tmp.read().decode("utf-8", "replace")
        tmp.close()
        if text:
            sys.stderr.write(text)
            sink.append(text[-limit:])


class JsonStdout:
    """A program whose stdout carries only one JSON document: from construction on, fd 1 goes
    to stderr (so the candidate's and the compiler's prints cannot corrupt the document), and
    ``write(text)`` puts the document on the real stdout, looping over partial writes."""

    def __init__(self) -> None:
        sys.stdout.flush()
        self.fd = os.dup(1)
        os.dup2(2, 1)

    def write(self, text: str) -> None:
        sys.stdout.flush()
        data = (text + "\n").encode()
        while data:
            data = data[os.write(self.fd, data):]
        os.close(self.fd)


def cuda_arch(device: str) -> str:
    """'9.0' for an H100/H200: read from the device, never assumed."""
    major, minor = torch.cuda.get_device_capability(torch.device(device))
    return "%d.%d" % (major, minor)


def build_flags(device: str, arch: str | None = None) -> tuple[list[str], list[str], str | None]:
    """Host flags, nvcc flags and the device architecture ('9.0'; read from the device unless
    given). ``-lineinfo`` maps each machine instruction to its source line (for ncu's source
    view and the SASS listing, verifier/gpu_binary.py); it changes no generated code."""
    cflags = ["-O3"]
    cuda_flags = ["-O3", "-lineinfo"] if device == "cuda" else []
    if device != "cuda":
        arch = None
    elif arch is None:
        arch = cuda_arch(device)
    return cflags, cuda_flags, arch


def extension_name(src: str, device: str, arch: str | None = None) -> str:
    """The build's folder and module name; ``arch`` spares a caller that knows it (the worker,
    reading a finished build) from starting CUDA to ask the device."""
    cflags, cuda_flags, arch = build_flags(device, arch)
    key = "\0".join([src, device, " ".join(cflags), " ".join(cuda_flags), arch or "", torch.__version__,
                     str(torch.version.cuda)])
    return "kb_" + sha256_text(key)[:20]


# What load_inline puts before CUDA source text in its cuda.cu (verifier/gpu_binary.py maps the
# listing's lines back onto the kernel's past these three).
CUDA_SOURCE_PREFIX = ("#include <torch/types.h>", "#include <cuda.h>", "#include <cuda_runtime.h>")


def build_cuda_forward(src: str, device: str, build_dir: str, log: list[str],
                       pch_header: str | None = None) -> tuple[ModuleType, dict[str, Any]]:
    """Build a C++/CUDA source exposing `forward` via PYBIND11_MODULE.

    On cuda the text goes to nvcc, on cpu to the host compiler (cpp_sources).  The extension
    name is the sha256 of source, flags, device architecture and torch version, so a second
    run loads the cached build.

    On cuda only ``cuda.cu`` is compiled: the same file, with the same three include lines
    first, and the same nvcc command as ``load_inline(cuda_sources=src)`` (``load`` on that
    file), without load_inline's ``main.cpp``, which here holds nothing but
    ``#include <torch/extension.h>`` (the source defines its own PYBIND11_MODULE) and cost a
    second compile of torch's headers, ~20 of a build's ~110 CPU seconds.
    ``pch_header`` (cpu: verifier/core/build_pch.py) only makes the build faster: the same
    object comes out, so it is not part of the name. (It is part of the build command, so
    the judge names it on every CPU build, or ninja would build a cached source again.)
    """
    from torch.utils.cpp_extension import load_inline

    cflags, cuda_flags, arch = build_flags(device)
    name = extension_name(src, device)
    bdir = os.path.join(build_dir, name)
    os.makedirs(bdir, exist_ok=True)
    env_backup = os.environ.get("TORCH_CUDA_ARCH_LIST")
    if arch:  # +PTX: the PTX is kept in the binary beside the machine code (gpu_binary.py lists both)
        os.environ["TORCH_CUDA_ARCH_LIST"] = arch + "+PTX"
    try:
        with exclusive_build(bdir), captured_output(log):
            if device == "cuda":
                from torch.utils.cpp_extension import load

                cuda_source = os.path.join(bdir, "cuda.cu")
                _atomic_write(cuda_source, "\n".join(CUDA_SOURCE_PREFIX + (src,)))  # unchanged: no rebuild
                ext = load(name=name, sources=[cuda_source], extra_cflags=cflags, extra_cuda_cflags=cuda_flags,
                           build_directory=bdir, with_cuda=True, verbose=True)
            else:
                ext = load_inline(name=name, cpp_sources=src, extra_cflags=cflags + build_pch.include_flags(pch_header),
                                  build_directory=bdir, with_cuda=False, verbose=True)
    except Exception as exc:
        raise BuildError(str(exc)[-8000:]) from None
    finally:
        if arch:
            if env_backup is None:
                os.environ.pop("TORCH_CUDA_ARCH_LIST", None)
            else:
                os.environ["TORCH_CUDA_ARCH_LIST"] = env_backup
    if not hasattr(ext, "forward"):
        raise BuildError("the extension built but exposes no `forward` (PYBIND11_MODULE must define it)")
    info = {"name": name, "build_directory": bdir, "cflags": cflags, "cuda_cflags": cuda_flags, "arch": arch}
    if pch_header and device != "cuda":
        info["precompiled_header"] = pch_header
    return ext, info


def extension_dir_for_model_new(src: str, build_dir: str) -> str:
    """Per-candidate TORCH_EXTENSIONS_DIR so load_inline inside ModelNew caches by code hash."""
    path = os.path.join(build_dir, "model_new", sha256_text(src + torch.__version__)[:16])
    os.makedirs(path, exist_ok=True)
    return path


def nvidia_smi(fields: Sequence[str], gpu: str | None = None) -> dict[str, str] | None:
    """``{field: value}`` of ``nvidia-smi --query-gpu`` for one GPU (``gpu``: its PCI address,
    which nvidia-smi takes since it ignores CUDA_VISIBLE_DEVICES; None: the first GPU), or None
    when nvidia-smi cannot answer."""
    command = ["nvidia-smi", "--query-gpu=" + ",".join(fields), "--format=csv,noheader,nounits"]
    if gpu:
        command.insert(1, "--id=" + gpu)
    try:
        out = subprocess.run(command, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    lines = out.stdout.strip().splitlines() if out.returncode == 0 else []
    values = [value.strip() for value in lines[0].split(",")] if lines else []
    return dict(zip(fields, values)) if len(values) == len(fields) else None


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def collect_versions(device: str, harness_version: str, harness_sha: str) -> dict[str, Any]:
    info = {
        "harness": harness_version,
        "harness_sha256": harness_sha,
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "driver": None,
        "gpu": None,
        "gpu_capability": None,
        "cpu": _cpu_model(),
        "platform": platform.platform(),
    }
    if device == "cuda" and torch.cuda.is_available():
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        info["gpu"] = props.name
        info["gpu_capability"] = "%d.%d" % (props.major, props.minor)
        info["gpu_memory_bytes"] = int(props.total_memory)
        info["driver"] = (nvidia_smi(["driver_version"]) or {}).get("driver_version")
    return info
