"""What the worker overlaps (docs/worker.md): the ncu profile starts with the measuring run
instead of after it, clang-tidy lints on a pool of its own from the start of the job, and the
worker's threads stay off the CPUs kept for timing. Real run_bundle and verification_run, with
the sandboxed processes and the linter replaced by recorders (no build, no GPU)."""
import os
import subprocess
import sys

import pytest

from evaluator import services, worker_cpu_jobs
from kernels.models import Verification
from verifier import bundle_run
from verifier.bundle_run import BundleRun
from verifier.core import environ_names
from verifier.core.timing_report import RESERVED_CPUS_VARIABLE

from .bundle_run_stand_ins import Timeline, identity_bundle


def _run(tmp_path, monkeypatch, measured, **options):
    line = Timeline()

    def isolated(argv, **kwargs):
        if "--build-only" in argv:
            return line.step("build", 0.05, {"verdict": "built"})
        return line.step("harness", 0.6, measured)

    monkeypatch.setattr(bundle_run, "run_harness_isolated", isolated)
    monkeypatch.setattr(bundle_run, "ncu_profile", lambda *a, **k: line.step("ncu", 0.3, {"raw_text": "csv",
                                                                                        "parsed": {"metrics": {}}}))
    run = bundle_run.run_bundle(identity_bundle(), device="cuda", seeds="", timeout_s=60, memory_limit_mb=None,
                                work_root=tmp_path / "work", build_dir=tmp_path / "builds", profile_ncu=True,
                                **options)
    return run, line.events


def test_ncu_starts_with_the_measuring_run_and_is_kept_when_the_candidate_ran(tmp_path, monkeypatch):
    run, events = _run(tmp_path, monkeypatch, {"verdict": "passed", "trials": [{"seed": 1, "passed": True}]})
    assert events["build"]["end"] <= events["ncu"]["start"] < events["harness"]["end"]
    assert run.ncu == {"raw_text": "csv", "parsed": {"metrics": {}}}
    # It was done before the run ended: the run waited for it a moment at most (a loaded 2-core host
    # once took 1 ms between the two clock reads), never the 0.3 s of a profile started after the run.
    assert run.phases["ncu_s"] > 0 and run.phases["ncu_after_run_s"] < 0.1


def test_a_profile_of_a_candidate_the_harness_never_ran_is_dropped(tmp_path, monkeypatch):
    run, events = _run(tmp_path, monkeypatch, {"verdict": "failed", "trials": []})
    assert "ncu" in events and run.ncu is None and run.result["verdict"] == "failed"


def test_profiling_only_kernels_that_passed_profiles_after_the_run_and_never_a_failed_kernel(tmp_path, monkeypatch):
    """ARCHIVE_VERIFY_PROFILE_PASSED_ONLY: no ncu window for a kernel that failed (docs/worker.md)."""
    passed = {"verdict": "passed", "trials": [{"seed": 1, "passed": True}]}
    run, events = _run(tmp_path, monkeypatch, passed, profile_passed_only=True)
    assert events["harness"]["end"] <= events["ncu"]["start"]
    assert run.ncu == {"raw_text": "csv", "parsed": {"metrics": {}}} and run.phases["ncu_after_run_s"] >= 0.3
    failed = {"verdict": "failed", "trials": [{"seed": 1, "passed": False}]}
    run, events = _run(tmp_path, monkeypatch, failed, profile_passed_only=True)
    assert "ncu" not in events and run.ncu is None and "ncu_s" not in run.phases


@pytest.mark.django_db
def test_the_worker_passes_its_profiling_settings_to_the_run(settings, monkeypatch):
    from tests.kernels.kernel_factories import make_kernel, make_task

    seen = {}
    monkeypatch.setattr(bundle_run, "run_bundle", lambda bundle, **kwargs: seen.update(kwargs) or BundleRun(result={}))
    kernel = make_kernel(make_task())
    for passed_only in (False, True):
        settings.VERIFY_PROFILE_PASSED_ONLY = passed_only
        services._run_bundle_of(kernel)
        assert seen["profile_passed_only"] is passed_only and seen["profile_ncu"] == settings.VERIFY_REFRESH_PROFILES


@pytest.mark.django_db(transaction=True)
def test_clang_tidy_lints_on_its_own_pool_beside_the_run_and_the_result_waits_for_it(settings, monkeypatch):
    from tests.kernels.kernel_factories import make_kernel, make_task

    settings.VERIFY_REFRESH_PROFILES = True
    kernel = make_kernel(make_task())
    verification = Verification.objects.create(kernel=kernel)
    line = Timeline()
    monkeypatch.setattr(services, "_run_bundle_of", lambda k, **kwargs: (
        line.step("run", 0.5, BundleRun(result={"verdict": "passed", "trials": []}, phases={})), "sha"))
    monkeypatch.setattr(services, "profile_refresh_clang_tidy", lambda kernel_id: line.step("lint", 0.3))
    services.verification_run(verification_id=verification.id)
    events = line.events
    assert events["lint"]["thread"].startswith("lint") and events["run"]["thread"] != events["lint"]["thread"]
    assert events["lint"]["start"] < events["run"]["end"]  # beside the run, not after it
    verification.refresh_from_db()
    assert verification.phases["clang_tidy_s"] >= 0.3 and "clang_tidy_wait_s" in verification.phases


def test_the_worker_keeps_the_timing_cpus_free_and_names_them_to_the_judges(monkeypatch):
    allowed = os.sched_getaffinity(0)
    if len(allowed) < 2:
        pytest.skip("needs two CPUs")
    keep = max(allowed)
    for name in environ_names(RESERVED_CPUS_VARIABLE):
        monkeypatch.delenv(name, raising=False)
    try:
        assert worker_cpu_jobs.worker_keep_timing_cpus_free(str(keep)) == [keep]
        assert os.sched_getaffinity(0) == allowed - {keep} and os.environ[RESERVED_CPUS_VARIABLE] == str(keep)
        assert bundle_run._harness_env("builds")[RESERVED_CPUS_VARIABLE] == str(keep)
    finally:
        os.sched_setaffinity(0, allowed)
    assert worker_cpu_jobs.worker_keep_timing_cpus_free("") == []


def test_the_worker_gives_each_judge_the_cpu_threads_its_setting_says(monkeypatch, settings):
    from evaluator import tasks

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    settings.VERIFY_JUDGE_CPU_THREADS = 0  # 0: torch's own default, nothing set
    tasks.limit_judge_threads()  # what the consumer runs when it starts
    assert "OMP_NUM_THREADS" not in bundle_run._harness_env("builds")
    settings.VERIFY_JUDGE_CPU_THREADS = 1
    tasks.limit_judge_threads()
    env = bundle_run._harness_env("builds")
    assert env["OMP_NUM_THREADS"] == "1"
    # torch in a process started with the judge's environment takes it
    threads = subprocess.run([sys.executable, "-c", "import torch; print(torch.get_num_threads())"],
                             env=env, capture_output=True, text=True, timeout=120, check=True).stdout
    assert threads.strip() == "1"
