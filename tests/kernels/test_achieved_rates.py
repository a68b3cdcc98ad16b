"""Why a kernel is fast (issue #35): achieved GB/s and TFLOP/s from the judge's floors, their
share of the GPU's peak, and "–" with the reason where the document cannot support a figure.

The pure rules first, then the demo's shipped signed H200 records imported as `make demo` does:
every re-measured kernel that passed has its figure on its page, its task's ranking and the API,
equal to bytes / median recomputed here from the stored document."""
import json
import re
from pathlib import Path

import pytest
from django.core.cache import cache

from evaluator.verification_import import verification_import_file
from kernels.achieved_rates import achieved_rates, baseline_absence
from kernels.models import Kernel, Verification
from kernels.services import archive_import_file

REPO = Path(__file__).resolve().parents[2]
DEMO_ARCHIVE = REPO / "evaluator" / "demo_archive" / "demo_archive.jsonl"
DEMO_RECORDS = REPO / "evaluator" / "h200_results" / "demo_archive_h200.jsonl"
SAMPLE_RECORDS = REPO / "evaluator" / "h200_results" / "sample_subset_h200.jsonl"
H200_BANDWIDTH = {"bytes": 33554432, "bandwidth_bytes_per_s": 4.8e12, "floor_ms": 0.00699,
                  "source": "datasheet peak for NVIDIA H200 (table entry 'H200')"}
H200_COMPUTE = {"flops": 2 * 4096 ** 3, "peak_flops_per_s": 989e12, "floor_ms": 0.139,
                "source": "datasheet dense 16-bit tensor-core peak for NVIDIA H200 (table entry 'H200')"}


def text_of(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


# --- the rules, on documents written the way the judge writes them ---------------------------

def test_rates_are_the_floors_read_the_other_way_round():
    rates = achieved_rates(checks={"bandwidth_floor": H200_BANDWIDTH, "compute_floor": H200_COMPUTE},
                           median_ms=0.25, device="cuda", harness_version="2.7.0")
    bw, fl = rates.bandwidth, rates.compute
    assert bw.value == pytest.approx(33554432 / 0.25e-3 / 1e9)  # 134.2 GB/s
    assert bw.peak == pytest.approx(4800.0) and bw.fraction == pytest.approx(bw.value / 4800.0)
    assert fl.value == pytest.approx(2 * 4096 ** 3 / 0.25e-3 / 1e12)  # 549.8 TFLOP/s
    assert fl.fraction == pytest.approx(fl.value / 989.0) and not fl.above_peak
    api = rates.as_api()
    assert api["achieved_gb_per_s"] == bw.value and api["fraction_of_peak_flops"] == fl.fraction
    assert api["bandwidth_source"].startswith("datasheet") and api["bandwidth_unavailable"] == ""


def test_a_time_under_the_floor_is_over_the_peak_and_the_bar_stops_at_its_end():
    rates = achieved_rates(checks={"bandwidth_floor": H200_BANDWIDTH}, median_ms=0.001, device="cuda")
    assert rates.bandwidth.above_peak and rates.bandwidth.percent > 100 and rates.bandwidth.bar_percent == 100.0


def test_no_figure_is_invented():
    old = achieved_rates(checks={"bandwidth_floor": H200_BANDWIDTH}, median_ms=0.25, device="cuda",
                         harness_version="2.4.1")
    assert old.compute.value is None and "harness 2.4.1 predates it" in old.compute.why and "2.6.0" in old.compute.why
    rebuilt = achieved_rates(checks={}, median_ms=1.9, device="cuda", harness_version="1.1.0",
                             note="rebuilt from the fields the worker stored")
    assert rebuilt.bandwidth.value is None and "no bandwidth floor" in rebuilt.bandwidth.why
    assert "rebuilt" in rebuilt.bandwidth.why
    cpu = achieved_rates(checks={"bandwidth_floor": {**H200_BANDWIDTH, "source": "10x the best copy rate"}},
                         median_ms=0.25, device="cpu")
    assert cpu.bandwidth.value is None and cpu.compute.value is None and cpu.bandwidth.why.startswith("a CPU run")
    untimed = achieved_rates(checks={}, median_ms=None, device="cuda",
                             timings={"skipped": "not timed: the candidate failed correctness"})
    assert untimed.bandwidth.why == "not re-measured: not timed: the candidate failed correctness"
    # A GPU not in the judge's table: its rate is 1.5x a measured copy, no peak to take a share of.
    unknown = achieved_rates(checks={"bandwidth_floor": {**H200_BANDWIDTH, "source": "1.5x the measured copy rate"},
                                     "compute_floor": {"flops": 10, "floor_ms": None,
                                                       "source": "NVIDIA X1 is not in the peak table"}},
                             median_ms=0.25, device="cuda")
    assert unknown.bandwidth.value is not None and unknown.bandwidth.fraction is None
    assert "no datasheet peak" in unknown.bandwidth.fraction_why
    assert unknown.compute.value is not None and unknown.compute.fraction is None
    assert "not in the peak table" in unknown.compute.fraction_why
    no_matmul = achieved_rates(checks={"compute_floor": {"flops": 0, "floor_ms": None, "source": "no matmul"}},
                               median_ms=0.25, device="cuda")
    assert no_matmul.compute.value is None and "no flops counted" in no_matmul.compute.why


def test_why_the_compile_baseline_is_missing():
    assert baseline_absence({"compile": {"skipped": "torch.compile baseline disabled"}}, "compile") == \
        "not timed (--no-compile)"
    assert baseline_absence({"compile": {"error": "torch.compile unavailable: boom"}}, "compile") == \
        "not timed: torch.compile unavailable: boom"
    assert baseline_absence({"compile": {"median_ms": 0.3}}, "compile") == ""
    assert baseline_absence({"skipped": "timing disabled (--no-timing)"}, "compile") == \
        "not timed: timing disabled (--no-timing)"
    assert baseline_absence({"candidate": {"median_ms": 1.0}}, "compile") == "not in this result document"


# --- the demo's shipped records, imported as `make demo` imports them ------------------------

def stored_figure(run: Verification) -> float:
    """bytes / median, recomputed here from the stored document, in GB/s."""
    floor = run.result["checks"]["bandwidth_floor"]
    return floor["bytes"] / (run.result["timings"]["candidate"]["median_ms"] / 1e3) / 1e9


def assert_every_remeasured_kernel_has_its_figure(client, kernels) -> int:
    checked = 0
    for kernel in kernels:
        run = Verification.objects.get(id=kernel.latest_verification_id)
        expected = stored_figure(run)
        detail = client.get(f"/api/kernels/{kernel.id}/").json()["achieved_rates"]
        assert detail["achieved_gb_per_s"] == pytest.approx(expected, rel=1e-12), kernel.name
        peak = run.result["checks"]["bandwidth_floor"]["bandwidth_bytes_per_s"]
        assert detail["fraction_of_peak_bandwidth"] == pytest.approx(expected * 1e9 / peak, rel=1e-12)
        assert detail["bandwidth_source"].startswith("datasheet peak for NVIDIA H200")
        page = text_of(client.get(f"/kernels/{kernel.id}/").content.decode())
        shown = f"{expected:,.0f}" if expected >= 100 else f"{expected:.1f}" if expected >= 10 else f"{expected:.2f}"
        row = f"Achieved bandwidth (bytes it must move at least / re-measured time) – {shown} GB/s"
        assert row in page, kernel.name
        assert "% of peak" in page
        checked += 1
    return checked


@pytest.mark.django_db
def test_every_remeasured_demo_kernel_has_achieved_gb_per_s_and_its_share_of_peak(client):
    cache.clear()
    archive_import_file(path=DEMO_ARCHIVE)
    verification_import_file(path=DEMO_RECORDS)
    verified = list(Kernel.objects.filter(verified=True))
    assert len(verified) == 10  # the demo's ten honest kernels, every one re-measured on the H200
    assert assert_every_remeasured_kernel_has_its_figure(client, verified) == 10

    kernel = verified[0]
    html = client.get(f"/kernels/{kernel.id}/").content.decode()
    # harness 2.4.0 wrote no compute floor: "–" and why, not a number
    compute_row = re.search(r'<tr class="achieved" id="achieved-compute">(.*?)</tr>', html, re.S).group(1)
    assert 'class="no-rate muted"' in compute_row and "harness 2.4.0 predates it" in compute_row
    assert "TFLOP/s" not in text_of(compute_row).split("–", 1)[1]
    # the demo ran with --no-compile: the page says so instead of "–"
    assert 'id="remeasured-compile-runtime"><span class="muted not-timed" title="the re-measured torch.compile ' \
           'baseline of this run">not timed (--no-compile)</span>' in html
    assert re.search(r'id="remeasured-speedup-compile"><span class="muted not-timed">not timed \(--no-compile\)', html)

    body = client.get(f"/api/kernels/{kernel.id}/verifications/").json()["results"][0]["achieved_rates"]
    assert body["achieved_gb_per_s"] == pytest.approx(stored_figure(Verification.objects.get(
        id=kernel.latest_verification_id)), rel=1e-12)
    assert body["achieved_tflop_per_s"] is None and "predates" in body["flops_unavailable"]

    task = kernel.task
    task_html = client.get(f"/tasks/{task.level}/{task.task_number}/").content.decode()
    table = re.search(r'<table class="data kernels" id="task-kernels">.*?</table>', task_html, re.S).group(0)
    assert "Achieved GB/s (% of peak)" in table
    for row_kernel in Kernel.objects.filter(task=task, verified=True):
        row = re.search(rf'<tr [^>]*data-kernel-id="{row_kernel.id}">(.*?)</tr>', table, re.S).group(1)
        assert 'class="achieved-rate achieved-bandwidth"' in row and "GB/s" in row and "<meter" in row


@pytest.mark.django_db
def test_failed_and_untimed_demo_runs_say_why_there_is_no_figure(client):
    archive_import_file(path=DEMO_ARCHIVE)
    verification_import_file(path=DEMO_RECORDS)
    failed = Kernel.objects.filter(verdict="failed").first()
    html = client.get(f"/kernels/{failed.id}/").content.decode()
    row = re.search(r'<tr class="achieved" id="achieved-bandwidth">(.*?)</tr>', html, re.S).group(1)
    assert 'class="no-rate muted"' in row and "not re-measured: timing disabled (--no-timing)" in row
    api = client.get(f"/api/kernels/{failed.id}/").json()["achieved_rates"]
    assert api["achieved_gb_per_s"] is None and api["bandwidth_unavailable"].startswith("not re-measured")


@pytest.mark.django_db
def test_every_remeasured_sample_kernel_has_its_figure_too(client, sample_path):
    """`make demo` on the shared sample imports its H200 records as well."""
    archive_import_file(path=sample_path, hardware="NVIDIA H100")
    archive_import_file(path=DEMO_ARCHIVE)
    verification_import_file(path=DEMO_RECORDS)
    verification_import_file(path=SAMPLE_RECORDS)
    verified = list(Kernel.objects.filter(verified=True))
    assert len(verified) > 10
    assert assert_every_remeasured_kernel_has_its_figure(client, verified) == len(verified)


@pytest.mark.django_db
def test_the_schema_documents_the_rates(client):
    schema = client.get("/api/schema/?format=json").json()
    rates = schema["components"]["schemas"]["AchievedRates"]["properties"]
    for name in ("achieved_gb_per_s", "fraction_of_peak_bandwidth", "achieved_tflop_per_s", "fraction_of_peak_flops",
                 "bandwidth_source", "flops_source", "bandwidth_unavailable", "flops_unavailable"):
        assert name in rates and rates[name].get("description"), name
    assert json.dumps(schema["components"]["schemas"]["KernelDetail"]["properties"]["achieved_rates"])
    assert "achieved_rates" in schema["components"]["schemas"]["Verification"]["properties"]
