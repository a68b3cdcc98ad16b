"""What runs at a lower CPU priority on a worker (verifier/bundle_run.py BUILD_NICE, verifier/
clang_tidy_run.py LINT_NICE): builds and lints, so the judges and profilers holding the GPU get
the CPU first; the measuring run keeps the worker's priority."""
import os
import subprocess
import sys

from verifier import bundle_run, clang_tidy_run
from verifier.core import sandbox

from .bundle_run_stand_ins import identity_bundle


def test_the_build_runs_niced_and_the_measuring_run_does_not(tmp_path, monkeypatch):
    asked = {}

    def isolated(argv, **kwargs):
        asked["build" if "--build-only" in argv else "run"] = kwargs.get("nice")
        return {"verdict": "built"} if "--build-only" in argv else {"verdict": "passed", "trials": []}

    monkeypatch.setattr(bundle_run, "run_harness_isolated", isolated)
    bundle_run.run_bundle(identity_bundle(), device="cpu", seeds="", timeout_s=60, memory_limit_mb=None,
                          work_root=tmp_path / "work", build_dir=tmp_path / "builds")
    assert asked == {"build": bundle_run.BUILD_NICE, "run": None}


def test_the_sandbox_lowers_the_priority_of_what_it_starts(tmp_path):
    script = "import json, os; print(json.dumps({'verdict': 'passed', 'nice': os.nice(0)}))"
    before = os.nice(0)
    niced = sandbox.run_harness_isolated([sys.executable, "-c", script], timeout_s=60, nice=5)
    plain = sandbox.run_harness_isolated([sys.executable, "-c", script], timeout_s=60)
    assert plain["nice"] == before and niced["nice"] == min(19, before + 5)
    assert os.nice(0) == before  # the caller's own priority is untouched


def test_clang_tidy_runs_niced(tmp_path, monkeypatch):
    fake = tmp_path / "clang-tidy"
    fake.write_text("#!%s\nimport os\nprint('nice', os.nice(0))\n" % sys.executable)
    fake.chmod(0o755)
    monkeypatch.setattr(clang_tidy_run, "clang_tidy_binary", lambda: str(fake))
    out = clang_tidy_run.run_clang_tidy("int f() { return 0; }\n", kind="cuda_forward", cuda_home=None)
    assert out["stdout"].strip() == "nice %d" % min(19, os.nice(0) + clang_tidy_run.LINT_NICE)
