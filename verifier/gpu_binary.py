"""What the GPU ran: the SASS, PTX and resource usage of a built extension's kernels (no Django).

Given the shared objects a verification built, this runs the CUDA toolkit's own readers of
them, each with a timeout:

- ``cuobjdump -res-usage``: per function, registers per thread, stack frame, static shared
  memory, local memory and constant banks, as the binary records them;
- ``cuobjdump -sass``: the machine code (SASS) per function; the hex encodings are dropped;
- ``cuobjdump -ptx``: the PTX the build kept beside it (verifier/core/build.py embeds it), per
  ``.entry``;
- ``ptxas -v`` over that PTX, for the spill stores and loads (bytes) and barriers, which
  only the assembler reports (the binary does not record them): the same PTX through the
  same ptxas gives the build's own numbers, and its register count is checked against the
  binary's;
- ``cu++filt`` (or ``c++filt``) for readable names.

``gpu_binary_listing`` returns one JSON-able dict. A missing toolkit, a tool that fails or
times out, or no binary at all never raise: the answer is ``{"unavailable": why, ...}`` or
a listing with the failing part named under ``problems``. The binary is the candidate's,
so every text that comes out of it is untrusted: the page escapes it.
"""
from __future__ import annotations

import glob
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from typing import TYPE_CHECKING

from .profile_parsers.cuda_binary import (  # the listings' readers; callers may reach them here too
    _capped, parse_nvdisasm, parse_ptxas_verbose, parse_res_usage, parse_sass, ptx_entries, ptx_target,
    split_ptx_modules)

if TYPE_CHECKING:
    from collections.abc import Iterable

TOOL_TIMEOUT_S = 60
MAX_OUTPUT_BYTES = 64 * 1024 * 1024  # a tool's output beyond this is cut (a hostile binary can be large)
MAX_FUNCTIONS = 64
MAX_BINARIES = 8
LISTING_VERSION = 1


def find_tool(name: str, search_path: str | None = None) -> str | None:
    """The tool's path: on ``search_path`` (PATH when None), else in the CUDA toolkit's bin."""
    found = shutil.which(name, path=search_path)
    if found or search_path is not None:
        return found
    for base in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if base and os.access(os.path.join(base, "bin", name), os.X_OK):
            return os.path.join(base, "bin", name)
    return None


def extension_binaries(source: str, kind: str, build_dir: str | os.PathLike[str], arch: str | None) -> list[str]:
    """The shared objects that building ``source`` left in ``build_dir`` (verifier/core/build.py's
    layout): the extension of a cuda_forward source, named by its own hash (so the worker
    finds it from the source, not from anything the candidate reported), or the extensions a
    model_new module built into its own folder. [] when there are none."""
    from .core import build

    if kind == "cuda_forward":
        if not arch or not re.fullmatch(r"\d+\.\d+[a-z]?", str(arch)):
            return []
        name = build.extension_name(source, "cuda", arch)
        paths = [os.path.join(build_dir, name, name + ".so")]
    else:
        import torch

        folder = os.path.join(build_dir, "model_new", build.sha256_text(source + torch.__version__)[:16])
        paths = sorted(glob.glob(os.path.join(folder, "*", "*.so")))
    return [path for path in paths if os.path.isfile(path)][:MAX_BINARIES]


def gpu_binary_listing(binaries: Iterable[str | os.PathLike[str]], *, source: str | None = None, search_path: str | None = None,
                       timeout_s: float = TOOL_TIMEOUT_S) -> dict:
    """SASS, PTX and resource usage of every function in ``binaries`` (paths of .so/.cubin
    files), as one JSON-able dict (module docstring). ``source``: the kernel's source, to map
    the SASS's line info onto its lines (``line_map`` per function). ``search_path``: where to
    look for the tools (PATH and the CUDA toolkit when None)."""
    binaries = [str(path) for path in binaries][:MAX_BINARIES]
    if not binaries:
        return {"unavailable": "no GPU binary was built (the build failed, or it was a CPU build)"}
    cuobjdump = find_tool("cuobjdump", search_path)
    if cuobjdump is None:
        return {"unavailable": "cuobjdump (from the CUDA toolkit) is not installed on this worker"}
    tools = {"cuobjdump": cuobjdump, "nvdisasm": find_tool("nvdisasm", search_path),
             "ptxas": find_tool("ptxas", search_path),
             "demangler": find_tool("cu++filt", search_path) or find_tool("c++filt", search_path)}
    listing = {"version": LISTING_VERSION, "tools": _tool_versions(tools, timeout_s), "binaries": [],
               "functions": [], "problems": [], "raw_res_usage": ""}
    functions: dict[tuple[str, str], dict] = {}
    raw_usage = []
    for path in binaries:
        listing["binaries"].append({"file": os.path.basename(path), "bytes": os.path.getsize(path),
                                    "sha256": _file_sha256(path)})
        usage = _run([cuobjdump, "-res-usage", path], timeout_s)
        if "error" in usage:
            listing["problems"].append(f"cuobjdump -res-usage {os.path.basename(path)}: {usage['error']}")
        else:
            raw_usage.append(usage["text"])
            for row in parse_res_usage(usage["text"]):
                functions.setdefault((row["arch"], row["mangled"]), {}).update(row)
        sass = _disassemble(cuobjdump, tools["nvdisasm"], path, timeout_s)
        if "error" in sass:
            listing["problems"].append(f"cuobjdump -sass {os.path.basename(path)}: {sass['error']}")
        else:
            listing["sass_tool"] = sass["tool"]
            for block in sass["blocks"]:
                block["line_map"] = source_line_offsets(block.pop("files", {}), os.path.dirname(path), source)
                functions.setdefault((block["arch"], block["mangled"]), {"arch": block["arch"],
                                                                         "mangled": block["mangled"]}).update(block)
        ptx = _run([cuobjdump, "-ptx", path], timeout_s)
        if "error" in ptx:
            listing["problems"].append(f"cuobjdump -ptx {os.path.basename(path)}: {ptx['error']}")
            continue
        for module in split_ptx_modules(ptx["text"]):
            entries = ptx_entries(module)
            target = ptx_target(module)
            for mangled, text in entries.items():
                row = functions.get((target, mangled)) or next(
                    (f for (arch, name), f in functions.items() if name == mangled), None)
                if row is not None:
                    row["ptx"], row["ptx_lines"] = _capped(text)
                    row["entry"] = True  # a PTX .entry: a __global__ function
            if tools["ptxas"] and entries and target:
                spills = _ptxas_resources(tools["ptxas"], module, target, timeout_s)
                if "error" in spills:
                    listing["problems"].append(f"ptxas -v: {spills['error']}")
                    continue
                for mangled, numbers in spills["functions"].items():
                    row = functions.get((target, mangled))
                    if row is not None:
                        row.update(spill_store_bytes=numbers.get("spill_store_bytes"),
                                   spill_load_bytes=numbers.get("spill_load_bytes"),
                                   barriers=numbers.get("barriers"), ptxas_registers=numbers.get("registers"))
    listing["raw_res_usage"] = "\n".join(raw_usage)[:200_000]
    names = _demangle([mangled for _arch, mangled in functions], tools["demangler"], timeout_s)
    for (arch, mangled), row in sorted(functions.items(), key=lambda item: (not item[1].get("entry", False),
                                                                             item[0][1], item[0][0] or "")):
        row.setdefault("ptx", "")
        row.setdefault("ptx_lines", 0)
        row.setdefault("sass", "")
        row.setdefault("sass_lines", 0)
        row["name"] = names.get(mangled, mangled)
        listing["functions"].append(_ordered(row))
    if len(listing["functions"]) > MAX_FUNCTIONS:
        listing["problems"].append(f"{len(listing['functions'])} functions; the first {MAX_FUNCTIONS} are kept")
        listing["functions"] = listing["functions"][:MAX_FUNCTIONS]
    if not listing["functions"] and not listing["problems"]:
        listing["unavailable"] = "the binary holds no GPU code (a host-only build)"
    listing["arch"] = sorted({row["arch"] for row in listing["functions"] if row.get("arch")})
    return listing


# --- parsers of the tools' text (pure; tests/verifier/test_gpu_binary.py reads real H200 output) ---


def source_line_offsets(files: dict[str, str], binary_dir: str, source: str | None) -> dict[str, int]:
    """{base name: what to add to a line of that file to get the line of ``source``}, for the
    files (as line info names them) that are ``source`` behind a few lines of preamble:
    load_inline's cuda.cu is three #include lines and then the kernel's code. Only files in the
    binary's own build folder are read (the paths come from the candidate's binary)."""
    offsets = {}
    if not source:
        return offsets
    folder = os.path.realpath(binary_dir)
    for base, path in files.items():
        real = os.path.realpath(path)
        if os.path.dirname(real) != folder or not os.path.isfile(real) or os.path.getsize(real) > 4_000_000:
            continue
        with open(real, encoding="utf-8", errors="replace") as fh:
            lines = fh.read().split("\n")
        for skipped in range(0, min(len(lines), 20)):
            body = "\n".join(lines[skipped:]).rstrip("\n")
            at = source.find(body) if body.strip() else -1
            if at >= 0:
                offsets[base] = source.count("\n", 0, at) - skipped
                break
    return offsets


def _run(command: list[str], timeout_s: float, stdin: str | None = None, cwd: str | None = None) -> dict:
    try:
        done = subprocess.run(command, input=stdin.encode() if stdin is not None else None, capture_output=True,
                              timeout=timeout_s, cwd=cwd)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout_s:g} s"}
    except OSError as exc:
        return {"error": f"could not run: {exc}"}
    out = done.stdout[:MAX_OUTPUT_BYTES].decode("utf-8", "replace")
    err = done.stderr[:20000].decode("utf-8", "replace")
    if done.returncode != 0:
        return {"error": f"exit status {done.returncode}: {(err or out).strip()[-2000:]}"}
    return {"text": out, "stderr": err}


def _ptxas_resources(ptxas: str, module: str, target: str, timeout_s: float) -> dict:
    with tempfile.TemporaryDirectory(prefix="kb_ptxas_") as work:
        source = os.path.join(work, "kernel.ptx")
        with open(source, "w", encoding="utf-8") as fh:
            fh.write(module)
        done = _run([ptxas, "-arch=" + target, "-O3", "-v", source, "-o", os.path.join(work, "kernel.cubin")],
                    timeout_s)
    if "error" in done:
        return done
    return {"functions": parse_ptxas_verbose(done["text"] + "\n" + done["stderr"])}


def _tool_versions(tools: dict, timeout_s: float) -> dict:
    """{role: {"path", "version"}}: the release line of NVIDIA's tools ("Cuda compilation
    tools, release 13.0, V13.0.88"), the first line of others; None where a tool is missing."""
    versions = {}
    for role, path in tools.items():
        if not path:
            versions[role] = None
            continue
        done = _run([path, "--version"], timeout_s)
        lines = [line.strip() for line in done.get("text", "").splitlines() if line.strip()]
        release = next((line for line in lines if "release" in line), lines[0] if lines else None)
        versions[role] = {"path": path, "version": release}
    return versions


def _disassemble(cuobjdump: str, nvdisasm: str | None, path: str, timeout_s: float) -> dict:
    """{"blocks", "tool"} or {"error"}: nvdisasm -g over the binary's cubins when there is an
    nvdisasm (it prints each instruction's source line), else cuobjdump -sass."""
    if nvdisasm:
        with tempfile.TemporaryDirectory(prefix="kb_cubins_") as work:
            extracted = _run([cuobjdump, "-xelf", "all", os.path.abspath(path)], timeout_s, cwd=work)
            cubins = sorted(glob.glob(os.path.join(work, "*.cubin")))
            blocks, failed = [], None
            for cubin in cubins[:MAX_BINARIES]:
                arch = re.search(r"\.(sm_\d+[a-z]?)\.cubin$", cubin)
                done = _run([nvdisasm, "-c", "-g", cubin], timeout_s)
                if "error" in done:
                    failed = done["error"]
                    break
                blocks += parse_nvdisasm(done["text"], arch.group(1) if arch else None)
        if "error" not in extracted and cubins and failed is None:
            return {"blocks": blocks, "tool": "nvdisasm -c -g"}
    done = _run([cuobjdump, "-sass", path], timeout_s)
    if "error" in done:
        return done
    return {"blocks": parse_sass(done["text"]), "tool": "cuobjdump -sass"}


def _demangle(names: list[str], demangler: str | None, timeout_s: float) -> dict[str, str]:
    if not names or not demangler:
        return {}
    done = _run([demangler], timeout_s, stdin="\n".join(names) + "\n")
    plain = done.get("text", "").splitlines()
    if len(plain) != len(names):
        return {}
    return {name: readable.strip() or name for name, readable in zip(names, plain)}


def _file_sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


_FIELD_ORDER = ("name", "mangled", "arch", "entry", "registers", "ptxas_registers", "shared_bytes", "stack_bytes",
                "local_bytes", "spill_store_bytes", "spill_load_bytes", "local_loads", "local_stores",
                "constant_bytes", "barriers", "texture", "surface", "sampler", "instructions", "sass_lines",
                "ptx_lines", "line_map", "sass", "ptx")


def _ordered(row: dict) -> dict:
    ordered = {key: row.get(key) for key in _FIELD_ORDER}
    ordered["entry"] = bool(row.get("entry", False))
    ordered["line_map"] = row.get("line_map") or {}
    return ordered
