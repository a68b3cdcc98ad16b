"""Where the worker's GPU-alone time went on the H200 (issue #16, 2026-12-01): the recorded runs
of tests/fixtures/h200/ncu_alone_2026_12_01.json, as docs/worker.md reports them."""
import csv
import io
import json
import statistics
from pathlib import Path

import pytest

from verifier.profile_parsers.ncu_source import parse_ncu_source_csv

FIXTURE = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "h200" / "ncu_alone_2026_12_01.json")
                     .read_text())


def _idle(way):
    return {row["kernel"]: row for row in FIXTURE["ncu_idle"] if row["way"] == way}


def test_in_the_loaded_worker_ncu_held_the_gpu_alone_longer_than_the_judge_and_than_on_an_idle_host():
    runs = [run for worker in FIXTURE["worker_runs"] for run in worker["runs"]]
    profiled = [run for run in runs if run["ncu_alone_s"] > 0]
    assert len(profiled) == 6
    assert all(run["ncu_alone_s"] > run["judge_alone_s"] for run in profiled)
    idle_worst = max(row["alone_s"] for row in FIXTURE["ncu_idle"])
    assert statistics.median(run["ncu_alone_s"] for run in profiled) > 2 * idle_worst
    timed = [run["judge_alone_s"] for run in profiled if run["judge_alone_s"]]
    assert max(timed) < 5  # the judges' own windows (pinned onto the timing CPUs) stayed short


def test_on_an_idle_host_source_counters_cost_the_most_and_give_the_stall_reasons():
    counters, sampling, sections = _idle("source_counters"), _idle("sampling"), _idle("sections")
    assert counters.keys() == sampling.keys() == sections.keys() and len(counters) == 3
    for kernel, row in counters.items():
        assert sections[kernel]["alone_s"] < sampling[kernel]["alone_s"] < row["alone_s"] < 7.1
        assert all(spots["top_stalls"] for spots in row["hot_spots"])
        assert sampling[kernel]["hot_spots"].startswith("error")


def test_a_sampling_only_source_page_has_no_column_the_hot_spots_can_be_read_from():
    header = FIXTURE["sampling_source_page_header"]
    assert not any(name.startswith("stall_") for name in header)  # no stall reason per instruction
    out = io.StringIO()
    writer = csv.writer(out, quoting=csv.QUOTE_ALL)
    writer.writerow(["File Name", "/x/cuda.cu"])
    writer.writerow(header)
    writer.writerow(["", "", "0x7f0000000000", "LDC R1, c[0x0][0x28]", "29", "24", "29", "131072"])
    with pytest.raises(ValueError):
        parse_ncu_source_csv(out.getvalue())


def test_under_cpu_load_the_driver_on_the_timing_cpus_held_the_gpu_for_less():
    phases = {phase["timing_cpus"]: phase for phase in FIXTURE["ncu_loaded"]}
    pinned = statistics.median(run["alone_s"] for run in phases["0,1"]["runs"])
    free = statistics.median(run["alone_s"] for run in phases[None]["runs"])
    assert len(phases["0,1"]["runs"]) == len(phases[None]["runs"]) == 4
    assert pinned < free
