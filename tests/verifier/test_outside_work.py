"""Device work outside every timed call (verifier/core/outside_work.py): the accounting on a real
H200 trace, the judge's verdict on the summaries, the hooks the runner's snapshot now covers, the
static scan's blocking patterns, the compute floor, and what harness 2.6.0 did on the H200
(tests/fixtures/h200/judge_2_6_0_outside_work.json: the whole CUDA cheat suite over three calls)."""
import gc
import json
import signal
import sys

import pytest
import torch

from tests.conftest import H200_FIXTURES, REPO_ROOT
from verifier.core import compute_floor, guard, inputs, kernel_time, outside_work, static_scan

from .h200_traces import h200_trace


def test_the_activities_no_call_launched_are_the_rest_of_a_real_h200_trace():
    events = h200_trace()
    device = [e for e in events if e["device"] and not e["annotation"]]
    inside = sum(count for _, count in kernel_time.busy_ms_per_call(events, 3))
    assert kernel_time.outside_calls(events, 3)["activities"] == len(device) - inside == 0
    # A kernel launched before the first call's range (an early launch) is outside, with its name.
    first = min(e["start_ns"] for e in events)
    events += [{"name": "cudaLaunchKernel", "device": False, "start_ns": first - 50_000, "duration_ns": 5_000,
                "correlation_id": 999_999, "annotation": False},
               {"name": "early_matmul", "device": True, "start_ns": first - 40_000, "duration_ns": 30_000,
                "correlation_id": 999_999, "annotation": False}]
    outside = kernel_time.outside_calls(events, 3)
    assert outside["activities"] == 1 and outside["top"] == [["early_matmul", 0.03, 1]]
    assert outside["ms_per_call"] == pytest.approx(0.01)


def test_the_harness_spins_are_left_out_but_a_kernel_named_like_one_is_not():
    spin = {"name": "at::cuda::(anonymous namespace)::spin_kernel(long)", "duration_ns": 50_000}
    acts = [dict(spin, start_ns=i * 100_000) for i in range(4)]
    assert outside_work.summarize(acts, 4)["ms_per_call"] == 0.0
    acts.append(dict(spin, start_ns=900_000, duration_ns=80_000))  # a fifth "spin": the candidate's
    summary = outside_work.summarize(acts, 4)
    assert summary["activities"] == 1 and summary["ms_per_call"] == pytest.approx(0.08 / 4)


def rounds(candidate_ms, candidate_top, n=6, batch=64):
    seen = outside_work.Rounds()
    reference = {"ms_per_call": 0.045, "activities": 5 * batch, "top": [["fill", 1.0, batch], ["dot", 0.5, batch]]}
    for _ in range(n):
        seen.add({"ms_per_call": candidate_ms, "activities": 6 * batch, "top": candidate_top}, reference, batch)
    return seen


def test_the_harness_own_outside_work_passes():
    report, why = rounds(0.0451, [["fill", 1.0, 64], ["dot", 0.5, 64]]).verdict("gpu_time", 0.036)
    assert why is None and report["not_the_harness"] == [] and report["excess_ms_per_call"] < report["allowance_ms"]


def test_more_outside_device_time_than_the_harness_fails_whatever_its_names():
    # The 512 matmul launched early, named like a harness kernel: 35 us more per call.
    _, why = rounds(0.080, [["fill", 3.2, 128], ["dot", 0.5, 64]]).verdict("gpu_time", 0.0012)
    assert why and "0.035 ms per call outside" in why


def test_a_kernel_the_harness_never_runs_outside_its_calls_fails_even_when_short():
    # A 2 us ReLU launched early: within the total's allowance, but a kernel of the candidate's own.
    report, why = rounds(0.0472, [["fill", 1.0, 64], ["relu_kernel", 0.13, 64]]).verdict("gpu_time", 0.0013)
    assert report["excess_ms_per_call"] < report["allowance_ms"]
    assert why and "relu_kernel" in why and report["foreign_ms_per_call"] == pytest.approx(0.13 * 6 / (6 * 64))


def test_a_runner_that_does_not_report_its_outside_work_fails():
    seen = outside_work.Rounds()
    seen.add({"ms_per_call": "0"}, {"ms_per_call": 0.045, "activities": 1, "top": []}, 64)
    assert "did not report" in seen.verdict("gpu_time", 0.01)[1]


def test_the_snapshot_sees_hooks_that_run_code_when_the_harness_acts():
    namespaces = [("inputs", inputs)]
    before = guard.snapshot(namespaces)
    original = inputs.make_timing_inputs.__code__

    def hook(*args):
        pass

    gc.callbacks.append(hook)
    signal.setitimer(signal.ITIMER_PROF, 100.0)
    inputs.make_timing_inputs.__code__ = original.replace()  # the function's identity stays
    try:
        changed = " ".join(guard.changes(before, guard.snapshot(namespaces)))
    finally:
        gc.callbacks.remove(hook)
        signal.setitimer(signal.ITIMER_PROF, 0)
        inputs.make_timing_inputs.__code__ = original
    assert "inputs.make_timing_inputs.__code__" in changed and "gc.callbacks" in changed
    assert "interval timer %d armed" % signal.ITIMER_PROF in changed
    assert guard.changes(before, guard.snapshot(namespaces)) == []


@pytest.mark.skipif(not hasattr(sys, "monitoring"), reason="sys.monitoring is Python 3.12+")
def test_the_snapshot_sees_a_sys_monitoring_event_on_the_harness_code():
    namespaces = [("inputs", inputs)]
    before = guard.snapshot(namespaces)
    mon = sys.monitoring
    tool = next(t for t in range(2, 6) if mon.get_tool(t) is None)
    mon.use_tool_id(tool, "test")
    mon.set_local_events(tool, inputs.make_timing_inputs.__code__, mon.events.PY_RETURN)
    try:
        changed = guard.changes(before, guard.snapshot(namespaces))
    finally:
        mon.set_local_events(tool, inputs.make_timing_inputs.__code__, 0)
        mon.free_tool_id(tool)
    assert any("sys.monitoring tool %d" % tool in c for c in changed)


@pytest.mark.parametrize("line", ["sys.monitoring.use_tool_id(3, 'x')", "gc.callbacks.append(f)",
                                  "sys.setprofile(f)", "threading.setprofile(f)", "sys.meta_path.insert(0, f)",
                                  "lib = torch.library.Library('aten', 'IMPL')"])
def test_the_static_scan_blocks_hooks_in_python(line):
    flags, _ = static_scan.scan("import sys, gc, threading, torch\n%s\n" % line, "model_new", "cuda", "")
    assert [f["blocking"] for f in flags if f["name"] == "process_interference_in_source"] == [True]


def test_the_static_scan_blocks_aten_overrides_and_cupti_in_cuda():
    src = '#include <cupti.h>\nTORCH_LIBRARY_IMPL(aten, CUDA, m) { m.impl("normal_", &mine); }\n'
    flags, _ = static_scan.scan(src, "cuda_forward", "cuda", "")
    assert any(f["name"] == "process_interference_in_source" and f["blocking"] for f in flags)
    honest_src = (REPO_ROOT / "verifier/cheat_suite/candidates/honest_model_new_relu_cu.py").read_text()
    honest, _ = static_scan.scan(honest_src, "model_new", "cuda", "")
    assert not any(f["blocking"] for f in honest)


class Matmul(torch.nn.Module):
    def forward(self, a, b):
        return a @ b


def test_the_compute_floor_counts_the_reference_flops_and_flags_what_is_faster():
    ins = [torch.randn(64, 64), torch.randn(64, 64)]
    assert compute_floor.reference_flops(Matmul(), ins) == 2 * 64 ** 3
    report, below = compute_floor.check(Matmul(), ins, 1e-9, "cpu")
    assert below["name"] == "below_compute_floor" and below["blocking"] and report["floor_ms"] > 1e-9
    assert compute_floor.check(Matmul(), ins, 10.0, "cpu")[1] is None
    assert compute_floor.check(torch.nn.ReLU(), [torch.randn(8)], 1e-9, "cpu") == (
        {"flops": 0, "floor_ms": None, "source": "no matmul, convolution or attention in the reference"}, None)


H200 = json.loads((H200_FIXTURES / "judge_2_6_0_outside_work.json").read_text())


def h200_entries():
    """Every CUDA entry's last result over the three calls: its timed one where it was timed."""
    last = {}
    for call in ("call1", "call2", "call3"):
        for row in H200["runs"][call + "_summary"]:
            if row["phase"] == "B" or row["name"] not in last or last[row["name"]]["phase"] != "B":
                last[row["name"]] = dict(row, call=call)
    return last


def test_on_the_h200_every_cuda_entry_of_the_cheat_suite_behaved_as_expected():
    manifest = json.loads((REPO_ROOT / "verifier/cheat_suite/manifest.json").read_text())["entries"]
    cuda = {e["name"] for e in manifest if "cuda" in e["devices"]}
    last = h200_entries()
    assert set(last) == cuda
    timed = {e["name"] for e in manifest if "cuda" in e["devices"] and e.get("timing")}
    assert {name for name, row in last.items() if row["phase"] == "B"} == timed
    assert [name for name, row in last.items() if not row["ok"]] == []


def test_on_the_h200_each_early_launch_failed_on_its_outside_work_and_honest_kernels_had_none():
    docs = H200["runs"]["call3"]
    attacks = [n for n in docs if n.startswith("attack_early_launch_")]
    assert len(attacks) == 6
    for name in attacks:
        check = docs[name]["timing"]["outside_calls"]["gpu_time"]
        assert any(f["name"] == "work_outside_call" and f["blocking"] for f in docs[name]["flags"])
        assert check["not_the_harness"], name  # the candidate's own kernel, by name
    for call in ("call1", "call3"):
        for name, doc in H200["runs"][call].items():
            if name.startswith("honest_") and doc["timing"].get("outside_calls"):
                check = next(iter(doc["timing"]["outside_calls"].values()))
                assert doc["verdict"] == "passed" and check["not_the_harness"] == []
                assert check["excess_ms_per_call"] <= 0.0011  # microseconds: the allowance is 3 us


def test_the_early_launch_attacks_share_one_block_and_differ_only_in_their_trigger():
    # Each candidate is one file the judge loads, so the block is copied by design; it must not drift.
    blocks = set()
    for trigger in ("monitoring", "code_swap", "profile_hook"):
        src = (REPO_ROOT / ("verifier/cheat_suite/candidates/attack_early_launch_%s.py" % trigger)).read_text()
        block = src[src.index("_CUDA = r"):src.index("return _compute(list(args))")]
        blocks.add(block.replace("cheat_suite_early_%s" % trigger, "NAME"))
    assert len(blocks) == 1


def test_on_the_h200_the_sample_rows_run_on_2_6_0_kept_their_verdicts_with_no_outside_work():
    rows = json.loads((H200_FIXTURES / "sample_judge_2_6_0.json").read_text())["rows"]
    assert len(rows) == 8 and all(r["versions"]["harness"] == "2.6.0" for r in rows)
    for r in rows:
        check = r["outside_calls"]["gpu_time"]
        assert r["verdict"] == "passed" and not any(f["blocking"] for f in r["flags"]), r["kernel"]
        # About 3 us more than the judge's own around a 2 ms kernel: far inside 10 % of the call.
        assert check["foreign_ms_per_call"] == 0 and check["excess_ms_per_call"] < 0.004 < check["allowance_ms"]
