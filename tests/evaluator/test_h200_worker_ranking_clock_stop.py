"""Harness 2.9.0's stop rule through the site's worker at the judge's defaults, beside 2.8.0 on the
same kind of card (tests/fixtures/h200/worker_ranking_clock_stop_2_9_0.json, docs/worker.md): the
sample's kernels keep their earlier verdicts, and a passing kernel holds the GPU alone for a few
seconds instead of the whole 10 s timing budget."""
import json
import statistics

from tests.conftest import H200_FIXTURES

FIXTURE = json.loads((H200_FIXTURES / "worker_ranking_clock_stop_2_9_0.json").read_text())
STOP_ON_RANKING, STOP_ON_EVERY_CLOCK = FIXTURE["calls"]


def _median_phase(call, phase):
    return statistics.median(r["phases"][phase] for r in call["runs"] if r["phases"].get(phase))


def test_every_sample_kernel_keeps_its_earlier_verdict_under_either_rule():
    assert len(STOP_ON_RANKING["verifications"]) == 42 and STOP_ON_RANKING["summary"]["still_open"] == 0
    for call, harness in ((STOP_ON_RANKING, "2.9.0"), (STOP_ON_EVERY_CLOCK, "2.8.0")):
        runs = call["verifications"]
        assert runs and all(r["harness"] == harness and r["earlier"] for r in runs)
        assert [r["kernel_id"] for r in runs if r["earlier"]["verdict"] != r["verdict"]] == []


def test_stopping_on_the_ranking_clock_frees_the_gpu_for_the_next_kernel():
    # the old rule held a passing kernel's GPU for its whole 10 s budget; the new one a few seconds
    assert _median_phase(STOP_ON_EVERY_CLOCK, "alone_s") > 10 > 6 > _median_phase(STOP_ON_RANKING, "alone_s")
    assert _median_phase(STOP_ON_RANKING, "device_wait_s") < 0.5 * _median_phase(STOP_ON_EVERY_CLOCK, "device_wait_s")
    assert STOP_ON_RANKING["summary"]["kernels_per_hour"] > 1.5 * STOP_ON_EVERY_CLOCK["summary"]["kernels_per_hour"]
