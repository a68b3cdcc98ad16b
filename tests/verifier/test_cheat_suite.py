"""The project's own cheat suite through the real judge and runner (real load_inline builds
with the host compiler, each verification in its own sandboxed process): every CPU-capable
cheat and every attack on the verification itself must come back failed with its expected
flag, never passed; every honest kernel must pass with no blocking flag. The GPU results
recorded on an H200 are checked the same way."""
import json
import os
from pathlib import Path

import pytest

from verifier import gpu_campaign

from .cheat_suite_additions import ADDED_WITH_KERNEL_TIME, ADDED_WITH_OUTSIDE_WORK
from .cheat_suite_halves import CPU_ENTRIES, ENTRIES, check_entry, halves, run_half

ROOT = Path(__file__).resolve().parents[2]
H200_RESULTS = ROOT / "tests" / "fixtures" / "h200" / "cheat_suite_results.json"


def test_manifest_covers_every_design_row():
    cheats = [e for e in ENTRIES if not e.get("honest") and not e.get("attack")]
    honest = [e for e in ENTRIES if e.get("honest")]
    assert len(cheats) >= 12 and len(honest) >= 3
    assert len([e for e in CPU_ENTRIES if e.get("honest")]) >= 3
    caught_by = {n for e in cheats for n in e.get("expect", []) + e.get("expect_any", [])}
    for flag in ("stale_memory", "constant_output", "cached_output", "input_mutation", "deferred_write",
                 "output_not_plain_tensor", "output_aliases_input", "patched_environment", "reduced_precision",
                 "library_call_replaces_kernel", "output_collapsed_to_zero", "below_bandwidth_floor",
                 "side_stream_work"):
        assert flag in caught_by, flag
    attacks = [e for e in ENTRIES if e.get("attack")]
    # Attacks run on the CPU too, except those on device work itself (the early launches: CUDA code)
    assert len(attacks) >= 12 and all(("cpu" in e["devices"] or e["family"] == "work_outside_call") and
                                      (e.get("expect_any") or e.get("expect")) for e in attacks)
    families = {e["family"] for e in attacks}
    for family in ("forge_document", "json_patch", "exit_hooks", "late_thread", "harness_patch", "gc_scavenge",
                   "measurement_detection", "proc_snoop", "signal_parent", "escape_process", "nan_wildcard",
                   "channel_lies"):
        assert any(family in f for f in families), family
    for e in ENTRIES:
        task, cand, fn = gpu_campaign.entry_paths(e)
        assert os.path.exists(task) and os.path.exists(cand) and (fn is None or os.path.exists(fn)), e["name"]
        assert e["kind"] in ("model_new", "cuda_forward") and set(e["devices"]) <= {"cpu", "cuda"}


HALF = halves()[0]


def test_the_two_halves_run_every_cpu_entry_once():
    first, second = halves()
    names = [e["name"] for e in first + second]
    assert sorted(names) == sorted(e["name"] for e in CPU_ENTRIES) and len(set(names)) == len(names)
    assert abs(len(first) - len(second)) <= 3 and first and second


@pytest.fixture(scope="module")
def cpu_suite_docs(judge_server):
    """This half's entries (the other half is test_cheat_suite_other_half.py's), each run once."""
    return run_half(HALF)


@pytest.mark.slow
@pytest.mark.parametrize("entry", HALF, ids=[e["name"] for e in HALF])
def test_cpu_entry_behaves_as_expected(entry, cpu_suite_docs):
    check_entry(entry, cpu_suite_docs[entry["name"]])


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


JUDGE_H200_RESULTS = ROOT / "tests" / "fixtures" / "h200" / "judge_cheat_suite_results.json"
JUDGE_COST = ROOT / "tests" / "fixtures" / "h200" / "judge_cost.json"


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


JUDGE_2_1 = ROOT / "tests" / "fixtures" / "h200" / "judge_2_1_cheat_suite.json"
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


OP_RECORDER_H200 = ROOT / "tests" / "fixtures" / "h200" / "op_recorder_subset.json"


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


JUDGE_2_2_1 = ROOT / "tests" / "fixtures" / "h200" / "judge_2_2_1_cheat_subset.json"


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


JUDGE_2_9_0_TIMED = ROOT / "tests" / "fixtures" / "h200" / "judge_2_9_0_timed_cheats.json"


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
