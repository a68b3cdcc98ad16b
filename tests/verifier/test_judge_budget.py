"""Every verification ends within its budget: a kernel that runs a step past it fails with a flag
naming the step, and a slow honest kernel's timing is cut to fit instead of running it out."""
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import H200_FIXTURES, REPO_ROOT
from verifier.core import build
from verifier.core import judge
from verifier.core import judge_budget
from verifier.core.judge_budget import Budget, BudgetExhausted
from verifier.core.timing_setup import fit_batch

# One C++ kernel for every case (one build): a ReLU that sleeps x.size(0) ms per call, so each
# task's input shape sets how slow it is.
SLEEPY_RELU = textwrap.dedent("""
    #include <torch/extension.h>
    #include <chrono>
    #include <thread>

    torch::Tensor forward(torch::Tensor x) {
        std::this_thread::sleep_for(std::chrono::milliseconds(x.size(0)));
        auto xc = x.contiguous();
        auto out = torch::empty_like(xc);
        const float* in = xc.data_ptr<float>();
        float* o = out.data_ptr<float>();
        for (int64_t i = 0; i < xc.numel(); ++i) o[i] = in[i] > 0.f ? in[i] : 0.f;
        return out;
    }

    PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &forward, "a ReLU that takes its time"); }
""")


def _task(rows: int) -> str:
    return textwrap.dedent(f"""
        import torch
        import torch.nn as nn

        class Model(nn.Module):
            def forward(self, x):
                return torch.relu(x)

        def get_inputs():
            return [torch.randn({rows}, 64)]

        def get_init_inputs():
            return []
    """)


def _judge(tmp_path: Path, rows: int, *options: str) -> dict:
    (tmp_path / "task.py").write_text(_task(rows))
    (tmp_path / "kernel.cpp").write_text(SLEEPY_RELU)
    done = subprocess.run([sys.executable, "-m", "verifier.core.judge", "--reference", str(tmp_path / "task.py"),
                           "--candidate", str(tmp_path / "kernel.cpp"), "--kind", "cuda_forward", "--device", "cpu",
                           "--build-dir", build.default_build_dir(), *options],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout[done.stdout.index("{"):])


def _budget_flags(doc: dict) -> list[dict]:
    return [f for f in doc["flags"] if f["name"] in ("verification_budget_exhausted", "probe_budget_exhausted")]


def test_a_call_that_hangs_fails_within_the_probe_budget_naming_its_step(tmp_path):
    doc = _judge(tmp_path, 30_000, "--probe-budget", "3", "--budget", "60")  # 30 s a call
    (exhausted,) = _budget_flags(doc)
    assert doc["verdict"] == "failed" and exhausted["blocking"]
    assert exhausted["name"] == "probe_budget_exhausted" and exhausted["step"] == "candidate_call"
    assert "correctness trials" in exhausted["evidence"]
    assert doc["checks"]["budget"]["ran_out_in"] == "candidate_call"
    assert doc["checks"]["budget"]["spent_s"] < 3 + 2


def test_a_slow_kernel_runs_out_the_whole_budget_and_is_never_passed(tmp_path):
    doc = _judge(tmp_path, 400, "--budget", "4")  # 0.4 s a call, more calls than 4 s allow
    (exhausted,) = _budget_flags(doc)
    assert doc["verdict"] == "failed" and exhausted["name"] == "verification_budget_exhausted"
    assert exhausted["step"] in ("candidate_call", "runner_probes", "timing_setup", "timing")
    assert doc["checks"]["budget"]["spent_s"] < 4 + 2
    assert not doc["speedup"].get("vs_eager")


def test_a_slow_honest_kernel_gets_fewer_calls_per_batch_and_passes(tmp_path):
    doc = _judge(tmp_path, 60)  # 60 ms a call: 64 calls a batch would not fit the CPU's 3 s timing budget
    assert doc["verdict"] == "passed", (doc["flags"], doc.get("error"))
    timing = doc["checks"]["timing"]
    assert 2 <= timing["batch"] < 64 and "timing budget" in timing["batch_size"]
    assert not _budget_flags(doc) and doc["checks"]["budget"]["spent_s"] < doc["checks"]["budget"]["budget_s"]


class _Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_the_budget_bounds_requests_only_once_started_and_names_what_ran_out():
    clock = _Clock()
    budget = Budget(90, 45, clock=clock)
    assert budget.request_timeout(1800) == 1800  # the build and load: the runner's own timeout
    budget.start()
    assert budget.request_timeout(1800) == 45
    clock.now += 60
    assert budget.request_timeout(1800) == pytest.approx(30)
    budget.step = "runner_probes"
    assert budget.exhausted_flag()["name"] == "probe_budget_exhausted"
    clock.now += 30
    spent = budget.exhausted_flag()
    assert spent["name"] == "verification_budget_exhausted" and "the probes" in spent["evidence"]
    assert spent["step"] == "runner_probes" and spent["blocking"]


def test_a_large_task_gets_more_time_once_and_the_references_compile_is_not_counted():
    clock = _Clock()
    budget = Budget(90, 45, clock=clock)
    budget.start()
    budget.allow_for_task(2_000_000_000)  # 2 GB of inputs and outputs
    budget.allow_for_task(8_000_000_000)  # only the first trial's task figures count
    assert budget.total_s == pytest.approx(90 + 2 * 180) and budget.request_s == pytest.approx(45 + 2 * 60)
    with budget.not_counted():
        clock.now += 25  # the reference's torch.compile
    clock.now += 10
    assert budget.spent() == pytest.approx(10)
    report = budget.report()
    assert report["task_allowance_s"] == 360 and report["not_counted_s"] == pytest.approx(25)


def test_a_trial_that_would_not_fit_is_not_started():
    """The judge's own part of a trial has no request timeout: when the longest trial so far
    needs more than is left, the judge stops before the next one, with the flag."""
    clock = _Clock()
    budget = Budget(90, 45, clock=clock)
    budget.start()
    budget.step = "candidate_call"
    job = judge._Job({"flags": []}, lambda name: None, {}, "cpu", "cuda_forward", budget)
    clock.now += 50
    job._within_budget(need_s=30, what="another trial needs about 30 s")  # 40 s left: it fits
    with pytest.raises(BudgetExhausted) as raised:
        job._within_budget(need_s=45, what="another trial needs about 45 s")
    entry = raised.value.flag
    assert entry["name"] == "verification_budget_exhausted" and entry["step"] == "candidate_call"
    assert "too little was left" in entry["evidence"] and "40 s were left" in entry["evidence"]


@pytest.mark.parametrize("per_call_ms, expected", [
    ({"eager": 0.01, "candidate": 0.01}, 64),        # fast: the output-size limit stands
    ({"eager": 100.0, "candidate": 100.0}, 8),       # 200 ms a round's call: 6 rounds of 8 in 10 s
    ({"eager": 900.0, "candidate": 5000.0}, 2),      # slower than the budget: never below 2
])
def test_a_batch_fits_the_timing_budget(per_call_ms, expected):
    assert fit_batch(64, per_call_ms, 10.0, 6)[0] == expected


def test_waiting_for_the_device_is_not_spent_from_the_budget():
    clock, waited = _Clock(), [0.0]
    budget = Budget(90, 45, clock=clock, uncounted=lambda: waited[0])
    budget.start()
    clock.now += 100
    waited[0] += 80  # another kernel's timing had the GPU
    assert budget.spent() == pytest.approx(20) and budget.remaining() == pytest.approx(70)


# Harness 2.7.0 on the H200 (docs/h200_runs.md): three calls of
# scripts/gpu_budget_check.sh, the last with the harness as shipped.
H200 = json.loads((H200_FIXTURES / "judge_2_7_0_budget.json").read_text())


def test_on_the_h200_every_cuda_l1_kernel_ended_within_its_budget_with_a_named_verdict():
    shipped = H200["calls"][-1]
    assert shipped["harness"] == "2.7.0" and shipped["cuda_l1"]
    for row in shipped["cuda_l1"]:
        assert row["verdict"] in ("passed", "failed"), row
        assert row["budget"]["spent_s"] <= row["budget"]["budget_s"], row
        assert row["verdict"] == "passed" or row["blocking"], row
    for call in H200["calls"]:  # where a budget ran out, the flag named a step the judge has
        for row in call["cuda_l1"]:
            for entry in row.get("budget_flags", []):
                assert entry["step"] in judge_budget.STEP_WORDS and judge_budget.STEP_WORDS[entry["step"]] in \
                    entry["evidence"], entry


def test_on_the_h200_no_cheat_suite_entry_changed_its_verdict_under_the_budget():
    timed = {e["name"] for e in H200["calls"][-1]["cheat_suite"] if e["phase"] == "B"}
    timing_attacks = {e["name"] for e in json.loads((REPO_ROOT / "verifier/cheat_suite/manifest.json").read_text())[
        "entries"] if e.get("timing") and not e.get("honest")}
    for call in H200["calls"]:
        for entry in call["cheat_suite"]:
            if entry["phase"] == "A" and entry["name"] in timing_attacks:
                continue  # caught when timed; these calls' limits cut some before their timing
            assert entry["verdict"] == ("passed" if entry["honest"] else "failed"), entry
            assert not any("budget_exhausted" in name for name in entry["blocking"]), entry
    # every timed entry of the last call behaved as the manifest expects
    assert timed and all(e["ok"] for e in H200["calls"][-1]["cheat_suite"] if e["phase"] == "B")
