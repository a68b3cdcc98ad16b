"""The project's own cheat suite through the real judge and runner (real load_inline builds
with the host compiler, each verification in its own sandboxed process): every CPU-capable
cheat and every attack on the verification itself must come back failed with its expected
flag, never passed; every honest kernel must pass with no blocking flag. The suite's GPU runs
are tests/verifier/test_cheat_suite_runs_on_gpu_hosts.py's."""
import os

import pytest

from verifier import gpu_campaign

from .cheat_suite_halves import CPU_ENTRIES, ENTRIES, check_entry, halves, run_half



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
