"""Profile parsers on real H200 output (tests/fixtures/h200, copied from ../shared/fixtures/h200)
and real archive rows: the demo archive's (measured on an H200 by this project) always, the
shared sample's (the published archive) where ../shared is there (conftest's `sample_rows`).

Expected values below were read by eye from those files.
"""
import ast
import statistics
from pathlib import Path

import pytest

from verifier.profile_parsers import (
    count_by_check,
    parse_clang_tidy_output,
    parse_ncu_details_csv,
    parse_ncu_details_text,
    parse_ncu_raw_csv,
    parse_ncu_raw_csv_launches,
    parse_torch_profile_table,
)

H200_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "h200"


def fixture_text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def archive_row(rows, name):
    return next(r for r in rows if r["Kernel_Name"] == name)


# --- ncu --page details (text) ------------------------------------------------------


def test_ncu_details_text_metrics_from_the_h200_fixture():
    profile = parse_ncu_details_text(fixture_text(H200_DIR / "ncu_details.txt"))
    metrics = profile["metrics"]
    assert metrics["Achieved Occupancy"] == {"unit": "%", "avg_value": 69.98, "variance": 0.0, "n": 1}
    assert metrics["Duration"]["unit"] == "us" and metrics["Duration"]["avg_value"] == 48.77
    assert metrics["Elapsed Cycles"]["avg_value"] == 96488.0  # thousands separator
    assert metrics["Registers Per Thread"] == {"unit": "register/thread", "avg_value": 16.0, "variance": 0.0, "n": 1}
    # "Memory Throughput" is in two sections; the archive's (Memory Workload Analysis) keeps the name.
    assert metrics["Memory Throughput"]["unit"] == "Tbyte/s" and metrics["Memory Throughput"]["avg_value"] == 2.36
    assert metrics["GPU Speed Of Light Throughput: Memory Throughput"]["avg_value"] == 49.14
    assert "Cluster Scheduling Policy" not in metrics  # "PolicySpread" is not a number


def test_ncu_details_text_has_every_metric_name_the_demo_archive_uses(archive_rows):
    profile = parse_ncu_details_text(fixture_text(H200_DIR / "ncu_details.txt"))
    names = set()
    for row in archive_rows:
        if row["NCU_Profile"]:
            names |= set(ast.literal_eval(row["NCU_Profile"])["metrics"])
    assert len(names) >= 27
    assert names <= set(profile["metrics"])


def test_ncu_details_text_has_every_metric_name_the_archive_uses(sample_rows):
    profile = parse_ncu_details_text(fixture_text(H200_DIR / "ncu_details.txt"))
    archive_names = set()
    for row in sample_rows:
        if row["NCU_Profile"]:
            archive_names |= set(ast.literal_eval(row["NCU_Profile"])["metrics"])
    assert len(archive_names) == 27
    assert archive_names <= set(profile["metrics"])


def test_ncu_details_text_rules_are_named_like_the_archive():
    rules = parse_ncu_details_text(fixture_text(H200_DIR / "ncu_details.txt"))["rules"]
    assert rules["Occupancy"]["type"] == "OPT"
    assert rules["Occupancy"]["description"].startswith("The difference between calculated theoretical (100.0%)")
    # Two CPIStall messages in Warp State Statistics: as in the archive, the last one wins.
    assert rules["CPIStall"] == {
        "type": "INF",
        "description": "Check the Warp Stall Sampling (All Samples) table for the top stall locations in your "
        "source based on sampling data. The Profiling Guide "
        "(https://docs.nvidia.com/nsight-compute/ProfilingGuide/index.html#metrics-reference) provides more "
        "details on each stall reason.",
    }
    assert rules["HighPipeUtilization"]["description"].startswith("All compute pipelines are under-utilized.")
    assert not any(rule["description"].startswith("Est.") for rule in rules.values())
    assert rules["GPU Speed Of Light Roofline Chart"]["type"] == "INF"  # unnamed rules keep their section


def test_ncu_details_text_averages_launches_and_rescales_units():
    text = fixture_text(H200_DIR / "ncu_details.txt")
    start = text.index("  relu_kernel(")
    launch = text[start : text.index("--- stderr ---")]
    second = launch.replace(
        "Achieved Occupancy                        %        69.98",
        "Achieved Occupancy                        %        71.98",
    ).replace(
        "Memory Throughput                          Tbyte/s         2.36",
        "Memory Throughput                          Gbyte/s     2,340.00",
    )
    assert second != launch
    profile = parse_ncu_details_text(text[:start] + launch + second)
    occupancy = profile["metrics"]["Achieved Occupancy"]
    assert occupancy["n"] == 2 and occupancy["avg_value"] == pytest.approx(70.98) and occupancy["variance"] == pytest.approx(1.0)
    throughput = profile["metrics"]["Memory Throughput"]
    assert throughput["unit"] == "Tbyte/s" and throughput["avg_value"] == pytest.approx(2.35)


# --- ncu --csv --page details ---------------------------------------------------------

CSV_HEADER = (
    '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
    '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value","Rule Name","Rule Type",'
    '"Rule Description","Estimated Speedup Type","Estimated Speedup"'
)


def csv_row(launch, section, name="", unit="", value="", rule=("", "", "")):
    prefix = f'"{launch}","1","python3","host","k(float*)","1","7","(256, 1, 1)","(64, 1, 1)","0","9.0"'
    fields = [section, name, unit, value, *rule, "", ""]
    return prefix + "," + ",".join('"' + field.replace('"', '""') + '"' for field in fields)


def test_ncu_details_csv_averages_five_launches_like_the_archive():
    occupancies = ["98.36", "98.37", "98.35", "98.38", "98.36"]
    throughputs = ["21,164,232,027.76", "21,000,000,000.00", "21,300,000,000.10", "21,200,000,000.00", "21,100,000,000.00"]
    lines = ["==PROF== Connected to process 1", CSV_HEADER]
    for launch in range(5):
        lines.append(csv_row(launch, "Occupancy", "Achieved Occupancy", "%", occupancies[launch]))
        lines.append(csv_row(launch, "Memory Workload Analysis", "Memory Throughput", "byte/second", throughputs[launch]))
        lines.append(csv_row(launch, "Occupancy", "Block Limit SM", "block", "n/a"))
        lines.append(csv_row(launch, "Occupancy", rule=("Occupancy", "WRN", f"message {launch}, with \"quotes\"\nand a second line")))
    lines.append("==PROF== Disconnected from process 1")
    profile = parse_ncu_details_csv("\n".join(lines))
    occupancy = profile["metrics"]["Achieved Occupancy"]
    values = [float(v) for v in occupancies]
    assert occupancy == {"unit": "%", "avg_value": statistics.fmean(values), "variance": statistics.pvariance(values), "n": 5}
    assert profile["metrics"]["Memory Throughput"]["unit"] == "byte/second"
    assert profile["metrics"]["Memory Throughput"]["avg_value"] == pytest.approx(21152846405.572)
    assert "Block Limit SM" not in profile["metrics"]
    assert profile["rules"] == {"Occupancy": {"type": "WRN", "description": 'message 4, with "quotes"\nand a second line'}}


def test_ncu_details_csv_metric_records_end_after_the_value_as_on_the_h200():
    """ncu 2025.3 on the H200 (worker run) printed metric records with 15 fields and a trailing
    comma under a 20-column header; rule records carry all 20."""
    metric = ('"4","1984","python3.12","127.0.0.1","conv2d_relu_bias_kernel_shared_sync(const float *, '
              'float *, int)","1","7","(16, 16, 1)","(2, 2, 2048)","0","9.0","Occupancy","Achieved Occupancy",'
              '"%","93.10",')
    rule = csv_row(4, "Occupancy", rule=("Occupancy", "OPT", "occupancy is limited by registers"))
    profile = parse_ncu_details_csv("\n".join([CSV_HEADER, metric, rule]))
    assert profile["metrics"]["Achieved Occupancy"] == {"unit": "%", "avg_value": 93.1, "variance": 0.0, "n": 1}
    assert profile["rules"]["Occupancy"]["type"] == "OPT"


def test_archive_variance_is_the_population_variance(sample_rows):
    """Why _aggregate uses pvariance rather than the n - 1 sample variance.

    ncu prints percentages with 2 decimals, so each launch's value is k/100. Then
    n * var_pop * 1e4 = sum(k^2) - n * (100 * mean)^2 must be an integer minus the
    fractional part of n * (100 * mean)^2. Every archive % metric fits that with n,
    hardly any with n - 1.
    """

    def fits(squared_deviations, mean_x100, n):
        remainder = (squared_deviations + n * mean_x100**2) % 1
        return min(remainder, 1 - remainder) < 1e-3

    checked = population = sample = 0
    for row in sample_rows:
        if not row["NCU_Profile"]:
            continue
        for metric in ast.literal_eval(row["NCU_Profile"])["metrics"].values():
            if metric["unit"] != "%" or metric["variance"] == 0:
                continue
            n, mean_x100 = metric["n"], metric["avg_value"] * 100
            checked += 1
            population += fits(metric["variance"] * n * 1e4, mean_x100, n)
            sample += fits(metric["variance"] * (n - 1) * 1e4, mean_x100, n)
    assert checked > 500
    assert population == checked
    assert sample < checked / 10


# --- ncu --page raw --csv -------------------------------------------------------------


def test_ncu_raw_csv_from_the_h200_fixture():
    metrics = parse_ncu_raw_csv(fixture_text(H200_DIR / "ncu_raw.csv"))
    assert isinstance(metrics, dict) and len(metrics) == 566
    assert metrics["gpu__time_duration.sum"] == {"unit": "ns", "value": 48736.0}
    assert metrics["launch__registers_per_thread"] == {"unit": "register/thread", "value": 16.0}
    assert metrics["sm__warps_active.avg.pct_of_peak_sustained_active"] == {"unit": "%", "value": 70.08}
    assert metrics["Kernel Name"]["value"] == "relu_kernel(const float *, float *, long)"
    assert metrics["Block Size"]["value"] == "(256, 1, 1)"


def test_ncu_raw_csv_with_several_launches_gives_a_list():
    text = fixture_text(H200_DIR / "ncu_raw.csv")
    lines = text.splitlines()
    data_line = next(line for line in lines if line.startswith('"0","695"'))
    text = text.replace(data_line, data_line + "\n" + data_line.replace('"0","695"', '"1","695"', 1))
    launches = parse_ncu_raw_csv(text)
    assert isinstance(launches, list) and [launch["ID"]["value"] for launch in launches] == [0.0, 1.0]
    assert parse_ncu_raw_csv_launches(text) == launches


# --- torch.profiler key_averages table ------------------------------------------------


def test_torch_profile_table_from_the_h200_fixture():
    events = parse_torch_profile_table(fixture_text(H200_DIR / "torch_profile.txt"))
    assert list(events)[:2] == ["relu_kernel(float const*, float*, long)", "aten::empty_like"]
    kernel = events["relu_kernel(float const*, float*, long)"]
    assert kernel["device_time_total"] == 273.341 and kernel["self_device_time_total"] == 273.341
    assert kernel["device_time_avg"] == 54.668 and kernel["calls"] == 5 and kernel["cpu_time_total"] == 0.0
    assert events["Activity Buffer Request"]["cpu_time_total"] == pytest.approx(3136.0)  # 3.136ms in us
    assert events["cudaDeviceSynchronize"]["calls"] == 2
    assert events["aten::empty_like"]["self_cpu_percent"] == 0.98


def test_torch_profile_table_from_this_torch_on_cpu():
    torch = pytest.importorskip("torch")
    from torch.profiler import ProfilerActivity, profile

    x = torch.randn(64, 64)
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=True) as prof:
        for _ in range(3):
            (x @ x).relu()
    for table in (prof.key_averages().table(), prof.key_averages(group_by_input_shape=True).table()):
        events = parse_torch_profile_table(table)
        assert events["aten::mm"]["calls"] == 3
        assert events["aten::mm"]["cpu_time_total"] > 0
        assert events["aten::mm"]["cpu_memory_usage"] == 3 * 64 * 64 * 4  # "48.00 KB"
        assert "device_time_total" not in events["aten::mm"]  # no accelerator columns on CPU


# --- clang-tidy -----------------------------------------------------------------------


def test_clang_tidy_output_from_a_demo_archive_row(archive_rows):
    clang_tidy = ast.literal_eval(archive_row(archive_rows, "relu_float4_grid_stride")["Clang_Tidy"])
    assert set(clang_tidy) == {"stdout", "stderr", "errored"} and clang_tidy["errored"] is False
    diagnostics = parse_clang_tidy_output(clang_tidy["stdout"])
    assert [(d["file"], d["line"], d["column"], d["severity"], d["check"]) for d in diagnostics] == [
        ("kernel.cu", 14, 82, "warning", "bugprone-easily-swappable-parameters"),
        ("kernel.cu", 19, 37, "warning", "performance-unnecessary-value-param")]
    assert diagnostics[0]["message"] == ("2 adjacent parameters of 'relu_tail' of similar type ('int64_t') are "
                                         "easily swapped by mistake")
    notes = [d for d in parse_clang_tidy_output(clang_tidy["stdout"], include_notes=True) if d["severity"] == "note"]
    assert [(n["line"], n["column"], n["message"], n["check"]) for n in notes] == [
        (14, 90, "the first parameter in the range is 'start'", None),
        (14, 105, "the last parameter in the range is 'n'", None)]


def test_clang_tidy_counts_over_the_demo_archive(archive_rows):
    diagnostics = []
    for row in archive_rows:
        if row["Clang_Tidy"]:
            diagnostics += parse_clang_tidy_output(ast.literal_eval(row["Clang_Tidy"])["stdout"], include_notes=True)
    # every diagnostic clang-tidy printed (a "file:line:col: severity:" line) is parsed, none invented
    printed = sum(ast.literal_eval(row["Clang_Tidy"])["stdout"].count(": warning: ") +
                  ast.literal_eval(row["Clang_Tidy"])["stdout"].count(": note: ")
                  for row in archive_rows if row["Clang_Tidy"])
    assert len(diagnostics) == printed > 0
    by_check = count_by_check([d for d in diagnostics if d["severity"] != "note"])
    assert by_check["performance-unnecessary-value-param"] >= 1 and None not in by_check


def test_clang_tidy_output_from_a_sample_row(sample_rows):
    row = next(r for r in sample_rows if r["Kernel_Name"] == "block_size_optimized_base")
    clang_tidy = ast.literal_eval(row["Clang_Tidy"])
    assert set(clang_tidy) == {"stdout", "stderr", "errored"}
    diagnostics = parse_clang_tidy_output(clang_tidy["stdout"])
    first = diagnostics[0]
    assert first["file"].endswith("/b1_s0_block_size_optimized/base/base.cu")
    assert (first["line"], first["column"], first["severity"]) == (9, 35, "warning")
    assert first["message"] == "macro argument should be enclosed in parentheses"
    assert first["check"] == "bugprone-macro-parentheses"
    assert all(d["severity"] != "note" for d in diagnostics)
    notes = [d for d in parse_clang_tidy_output(clang_tidy["stdout"], include_notes=True) if d["severity"] == "note"]
    assert notes[0]["message"] == "the first parameter in the range is 'A'" and notes[0]["check"] is None


def test_clang_tidy_counts_over_all_sample_rows(sample_rows):
    diagnostics = []
    for row in sample_rows:
        if row["Clang_Tidy"]:
            diagnostics += parse_clang_tidy_output(ast.literal_eval(row["Clang_Tidy"])["stdout"], include_notes=True)
    counts = {s: sum(d["severity"] == s for d in diagnostics) for s in ("warning", "error", "note")}
    assert counts == {"warning": 901, "error": 2, "note": 430}
    by_check = count_by_check([d for d in diagnostics if d["severity"] != "note"])
    assert list(by_check)[0] == "bugprone-narrowing-conversions" and by_check["bugprone-narrowing-conversions"] == 541
    assert by_check["clang-diagnostic-error"] == 2


# --- malformed input ------------------------------------------------------------------


@pytest.mark.parametrize(
    "parser, text, message",
    [
        (parse_ncu_details_csv, "no csv here", 'no CSV header line starting with "ID"'),
        (parse_ncu_details_csv, '"ID","Kernel Name"\n"0","k"', "lacks column(s) Section Name"),
        (parse_ncu_details_csv, CSV_HEADER + '\n"0","1"', "record 2 has 2 fields, header has 20"),
        (parse_ncu_details_text, "==PROF== nothing profiled", "no kernel launch header"),
        (parse_ncu_details_text, "  k() (1, 1, 1)x(1, 1, 1), Context 1, Stream 7\n", "no 'Metric Name"),
        (parse_ncu_raw_csv, '"ID","Kernel Name"\n', "no units row"),
        (parse_ncu_raw_csv, '"ID","Kernel Name"\n"",""\n', "no launch rows"),
        (parse_torch_profile_table, "Self CPU time total: 1ms", "no key_averages table"),
        (parse_clang_tidy_output, None, "expected text"),
        (parse_ncu_details_text, b"bytes", "expected text"),
    ],
)
def test_malformed_input_raises_a_clear_value_error(parser, text, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parser(text)


def test_torch_profile_table_with_an_unreadable_time_names_the_row():
    table = (
        "----------  ----------  ----------\n"
        "      Name    Self CPU   CPU total\n"
        "----------  ----------  ----------\n"
        "    aten::a     1.000us     2.000us\n"
        "    aten::b       fast!     2.000us\n"
        "----------  ----------  ----------\n"
    )
    with pytest.raises(ValueError, match=r"row 2: column 'self_cpu_time_total' has unreadable value 'fast!'"):
        parse_torch_profile_table(table)
