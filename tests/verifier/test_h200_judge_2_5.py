"""Harnesses 2.5.0 and 2.5.1 on the H200 (tests/fixtures/h200/judge_2_5_0_timing.json and
judge_2_5_1_timing.json, docs/h200_runs.md, "More rounds before a timing_unaccounted failure"): the
whole CUDA cheat suite, the honest timed kernels on a quiet host and with their timing CPUs
loaded, and 60 sample rows through the site's worker. Each figure the report gives is recomputed
from the rounds it kept, with the shipped functions."""
import json
from pathlib import Path

from tests.evaluator.test_h200_judge_2_1 import blocking
from verifier import gpu_campaign, judge_timing, timing_report

from .cheat_suite_halves import ENTRIES
from .test_cheat_suite import ADDED_WITH_OUTSIDE_WORK

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "h200" / "judge_2_5_0_timing.json"
EARLIER_SAMPLE = ROOT / "tests" / "fixtures" / "h200" / "sample_worker_2_4_1_b.json"
FIXTURE_2_5_1 = ROOT / "tests" / "fixtures" / "h200" / "judge_2_5_1_timing.json"
HARNESS_SHA256 = "594aef97013089bd479a25771b697878f0280af2babf6d110e11508336dcce11"
HARNESS_2_5_1_SHA256 = "b258bb265b06a01292bf494e72645cf08542d7d1a944e3ee6a4144d72cc40697"
BY_NAME = {e["name"]: e for e in ENTRIES}


def runs():
    return json.loads(FIXTURE.read_text())["runs"]


def timed_clocks(doc):
    timing = doc["timing"] or {}
    return (timing.get("unaccounted_ms_per_call") or {}).get("by_clock") or {}


def check_clock_report(by_clock):
    """The median and its bound as the judge reported them are the shipped functions' over the rounds kept."""
    for clock, r in by_clock.items():
        assert r["rounds"] == len(r["per_round"]), clock
        assert abs(r["median"] - timing_report.median_of_rounds(r["per_round"])) < 1e-4, clock
        bound = timing_report.median_lower_bound(r["per_round"])
        assert (bound is None) == (r["median_lower_bound"] is None), clock
        assert bound is None or abs(bound - r["median_lower_bound"]) < 1e-4, clock


def test_every_run_is_harness_2_5_0_on_the_h200():
    for name, run in runs().items():
        versions = run["versions"]
        assert versions["harness"] == "2.5.0" and versions["harness_sha256"] == HARNESS_SHA256, name
        assert versions["gpu"] == "NVIDIA H200" and versions["torch"].startswith("2.11"), name


def test_every_cuda_cheat_and_attack_is_caught_and_the_honest_kernels_pass():
    suite = runs()["suite"]
    docs, summary = suite["documents"], {row["name"]: row for row in suite["summary"]}
    cuda_entries = {e["name"] for e in ENTRIES if "cuda" in e["devices"]} - ADDED_WITH_OUTSIDE_WORK
    assert set(docs) == cuda_entries and len(cuda_entries) >= 53
    # The call stopped at 530 s with three timed attacks not yet timed: they pass untimed, as built to,
    # and the fourth call timed them.
    not_timed = {name for name, row in summary.items() if BY_NAME[name].get("timing") and row["phase"] == "A"}
    assert not_timed == {"attack_incremental_patch_py", "attack_rhythm_py", "attack_nan_timed_py"}
    for name in not_timed:
        assert docs[name]["verdict"] == "passed" and not any(f["blocking"] for f in docs[name]["flags"])
    rest = runs()["rest"]
    assert set(rest["documents"]) == not_timed and {row["phase"] for row in rest["summary"]} == {"B"}
    for name, doc in rest["documents"].items():
        assert gpu_campaign.judge(BY_NAME[name], doc)["ok"] and doc["verdict"] == "failed", (name, doc["flags"])
    for name in cuda_entries - not_timed:
        assert gpu_campaign.judge(BY_NAME[name], docs[name])["ok"], (name, docs[name]["flags"])
        check_clock_report(timed_clocks(docs[name]))
    honest = [name for name in cuda_entries if BY_NAME[name].get("honest") and BY_NAME[name].get("timing")]
    assert len(honest) == 6
    for name in honest:
        assert all(r["median"] <= r["allowance"] for r in timed_clocks(docs[name]).values()), name


def test_on_a_quiet_host_no_honest_kernel_needs_more_rounds():
    for name, doc in runs()["quiet"]["documents"].items():
        assert BY_NAME[name]["honest"] and doc["verdict"] == "passed", name
        assert "more rounds" not in doc["timing"]["stop"], name
        by_clock = timed_clocks(doc)
        check_clock_report(by_clock)
        assert all(r["median"] <= r["allowance"] for r in by_clock.values()), name


def test_with_its_timing_cpus_loaded_an_honest_kernel_gets_every_confirming_set_and_the_median_decides():
    docs = runs()["loaded"]["documents"]
    for doc in docs.values():
        check_clock_report(timed_clocks(doc))
    # Two honest kernels over the allowance after their first rounds, under it after six more.
    for name in ("honest_matmul_cu", "honest_linear_relu_cu"):
        assert docs[name]["verdict"] == "passed" and "then 12 more rounds" in docs[name]["timing"]["stop"]
        assert "lower bound" not in docs[name]["timing"]["stop"]
    # One over it after those, its bound under it: three more sets, then its median of 27 rounds
    # (0.67 ms a call against 0.5) fails it. A busy loop on each timing CPU is host time the kernel's
    # runner really waits; a worker host keeps those CPUs free (docs/worker.md).
    doc = docs["honest_model_new_relu_cu"]
    gpu_time = timed_clocks(doc)["gpu_time"]
    assert doc["timing"]["stop"].count("lower bound was not over the allowance") == judge_timing.MAX_CONFIRMING_SETS - 1
    assert gpu_time["rounds"] == 3 + judge_timing.MAX_CONFIRMING_SETS * judge_timing.CONFIRM_ROUNDS_PER_CLOCK
    assert gpu_time["median_lower_bound"] <= gpu_time["allowance"] < gpu_time["median"]
    assert [f["name"] for f in doc["flags"] if f["blocking"]] == ["timing_unaccounted"]
    assert "the median of 27 rounds" in doc["flags"][0]["evidence"]
    assert all(docs[name]["verdict"] == "passed" for name in docs if name != "honest_model_new_relu_cu")


def test_the_worker_gives_the_sample_rows_the_2_4_1_verdicts_but_two_load_sensitive_ones():
    rows = {r["kernel_id"]: r for r in runs()["sample"]["rows"]}
    earlier = {int(r["kernel_id"]): r for r in json.loads(EARLIER_SAMPLE.read_text())["rows"]}
    assert set(rows) == set(earlier) and len(rows) == 60
    changed = {}
    for kernel_id, row in rows.items():
        doc, before = row["document"], earlier[kernel_id]["document"]
        check_clock_report(timed_clocks(doc))
        if (doc["verdict"], blocking(doc)) != (before["verdict"], blocking(before)):
            changed[row["kernel"]] = (before["verdict"], blocking(before), doc["verdict"], blocking(doc))
    # The two kernels 2.4.1 failed on the judge's clock alone pass again, as 2.4.0 and 2.1.0 passed
    # them: their rounds this time never put a median over the allowance.
    assert changed == {"block_size_optimized_base": ("failed", {"timing_unaccounted"}, "passed", set()),
                       "stream_pipeline_base": ("failed", {"timing_unaccounted"}, "passed", set())}
    for kernel_id in (1, 70):
        assert all(r["median"] <= r["allowance"] for r in timed_clocks(rows[kernel_id]["document"]).values())
    assert not any("more rounds" in (row["document"]["timing"] or {}).get("stop", "") for row in rows.values())


def test_2_5_1_with_its_timing_cpus_loaded_passes_an_honest_kernel_2_4_1_would_have_failed():
    """2.5.1 (2.5.0 with no further set after 60 s of timing), the three honest kernels that needed
    confirming rounds above, quiet then loaded the same way: all pass. One needed two more sets:
    over its first 9 rounds of each clock, which 2.4.1 would have judged, both medians were over
    the allowance; over 21-22 rounds neither is."""
    data = json.loads(FIXTURE_2_5_1.read_text())["runs"]
    for name, run in data.items():
        assert run["versions"]["harness"] == "2.5.1" and run["versions"]["harness_sha256"] == HARNESS_2_5_1_SHA256
        for doc in run["documents"].values():
            assert doc["verdict"] == "passed" and not blocking(doc), name
            check_clock_report(timed_clocks(doc))
    doc = data["loaded"]["documents"]["honest_model_new_relu_cu"]
    assert doc["timing"]["stop"].count("lower bound was not over the allowance") == 2
    first_rounds = 3 + judge_timing.CONFIRM_ROUNDS_PER_CLOCK
    for clock, r in timed_clocks(doc).items():
        assert timing_report.median_of_rounds(r["per_round"][:first_rounds]) > r["allowance"], clock
        assert r["rounds"] > first_rounds + judge_timing.CONFIRM_ROUNDS_PER_CLOCK and r["median"] <= r["allowance"]
