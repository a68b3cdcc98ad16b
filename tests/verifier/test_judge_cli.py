"""The judge as operators and the bundle use it: CLI in a subprocess (exit 0, one JSON
document on stdout, --json), error verdicts, timing fields, the old `python -m
evaluator.harness` and `python -m verifier.judge` aliases, and a standalone copy of the
shipped modules run by a fresh interpreter from another directory."""
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from verifier.bundle import bundle_files
from verifier.core import build as harness_build
from verifier.core import environ_get, shipped_files
from verifier.core.judge import shipped_files_sha256

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "verifier" / "cheat_suite"
TASKS, CANDS = SUITE / "tasks", SUITE / "candidates"
REQUIRED_KEYS = {"verdict", "flags", "task_flags", "trials", "tolerance", "timings", "speedup", "versions",
                 "device", "kind", "log", "error"}


def build_dir():
    return environ_get("VERIFIER_TEST_BUILD_DIR") or harness_build.default_build_dir()


def run_cli(args, cwd=ROOT, module="verifier.core.judge", isolated=False, timeout=900):
    cmd = [sys.executable] + (["-E", "-s"] if isolated else []) + ["-m", module]
    proc = subprocess.run(cmd + [str(a) for a in args] + ["--build-dir", build_dir()], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout), proc


def test_cli_prints_one_json_document_and_writes_json_file(tmp_path):
    out = tmp_path / "out.json"
    doc, proc = run_cli(["--reference", TASKS / "relu.py", "--candidate", CANDS / "cheat_alias_input.py",
                         "--kind", "model_new", "--device", "cpu", "--seed", "5", "--seed", "6", "--no-timing",
                         "--json", out])
    assert REQUIRED_KEYS <= set(doc)
    assert json.loads(out.read_text()) == doc
    assert doc["verdict"] == "failed" and doc["seeds"] == [5, 6] and len(doc["trials"]) == 2
    assert doc["checks"]["seed_source"] == "given on the command line"
    names = {f["name"] for f in doc["flags"]}
    assert {"output_aliases_input", "input_mutation"} <= names
    assert {f["source"] for f in doc["flags"] if f["name"] == "output_aliases_input"} == {"runner"}
    for f in doc["flags"]:
        assert set(f) >= {"name", "blocking", "evidence"} and f["evidence"]
    trial = doc["trials"][0]
    assert {"seed", "passed", "max_abs_err", "rel_norm_err"} <= set(trial)
    assert doc["tolerance"]["abs"] == 1e-2 and doc["tolerance"]["rel"] == 1e-3
    v = doc["versions"]
    assert v["harness"] and v["torch"] and v["python"] and len(v["harness_sha256"]) == 64
    assert "gpu" in v and "driver" in v and "cuda" in v


def test_cli_seeds_list_and_tolerance_flags():
    doc, _ = run_cli(["--reference", TASKS / "relu.py", "--candidate", CANDS / "cheat_lazy_subclass.py",
                      "--device", "cpu", "--seeds", "1,2,3,4", "--tolerance-abs", "0.001", "--tolerance-rel",
                      "0.0001", "--no-timing"])
    assert doc["kind"] == "model_new"  # guessed from `class ModelNew`
    assert doc["seeds"] == [1, 2, 3, 4] and doc["tolerance"]["abs"] == 0.001 and doc["tolerance"]["rel"] == 1e-4
    assert any(f["name"] == "output_not_plain_tensor" for f in doc["flags"])


def test_cli_error_verdict_for_weights_without_functional_form():
    doc, _ = run_cli(["--reference", TASKS / "linear_relu.py", "--candidate", CANDS / "honest_linear_relu.cpp",
                      "--kind", "cuda_forward", "--device", "cpu", "--no-timing"])
    assert doc["verdict"] == "error" and "functional" in doc["error"]


def test_cli_error_verdict_for_a_broken_reference(tmp_path):
    ref = tmp_path / "ref.py"
    ref.write_text("raise RuntimeError('broken reference')\n")
    doc, _ = run_cli(["--reference", ref, "--candidate", CANDS / "cheat_alias_input.py", "--device", "cpu",
                      "--no-timing"])
    assert doc["verdict"] == "error" and "broken reference" in doc["error"]


def test_cli_build_failure_is_a_failed_verdict_with_compiler_output(tmp_path):
    bad = tmp_path / "bad.cpp"
    bad.write_text("#include <torch/extension.h>\ntorch::Tensor forward(torch::Tensor x) { return x +; }\n"
                   "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def(\"forward\", &forward); }\n")
    doc, _ = run_cli(["--reference", TASKS / "relu.py", "--candidate", bad, "--kind", "cuda_forward",
                      "--device", "cpu", "--no-timing"])
    assert doc["verdict"] == "failed"
    flag = next(f for f in doc["flags"] if f["name"] == "build_failed")
    assert flag["blocking"] and "error" in flag["evidence"].lower()


@pytest.mark.slow
def test_cli_timing_fields_for_an_honest_kernel():
    doc, _ = run_cli(["--reference", TASKS / "relu.py", "--candidate", CANDS / "honest_relu.cpp", "--kind",
                      "cuda_forward", "--device", "cpu", "--no-compile", "--time-budget", "1.5"])
    assert doc["verdict"] == "passed", doc["flags"]
    cand, eager = doc["timings"]["candidate"], doc["timings"]["eager"]
    for t in (cand, eager):
        assert set(t) >= {"median_ms", "iqr_ms", "n", "mean_ms", "host_median_ms"} and t["n"] >= 3
        assert t["median_ms"] > 0
    assert doc["timings"]["compile"] == {"skipped": "torch.compile baseline disabled"}
    assert doc["speedup"]["vs_eager"] == pytest.approx(eager["median_ms"] / cand["median_ms"])
    floor = doc["checks"]["bandwidth_floor"]
    assert floor["bytes"] == 2 * 128 * 32768 * 4 and floor["floor_ms"] < cand["median_ms"]
    timing = doc["checks"]["timing"]
    assert timing["rounds"] >= 3 and timing["batch"] >= 2
    assert timing["unaccounted_ms_per_call"]["median"] <= timing["unaccounted_ms_per_call"]["allowance"]
    assert len(doc["seeds"]) == 3 and doc["checks"]["seed_source"].startswith("drawn by the judge")


def test_standalone_copy_runs_with_a_fresh_interpreter(tmp_path):
    """What a bundle ships (verifier/__init__.py and the modules of verifier/core/) runs on its own."""
    (tmp_path / "verifier" / "core").mkdir(parents=True)
    for name in shipped_files():
        shutil.copy(ROOT / "verifier" / name, tmp_path / "verifier" / name)
    shutil.copy(TASKS / "relu.py", tmp_path / "reference.py")
    shutil.copy(CANDS / "cheat_python_thread.py", tmp_path / "candidate.py")
    doc, proc = run_cli(["--reference", "reference.py", "--candidate", "candidate.py", "--device", "cpu",
                         "--no-timing", "--seeds", "1,2"], cwd=tmp_path, isolated=True)
    assert doc["verdict"] == "failed"
    assert any(f["name"] == "deferred_write" for f in doc["flags"])
    assert doc["versions"]["harness_sha256"] == shipped_files_sha256()


def test_the_harness_hash_is_over_exactly_what_a_bundle_ships():
    """versions.harness_sha256 covers the verifier's files a bundle holds, no more and no fewer."""
    files = bundle_files(kernel={"name": "k", "kind": "model_new", "code": "class ModelNew: pass\n"},
                         task={"level": 1, "task_number": 1, "op_name": "19_ReLU", "reference_code": "x = 1\n"},
                         claimed={})
    digest = hashlib.sha256()
    for name, data in sorted(files.items()):
        if name.startswith("verifier/"):
            digest.update(name.removeprefix("verifier/").encode() + b"\0" + data + b"\0")
    assert digest.hexdigest() == shipped_files_sha256()
    assert {name for name in files if name.startswith("verifier/")} == {f"verifier/{name}" for name in shipped_files()}


def test_python_m_verifier_judge_is_still_the_command_until_the_next_release():
    """verifier/judge.py, the alias of ``python -m verifier.core.judge`` (verifier/CHANGELOG.md, 2.9.1)."""
    doc, _ = run_cli(["--reference", TASKS / "relu.py", "--candidate", CANDS / "cheat_alias_input.py",
                      "--device", "cpu", "--no-timing", "--seeds", "3"], module="verifier.judge")
    assert doc["verdict"] == "failed" and any(f["name"] == "output_aliases_input" for f in doc["flags"])


def test_evaluator_harness_is_still_the_command():
    doc, _ = run_cli(["--reference", TASKS / "relu.py", "--candidate", CANDS / "cheat_alias_input.py",
                      "--device", "cpu", "--no-timing", "--seeds", "3"], module="evaluator.harness")
    assert doc["verdict"] == "failed" and any(f["name"] == "output_aliases_input" for f in doc["flags"])
