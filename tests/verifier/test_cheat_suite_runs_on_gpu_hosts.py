"""The CUDA cheat suite (verifier/cheat_suite/manifest.json) through the judge on GPU hosts (H200s,
and H100s lent for them), as the fixtures of tests/fixtures/h200/ recorded its calls
(verifier/gpu_campaign.py's summary rows and results, or scripts/h200_judge_documents_fixture.py's
cut documents), misses included. Each call's section of docs/h200_runs.md is named beside it.

Three parts:

1. CALLS: every cheat-suite call of those fixtures, with how to read it and the entries it did not
   judge as the manifest expects (each explained by a claim below).
2. The invariants every cheat-suite call satisfies, one parametrised test over every call and
   check (id: check-fixture stem-call); the checks of the documents, over every call that has
   them. Each test calls a `check_*` function, so that a broken copy can be shown to fail it.
3. Each fixture's own claims: every figure the report gives recomputed from the rounds it kept,
   with the shipped functions; the earliest fixtures (harness 1.0.0 to 2.1.0, in formats of their
   own) are read by their claims alone.
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

from .cheat_suite_additions import ADDED_WITH_KERNEL_TIME, ADDED_WITH_OUTSIDE_WORK
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
# 2.9.1 again once its modules moved into verifier/core/: the same code, another hash (what ships).
HARNESS_2_9_1_CORE_SHA256 = "5b0929535a163c18c205545fcc4a0c3c35a404be9ab22d64c395a387d2d118c3"


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


def campaign_results(data):
    """gpu_campaign's cheat_suite_results.json as the call returned it: its summary rows, every
    whole document (read here through its timing check) and the call's versions."""
    documents = {name: dict(doc, timing=(doc.get("checks") or {}).get("timing")) for name, doc in data["documents"].items()}
    return Call(data["summary"], documents, data["versions"])


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
    rounds_kept: bool = True  # the clock reports keep their rounds (harness 2.5.0 and later)


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
    # docs/h200_runs.md, "The judge 2.1.0": the op recorder without dynamo
    "op_recorder_subset": CheatSuiteCall("op_recorder_subset.json", campaign_results, "2.1.0",
                                         "dc6fc4321592e362844d7ebf2be03ca00d3bb7568ab42188dcfaa70d8a17e101",
                                         rounds_kept=False),
    # docs/h200_runs.md, "The judge 2.2.1 on the H200": fresh timing inputs, forked runners
    "judge_2_2_1_cheat_subset": CheatSuiteCall("judge_2_2_1_cheat_subset.json", campaign_results, "2.2.1",
                                               "4f7873c36d71a7b4732b4d32515c4d3efd7c5d06f719897ac578f395c923bec1",
                                               rounds_kept=False),
    # docs/h200_runs.md, "Harness 2.9.0": the 25 timed entries on an H100 lent for nvidia-h200
    "judge_2_9_0_timed_cheats": CheatSuiteCall(
        "judge_2_9_0_timed_cheats.json", campaign_results, "2.9.0",
        "cba5160fd5a99a6275976d98e83367ecaa46b07ef27c9683b6f60e8a2d9be3e2", gpu="NVIDIA H100 80GB HBM3"),
    # docs/h200_runs.md, "Harness 2.9.1": four calls on one H100 lent for nvidia-h200
    **{"judge_2_9_1_cheat_suite-%s" % part: CheatSuiteCall(
        "judge_2_9_1_cheat_suite.json", judge_documents_run(part), "2.9.1", HARNESS_2_9_1_SHA256,
        gpu="NVIDIA H100 80GB HBM3", **extra)
       for part, extra in (("timed", {"not_ok": NOT_TIMED_2_9_1 | RHYTHM_OF_THREE, "untimed": NOT_TIMED_2_9_1}),
                           ("early_launch_timed", {}), ("untimed_a", {}), ("untimed_b", {}))},
    # docs/h200_runs.md, "Harness 2.9.1 as verifier/core/": the whole suite in two calls on one H100
    **{"judge_2_9_1_core_cheat_suite-%s" % part: CheatSuiteCall(
        "judge_2_9_1_core_cheat_suite.json", judge_documents_run(part), "2.9.1", HARNESS_2_9_1_CORE_SHA256,
        gpu="NVIDIA H100 80GB HBM3") for part in ("timed", "untimed")},
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
    if not expected.rounds_kept:
        return
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


# --- judge_2_9_1_core_cheat_suite.json: docs/h200_runs.md, "Harness 2.9.1 as verifier/core/"

def test_the_verifier_as_a_package_judged_every_cuda_entry_as_the_manifest_expects():
    """Issue #36: the move into verifier/core/ is a refactoring, so on the GPU every CUDA entry of
    the manifest is judged once, timed where the manifest says, and as expected: the honest ones
    pass, the rest fail with their flags."""
    timed, untimed = (read_call("judge_2_9_1_core_cheat_suite-" + part) for part in ("timed", "untimed"))
    rows = {row["name"]: row for row in timed.rows + untimed.rows}
    assert len(rows) == len(timed.rows) + len(untimed.rows)
    assert set(rows) == {e["name"] for e in ENTRIES if "cuda" in e["devices"]}
    assert {row["name"] for row in timed.rows} == {n for n in rows if BY_NAME[n].get("timing")}
    assert all(row["ok"] for row in rows.values())


def test_with_time_budget_s_the_rhythm_attacks_got_batches_of_three_and_were_caught():
    """The manifest's time_budget_s (6 s for the attacks gated on 3 of 4 calls back to back) gave
    the judge room for batches of 3 on the host where 2.9.1's 2 s budget gave batches of 2 (test
    above): both attacks then cheated and were caught at 10x."""
    documents = read_call("judge_2_9_1_core_cheat_suite-timed").documents
    for name in RHYTHM_OF_THREE:
        assert BY_NAME[name]["time_budget_s"] > 2, name
        doc = documents[name]
        assert doc["timing"]["batch"] >= 3 and "timed_call_wrong_output" in blocking(doc), name


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


# --- the earlier fixtures' own claims: harness 1.0.0 to 2.2.1, and 2.9.0's timed entries

H200_RESULTS = H200_FIXTURES / "cheat_suite_results.json"


def test_h200_results_fixture_shows_every_cheat_caught():
    """Real results from an H200 (torch 2.11, CUDA 13.0).  The recorded run is phase A of
    gpu_campaign (every entry checked, untimed); its timed phase B was cut off (see
    docs/harness.md), so the two cheats that only timing can expose are recorded as
    passing their untimed checks, which is what they are built to do."""
    data = json.loads(H200_RESULTS.read_text())
    assert data["device"] == "cuda" and data["versions"]["gpu"] == "NVIDIA H200"
    assert data["versions"]["gpu_capability"] == "9.0" and data["versions"]["torch"].startswith("2.11")
    rows = {r["name"]: r for r in data["summary"]}
    # the suite as it was then (harness 1.0.0); the attacks came with the judge (2.0.0)
    cuda_entries = [e for e in ENTRIES if "cuda" in e["devices"] and not e.get("attack")
                    and e["name"] not in ADDED_WITH_KERNEL_TIME | ADDED_WITH_OUTSIDE_WORK]
    assert set(rows) == {e["name"] for e in cuda_entries}
    judged = 0
    for entry in cuda_entries:
        doc = data["documents"][entry["name"]]
        assert doc["verdict"] in ("passed", "failed"), (entry["name"], doc.get("error"))
        for f in doc["flags"]:
            assert f["evidence"]
        if entry.get("timing") and rows[entry["name"]]["phase"] == "A" and not entry.get("honest"):
            timing_flags = {"below_bandwidth_floor", "timing_output_mismatch", "side_stream_work"}
            if doc["verdict"] == "passed":  # untimed: only the timing checks can catch it
                assert set(entry.get("expect_any", [])) & timing_flags
                assert not any(f["blocking"] for f in doc["flags"])
                continue
        assert gpu_campaign.judge(entry, doc)["ok"], (entry["name"], rows[entry["name"]])
        judged += 1
    assert judged >= len(cuda_entries) - 2
    cheats = [e for e in cuda_entries if not e.get("honest")]
    caught = [e for e in cheats if data["documents"][e["name"]]["verdict"] == "failed"]
    assert len(caught) >= 16
    stale = data["documents"]["stale_memory_cu"]
    assert any(f["name"] == "stale_memory" and "KernelBench order" in f["evidence"] for f in stale["flags"])


JUDGE_H200_RESULTS = H200_FIXTURES / "judge_cheat_suite_results.json"
JUDGE_COST = H200_FIXTURES / "judge_cost.json"


def test_judge_on_the_h200_caught_every_cuda_cheat_and_passed_every_honest_kernel():
    """The judge 2.0.0 on an H200 (scripts/gpu_judge_check.sh, phase A: every CUDA-capable entry
    of the suite as it stood before the attacks, untimed but for honest_relu_cu), with every
    confinement measure enforced on that host."""
    data = json.loads(JUDGE_H200_RESULTS.read_text())
    assert data["device"] == "cuda" and data["versions"]["gpu"] == "NVIDIA H200"
    docs = data["documents"]
    by_name = {e["name"]: e for e in ENTRIES}
    assert len(docs) >= 24
    for name, doc in docs.items():
        entry = by_name[name]
        assert doc["versions"]["harness"] == "2.0.0"
        confinement = doc["checks"]["confinement"]
        assert all(v is True or (isinstance(v, str) and not v.startswith("not enforced")) for v in confinement.values())
        assert {"pid_namespace", "own_proc", "network_namespace", "landlock", "seccomp"} <= set(confinement)
        if entry.get("honest"):
            assert doc["verdict"] == "passed" and not any(f["blocking"] for f in doc["flags"]), name
        elif name == "warm_cache_cu":  # it cheats only in a timing loop; its timed run did not fit the call
            assert doc["verdict"] == "passed" and doc["timings"].get("skipped")
        else:
            assert gpu_campaign.judge(entry, doc)["ok"], name
            assert doc["verdict"] == "failed"
    timed = docs["honest_relu_cu"]
    unaccounted = timed["checks"]["timing"]["unaccounted_ms_per_call"]
    assert unaccounted["median"] <= unaccounted["allowance"] and timed["speedup"]["vs_eager"] > 0


def test_judge_cost_fixture_keeps_every_verdict_but_two_timing_false_alarms():
    """bench/bench_judge_cost.py on an H200 (docs/h200_runs.md, "attacks, timed cheats and
    cost"): the same verdict under 1.2.0 and the judge for every kernel, but two honest ones the judge failed only on its
    clock check at the 0.15 ms allowance that run had (raised to 0.5 ms after it)."""
    data = json.loads(JUDGE_COST.read_text())
    rows = data["rows"]
    assert data["summary"]["entries"] == len(rows) >= 13
    for row in rows:
        assert row["ratio"] == pytest.approx(row["new"]["wall_s"] / row["old"]["wall_s"], abs=0.01)
        if row["new"]["verdict"] != row["old"]["verdict"]:
            assert (row["old"]["verdict"], row["new"]["verdict"]) == ("passed", "failed")
            assert row["new"]["blocking"] == ["timing_unaccounted"], row["name"]
    assert data["summary"]["same_verdicts"] >= len(rows) - 2


JUDGE_2_1 = H200_FIXTURES / "judge_2_1_cheat_suite.json"
# Entries for what harness 2.2.0 closed (fresh inputs for every timed call); their GPU runs are
# with that judge (scripts/gpu_cheat_subset.sh). With those of later harnesses
# (cheat_suite_additions.py): what the suite did not hold when the judge 2.1.0 ran it.
ADDED_AFTER_2_1 = {"attack_incremental_patch_py"} | ADDED_WITH_KERNEL_TIME | ADDED_WITH_OUTSIDE_WORK


def test_judge_2_1_on_the_h200_fails_every_cuda_cheat_and_attack_and_passes_honest_kernels_untimed():
    """Phase A of scripts/gpu_judge_check.sh with harness 2.1.0: all 50 CUDA-capable entries of
    today's suite, attacks included, untimed; the entries that cheat only when timed pass here.
    The first timed entries' documents are from that run's cut-short phase B, whose timing CPUs
    were contended (three honest kernels failed timing_unaccounted; phase_b is the rerun)."""
    data = json.loads(JUDGE_2_1.read_text())["phase_a"]
    assert data["versions"]["gpu"] == "NVIDIA H200" and data["versions"]["harness"].startswith("2.1")
    by_name = {e["name"]: e for e in ENTRIES}
    cuda_entries = {e["name"] for e in ENTRIES if "cuda" in e["devices"]} - ADDED_AFTER_2_1
    assert set(data["documents"]) == cuda_entries and len(cuda_entries) >= 50
    timing_only = set()
    timed_in_b = {row["name"] for row in data["summary"] if row["phase"] == "B"}
    for name, doc in data["documents"].items():
        entry = by_name[name]
        assert all(v is True or (isinstance(v, str) and not v.startswith("not enforced"))
                   for v in doc["confinement"].values()), name
        if entry.get("honest") and name in timed_in_b:  # that run's timed document (phase_b supersedes it)
            assert doc["verdict"] == "passed" or {f["name"] for f in doc["flags"] if f["blocking"]} == {
                "timing_unaccounted"}, name
        elif entry.get("honest"):
            assert doc["verdict"] == "passed" and not any(f["blocking"] for f in doc["flags"]), name
        elif doc["verdict"] == "passed":  # untimed: only a timed run can show these
            assert entry.get("timing") and not any(f["blocking"] for f in doc["flags"]), name
            timing_only.add(name)
        elif entry.get("timing") and not gpu_campaign.judge(entry, doc)["ok"]:
            # untimed it behaves; its source already fails it (the timed run is phase_b's)
            assert doc["verdict"] == "failed" and "process_interference_in_source" in {
                f["name"] for f in doc["flags"] if f["blocking"]}, name
        else:
            assert gpu_campaign.judge(entry, doc)["ok"], name
    assert timing_only <= {e["name"] for e in ENTRIES if e.get("timing")} and len(timing_only) <= 5
    assert sum(by_name[n].get("attack", False) for n in data["documents"]) >= 26


def test_judge_2_1_on_the_h200_catches_the_timing_cheats_when_timed():
    """Phase B, the 14 timed CUDA entries, timing CPUs reserved: every cheat and attack failed
    (the one-shot timer attack's forgery did not take on the GPU-time clock, where its 20 ms of
    host time stayed in the figure: it failed on its source's process interference); four
    honest kernels passed, honest_model_new_relu_cu failed timing_unaccounted at 0.29 ms a call
    against that run's 0.15 ms allowance, which is why the allowance is now 0.5 ms."""
    data = json.loads(JUDGE_2_1.read_text())["phase_b"]
    by_name = {e["name"]: e for e in ENTRIES}
    for name, doc in data["documents"].items():
        entry = by_name[name]
        assert entry.get("timing")
        if entry.get("honest"):
            unaccounted = doc["timing"]["unaccounted_ms_per_call"]
            assert doc["timing"]["cpu_affinity"]["chosen_from"].startswith("reserved")
            worst = max(c["median"] for c in unaccounted["by_clock"].values())
            assert worst < 0.5, name  # the allowance now
            if doc["verdict"] == "failed":
                assert {f["name"] for f in doc["flags"] if f["blocking"]} == {"timing_unaccounted"}, name
        else:
            assert doc["verdict"] == "failed", name
            assert gpu_campaign.judge(entry, doc)["ok"] or name == "attack_timer_oneshot_py", name
    timer = data["documents"]["attack_timer_oneshot_py"]
    assert timer["timings"]["candidate"]["median_ms"] > 20  # its 20 ms are in the figure: nothing forged
    passed = [n for n, d in data["documents"].items() if by_name[n].get("honest") and d["verdict"] == "passed"]
    assert len(passed) >= 4


OP_RECORDER_H200 = H200_FIXTURES / "op_recorder_subset.json"


def test_the_op_recorder_without_dynamo_on_the_h200():
    """scripts/gpu_cheat_subset.sh on an H200 after the op recorder stopped importing
    torch._dynamo (verifier/core/guard.py): the entries it judges (library calls, mode detection) and
    the honest kernels, timed, behave as the manifest says, and it still saw the reference's mm."""
    data = json.loads(OP_RECORDER_H200.read_text())
    assert data["device"] == "cuda" and data["versions"]["gpu"] == "NVIDIA H200"
    by_name = {e["name"]: e for e in ENTRIES}
    docs = data["documents"]
    assert len(docs) == 11 and all(row["ok"] for row in data["summary"])
    for name, doc in docs.items():
        assert gpu_campaign.judge(by_name[name], doc)["ok"], name
    assert {row["name"] for row in data["summary"] if row["phase"] == "B"} == \
        {name for name in docs if by_name[name].get("honest") and by_name[name].get("timing")}
    for name in ("reference_call_py", "library_matmul_cu"):
        ops = docs[name]["checks"]["runner"]["dispatched_ops"]
        assert ops["reference_ops"] == {"mm": 1} and ops["all_reused"], name
    assert docs["honest_matmul_cu"]["checks"]["runner"]["dispatched_ops"]["candidate_ops"] == {}
    assert "dynamo loaded: False" in data["recorder_smoke"]


JUDGE_2_2_1 = H200_FIXTURES / "judge_2_2_1_cheat_subset.json"


def test_judge_2_2_1_on_the_h200_fresh_timing_inputs_and_a_forked_runner():
    """scripts/gpu_cheat_subset.sh with harness 2.2.1: every timed call on inputs of its own and the
    runner forked from the judge. Every entry as expected, every confinement measure enforced in
    the forked runner, the input-patching and pointer-cache attacks caught, and the honest
    kernels timed on GPU-made inputs within the clock check's allowance."""
    data = json.loads(JUDGE_2_2_1.read_text())
    assert data["device"] == "cuda" and data["versions"]["gpu"] == "NVIDIA H200"
    by_name = {e["name"]: e for e in ENTRIES}
    docs = data["documents"]
    assert {"attack_incremental_patch_py", "attack_pointer_identity_py", "attack_escape_daemon_py",
            "attack_signal_parent_kill_py", "attack_proc_snoop_py"} <= set(docs) and len(docs) >= 19
    for name, doc in docs.items():
        assert doc["versions"]["harness"] == "2.2.1", name
        assert gpu_campaign.judge(by_name[name], doc)["ok"], name
        assert all(v is True or (isinstance(v, str) and not v.startswith("not enforced"))
                   for v in doc["checks"]["confinement"].values()), name
        timing = doc["checks"].get("timing")
        if by_name[name].get("honest"):
            assert timing["inputs"] == "get_inputs() on the GPU under a new seed per call", name
            unaccounted = timing["unaccounted_ms_per_call"]
            assert unaccounted["median"] <= unaccounted["allowance"], name
    assert "timed_call_wrong_output" in {f["name"] for f in docs["attack_incremental_patch_py"]["flags"]}
    assert "cached_output" in {f["name"] for f in docs["attack_pointer_identity_py"]["flags"]}


JUDGE_2_9_0_TIMED = H200_FIXTURES / "judge_2_9_0_timed_cheats.json"


def test_every_timed_cheat_entry_keeps_its_verdict_when_timing_stops_on_the_ranking_clock():
    """scripts/gpu_cheat_subset.sh with harness 2.9.0 over every manifest entry the judge times: each
    as expected, and every honest kernel's rounds stopped on its ranking clock's spread while the
    end-to-end clock of most was still far from the target (the rule 2.9.0 dropped would have timed
    them to the budget)."""
    data = json.loads(JUDGE_2_9_0_TIMED.read_text())
    assert data["device"] == "cuda" and data["versions"]["harness"] == "2.9.0"
    by_name = {e["name"]: e for e in ENTRIES}
    docs = data["documents"]
    assert set(docs) == {e["name"] for e in ENTRIES if e.get("timing") and "cuda" in e["devices"]}
    still_noisy = 0
    for name, doc in docs.items():
        assert gpu_campaign.judge(by_name[name], doc)["ok"], name
        if by_name[name].get("honest"):
            timing, cand = doc["checks"]["timing"], doc["timings"]["candidate"]
            assert timing["stop"].startswith(
                "relative standard error of the median on the %s clock" % cand["clock"]), name
            assert cand["rse"] <= timing["rse_target"], name
            still_noisy += cand["end_to_end"]["rse"] > timing["rse_target"]
    assert still_noisy >= 4
