"""Both timing figures on every surface that shows a time: the kernel page (claimed vs
re-measured, verification history), the API and the worker's stored fields, each naming its
clock; documents from before GPU time read as one end-to-end figure."""
import pytest
from django.utils import timezone

from evaluator.verification_results import fields_from_result
from kernels.models import Verification
from evaluator.services import kernel_verification_state_refresh
from tests.kernels.kernel_factories import make_kernel, make_task
from verifier.core import kernel_time, timing_report

pytestmark = pytest.mark.django_db

DOCUMENT = {  # as the judge writes it on a GPU since harness 2.1.0 (trimmed)
    "verdict": "passed", "device": "cuda", "versions": {"harness": "2.1.0", "gpu": "NVIDIA H200"},
    "timings": {
        "candidate": {"median_ms": 0.03728, "clock": "gpu_time", "method": timing_report.METHODS["gpu_time"],
                      "end_to_end": {"median_ms": 0.04011, "clock": "end_to_end"}},
        "eager": {"median_ms": 0.03872, "clock": "gpu_time", "method": timing_report.METHODS["gpu_time"],
                  "end_to_end": {"median_ms": 0.1457, "clock": "end_to_end"}},
        "compile": {"skipped": "torch.compile baseline disabled"}},
    "speedup": {"vs_eager": 0.03872 / 0.03728, "clock": "gpu_time", "end_to_end": {"vs_eager": 0.1457 / 0.04011}},
}


def _stored(kernel, document):
    run = Verification.objects.create(kernel=kernel, finished_at=timezone.now(), result=document,
                                      **fields_from_result(document))
    kernel_verification_state_refresh(kernel_id=kernel.id)
    return run


def test_the_kernel_page_ranks_by_gpu_time_and_shows_end_to_end_beside_it(client):
    kernel = make_kernel(make_task(level=2, number=1), 0, correct=True, speedup=1.1, runtime=0.05)
    run = _stored(kernel, DOCUMENT)
    assert run.runtime_ms == 0.03728 and run.speedup_eager == pytest.approx(1.0386, rel=1e-3)
    kernel.refresh_from_db()
    assert kernel.remeasured_speedup_eager == pytest.approx(1.0386, rel=1e-3)  # what ranks: GPU time
    html = client.get(f"/kernels/{kernel.id}/").content.decode()
    assert "GPU time" in html and "launch queued behind a spin" in html
    assert "3.63×" in html and "0.04011 ms" in html and "0.1457 ms" in html  # end to end, beside it


def test_a_document_from_before_gpu_time_shows_its_one_figure_as_end_to_end(client):
    kernel = make_kernel(make_task(level=1, number=1), 0, correct=True, speedup=1.1, runtime=0.05)
    _stored(kernel, {"verdict": "passed", "device": "cuda", "timings": {"candidate": {"median_ms": 0.25},
                     "eager": {"median_ms": 0.5}}, "speedup": {"vs_eager": 2.0}})
    html = client.get(f"/kernels/{kernel.id}/").content.decode()
    assert "end to end" in html and "(harness before 2.1.0)" in html and "2.00×" in html


def test_the_api_gives_both_figures_with_their_methods(client):
    kernel = make_kernel(make_task(level=2, number=1), 0, correct=True, speedup=1.1, runtime=0.05)
    _stored(kernel, DOCUMENT)
    runs = client.get(f"/api/kernels/{kernel.id}/verifications/").json()
    runs = runs["results"] if isinstance(runs, dict) else runs
    timings = runs[0]["timings"]
    assert timings["candidate"]["clock"] == "gpu_time" and "spin" in timings["candidate"]["method"]
    assert timings["eager"]["end_to_end"]["median_ms"] == 0.1457 and runs[0]["runtime_ms"] == 0.03728


def test_the_dataset_export_names_the_clock_and_carries_the_end_to_end_figures():
    from kernels.export.rows import site_columns

    kernel = make_kernel(make_task(level=2, number=1), 0, correct=True, speedup=1.1, runtime=0.05)
    row = site_columns(kernel, _stored(kernel, DOCUMENT))
    assert row["Verification_Timing_Clock"] == "gpu_time" and row["Verification_Runtime"] == 0.03728
    assert (row["Verification_End_To_End_Runtime"], row["Verification_End_To_End_Native_Runtime"]) == (0.04011, 0.1457)
    assert row["Verification_End_To_End_Speedup_Native"] == pytest.approx(3.6325, rel=1e-3)


def test_timing_task_flags_are_read_per_task_and_kept_out_of_the_weak_task_flags():
    from evaluator.task_timing import task_timing_flags
    from evaluator.verification_import import _merge_task_flags
    from verifier.core import result

    task = make_task(level=2, number=1)
    launch_bound = timing_report.task_flags(dict(DOCUMENT, verdict="passed"))
    assert [f["name"] for f in launch_bound] == ["launch_bound"]
    document = dict(DOCUMENT, task_flags=launch_bound + [{"name": "near_zero_output", "blocking": False,
                                                          "evidence": "|y| < 0.01"}])
    assert [f["name"] for f in result.all_flags(document)] == ["launch_bound", "near_zero_output"]
    runs = [_stored(make_kernel(task, i, correct=True), document) for i in range(2)]
    found = task_timing_flags(task_id=task.id)
    assert [(f["name"], f["verifications"]) for f in found] == [("launch_bound", 2)]
    assert "3.8x" in found[0]["evidence"]
    _merge_task_flags(runs)  # as a trusted import does
    task.refresh_from_db()
    assert [f["name"] for f in task.flags] == ["near_zero_output"]


def test_a_kernel_time_figure_is_named_with_why_it_ranks_and_the_reason_is_escaped(client):
    """Harness 2.3.0: a call that waits for the device inside itself ranks on the kernel-time clock;
    the page names that clock and shows the judge's reason (a contributed document's text is
    untrusted: escaped)."""
    kernel = make_kernel(make_task(level=3, number=1), 0, correct=True, speedup=1.1, runtime=0.05)
    why = "the launch was hidden in fewer than half of the calls of candidate (0 of 16) <script>x()</script>"
    entry = {"clock": "kernel_time", "method": timing_report.METHODS["kernel_time"], "fallback": why,
             "event_median_ms": 0.21}
    document = dict(DOCUMENT, timings={
        "candidate": dict(entry, median_ms=0.06, end_to_end={"median_ms": 0.2, "clock": "end_to_end"}),
        "eager": dict(entry, median_ms=0.02, fallback=why, end_to_end={"median_ms": 0.09, "clock": "end_to_end"})},
        speedup={"vs_eager": 0.02 / 0.06, "clock": "kernel_time", "end_to_end": {"vs_eager": 0.09 / 0.2}})
    _stored(kernel, document)
    html = client.get(f"/kernels/{kernel.id}/").content.decode()
    assert "GPU kernel time" in html and "CUPTI through torch.profiler" in html
    assert "(0 of 16) &lt;script&gt;x()&lt;/script&gt;" in html and "<script>x()" not in html
    assert "0.33×" in html


def test_busy_gpu_time_shows_the_calls_own_events_beside_it(client):
    """Harness 2.4.0: GPU time is the device's busy time of the queued call; its CUDA events'
    median stays beside it on the page, and the method says how the figure was made."""
    kernel = make_kernel(make_task(level=1, number=2), 0, correct=True, speedup=1.1, runtime=0.05)
    entry = {"clock": "gpu_time", "method": kernel_time.BUSY_METHOD}
    document = dict(DOCUMENT, timings={
        "candidate": dict(entry, median_ms=0.006112, event_median_ms=0.008608,
                          end_to_end={"median_ms": 0.0088, "clock": "end_to_end"}),
        "eager": dict(entry, median_ms=0.004032, event_median_ms=0.006464,
                      end_to_end={"median_ms": 0.025, "clock": "end_to_end"})},
        speedup={"vs_eager": 0.004032 / 0.006112, "clock": "gpu_time", "end_to_end": {"vs_eager": 0.025 / 0.0088}})
    _stored(kernel, document)
    html = client.get(f"/kernels/{kernel.id}/").content.decode()
    assert "0.006112 ms" in html and "events 0.008608 ms" in html and "busy time during the call" in html
    assert "0.66×" in html


def test_the_judges_clock_check_is_shown_with_its_rounds_and_allowance(client):
    """Harness 2.5.0 reports how many rounds the unaccounted time's median is of; older documents
    are counted from the rounds they kept, and a contributed document's odd values show nothing."""
    kernel = make_kernel(make_task(level=1, number=3), 0, correct=True, speedup=1.1, runtime=0.05)
    check = {"clock": "end_to_end", "median": 0.4871, "allowance": 0.5, "rounds": 21, "median_lower_bound": -0.24,
             "per_round": [0.1] * 21}
    _stored(kernel, dict(DOCUMENT, checks={"timing": {"unaccounted_ms_per_call": check}}))
    html = client.get(f"/kernels/{kernel.id}/").content.decode()
    assert "judge's clock: 0.4871 ms a call unaccounted (end to end), 0.5 ms allowed, median of 21 rounds" in html

    older = make_kernel(make_task(level=1, number=4), 0, correct=True, speedup=1.1, runtime=0.05)
    _stored(older, dict(DOCUMENT, checks={"timing": {"unaccounted_ms_per_call": {
        "clock": "gpu_time", "median": 0.02, "allowance": 0.5, "per_round": [0.01, 0.02, 0.03]}}}))
    html = client.get(f"/kernels/{older.id}/").content.decode()
    assert "0.02 ms a call unaccounted (GPU time), 0.5 ms allowed, median of 3 rounds" in html

    odd = make_kernel(make_task(level=1, number=5), 0, correct=True, speedup=1.1, runtime=0.05)
    _stored(odd, dict(DOCUMENT, checks={"timing": {"unaccounted_ms_per_call": {
        "median": "<b>0.1</b>", "allowance": 0.5, "rounds": "many"}}}))
    html = client.get(f"/kernels/{odd.id}/").content.decode()
    assert "judge's clock" not in html and "<b>0.1</b>" not in html
    no_allowance = make_kernel(make_task(level=1, number=6), 0, correct=True, speedup=1.1, runtime=0.05)
    _stored(no_allowance, dict(DOCUMENT, checks={"timing": {"unaccounted_ms_per_call": {
        "median": 0.1, "allowance": 0, "rounds": True}}}))
    assert "judge's clock" not in client.get(f"/kernels/{no_allowance.id}/").content.decode()
