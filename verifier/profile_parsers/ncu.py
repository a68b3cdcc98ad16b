"""Parsers for Nsight Compute (ncu) output, into the AI CUDA Engineer Archive's shape.

The archive's NCU_Profile column is
``{'metrics': {name: {'unit', 'avg_value', 'variance', 'n'}}, 'rules': {name: {'type', 'description'}}}``,
made from ``ncu --csv --page details`` over 5 launches of a kernel. Reading the archive's
numbers back shows its variance is the population variance (divided by n, not n - 1):
every sample row's (avg_value, variance) pair fits values printed with 2 decimals only
that way. Its ``rules`` dict holds one entry per rule name, the last message winning,
which is what building a dict from the CSV's rows gives.
"""
from __future__ import annotations

import csv
import io
import re
import statistics

# Sections the archive profiled (--section Occupancy WarpStateStats MemoryWorkloadAnalysis
# ComputeWorkloadAnalysis). When a fuller profile repeats a metric name in another section
# ("Memory Throughput" is both a % in Speed Of Light and a rate in Memory Workload
# Analysis), these keep the plain name so lookups mean what they mean in the archive.
ARCHIVE_SECTIONS = ("Compute Workload Analysis", "Memory Workload Analysis", "Warp State Statistics", "Occupancy")

# The text page prints rule messages without the rule's name. These names are the ones
# the archive's CSV rows carry for messages from these sections / with these texts.
RULE_NAME_BY_SECTION = {
    "Compute Workload Analysis": "HighPipeUtilization",
    "Warp State Statistics": "CPIStall",
    "Occupancy": "Occupancy",
}
RULE_NAME_BY_TEXT = {
    "Instructions are executed in warps, which are groups of 32 threads": "ThreadDivergence",
}

_NUMBER = re.compile(r"^[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d+)?(?:[eE][+-]?\d+)?$")
_SPEEDUP_PREFIX = re.compile(r"^Est\. (?:Local |Global )?Speedup: [\d.]+%\s*")
_LAUNCH_LINE = re.compile(r"^  \S.*, Context \d+, Stream \d+")
_SECTION_LINE = re.compile(r"^\s+Section: (.+?)\s*$")
_RULE_LINE = re.compile(r"^    (OPT|INF|WRN|ERR|WARN)\s{2,}(\S.*?)\s*$")
_RULE_CONTINUATION = re.compile(r"^ {10}(\S.*?)\s*$")
_DASHES = re.compile(r"^\s*-+(?: +-+)+\s*$")

# SI prefixes as ncu prints them (decimal: 1 Kbyte = 1000 byte), for units it rescales.
_PREFIX_SCALE = {"n": 1e-9, "u": 1e-6, "m": 1e-3, "": 1.0, "K": 1e3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
# Longest first, so "byte/s" is not read as a prefixed "s".
_SCALABLE_BASES = ("byte/second", "byte/block", "byte/s", "byte", "second", "hz", "Hz", "s")
_SAME_BASE = {"byte/s": "byte/second", "s": "second", "Hz": "hz"}
# ncu 2025.3 prints base rates as "byte/s" where the archive's profiles say "byte/second".
ARCHIVE_UNIT_SPELLING = {"byte/s": "byte/second"}


def parse_number(text: str) -> float | None:
    """ncu's printed number ("96,488", "49.14", "1e+06") as a float; None if not numeric."""
    text = text.strip()
    if not text or not _NUMBER.match(text) or not any(ch.isdigit() for ch in text):
        return None
    return float(text.replace(",", ""))


def _split_unit(unit: str) -> tuple[float, str] | None:
    for base in _SCALABLE_BASES:
        prefix = unit[: len(unit) - len(base)]
        if unit.endswith(base) and prefix in _PREFIX_SCALE:
            return _PREFIX_SCALE[prefix], _SAME_BASE.get(base, base)
    return None


def _convert(value: float, from_unit: str, to_unit: str, metric: str) -> float:
    """Rescale between units ncu auto-scales per launch (e.g. Gbyte/s vs Tbyte/s)."""
    if from_unit == to_unit:
        return value
    source, target = _split_unit(from_unit), _split_unit(to_unit)
    if source is None or target is None or source[1] != target[1]:
        raise ValueError(f"ncu metric {metric!r} is reported in incompatible units {from_unit!r} and {to_unit!r}")
    return value * source[0] / target[0]


def _aggregate(metric_rows, rule_rows) -> dict:
    """Average per-launch metric rows and collect rules into the archive's structure.

    metric_rows: (section, name, unit, value text); rule_rows: (section, name, type, description).
    """
    per_metric: dict[tuple[str, str], tuple[str, list[float]]] = {}
    for section, name, unit, value_text in metric_rows:
        value = parse_number(value_text)
        if value is None:  # launch settings like "PolicySpread" or "n/a" cannot be averaged
            continue
        key = (section, name)
        if key not in per_metric:
            per_metric[key] = (unit, [])
        first_unit, values = per_metric[key]
        values.append(_convert(value, unit, first_unit, name))

    sections_by_name: dict[str, list[str]] = {}
    for section, name in per_metric:
        sections_by_name.setdefault(name, []).append(section)

    metrics = {}
    for (section, name), (unit, values) in per_metric.items():
        sections = sections_by_name[name]
        owner = next((s for s in sections if s in ARCHIVE_SECTIONS), sections[0])
        key = name if section == owner else f"{section}: {name}"
        metrics[key] = {
            "unit": ARCHIVE_UNIT_SPELLING.get(unit, unit),
            "avg_value": statistics.fmean(values),
            "variance": statistics.pvariance(values),
            "n": len(values),
        }

    rules = {}
    for _section, name, rule_type, description in rule_rows:
        rules[name] = {"type": rule_type, "description": description}
    return {"metrics": metrics, "rules": rules}


def _csv_rows(text: str, required: tuple[str, ...], what: str) -> tuple[list[str], list[list[str]]]:
    """The header and data rows of ncu's CSV, skipping ==PROF== lines and program output."""
    if not isinstance(text, str):
        raise ValueError(f"{what}: expected text, got {type(text).__name__}")
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID",')), None)
    if start is None:
        raise ValueError(f'{what}: no CSV header line starting with "ID" found')
    # Drop ncu's own ==PROF==/==WARNING== lines but keep the rest intact, since a quoted
    # rule description may span lines; stray one-field records (program output) are skipped.
    kept = [line for line in lines[start:] if not line.startswith("==")]
    rows = list(csv.reader(io.StringIO("\n".join(kept))))
    header = rows[0]
    missing = [column for column in required if column not in header]
    if missing:
        raise ValueError(f"{what}: CSV header lacks column(s) {', '.join(missing)}")
    shortest = max(header.index(column) for column in required) + 1
    data = []
    for number, row in enumerate(rows[1:], start=2):
        if len(row) <= 1:
            continue
        if len(row) > len(header) or len(row) < shortest:
            raise ValueError(f"{what}: CSV record {number} has {len(row)} fields, header has {len(header)}")
        # ncu 2025.3 ends metric records after "Metric Value" (and a trailing comma): the
        # rule columns that follow in the header are empty for them.
        data.append(row + [""] * (len(header) - len(row)))
    return header, data


def parse_ncu_details_csv(text: str, skip_sections: tuple[str, ...] = ()) -> dict:
    """``ncu --csv --page details`` output (one or many launches) → the archive's NCU_Profile.
    ``skip_sections``: sections collected for something else (the worker's Source Counters,
    read from ncu's source page), left out so the profile keeps the archive's shape."""
    what = "ncu details CSV"
    header, data = _csv_rows(text, ("ID", "Section Name", "Metric Name", "Metric Unit", "Metric Value"), what)
    column = {name: index for index, name in enumerate(header)}
    has_rules = "Rule Name" in column
    metric_rows, rule_rows = [], []
    for row in data:
        section = row[column["Section Name"]]
        if section in skip_sections:
            continue
        if has_rules and row[column["Rule Name"]] and not row[column["Metric Name"]]:
            rule_type = row[column["Rule Type"]] if "Rule Type" in column else ""
            description = row[column["Rule Description"]] if "Rule Description" in column else ""
            rule_rows.append((section, row[column["Rule Name"]], rule_type, description))
        elif row[column["Metric Name"]]:
            metric_rows.append(
                (section, row[column["Metric Name"]], row[column["Metric Unit"]], row[column["Metric Value"]])
            )
    if not metric_rows and not rule_rows:
        raise ValueError(f"{what}: header found but no metric or rule rows")
    return _aggregate(metric_rows, rule_rows)


def _rule_name(section: str, description: str) -> str:
    for fragment, name in RULE_NAME_BY_TEXT.items():
        if fragment in description:
            return name
    return RULE_NAME_BY_SECTION.get(section, section)


def parse_ncu_details_text(text: str) -> dict:
    """``ncu --page details`` text (the default, human-readable page) → the same structure.

    ``n`` counts the launches in which a metric was seen. Rule names are not printed on
    this page; see RULE_NAME_BY_SECTION / RULE_NAME_BY_TEXT, otherwise the section name.
    """
    what = "ncu details text"
    if not isinstance(text, str):
        raise ValueError(f"{what}: expected text, got {type(text).__name__}")
    lines = text.splitlines()
    metric_rows, rule_rows = [], []
    launches, section, index = 0, None, 0
    while index < len(lines):
        line = lines[index]
        if _LAUNCH_LINE.match(line):
            launches, section = launches + 1, None
        elif match := _SECTION_LINE.match(line):
            section = match.group(1)
        elif (
            launches
            and _DASHES.match(line)
            and index + 1 < len(lines)
            and "Metric Name" in lines[index + 1]
            and "Metric Value" in lines[index + 1]
        ):
            index = _read_metric_table(lines, index, section or "", metric_rows)
            continue
        elif launches and (match := _RULE_LINE.match(line)):
            parts = [match.group(2)]
            while index + 1 < len(lines) and (more := _RULE_CONTINUATION.match(lines[index + 1])):
                parts.append(more.group(1))
                index += 1
            description = _SPEEDUP_PREFIX.sub("", " ".join(parts)).strip()
            rule_rows.append((section or "", _rule_name(section or "", description), match.group(1), description))
        index += 1
    if not launches:
        raise ValueError(f"{what}: no kernel launch header (', Context N, Stream N') found")
    if not metric_rows:
        raise ValueError(f"{what}: no 'Metric Name / Metric Unit / Metric Value' table found")
    return _aggregate(metric_rows, rule_rows)


def _read_metric_table(lines: list[str], start: int, section: str, metric_rows: list) -> int:
    """Read one fixed-width table whose column starts are given by its dash rule; return the next index."""
    starts = [match.start() for match in re.finditer(r"-+", lines[start])]
    if len(starts) != 3:
        raise ValueError(f"ncu details text: metric table at line {start + 1} has {len(starts)} columns, expected 3")
    index = start + 3  # dash rule, header, dash rule
    while index < len(lines) and not _DASHES.match(lines[index]):
        row = lines[index]
        if row.strip():
            name = row[starts[0] : starts[1]].strip()
            unit = row[starts[1] : starts[2]].strip()
            value = row[starts[2] :].strip()
            metric_rows.append((section, name, unit, value))
        index += 1
    return index + 1


def parse_ncu_raw_csv(text: str) -> dict | list[dict]:
    """``ncu --page raw --csv`` → {metric: {'unit', 'value'}}; a list of those for several launches.

    Values are floats when numeric ("48,736" → 48736.0), else the printed text; the second
    CSV line of the raw page carries the units.
    """
    launches = parse_ncu_raw_csv_launches(text)
    return launches[0] if len(launches) == 1 else launches


def parse_ncu_raw_csv_launches(text: str) -> list[dict]:
    """Like parse_ncu_raw_csv, always a list with one dict per profiled launch."""
    what = "ncu raw CSV"
    header, data = _csv_rows(text, ("ID", "Kernel Name"), what)
    if not data:
        raise ValueError(f"{what}: no units row found after the header")
    units, launch_rows = data[0], data[1:]
    if units[header.index("ID")] != "":
        raise ValueError(f"{what}: second line should hold units (empty ID field)")
    if not launch_rows:
        raise ValueError(f"{what}: no launch rows after the units row")
    launches = []
    for row in launch_rows:
        metrics = {}
        for name, unit, value_text in zip(header, units, row):
            number = parse_number(value_text)
            metrics[name] = {"unit": unit, "value": number if number is not None else (value_text or None)}
        launches.append(metrics)
    return launches
