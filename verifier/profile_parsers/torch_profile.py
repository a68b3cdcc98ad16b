"""Parser for torch.profiler's ``key_averages().table()`` text, into the archive's Torch_Profile shape.

The archive's Torch_Profile column is ``{event_name: {cpu_time_total, device_time_total, ...}}``.
Keys follow the attribute names of torch's FunctionEventAvg (``self_cpu_time_total``,
``device_time_total``, ``self_device_memory_usage``, ...) with two readable exceptions:
averages are ``cpu_time_avg`` / ``device_time_avg`` and the call count is ``calls``.
Times are floats in microseconds, memory in bytes, percentages as plain floats (90.23).
"""
from __future__ import annotations

import re

# Header text → key. torch prints "CUDA" on CUDA builds and "Device"/"XPU"/... on others;
# all of them are the accelerator's columns, hence the device_* keys.
_DEVICE_WORDS = ("CUDA", "Device", "XPU", "MTIA", "HPU", "PrivateUse1")
_COLUMN_KEYS = {
    "Name": "name",
    "Self CPU %": "self_cpu_percent",
    "Self CPU": "self_cpu_time_total",
    "CPU total %": "cpu_percent",
    "CPU total": "cpu_time_total",
    "CPU time avg": "cpu_time_avg",
    "CPU Mem": "cpu_memory_usage",
    "Self CPU Mem": "self_cpu_memory_usage",
    "# of Calls": "calls",
    "Input Shapes": "input_shapes",
}
for _word in _DEVICE_WORDS:
    _COLUMN_KEYS.update(
        {
            f"Self {_word}": "self_device_time_total",
            f"Self {_word} %": "self_device_percent",
            f"{_word} total": "device_time_total",
            f"{_word} time avg": "device_time_avg",
            f"{_word} Mem": "device_memory_usage",
            f"Self {_word} Mem": "self_device_memory_usage",
        }
    )

_TIME_UNITS_US = {"us": 1.0, "ms": 1e3, "s": 1e6}
# torch's _format_memory is binary; older releases print "Kb", newer ones "KB".
_MEMORY_UNITS_BYTES = {"b": 1, "Kb": 1024, "Mb": 1024**2, "Gb": 1024**3, "B": 1, "KB": 1024, "MB": 1024**2, "GB": 1024**3}
_TIME = re.compile(r"^(-?[\d.]+)(us|ms|s)$")
_MEMORY = re.compile(r"^(-?[\d.]+) (b|Kb|Mb|Gb|B|KB|MB|GB)$")
_PERCENT = re.compile(r"^(-?[\d.]+)%$")
_DASHES = re.compile(r"^-+(?:  +-+)+\s*$")
# Totals summed when an event name repeats (tables grouped by input shape or stack).
_ADDITIVE = ("self_cpu_time_total", "cpu_time_total", "self_device_time_total", "device_time_total", "calls",
             "self_cpu_percent", "cpu_percent", "self_device_percent", "device_percent",
             "cpu_memory_usage", "self_cpu_memory_usage", "device_memory_usage", "self_device_memory_usage")


def _column_key(header: str) -> str:
    return _COLUMN_KEYS.get(header) or re.sub(r"[^0-9a-z]+", "_", header.lower()).strip("_")


def _cell_value(key: str, text: str, row_number: int):
    if key in ("name", "input_shapes"):
        return text
    if key == "calls":
        if not text.isdigit():
            raise ValueError(f"torch profile table: row {row_number}: '# of Calls' is {text!r}, not a count")
        return int(text)
    for pattern, scale in ((_TIME, _TIME_UNITS_US), (_MEMORY, _MEMORY_UNITS_BYTES)):
        if match := pattern.match(text):
            return float(match.group(1)) * scale[match.group(2)]
    if match := _PERCENT.match(text):
        return float(match.group(1))
    if key.endswith(("_time_total", "_time_avg", "_percent", "_memory_usage")):
        raise ValueError(f"torch profile table: row {row_number}: column {key!r} has unreadable value {text!r}")
    try:  # other numeric columns, e.g. "Total MFLOPs"
        return float(text)
    except ValueError:
        return text


def parse_torch_profile_table(text: str) -> dict[str, dict]:
    """The first key_averages table in ``text`` → {event name: {column key: value}}."""
    if not isinstance(text, str):
        raise ValueError(f"torch profile table: expected text, got {type(text).__name__}")
    lines = text.splitlines()
    start = next(
        (i for i in range(len(lines) - 2)
         if _DASHES.match(lines[i]) and lines[i + 1].strip().startswith("Name") and _DASHES.match(lines[i + 2])),
        None,
    )
    if start is None:
        raise ValueError("torch profile table: no key_averages table (dash rule, 'Name' header, dash rule) found")
    column_count = len(re.findall(r"-+", lines[start]))
    headers = _split_cells(lines[start + 1], lines[start], column_count)
    keys = [_column_key(header) for header in headers]
    if "name" not in keys or not {"cpu_time_total", "self_cpu_time_total"} & set(keys):
        raise ValueError(f"torch profile table: unexpected header {headers!r}")

    events: dict[str, dict] = {}
    row_number = 0
    for line in lines[start + 3 :]:
        if _DASHES.match(line) or not line.strip():
            break
        row_number += 1
        cells = dict(zip(keys, _split_cells(line, lines[start], column_count)))
        values = {key: _cell_value(key, cell, row_number) for key, cell in cells.items()}
        name = values.pop("name")
        if not name:
            raise ValueError(f"torch profile table: row {row_number} has no event name")
        if name in events:
            _merge_repeated_event(events[name], values)
        else:
            events[name] = values
    if not events:
        raise ValueError("torch profile table: header found but no event rows")
    return events


def _split_cells(line: str, dash_rule: str, column_count: int) -> list[str]:
    """Cells of one table line.

    torch pads each cell to its column's width and joins them with two spaces, but a
    cell wider than its column ("CUDA time avg" in a 12-wide column) shifts everything
    after it, so splitting on runs of 2+ spaces is the reliable cut. Only when a cell is
    blank or holds a double space does that miscount; then fall back to the dash rule.
    """
    cells = re.split(r"\s{2,}", line.strip())
    if len(cells) == column_count:
        return cells
    ends = [match.end() for match in re.finditer(r"-+", dash_rule)]
    cuts = [0] + ends[:-1] + [None]
    return [line[cuts[i] : cuts[i + 1]].strip() for i in range(column_count)]


def _merge_repeated_event(event: dict, more: dict) -> None:
    for key in _ADDITIVE:
        if key in event and key in more:
            event[key] += more[key]
    calls = event.get("calls") or 0
    for average, total in (("cpu_time_avg", "cpu_time_total"), ("device_time_avg", "device_time_total")):
        if average in event and total in event and calls:
            event[average] = event[total] / calls
