"""Profiles as the tables a kernel page shows: NCU metrics by section with their rules,
the torch profiler's top events, clang-tidy warnings grouped by check. No ORM here."""
import csv
import io
import re
from collections import Counter

from verifier.profile_parsers import parse_clang_tidy_output

from .ncu_format import shown_spread, shown_value

SOL = "GPU Speed Of Light Throughput"
COMPUTE = "Compute Workload Analysis"
MEMORY = "Memory Workload Analysis"
LAUNCH = "Launch Statistics"
OCCUPANCY = "Occupancy"
SCHEDULER = "Scheduler Statistics"
WARP_STATE = "Warp State Statistics"
OTHER = "Other metrics"
# In the order `ncu --page details` prints its sections.
SECTION_ORDER = (SOL, COMPUTE, MEMORY, LAUNCH, OCCUPANCY, SCHEDULER, WARP_STATE, OTHER)

# Metric names as ncu's details page prints them, by section. The archive profiled
# Compute/Memory Workload Analysis, Warp State Statistics and Occupancy; the rest shows up
# in fuller profiles (--set full) measured by our worker. A name ncu repeats in several
# sections arrives from the parser as "<Section>: <name>" and is placed by its prefix.
_METRIC_SECTIONS = {
    SOL: ("Duration", "Elapsed Cycles", "SM Active Cycles", "SM Frequency", "DRAM Frequency", "DRAM Throughput",
          "L1/TEX Cache Throughput", "L2 Cache Throughput", "Compute (SM) Throughput"),
    COMPUTE: ("Executed Ipc Active", "Executed Ipc Elapsed", "Issue Slots Busy", "Issued Ipc Active", "SM Busy"),
    MEMORY: ("Memory Throughput", "Mem Busy", "Max Bandwidth", "L1/TEX Hit Rate", "L2 Hit Rate", "Mem Pipes Busy",
             "L2 Compression Success Rate", "L2 Compression Ratio", "L2 Persisting Size"),
    LAUNCH: ("Block Size", "Cluster Scheduling Policy", "Cluster Size", "Function Cache Configuration", "Grid Size",
             "Registers Per Thread", "Shared Memory Configuration Size", "Driver Shared Memory Per Block",
             "Dynamic Shared Memory Per Block", "Static Shared Memory Per Block", "# SMs", "Stack Size", "Threads",
             "# TPCs", "Enabled TPC IDs", "Uses Green Context", "Waves Per SM"),
    OCCUPANCY: ("Max Active Clusters", "Max Cluster Size", "Overall GPU Occupancy", "Cluster Occupancy",
                "Block Limit SM", "Block Limit Registers", "Block Limit Shared Mem", "Block Limit Warps",
                "Theoretical Active Warps per SM", "Theoretical Occupancy", "Achieved Occupancy",
                "Achieved Active Warps Per SM"),
    SCHEDULER: ("One or More Eligible", "Issued Warp Per Scheduler", "No Eligible", "Active Warps Per Scheduler",
                "Eligible Warps Per Scheduler"),
    WARP_STATE: ("Warp Cycles Per Issued Instruction", "Warp Cycles Per Executed Instruction",
                 "Avg. Active Threads Per Warp", "Avg. Not Predicated Off Threads Per Warp"),
}
SECTION_OF_METRIC = {name: section for section, names in _METRIC_SECTIONS.items() for name in names}
# ncu rule names (the CSV's "Rule Name") by the section that raises them.
SECTION_OF_RULE = {
    "SOLBottleneck": SOL, "SOLFPRoofline": SOL, "HighPipeUtilization": COMPUTE, "IssueSlotUtilization": SCHEDULER,
    "MemoryL2Compression": MEMORY, "MemoryCacheAccessPattern": MEMORY, "UncoalescedGlobalAccess": MEMORY,
    "UncoalescedSharedAccess": MEMORY, "SharedMemoryConflicts": MEMORY, "LaunchConfiguration": LAUNCH,
    "Occupancy": OCCUPANCY, "AchievedOccupancy": OCCUPANCY, "CPIStall": WARP_STATE, "ThreadDivergence": WARP_STATE,
}
RULE_TYPES = {"WRN": "warning", "OPT": "optimisation", "INF": "information", "ERR": "error", "WARN": "warning"}


def ncu_sections(parsed: dict) -> list[dict]:
    """[{name, metrics: [{name, unit, value, variance, n, shown, spread}], rules: [{name, type, kind, description}]}]
    in ncu's section order; a section appears when it has a metric or a rule."""
    sections = {name: {"name": name, "metrics": [], "rules": []} for name in SECTION_ORDER}
    for name, metric in (parsed.get("metrics") or {}).items():
        section, label = _place_metric(str(name))
        metric = metric if isinstance(metric, dict) else {}
        unit = metric.get("unit") or ""
        sections[section]["metrics"].append({
            "name": label, "unit": unit, "value": metric.get("avg_value"),
            "variance": metric.get("variance"), "n": metric.get("n"),
            "shown": shown_value(metric.get("avg_value"), unit),
            "spread": shown_spread(metric.get("variance"), metric.get("n"), unit),
        })
    for name, rule in (parsed.get("rules") or {}).items():
        rule = rule if isinstance(rule, dict) else {}
        rule_type = str(rule.get("type") or "")
        sections[SECTION_OF_RULE.get(str(name), OTHER)]["rules"].append({
            "name": name, "type": rule_type, "kind": RULE_TYPES.get(rule_type, "information"),
            "description": rule.get("description") or "",
        })
    return [section for section in sections.values() if section["metrics"] or section["rules"]]


def _place_metric(name: str) -> tuple[str, str]:
    prefix, _, rest = name.partition(": ")
    if rest and prefix in SECTION_ORDER:
        return prefix, rest
    return SECTION_OF_METRIC.get(name, OTHER), name


# What a reader looks for first: what ran, with which launch configuration, how long it took.
LAUNCH_METRICS = (("Grid Size", "grid"), ("Block Size", "block"), ("Registers Per Thread", "registers per thread"),
                  ("Static Shared Memory Per Block", "static shared memory per block"),
                  ("Dynamic Shared Memory Per Block", "dynamic shared memory per block"), ("Threads", "threads"),
                  ("Waves Per SM", "waves per SM"), ("Duration", "duration"))
# The launch header of ncu's details text: `name(args) (65536, 1, 1)x(256, 1, 1), Context 1, Stream 7, ...`.
_TEXT_LAUNCH = re.compile(r"^  (?P<name>\S.*?) \((?P<grid>[\d, ]+)\)x\((?P<block>[\d, ]+)\), Context \d+", re.M)
_RAW_HEAD = 20_000  # the launch is described at the top; a long profile is not read further


def ncu_launch(parsed: dict, raw_text: str) -> list[dict]:
    """[{label, shown}] of the kernel name, grid and block sizes, registers, shared memory and
    duration, from the metrics when ncu's Launch Statistics / Speed Of Light sections were
    profiled, else from the launch columns of ncu's CSV or the launch line of its text page.
    The archive's profiles hold none of these (it profiled four other sections): then empty."""
    metrics = parsed.get("metrics") or {}
    found = {}
    head = raw_text[:_RAW_HEAD] if isinstance(raw_text, str) else ""
    if head.lstrip().startswith('"ID"') or '\n"ID",' in head:
        found.update(_launch_from_csv(head))
    elif match := _TEXT_LAUNCH.search(head):
        found.update({"kernel": match.group("name"), "grid": f"({match.group('grid')})",
                      "block": f"({match.group('block')})"})
    rows = [{"label": "kernel", "shown": found["kernel"], "raw": found["kernel"]}] if "kernel" in found else []
    for name, label in LAUNCH_METRICS:
        metric = _metric(metrics, name)
        if label in found:  # the launch's own (x, y, z) says more than the metric's product
            rows.append({"label": label, "shown": found[label], "raw": found[label]})
        elif metric is not None:
            shown = shown_value(metric.get("avg_value"), metric.get("unit") or "")
            rows.append({"label": label, "shown": shown.text, "raw": shown.raw})
    return rows


def _metric(metrics: dict, name: str) -> dict | None:
    metric = metrics.get(name)
    if metric is None:
        metric = next((value for key, value in metrics.items() if str(key).endswith(f": {name}")), None)
    return metric if isinstance(metric, dict) else None


def _launch_from_csv(head: str) -> dict:
    lines = [line for line in head.splitlines() if not line.startswith("==")]
    try:
        rows = list(csv.reader(io.StringIO("\n".join(lines[:2]))))
    except csv.Error:
        return {}
    if len(rows) < 2:
        return {}
    row = dict(zip(rows[0], rows[1]))
    return {key: value for key, value in (("kernel", row.get("Kernel Name")), ("grid", row.get("Grid Size")),
                                          ("block", row.get("Block Size"))) if value}


def ncu_metric_values(parsed: dict) -> dict[str, tuple[float, str]]:
    """{metric name: (average, unit)} for the numeric metrics, for charts."""
    values = {}
    for name, metric in (parsed.get("metrics") or {}).items():
        if isinstance(metric, dict) and isinstance(metric.get("avg_value"), (int, float)):
            values[str(name)] = (float(metric["avg_value"]), str(metric.get("unit") or ""))
    return values


# Torch profiler columns worth a column on the page, with their headings; times in µs.
TORCH_COLUMNS = (
    ("self_cpu_time_total", "Self CPU (µs)"), ("cpu_time_total", "CPU total (µs)"),
    ("self_device_time_total", "Self GPU (µs)"), ("device_time_total", "GPU total (µs)"), ("calls", "Calls"),
)


def torch_profile_rows(parsed: dict) -> tuple[list[str], list[dict]]:
    """Headings and rows ({event, values}) of the events, most GPU time first."""
    events = [(str(name), row) for name, row in (parsed or {}).items() if isinstance(row, dict)]
    columns = [(key, heading) for key, heading in TORCH_COLUMNS if any(key in row for _, row in events)]
    events.sort(key=lambda item: -(_number(item[1].get("device_time_total")) or 0.0))
    rows = [{"event": name, "values": [row.get(key) for key, _ in columns]} for name, row in events]
    return [heading for _, heading in columns], rows


def clang_tidy_groups(parsed: dict) -> dict:
    """{'groups': [{check, count, diagnostics}], 'linted_file', 'errored'}: warnings of the
    kernel's own file link to its lines; those in other files (headers) do not."""
    stdout = (parsed or {}).get("stdout") or ""
    diagnostics = parse_clang_tidy_output(stdout) if isinstance(stdout, str) else []
    linted_file = Counter(d["file"] for d in diagnostics).most_common(1)[0][0] if diagnostics else ""
    groups: dict[str, list[dict]] = {}
    for diagnostic in diagnostics:
        diagnostic = dict(diagnostic, in_kernel_file=diagnostic["file"] == linted_file)
        groups.setdefault(diagnostic["check"] or "(no check)", []).append(diagnostic)
    ordered = sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))
    return {
        "groups": [{"check": check, "count": len(items), "diagnostics": items} for check, items in ordered],
        "linted_file": linted_file.rsplit("/", 1)[-1],
        "errored": bool((parsed or {}).get("errored")),
        "stderr": (parsed or {}).get("stderr") or "",
    }


def _number(value) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
