"""The CUDA cheat suite (verifier/cheat_suite/manifest.json) through the judge on an H200, as the
fixtures of tests/fixtures/h200/ recorded its calls (verifier/gpu_campaign.py's summary rows, and
for harness 2.5.0 and later every entry's whole document: scripts/h200_judge_documents_fixture.py),
misses included. docs/h200_runs.md cites them: "The shipped 2.4.0 on the H200", "Harness 2.4.0 on
the H200" and "More rounds before a timing_unaccounted failure".

Three parts:

1. CALLS: every cheat-suite call of those fixtures, with how to read it and the entries it did not
   judge as the manifest expects (each explained by a claim below).
2. The invariants every cheat-suite call satisfies, one parametrised test over every call and
   check (id: check-fixture stem-call); the checks of the documents, over every call that has
   them. Each test calls a `check_*` function, so that a broken copy can be shown to fail it.
3. Each fixture's own claims: every figure the report gives recomputed from the rounds it kept,
   with the shipped functions.
"""
import copy
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

from tests.conftest import H200_FIXTURES
from verifier import gpu_campaign
from verifier.core import judge_timing, timing_report

from .cheat_suite_additions import ADDED_WITH_OUTSIDE_WORK
from .cheat_suite_halves import ENTRIES
from .clock_reports import check_clock_report, timed_clocks

BY_NAME = {e["name"]: e for e in ENTRIES}
HARNESS_2_5_0_SHA256 = "594aef97013089bd479a25771b697878f0280af2babf6d110e11508336dcce11"
HARNESS_2_5_1_SHA256 = "b258bb265b06a01292bf494e72645cf08542d7d1a944e3ee6a4144d72cc40697"
# The three timed attacks harness 2.5.0's whole-suite call stopped (at 530 s) before timing; its
# fourth call ("rest") timed them.
NOT_TIMED_2_5_0 = frozenset({"attack_incremental_patch_py", "attack_rhythm_py", "attack_nan_timed_py"})
HARNESS_2_9_1_SHA256 = "513f88d7d718129d04d6b9eec1398275e1d0ce9a1c8e0c3a0f1e884a3fba7464"
# 2.9.1's timed call stopped (at 530 s) before timing these four; its next call timed them.
NOT_TIMED_2_9_1 = frozenset({"attack_early_launch_code_swap_matmul_py", "attack_early_launch_code_swap_relu_py",
                             "attack_early_launch_profile_hook_matmul_py", "attack_early_launch_profile_hook_relu_py"})
# Attacks that cheat only once 3 of 4 calls come back to back: on 2.9.1's host the judge timed
# them in batches of 2, so they never cheated there (test below).
RHYTHM_OF_THREE = frozenset({"attack_nan_timed_py", "attack_gc_scavenge_timing_py"})


def load(name):
    return json.loads((H200_FIXTURES / name).read_text())


def blocking(doc):
    return {flag["name"] for flag in doc["flags"] if flag["blocking"]}


# --------------------------------------------------------------------------------------------
# 1. The table of cheat-suite calls
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Call:
    """How to read one call: its summary rows, its documents (None where the fixture kept only the
    rows) and the versions it ran."""
    rows: list
    documents: dict | None
    versions: dict


def judge_documents_run(part):
    """scripts/h200_judge_documents_fixture.py: runs[part] holds the summary, every document and the versions."""
    return lambda data: Call(data["runs"][part]["summary"], data["runs"][part]["documents"],
                             data["runs"][part]["versions"])


def cheat_rows(versions):
    """An older fixture: only gpu_campaign's summary rows of the call (cheat_suite), its versions beside them."""
    return lambda data: Call(data["cheat_suite"], None, versions(data))


@dataclass(frozen=True)
class CheatSuiteCall:
    fixture: str
    read: Callable[[dict], Call]
    harness: str
    harness_sha256: str | None = None
    not_ok: frozenset = frozenset()  # entries gpu_campaign did not judge as the manifest expects
    untimed: frozenset = frozenset()  # timed entries the call stopped before timing (phase A)
    gpu: str = "NVIDIA H200"


CHEAT_SUITE_CALLS = {
    # docs/h200_runs.md, "The shipped 2.4.0 on the H200": the timed entries, the same call as the
    # sample's task-1 kernels over 5 processes
    "shipped_2_4_0-cheat_suite": CheatSuiteCall(
        "shipped_2_4_0_2026_12_01.json", cheat_rows(lambda data: data["cheat_suite_versions"]), "2.4.0"),
    # docs/h200_runs.md, "Harness 2.4.0 on the H200": the final 2.4.0's timed entries (call 3;
    # attack_nan_timed_py's row from call 4)
    "busy_time_2_4_0-cheat_suite": CheatSuiteCall(
        "busy_time_2_4_0.json", cheat_rows(lambda data: data["versions"]["2.4.0"]), "2.4.0"),
    # docs/h200_runs.md, "More rounds before a timing_unaccounted failure": four calls of 2.5.0
    "judge_2_5_0_timing-suite": CheatSuiteCall(
        "judge_2_5_0_timing.json", judge_documents_run("suite"), "2.5.0", HARNESS_2_5_0_SHA256,
        not_ok=NOT_TIMED_2_5_0, untimed=NOT_TIMED_2_5_0),
    "judge_2_5_0_timing-rest": CheatSuiteCall(
        "judge_2_5_0_timing.json", judge_documents_run("rest"), "2.5.0", HARNESS_2_5_0_SHA256),
    "judge_2_5_0_timing-quiet": CheatSuiteCall(
        "judge_2_5_0_timing.json", judge_documents_run("quiet"), "2.5.0", HARNESS_2_5_0_SHA256),
    # the median of 27 rounds fails it, below
    "judge_2_5_0_timing-loaded": CheatSuiteCall(
        "judge_2_5_0_timing.json", judge_documents_run("loaded"), "2.5.0", HARNESS_2_5_0_SHA256,
        not_ok=frozenset({"honest_model_new_relu_cu"})),
    "judge_2_5_1_timing-quiet": CheatSuiteCall(
        "judge_2_5_1_timing.json", judge_documents_run("quiet"), "2.5.1", HARNESS_2_5_1_SHA256),
    "judge_2_5_1_timing-loaded": CheatSuiteCall(
        "judge_2_5_1_timing.json", judge_documents_run("loaded"), "2.5.1", HARNESS_2_5_1_SHA256),
    # docs/h200_runs.md, "Harness 2.9.1": four calls on one H100 lent for nvidia-h200
    **{"judge_2_9_1_cheat_suite-%s" % part: CheatSuiteCall(
        "judge_2_9_1_cheat_suite.json", judge_documents_run(part), "2.9.1", HARNESS_2_9_1_SHA256,
        gpu="NVIDIA H100 80GB HBM3", **extra)
       for part, extra in (("timed", {"not_ok": NOT_TIMED_2_9_1 | RHYTHM_OF_THREE, "untimed": NOT_TIMED_2_9_1}),
                           ("early_launch_timed", {}), ("untimed_a", {}), ("untimed_b", {}))},
}


def read_call(name, data=None):
    call = CHEAT_SUITE_CALLS[name]
    return call.read(load(call.fixture) if data is None else data)


CALLS = [pytest.param(name, id=name) for name in CHEAT_SUITE_CALLS]
DOCUMENTED_CALLS = [pytest.param(name, id=name) for name in CHEAT_SUITE_CALLS if read_call(name).documents is not None]


# --------------------------------------------------------------------------------------------
# 2. Invariants of every cheat-suite call
# --------------------------------------------------------------------------------------------

def check_the_call_ran_its_harness_on_its_gpu(call, expected):
    versions = call.versions
    assert versions["harness"] == expected.harness and versions["gpu"] == expected.gpu
    assert versions["torch"].startswith("2.11")
    assert expected.harness_sha256 is None or versions["harness_sha256"] == expected.harness_sha256


def check_every_row_is_a_cuda_entry_of_the_manifest(call, expected):
    """Once each; where the row says whether it is honest and its kind, as the manifest does."""
    names = [row["name"] for row in call.rows]
    assert len(names) == len(set(names)) and names
    for row in call.rows:
        entry = BY_NAME[row["name"]]
        assert "cuda" in entry["devices"], row["name"]
        if "honest" in row:
            assert row["honest"] == bool(entry.get("honest")), row["name"]
        if "kind" in row:
            assert row["kind"] == entry["kind"], row["name"]


def check_every_entry_is_judged_as_the_manifest_expects_but_those_named(call, expected):
    assert {row["name"] for row in call.rows if not row["ok"]} == expected.not_ok


def check_a_row_fails_exactly_when_it_names_a_blocking_flag(call, expected):
    for row in call.rows:
        assert row["verdict"] in ("passed", "failed"), row["name"]
        assert (row["verdict"] == "failed") == bool(row["blocking"]), row["name"]


def check_each_honest_entry_judged_as_expected_passed_and_each_other_failed(call, expected):
    for row in call.rows:
        if row["ok"]:
            assert row["verdict"] == ("passed" if BY_NAME[row["name"]].get("honest") else "failed"), row["name"]


def check_every_timed_entry_was_timed_but_those_named(call, expected):
    """gpu_campaign's phase B times the entries the manifest marks timed; phase A runs every entry untimed."""
    for row in call.rows:
        timed = BY_NAME[row["name"]].get("timing") and row["name"] not in expected.untimed
        assert row["phase"] == ("B" if timed else "A"), row["name"]


CALL_INVARIANTS = [check_the_call_ran_its_harness_on_its_gpu, check_every_row_is_a_cuda_entry_of_the_manifest,
                   check_every_entry_is_judged_as_the_manifest_expects_but_those_named,
                   check_a_row_fails_exactly_when_it_names_a_blocking_flag,
                   check_each_honest_entry_judged_as_expected_passed_and_each_other_failed,
                   check_every_timed_entry_was_timed_but_those_named]


@pytest.mark.parametrize("check", CALL_INVARIANTS, ids=[c.__name__.removeprefix("check_") for c in CALL_INVARIANTS])
@pytest.mark.parametrize("name", CALLS)
def test_every_cheat_suite_call_holds(check, name):
    check(read_call(name), CHEAT_SUITE_CALLS[name])


def check_the_summary_rows_are_the_documents(call, expected):
    """Each row is its entry's document: the verdict, the blocking flags, and gpu_campaign's
    judgement of the document against the manifest."""
    assert set(call.documents) == {row["name"] for row in call.rows}
    for row in call.rows:
        doc = call.documents[row["name"]]
        assert doc["verdict"] == row["verdict"] and blocking(doc) == set(row["blocking"]), row["name"]
        assert gpu_campaign.judge(BY_NAME[row["name"]], doc)["ok"] == row["ok"], row["name"]


def check_each_clock_report_is_recomputed_from_its_rounds(call, expected):
    for name, doc in call.documents.items():
        check_clock_report(timed_clocks(doc))


def check_every_honest_pass_is_within_its_allowance_on_every_clock(call, expected):
    for name, doc in call.documents.items():
        if BY_NAME[name].get("honest") and doc["verdict"] == "passed":
            assert all(r["median"] <= r["allowance"] for r in timed_clocks(doc).values()), name


DOCUMENT_INVARIANTS = [check_the_summary_rows_are_the_documents, check_each_clock_report_is_recomputed_from_its_rounds,
                       check_every_honest_pass_is_within_its_allowance_on_every_clock]


@pytest.mark.parametrize("check", DOCUMENT_INVARIANTS, ids=[c.__name__.removeprefix("check_") for c in DOCUMENT_INVARIANTS])
@pytest.mark.parametrize("name", DOCUMENTED_CALLS)
def test_every_cheat_suite_calls_documents_hold(check, name):
    check(read_call(name), CHEAT_SUITE_CALLS[name])


def test_a_verdict_or_a_round_changed_in_a_copy_of_a_fixture_fails_the_checks():
    name = "judge_2_5_0_timing-quiet"
    expected, data = CHEAT_SUITE_CALLS[name], load("judge_2_5_0_timing.json")
    for check in (check_the_summary_rows_are_the_documents, check_each_clock_report_is_recomputed_from_its_rounds):
        check(read_call(name, data), expected)
    flipped = copy.deepcopy(data)
    flipped["runs"]["quiet"]["summary"][0]["verdict"] = "failed"
    with pytest.raises(AssertionError):
        check_the_summary_rows_are_the_documents(read_call(name, flipped), expected)
    with pytest.raises(AssertionError):
        check_a_row_fails_exactly_when_it_names_a_blocking_flag(read_call(name, flipped), expected)
    moved = copy.deepcopy(data)
    doc = moved["runs"]["quiet"]["documents"]["honest_relu_cu"]
    report = next(iter(timed_clocks(doc).values()))
    report["per_round"] = [value + 1.0 for value in report["per_round"]]
    with pytest.raises(AssertionError):
        check_each_clock_report_is_recomputed_from_its_rounds(read_call(name, moved), expected)


# --------------------------------------------------------------------------------------------
# 3. Each fixture's own claims
# --------------------------------------------------------------------------------------------

# --- shipped_2_4_0_2026_12_01.json and busy_time_2_4_0.json: the 17 timed entries of 2.4.0

@pytest.mark.parametrize("name", ["shipped_2_4_0-cheat_suite", "busy_time_2_4_0-cheat_suite"])
def test_every_timed_cheat_suite_entry_of_2_4_0_behaves_as_expected(name):
    """17 of 17 as expected: the 6 honest ones pass (the one that waits inside its call on kernel
    time), every cheat and attack fails with its flag."""
    entries = read_call(name).rows
    assert len(entries) == 17 and all(e["ok"] and e["phase"] == "B" for e in entries)
    honest = [e for e in entries if e["honest"]]
    assert len(honest) == 6 and all(e["verdict"] == "passed" and not e["blocking"] for e in honest)
    for e in entries:
        if not e["honest"]:
            assert e["verdict"] == "failed" and e["blocking"], e["name"]
    by_name = {e["name"]: e for e in entries}
    assert by_name["honest_waits_inside_cu"]["speedup"]["clock"] == "kernel_time"
    assert by_name["honest_relu_cu"]["speedup"]["clock"] == "gpu_time"
    assert "patched_environment" in by_name["kernel_time_forge_py"]["blocking"]
    assert "timed_call_wrong_output" in by_name["attack_incremental_patch_py"]["blocking"]


# --- judge_2_9_1_cheat_suite.json: docs/h200_runs.md, "Harness 2.9.1"

def runs_2_9_1():
    return {part: read_call("judge_2_9_1_cheat_suite-" + part)
            for part in ("timed", "early_launch_timed", "untimed_a", "untimed_b")}


def test_2_9_1_judged_every_cuda_entry_but_seven_untimed_builds_as_the_manifest_expects():
    """Issue #36: the refactoring on the GPU. Each entry's last call (the four early-launch attacks
    timed in a call of their own) as expected, but the two rhythm attacks of the test below; the
    seven untimed CUDA entries did not run (the session's device time was spent)."""
    last = {}
    for call in runs_2_9_1().values():
        last.update({row["name"]: row for row in call.rows if row["name"] not in last or row["phase"] == "B"})
    cuda = {e["name"] for e in ENTRIES if "cuda" in e["devices"]}
    not_run = cuda - set(last)
    assert len(not_run) == 7 and all(BY_NAME[n]["file"].endswith(".cu") or n.endswith("_cu") for n in not_run)
    assert not any(BY_NAME[n].get("timing") for n in not_run)
    assert {n for n, row in last.items() if not row["ok"]} == RHYTHM_OF_THREE
    honest = [n for n in last if BY_NAME[n].get("honest")]
    assert len(honest) == 8 and all(last[n]["verdict"] == "passed" for n in honest)


def test_the_rhythm_attacks_never_cheated_in_batches_of_two_so_their_time_is_the_honest_one():
    """These attacks return garbage only when 3 of their last 4 calls came back to back. The judge
    never times fewer than 2 calls a batch, and on this host (every call about 1.5 times the 2.9.0
    host's) it timed them 2 at a time: each batch's first call followed a pause, so they stayed
    honest. What the judge measured is then true: a correct output every round and the eager
    reference's speed, not the 10x of 2.9.0's batches of 3, where both were caught. (The suite's 2 s
    budget made the batches that short: the judge's default 10 s gives 10 calls at these costs.)"""
    timed = runs_2_9_1()["timed"].documents
    before = load("judge_2_9_0_timed_cheats.json")["documents"]
    for name in RHYTHM_OF_THREE:
        doc, old = timed[name], before[name]
        assert doc["timing"]["batch"] == 2 and old["checks"]["timing"]["batch"] == 3, name
        assert "timed_call_wrong_output" not in {f["name"] for f in doc["flags"]}, name
        assert doc["speedup"]["vs_eager"] == pytest.approx(1.0, abs=0.1), name
        assert "timed_call_wrong_output" in blocking(old) and old["speedup"]["vs_eager"] > 5, name


# --- judge_2_5_0_timing.json and judge_2_5_1_timing.json: docs/h200_runs.md, "More rounds before a
# timing_unaccounted failure" (the 2.5.0 call's 60 sample rows through the site's worker are
# tests/evaluator/test_worker_runs_on_gpu_hosts.py's)

def runs_2_5_0():
    return load("judge_2_5_0_timing.json")["runs"]


def test_every_cuda_cheat_and_attack_is_caught_and_the_honest_kernels_pass():
    suite = runs_2_5_0()["suite"]
    docs, summary = suite["documents"], {row["name"]: row for row in suite["summary"]}
    cuda_entries = {e["name"] for e in ENTRIES if "cuda" in e["devices"]} - ADDED_WITH_OUTSIDE_WORK
    assert set(docs) == cuda_entries and len(cuda_entries) >= 53
    # The call stopped at 530 s with three timed attacks not yet timed: they pass untimed, as built to,
    # and the fourth call timed them.
    not_timed = {name for name, row in summary.items() if BY_NAME[name].get("timing") and row["phase"] == "A"}
    assert not_timed == NOT_TIMED_2_5_0
    for name in not_timed:
        assert docs[name]["verdict"] == "passed" and not any(f["blocking"] for f in docs[name]["flags"])
    rest = runs_2_5_0()["rest"]
    assert set(rest["documents"]) == not_timed and {row["phase"] for row in rest["summary"]} == {"B"}
    for name, doc in rest["documents"].items():
        assert gpu_campaign.judge(BY_NAME[name], doc)["ok"] and doc["verdict"] == "failed", (name, doc["flags"])
    for name in cuda_entries - not_timed:
        assert gpu_campaign.judge(BY_NAME[name], docs[name])["ok"], (name, docs[name]["flags"])
    honest = [name for name in cuda_entries if BY_NAME[name].get("honest") and BY_NAME[name].get("timing")]
    assert len(honest) == 6
    for name in honest:
        assert all(r["median"] <= r["allowance"] for r in timed_clocks(docs[name]).values()), name


def test_on_a_quiet_host_no_honest_kernel_needs_more_rounds():
    for name, doc in runs_2_5_0()["quiet"]["documents"].items():
        assert BY_NAME[name]["honest"] and doc["verdict"] == "passed", name
        assert "more rounds" not in doc["timing"]["stop"], name
        assert all(r["median"] <= r["allowance"] for r in timed_clocks(doc).values()), name


def test_with_its_timing_cpus_loaded_an_honest_kernel_gets_every_confirming_set_and_the_median_decides():
    docs = runs_2_5_0()["loaded"]["documents"]
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


def test_2_5_1_with_its_timing_cpus_loaded_passes_an_honest_kernel_2_4_1_would_have_failed():
    """2.5.1 (2.5.0 with no further set after 60 s of timing), the three honest kernels that needed
    confirming rounds above, quiet then loaded the same way: all pass. One needed two more sets:
    over its first 9 rounds of each clock, which 2.4.1 would have judged, both medians were over
    the allowance; over 21-22 rounds neither is."""
    data = load("judge_2_5_1_timing.json")["runs"]
    for name, run in data.items():
        for doc in run["documents"].values():
            assert doc["verdict"] == "passed" and not blocking(doc), name
    doc = data["loaded"]["documents"]["honest_model_new_relu_cu"]
    assert doc["timing"]["stop"].count("lower bound was not over the allowance") == 2
    first_rounds = 3 + judge_timing.CONFIRM_ROUNDS_PER_CLOCK
    for clock, r in timed_clocks(doc).items():
        assert timing_report.median_of_rounds(r["per_round"][:first_rounds]) > r["allowance"], clock
        assert r["rounds"] > first_rounds + judge_timing.CONFIRM_ROUNDS_PER_CLOCK and r["median"] <= r["allowance"]


def test_the_table_reads_every_cheat_suite_call_of_its_fixtures():
    """A call added to a fixture is added to CALLS too."""
    for fixture in ("judge_2_5_0_timing.json", "judge_2_5_1_timing.json"):
        stem = Path(fixture).stem
        parts = {part for part, run in load(fixture)["runs"].items() if "summary" in run}
        assert {name.removeprefix(stem + "-") for name, call in CHEAT_SUITE_CALLS.items()
                if call.fixture == fixture} == parts, fixture
