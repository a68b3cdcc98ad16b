"""Reading the CUDA toolkit's listings of a built extension (no Django, no tools run here):
``cuobjdump -res-usage``, ``cuobjdump -sass``, ``nvdisasm -g``, ``cuobjdump -ptx`` and
``ptxas -v`` output, as verifier/gpu_binary.py collects it. Every text is the candidate
binary's, so it is untrusted: listings are capped, and the page escapes them."""
from __future__ import annotations

import os
import re

MAX_LISTING_LINES = 4000  # SASS or PTX lines kept per function; the rest is counted, not kept
_ARCH = re.compile(r"^\s*arch = (sm_\d+[a-z]?)\s*$")
_RES_FUNCTION = re.compile(r"^\s*Function (\S+):\s*$")
_RES_FIELD = re.compile(r"([A-Z]+(?:\[\d+\])?):(\d+)")
_SASS_CODE_FOR = re.compile(r"^\s*code for (sm_\d+[a-z]?)\s*$")
_SASS_FUNCTION = re.compile(r"^\s*Function : (\S+)\s*$")
_SASS_END = re.compile(r"^\s*\.{4,}\s*$")
_SASS_ENCODING = re.compile(r"\s*/\* 0x[0-9a-f]{16} \*/\s*$")
_SASS_INSTRUCTION = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;?\s*$")
_PTX_ENTRY = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+)?\.entry\s+([A-Za-z_$][\w$]*)")
_PTX_TARGET = re.compile(r"^\s*\.target\s+(sm_\d+[a-z]?)")
_PTXAS_COMPILING = re.compile(r"Compiling entry function '([^']+)'")
_PTXAS_PROPERTIES = re.compile(r"Function properties for (\S+)")
_PTXAS_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_PTXAS_USED = re.compile(r"Used (\d+) registers(?:, used (\d+) barriers)?")
_LOCAL_OPCODE = re.compile(r"^(?:@!?U?P\w+\s+)?(LDL|STL)\b")


def parse_res_usage(text: str) -> list[dict]:
    """``cuobjdump -res-usage``: one dict per (arch, function) with registers, stack, shared,
    local and constant memory in bytes (REG is a count)."""
    rows, arch, current = [], None, None
    for line in text.splitlines():
        if match := _ARCH.match(line):
            arch = match.group(1)
        elif match := _RES_FUNCTION.match(line):
            current = {"arch": arch, "mangled": match.group(1)}
            rows.append(current)
        elif current is not None and (fields := _RES_FIELD.findall(line)):
            values = {key: int(value) for key, value in fields}
            current.update(
                registers=values.get("REG"), stack_bytes=values.get("STACK"), shared_bytes=values.get("SHARED"),
                local_bytes=values.get("LOCAL"), texture=values.get("TEXTURE"), surface=values.get("SURFACE"),
                sampler=values.get("SAMPLER"),
                constant_bytes={key[len("CONSTANT["):-1]: value for key, value in values.items()
                                if key.startswith("CONSTANT[")},
            )
            current = None
    return rows


def parse_sass(text: str) -> list[dict]:
    """``cuobjdump -sass``: one block per (arch, function): the instructions with their
    offsets and no hex encodings, the instruction count, and the local-memory loads and
    stores (LDL/STL: spills, or arrays the compiler put in local memory)."""
    blocks, arch, current = [], None, None
    for line in text.splitlines():
        if current is None:
            if match := (_SASS_CODE_FOR.match(line) or _ARCH.match(line)):
                arch = match.group(1)
            elif match := _SASS_FUNCTION.match(line):
                current = {"arch": arch, "mangled": match.group(1), "lines": [], "instructions": 0,
                           "local_loads": 0, "local_stores": 0}
            continue
        if _SASS_END.match(line):
            blocks.append(_finish_sass(current))
            current = None
            continue
        stripped = _SASS_ENCODING.sub("", line).rstrip()
        if not stripped.strip() or stripped.lstrip().startswith(".headerflags"):
            continue
        if match := _SASS_INSTRUCTION.match(stripped):
            current["instructions"] += 1
            opcode = _LOCAL_OPCODE.match(match.group(2))
            if opcode:
                current["local_loads" if opcode.group(1) == "LDL" else "local_stores"] += 1
            stripped = f"/*{match.group(1)}*/ {match.group(2)}{' ;' if not match.group(2).endswith(';') else ''}"
        current["lines"].append(stripped.strip() if not stripped.lstrip().startswith("/*") else stripped.strip())
    if current is not None:  # cut short: keep what came
        blocks.append(_finish_sass(current))
    return blocks


def _finish_sass(block: dict) -> dict:
    text, count = _capped("\n".join(block.pop("lines")))
    block["sass"], block["sass_lines"] = text, count
    return block


_NV_SECTION = re.compile(r"^//-+ (\S+) -+\s*$")


_NV_LINE = re.compile(r'^\s*//## File "([^"]*)", line (\d+)')


_NV_DIRECTIVE = re.compile(r"^\s*\.(section|align|global|weak|type|size|other|text\.\S+:)")


_NV_TARGET = re.compile(r"^\s*\.target\s+(sm_\d+[a-z]?)")


def parse_nvdisasm(text: str, arch: str | None = None) -> list[dict]:
    """``nvdisasm -c -g`` of a cubin: one block per function (its ``.text.NAME`` section) with
    the instructions as ``parse_sass`` gives them and, before each run of instructions from one
    source line, a marker ``//## FILE:LINE`` (the file's base name; ``files`` maps it to the
    path the build recorded). ``entry``: the function is a kernel (``__global__``)."""
    blocks, current = [], None
    for line in text.splitlines():
        if match := _NV_TARGET.match(line):
            arch = arch or match.group(1)
            continue
        if match := _NV_SECTION.match(line):
            if current is not None:
                blocks.append(_finish_sass(current))
            name = match.group(1)
            current = None
            if name.startswith(".text."):
                current = {"arch": arch, "mangled": name[len(".text."):], "lines": [], "instructions": 0,
                           "local_loads": 0, "local_stores": 0, "files": {}}
            continue
        if current is None or not line.strip():
            continue
        if _NV_DIRECTIVE.match(line):
            if "STO_CUDA_ENTRY" in line:  # .other NAME,@"STO_CUDA_ENTRY ...": a __global__ function
                current["entry"] = True
            continue
        if match := _NV_LINE.match(line):
            base = os.path.basename(match.group(1)) or "?"
            current["files"].setdefault(base, match.group(1))
            current["lines"].append(f"//## {base}:{match.group(2)}")
            continue
        if line.strip() in (current["mangled"] + ":", ".text." + current["mangled"] + ":"):
            continue
        if match := _SASS_INSTRUCTION.match(line):
            current["instructions"] += 1
            if opcode := _LOCAL_OPCODE.match(match.group(2)):
                current["local_loads" if opcode.group(1) == "LDL" else "local_stores"] += 1
            end = "" if match.group(2).endswith(";") else " ;"
            current["lines"].append(f"/*{match.group(1)}*/ {match.group(2)}{end}")
        else:
            current["lines"].append(line.strip())
    if current is not None:
        blocks.append(_finish_sass(current))
    return blocks


def split_ptx_modules(text: str) -> list[str]:
    """``cuobjdump -ptx`` prints one PTX module per embedded architecture, each after a
    header (arch, code version, identifier, ptxasOptions); the modules without their headers."""
    modules, current, in_header = [], None, False
    for line in text.splitlines():
        if line.startswith("Fatbin ptx code:"):
            if current:
                modules.append("\n".join(current).strip("\n"))
            current, in_header = [], True
            continue
        if line.startswith("Fatbin elf code:"):
            if current:
                modules.append("\n".join(current).strip("\n"))
            current = None
            continue
        if current is None:
            continue
        if in_header and not re.match(r"^\s*(\.|//)", line):
            continue
        in_header = False
        current.append(line)
    if current:
        modules.append("\n".join(current).strip("\n"))
    return modules


def ptx_target(module: str) -> str | None:
    for line in module.splitlines():
        if match := _PTX_TARGET.match(line):
            return match.group(1)
    return None


def ptx_entries(module: str) -> dict[str, str]:
    """{mangled name: its ``.entry`` text, from the declaration to its closing brace}."""
    entries, lines, index = {}, module.splitlines(), 0
    while index < len(lines):
        match = _PTX_ENTRY.match(lines[index])
        if not match:
            index += 1
            continue
        start, depth, seen_body = index, 0, False
        while index < len(lines):
            depth += lines[index].count("{") - lines[index].count("}")
            seen_body = seen_body or "{" in lines[index]
            index += 1
            if seen_body and depth <= 0:
                break
        entries[match.group(1)] = "\n".join(lines[start:index])
    return entries


def parse_ptxas_verbose(text: str) -> dict[str, dict]:
    """``ptxas -v``: {mangled: {registers, barriers, stack_bytes, spill_store_bytes, spill_load_bytes}}."""
    functions, current = {}, None
    for line in text.splitlines():
        if match := (_PTXAS_COMPILING.search(line) or _PTXAS_PROPERTIES.search(line)):
            current = functions.setdefault(match.group(1), {})
        elif current is not None and (match := _PTXAS_FRAME.search(line)):
            current.update(stack_bytes=int(match.group(1)), spill_store_bytes=int(match.group(2)),
                           spill_load_bytes=int(match.group(3)))
        elif current is not None and (match := _PTXAS_USED.search(line)):
            current["registers"] = int(match.group(1))
            if match.group(2) is not None:
                current["barriers"] = int(match.group(2))
    return functions


# --- running the tools ---


def _capped(text: str) -> tuple[str, int]:
    """(the first MAX_LISTING_LINES lines, how many lines there were)."""
    lines = text.splitlines()
    return "\n".join(lines[:MAX_LISTING_LINES]), len(lines)
