"""Timing machinery on the CPU: interleaving, adaptive stop, summaries, bandwidth floor."""
import os
import time

from verifier import build as harness_build
from verifier import timing as timing


def test_summaries_and_rse():
    vals = [1.0, 1.1, 0.9, 1.0, 1.05, 0.95, 1.0, 1.02]
    med, iqr = timing.median_iqr(vals)
    assert med == 1.0 and 0 < iqr < 0.2
    assert 0 < timing.rse_of_median(vals) < 0.1
    assert timing.rse_of_median([1.0, 2.0]) == float("inf")
    s = timing.summarize(vals, vals)
    assert set(s) >= {"median_ms", "iqr_ms", "n", "mean_ms", "host_median_ms"} and s["n"] == 8


def test_interleaved_timing_orders_fast_and_slow_and_stops():
    import torch

    sets = [[torch.randn(256)] for _ in range(3)]
    seen = []

    def fast(ins):
        seen.append("fast")
        return ins[0] + 1

    def slow(ins):
        seen.append("slow")
        time.sleep(0.002)
        return ins[0] + 1

    def broken(ins):
        raise RuntimeError("no compiler")

    summary, info = timing.time_interleaved([("fast", fast), ("slow", slow), ("broken", broken)], sets, "cpu",
                                            budget_s=1.0, min_n=5, min_time_s=0.05)
    assert summary["fast"]["median_ms"] < summary["slow"]["median_ms"]
    assert summary["slow"]["median_ms"] >= 2.0
    assert "error" in summary["broken"] and "no compiler" in summary["broken"]["error"]
    assert summary["fast"]["n"] == summary["slow"]["n"] >= 5
    assert info["rounds"] >= 5 and info["stop"] and info["input_sets"] == 3
    # interleaved: the timed phase alternates between implementations
    timed = seen[-10:]
    assert "fast" in timed and "slow" in timed


def test_bandwidth_table_and_cpu_measurement():
    names = [k for k, _ in timing.BANDWIDTH_TABLE]
    assert "H200" in names and "H100" in names
    bw, source = timing.device_bandwidth("cpu", 8 << 20)
    assert bw > 1e8 and "measured" in source


def test_nvidia_smi_answers_for_the_gpu_asked_by_pci_address(tmp_path, monkeypatch):
    """No GPU here: an nvidia-smi that prints what the H200's printed for these fields
    (tests/fixtures/h200/timing_quality_start_delay.json) and records its arguments."""
    fake = tmp_path / "nvidia-smi"
    fake.write_text('#!/bin/sh\necho "$@" > "$(dirname "$0")/args"\n'
                    'echo "1980, 3201, 122.68, 35, 0x0000000000000000"\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    answer = harness_build.nvidia_smi(timing.GPU_CLOCK_FIELDS, "00000000:19:00.0")
    assert answer == {"clocks.sm": "1980", "clocks.mem": "3201", "power.draw": "122.68", "temperature.gpu": "35",
                      "clocks_event_reasons.active": "0x0000000000000000"}
    assert (tmp_path / "args").read_text().split()[0] == "--id=00000000:19:00.0"
    assert harness_build.nvidia_smi(["driver_version", "name"]) is None  # a line that does not fit the fields
