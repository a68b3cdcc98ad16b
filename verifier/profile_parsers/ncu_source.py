"""ncu's source page → the hot spots of each profiled kernel (no Django).

``ncu --import R --csv --page source --print-source cuda,sass`` (Nsight Compute 2025.3) prints,
for each profiled launch, two key/value records and one table:

    "File Path","/.../cuda.cu"
    "Function Name","matmul_tiled(const float *, ...)"
    "Line No","Source","Address","Source","Warp Stall Sampling (All Samples)",...
    "18","    for (int t = 0; ...","-","-","57",...          <- a CUDA line, its instructions summed
    "","","0x7f42877a0150","      BRA `(.L_x_1)","3",...   <- one SASS instruction of that line

``--print-source sass`` prints ``"Kernel Name",...`` and the table from ``"Address"`` on, with no
lines. The table is read by its header, not by position (the two "Source" columns are told
apart by where they stand against "Address"), so a column that a version adds is no trouble.

Launches of one function are summed (the worker profiles 5). An instruction is named by its
offset in the function (``0160``, as nvdisasm and cuobjdump print it), so it can be found in
the SASS listing; a line is the file's own line number (the page maps it onto the kernel's
source with the listing's ``line_map``). The share of a hot spot is its part of all the
warp-stall samples taken in the function: where the warps were waiting, and on what.
"""
from __future__ import annotations

import csv
import io
import os
import re

TOP = 12
SAMPLES = "Warp Stall Sampling (All Samples)"
NOT_ISSUED = "Warp Stall Sampling (Not-issued Samples)"
EXECUTED = "Instructions Executed"
_KEYS = {"File Path", "File Name", "Function Name", "Kernel Name"}
_NUMBER = re.compile(r"^-?[\d,]*\.?\d+(?:[eE][+-]?\d+)?$")
_STALL_COLUMN = re.compile(r"^stall_(\w+)$")


def _number(text: str) -> float | None:
    text = (text or "").strip()
    return float(text.replace(",", "")) if _NUMBER.match(text) else None


def _tables(text: str):
    """(keys, header, rows) per launch: keys are the records before the table."""
    keys, header, rows = {}, None, []
    lines = [line for line in text.splitlines() if line.startswith('"')]
    for record in csv.reader(io.StringIO("\n".join(lines))):
        if record and record[-1] == "":  # a trailing comma
            record = record[:-1]
        if not record:
            continue
        if record[0] in _KEYS and len(record) == 2:
            if header is not None:
                yield keys, header, rows
                keys, header, rows = {}, None, []
            keys[record[0]] = record[1]
        elif header is None:
            header = record
        else:
            rows.append(record)
    if header is not None:
        yield keys, header, rows


def parse_ncu_source_csv(text: str, top: int = TOP) -> dict:
    """{"kernels": [{"function", "file", "launches", "total_samples", "instructions",
    "hot_instructions": [{"offset", "sass", "line", "samples", "share", "not_issued", "executed",
    "stalls"}], "hot_lines": [{"line", "source", "samples", "share"}]}]}; ValueError when the page
    holds no table with warp-stall samples."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("empty source page")
    functions: dict[str, dict] = {}
    for keys, header, rows in _tables(text):
        if "Address" not in header or SAMPLES not in header:
            continue
        address_at = header.index("Address")
        samples_at = header.index(SAMPLES)
        sass_at = next((i for i in range(address_at + 1, len(header)) if header[i] == "Source"), None)
        line_at = header.index("Line No") if "Line No" in header[:address_at] else None
        cuda_at = next((i for i in range(address_at) if header[i] == "Source"), None)
        not_issued_at = header.index(NOT_ISSUED) if NOT_ISSUED in header else None
        executed_at = header.index(EXECUTED) if EXECUTED in header else None
        stall_columns = [(i, match.group(1)) for i, name in enumerate(header) if (match := _STALL_COLUMN.match(name))]
        name = (keys.get("Function Name") or keys.get("Kernel Name") or "?")[:500]
        function = functions.setdefault(name, {"function": name, "file": os.path.basename(
            keys.get("File Path") or keys.get("File Name") or ""), "launches": 0, "by_offset": {}, "by_line": {}})
        function["launches"] += 1
        width = len(header)
        parsed, line, line_text = [], None, {}
        for row in rows:
            row = row + [""] * (width - len(row))
            address = row[address_at].strip()
            if not address.startswith("0x"):
                number = _number(row[line_at]) if line_at is not None else None
                if number is not None:  # a CUDA line: the instructions below it are its own
                    line = int(number)
                    line_text[line] = row[cuda_at] if cuda_at is not None else ""
                continue  # else "...": a gap between the line's address ranges
            parsed.append((int(address, 16), row, line))
        if not parsed:
            continue
        base = min(address for address, _row, _line in parsed)
        for address, row, line in parsed:
            spot = function["by_offset"].setdefault(address - base, {
                "offset": "%04x" % (address - base), "sass": (row[sass_at] if sass_at is not None else "").strip()[:300],
                "line": line, "samples": 0, "not_issued": 0, "executed": 0, "stalls": {}})
            spot["samples"] += int(_number(row[samples_at]) or 0)
            spot["not_issued"] += int(_number(row[not_issued_at]) or 0) if not_issued_at is not None else 0
            spot["executed"] += int(_number(row[executed_at]) or 0) if executed_at is not None else 0
            for index, reason in stall_columns:
                if count := int(_number(row[index]) or 0):
                    spot["stalls"][reason] = spot["stalls"].get(reason, 0) + count
            if line is not None:
                by_line = function["by_line"].setdefault(line, {"line": line, "source": line_text.get(line, "")[:300],
                                                                "samples": 0})
                by_line["samples"] += int(_number(row[samples_at]) or 0)
    kernels = []
    for function in functions.values():
        spots = list(function.pop("by_offset").values())
        lines = list(function.pop("by_line").values())
        total = sum(spot["samples"] for spot in spots)
        for item in spots + lines:
            item["share"] = round(item["samples"] / total, 4) if total else None
        for spot in spots:  # the three reasons it waited most, most first
            spot["stalls"] = dict(sorted(spot["stalls"].items(), key=lambda kv: -kv[1])[:3])
        function.update(
            total_samples=total, instructions=len(spots),
            hot_instructions=sorted((s for s in spots if s["samples"] > 0), key=lambda s: -s["samples"])[:top],
            hot_lines=sorted((s for s in lines if s["samples"] > 0), key=lambda s: -s["samples"])[:top],
        )
        kernels.append(function)
    if not kernels:
        raise ValueError("no table with an 'Address' column and warp-stall samples found")
    return {"kernels": kernels}
