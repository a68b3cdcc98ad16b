"""Timing machinery on the CPU: timed batches, fingerprints, summaries, bandwidth floor."""
import os
import time

import pytest

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


def test_run_batch_times_every_call_on_fresh_perturbed_inputs_and_fingerprints_outputs():
    import torch

    base = [[torch.randn(64, 32)], [torch.randn(64, 32)]]
    seen = []

    def fn(ins):
        seen.append(ins[0])
        time.sleep(0.002)
        return ins[0] * 2

    weights = timing.FingerprintWeights(7, "cpu")
    spec = [(0, torch.tensor([0, 5]), torch.tensor([100.0, -100.0]))]
    kept = []
    result = timing.run_batch(fn, base, [(0, spec), (1, []), (0, [])], timing.TimedCaller("cpu"), weights, keep=kept)
    assert len(result["ms"]) == len(result["host_ms"]) == 3 and min(result["ms"]) >= 2.0
    # each call gets its own storage; the spec's elements are replaced on the first call only
    assert len({t.data_ptr() for t in seen}) == 3 and seen[0] is not base[0][0]
    assert seen[0].view(-1)[0] == 100.0 and seen[0].view(-1)[5] == -100.0 and base[0][0].view(-1)[0] != 100.0
    assert torch.equal(seen[2], base[0][0])
    # the fingerprint is the output's dot product with the seeded weights, and follows the output
    want = float(torch.dot((base[1][0] * 2).reshape(-1).double(), timing.FingerprintWeights(7, "cpu")(64 * 32)))
    assert result["fingerprints"][1] == [pytest.approx(want)]
    assert result["fingerprints"][0] != result["fingerprints"][2]
    assert torch.equal(kept[1][0], base[1][0] * 2)


def test_fingerprint_of_plain_values_and_nan():
    import torch

    weights = timing.FingerprintWeights(1, "cpu")
    assert timing.fingerprint(3, weights) == 3 and timing.fingerprint(None, weights) is None
    assert timing.fingerprint(torch.full((4,), float("nan")), weights) != timing.fingerprint(torch.zeros(4), weights)


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
