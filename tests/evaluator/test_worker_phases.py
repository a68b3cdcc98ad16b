"""The worker's two phases: builds in parallel, one measuring run per device, ncu's plumbing."""
import contextlib
import fcntl
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from verifier import ncu_profile as gpu_profiles
from verifier.core import build as harness_build
from verifier.core import environ_names
from verifier.core.device_lock import LOCK_DIR_VARIABLE, DeviceLock, ProcessHold, device_key

REPO = Path(__file__).resolve().parents[2]
SUITE = REPO / "verifier" / "cheat_suite"


class _Census:
    """Who is on the device right now: shared holders and exclusive holders, with any overlap seen."""

    def __init__(self):
        self.guard = threading.Lock()
        self.shared = 0
        self.alone = 0
        self.violations = []

    @contextlib.contextmanager
    def inside(self, exclusive):
        with self.guard:
            if self.alone or (exclusive and self.shared):
                self.violations.append((self.shared, self.alone, exclusive))
            if exclusive:
                self.alone += 1
            else:
                self.shared += 1
        try:
            yield
        finally:
            with self.guard:
                if exclusive:
                    self.alone -= 1
                else:
                    self.shared -= 1


def _run_threads(targets, deadline_s):
    threads = [threading.Thread(target=target, daemon=True) for target in targets]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + deadline_s
    for thread in threads:
        thread.join(timeout=max(0.0, deadline - time.monotonic()))
    return [thread for thread in threads if thread.is_alive()]


def test_shared_holders_overlap_and_an_exclusive_holder_is_alone(tmp_path):
    lock, census, overlapped = DeviceLock(tmp_path, "cuda"), _Census(), []

    def reader():
        with lock.shared(), census.inside(exclusive=False):
            overlapped.append(census.shared)
            time.sleep(0.3)

    def writer():
        with lock.exclusive(), census.inside(exclusive=True):
            time.sleep(0.2)

    stuck = _run_threads([reader, reader, writer, reader, writer, reader], deadline_s=20)
    assert stuck == []
    assert census.violations == []
    assert max(overlapped) >= 2  # readers did share the device


def test_processes_that_hold_shared_and_ask_to_be_alone_never_deadlock(tmp_path):
    """The harness's pattern, many at once: shared for the trials, alone for the timing, shared again.
    Upgrading in place deadlocked on the H200 (two shared holders each waiting for the other)."""
    census, finished = _Census(), []

    def harness_like(index):
        def run():
            hold = ProcessHold(DeviceLock(tmp_path, "cuda"))
            hold.start()
            with census.inside(exclusive=False):
                time.sleep(0.05 * (index % 3))
            for _ in range(2):
                with hold.alone(), census.inside(exclusive=True):
                    time.sleep(0.05)
                with census.inside(exclusive=False):
                    time.sleep(0.02)
            hold.stop()
            finished.append(hold.report())
        return run

    stuck = _run_threads([harness_like(i) for i in range(8)], deadline_s=30)
    assert stuck == [], "harness-like holders deadlocked"
    assert census.violations == []
    assert len(finished) == 8
    assert sum(report["exclusive_held_s"] for report in finished) >= 0.75  # 8 holders x 2 x 50 ms alone


def test_a_queued_exclusive_request_holds_back_new_shared_holders(tmp_path):
    lock, order = DeviceLock(tmp_path, "cuda"), []
    first_reader_in = threading.Event()

    def first_reader():
        with lock.shared():
            first_reader_in.set()
            time.sleep(0.6)
            order.append("first reader out")

    def writer():
        first_reader_in.wait()
        with lock.exclusive():
            order.append("writer in")

    def late_reader():
        first_reader_in.wait()
        time.sleep(0.2)  # arrives while the writer is queued
        with lock.shared():
            order.append("late reader in")

    assert _run_threads([first_reader, writer, late_reader], deadline_s=20) == []
    assert order == ["first reader out", "writer in", "late reader in"]


def test_exclusive_requests_queued_during_one_drain_all_go_before_a_new_shared_holder(tmp_path):
    """One drain of the shared holders serves every timing queued by then: a judge starting meanwhile
    waits behind the second timing too, instead of making it wait for its whole correctness phase."""
    lock, order = DeviceLock(tmp_path, "cuda"), []
    first_reader_in = threading.Event()

    def first_reader():
        with lock.shared():
            first_reader_in.set()
            time.sleep(0.6)
            order.append("first reader out")

    def writer(name, delay):
        def run():
            first_reader_in.wait()
            time.sleep(delay)
            with lock.exclusive():
                order.append(name + " in")
                time.sleep(0.2)
        return run

    def late_reader():
        first_reader_in.wait()
        time.sleep(0.15)  # after the first timing queued, before the second
        with lock.shared():
            order.append("late reader in")

    assert _run_threads([first_reader, writer("writer 1", 0.0), late_reader, writer("writer 2", 0.3)],
                        deadline_s=20) == []
    assert order == ["first reader out", "writer 1 in", "writer 2 in", "late reader in"]


def test_releasing_an_exclusive_hold_lets_shared_holders_in(tmp_path):
    lock = DeviceLock(tmp_path, "cuda")
    handle = lock.acquire(fcntl.LOCK_EX)
    DeviceLock.release(handle)
    assert handle.closed and handle.kb_writers.closed
    with lock.shared() as waited:
        assert waited < 1


def test_device_lock_is_per_device(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert device_key("cuda") == "cuda-1" and device_key("cpu") == "cpu"
    with DeviceLock(tmp_path, "cuda").exclusive():
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
        with DeviceLock(tmp_path, "cuda").exclusive() as waited:  # another GPU: no waiting
            assert waited < 0.5


def test_without_a_lock_directory_a_process_hold_locks_nothing(monkeypatch):
    for name in environ_names(LOCK_DIR_VARIABLE):
        monkeypatch.delenv(name, raising=False)
    hold = ProcessHold.from_environment("cuda")
    hold.start()
    with hold.alone():
        pass
    assert hold.report() is None


def _harness(*args, build_dir, env=None):
    command = [sys.executable, "-m", "verifier.core.judge", "--device", "cpu", "--build-dir", str(build_dir), *args]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600, env=env)
    return json.loads(done.stdout)


@pytest.mark.slow
def test_the_harness_times_alone_and_waits_for_other_kernels_checks_to_finish(tmp_path):
    """Another kernel's trials hold the device shared; ours reaches its timing loop and must wait."""
    lock_dir, stage_file = tmp_path / "locks", tmp_path / "stage"
    env = dict(os.environ, **{LOCK_DIR_VARIABLE: str(lock_dir), "JUDGE_STAGE_FILE": str(stage_file)})
    other = DeviceLock(lock_dir, "cpu")
    released_after = []

    def other_kernels_trials():
        with other.shared():
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                if stage_file.exists() and stage_file.read_text() == "timing":
                    break
                time.sleep(0.05)
            time.sleep(1.0)
            released_after.append(True)

    thread = threading.Thread(target=other_kernels_trials, daemon=True)
    thread.start()
    doc = _harness("--reference", SUITE / "tasks" / "relu.py", "--candidate", SUITE / "candidates" / "honest_relu.cpp",
                   "--kind", "cuda_forward", "--time-budget", "0.5", "--no-compile",
                   build_dir=harness_build.default_build_dir(), env=env)
    thread.join(timeout=10)
    assert released_after == [True]
    assert doc["verdict"] == "passed", doc.get("error") or doc["flags"]
    held = doc["checks"]["device_lock"]
    assert held["exclusive_wait_s"] >= 0.8  # queued until the other kernel's trials let go
    assert held["exclusive_held_s"] > 0  # and then timed with the device to itself
    assert doc["timings"]["candidate"]["median_ms"] > 0


@pytest.mark.slow
def test_build_only_fills_the_cache_that_the_full_run_then_loads(tmp_path):
    build_dir = Path(harness_build.default_build_dir())
    reference = SUITE / "tasks" / "relu.py"
    candidate = SUITE / "candidates" / "honest_relu.cpp"
    built = _harness("--reference", reference, "--candidate", candidate, "--kind", "cuda_forward", "--build-only",
                     build_dir=build_dir)
    assert built["verdict"] == "built", built
    extension = Path(built["checks"]["build"]["build_directory"])
    assert list(extension.glob("*.so")), "build-only must leave the compiled extension in the cache"
    full = _harness("--reference", reference, "--candidate", candidate, "--kind", "cuda_forward", "--no-timing",
                    build_dir=build_dir)
    assert full["verdict"] == "passed"
    assert full["checks"]["build"]["build_directory"] == str(extension)


def test_build_only_reports_a_compile_error_as_build_failed(tmp_path):
    broken = tmp_path / "broken.cpp"
    broken.write_text("#include <torch/extension.h>\nthis is not C++;\n")
    doc = _harness("--reference", SUITE / "tasks" / "relu.py", "--candidate", broken, "--kind", "cuda_forward",
                   "--build-only", build_dir=tmp_path / "builds")
    assert doc["verdict"] == "failed"
    assert [f["name"] for f in doc["flags"]] == ["build_failed"]
    assert "this is not C++" in doc["log"]  # the compiler's own message reaches the record


def test_build_only_refuses_cuda_code_on_the_cpu(tmp_path):
    doc = _harness("--reference", SUITE / "tasks" / "relu.py", "--candidate", SUITE / "candidates" / "honest_relu.cu",
                   "--kind", "cuda_forward", "--build-only", build_dir=tmp_path / "builds")
    assert doc["verdict"] == "error" and "--device cuda" in doc["error"]


def test_kernel_names_are_the_global_functions_a_source_defines():
    source = """
    template <typename scalar_t>
    __global__ void __launch_bounds__(256) relu_kernel(const scalar_t* x, scalar_t* y, int n) {}
    __global__ void
    matmul_tiled(float* a) {}
    extern "C" __global__ void softmax_rows (float* x) {}
    __device__ float helper(float v) { return v; }
    """
    assert gpu_profiles.kernel_names(source) == ["matmul_tiled", "relu_kernel", "softmax_rows"]


def test_profiles_are_skipped_off_the_gpu(tmp_path):
    args = (SUITE / "tasks" / "relu.py", SUITE / "candidates" / "honest_relu.cpp", "cuda_forward")
    assert gpu_profiles.ncu_profile(*args, build_dir=tmp_path, device="cpu") is None
    assert gpu_profiles.torch_profile(*args, device="cpu", build_dir=tmp_path) is None


def test_ncu_is_asked_for_the_archive_sections_on_the_candidates_own_kernels(monkeypatch):
    """No ncu here: record the command line the sandbox would run (the GPU run checks the rest)."""
    command = []

    def record(argv, **kwargs):
        command.extend(map(str, argv))
        return {"verdict": "error", "reason": "not run here", "log": ""}

    monkeypatch.setattr(gpu_profiles.sandbox, "run_harness_isolated", record)
    result = gpu_profiles._ncu_run("ncu", ["relu_kernel"], "ref.py", "cand.cu", "cuda_forward", None, "/tmp/b", 60, None)
    assert "error" in result
    joined = " ".join(command)
    for part in ("--csv", "--page details", "--print-units base", "--profile-from-start off", "--launch-count 5",
                 "--section Occupancy", "--section WarpStateStats", "--section MemoryWorkloadAnalysis",
                 "--section ComputeWorkloadAnalysis", "regex:^(relu_kernel)($|<)", "-m verifier.profile_driver"):
        assert part in joined
    # One call of the candidate profiled (each of its launches once, 5 at most); torch.profiler keeps 5 calls.
    assert command[command.index("--calls") + 1] == "1" and command[command.index("--mode") + 1] == "ncu"
    command.clear()
    gpu_profiles.torch_profile("ref.py", "cand.cu", "cuda_forward", device="cuda", build_dir="/tmp/b")
    assert command[command.index("--calls") + 1] == "5" and command[command.index("--mode") + 1] == "torch"


@pytest.mark.django_db
def test_the_workers_ncu_profile_from_the_h200_is_stored_and_shown_beside_the_archives(client):
    from django.urls import reverse

    from verifier.profile_parsers import parse_ncu_details_csv
    from evaluator.worker_profiles import profile_store_ncu
    from kernels.models import Profile
    from tests.kernels.kernel_factories import add_profiles, make_kernel, make_task

    kernel = make_kernel(make_task())
    add_profiles(kernel)
    raw = (REPO / "tests" / "fixtures" / "h200" / "ncu_details_base_units.csv").read_text()
    stored = profile_store_ncu(kernel_id=kernel.id, raw_text=raw, parsed=parse_ncu_details_csv(raw))
    again = profile_store_ncu(kernel_id=kernel.id, raw_text=raw, parsed=parse_ncu_details_csv(raw))
    assert again.id == stored.id  # a new run replaces the worker's last profile
    origins = set(kernel.profiles.filter(kind=Profile.Kind.NCU).values_list("origin", flat=True))
    assert origins == {Profile.Origin.ARCHIVE, Profile.Origin.WORKER}
    html = client.get(reverse("kernel_detail", kwargs={"kernel_id": kernel.id})).content.decode()
    assert "(measured by our worker)" in html and "(imported with the archive)" in html
    assert "Achieved Occupancy" in html and "L2 Compression Input Sectors" in html  # a metric only the H200 run has



def test_a_judge_done_being_alone_goes_back_to_shared_without_waiting_for_the_timings_queued_meanwhile(tmp_path):
    """On the H200 (24 jobs on 16 cores) judges done with their timing re-queued for their shared
    hold behind every timing queued meanwhile and waited 220 s to finish; now the hold turns back
    to shared in place, and a queued timing waits only for that judge's end."""
    lock, order = DeviceLock(tmp_path, "cuda"), []
    judge_alone, judge_back = threading.Event(), threading.Event()

    def judge():
        hold = ProcessHold(lock)
        hold.start()
        with hold.alone():
            judge_alone.set()
            time.sleep(0.4)  # its timing loop; another timing queues meanwhile
        order.append("judge shared again")
        judge_back.set()
        time.sleep(0.3)  # the rest of its run, on the device shared
        order.append("judge done")
        hold.stop()

    def other_timing():
        judge_alone.wait()
        time.sleep(0.1)
        with lock.exclusive():
            order.append("other timing in")

    assert _run_threads([judge, other_timing], deadline_s=20) == []
    assert order == ["judge shared again", "judge done", "other timing in"]


def test_a_downgraded_hold_still_keeps_a_new_exclusive_holder_out_until_it_ends(tmp_path):
    lock = DeviceLock(tmp_path, "cuda")
    hold = ProcessHold(lock)
    hold.start()
    with hold.alone():
        pass
    assert hold.handle is not None and hold.handle.kb_writers is None  # shared, no longer announced
    probe = open(lock.lock_path, "a+")
    try:
        with pytest.raises(BlockingIOError):
            fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(probe, fcntl.LOCK_SH | fcntl.LOCK_NB)  # other shared holders may come in
        fcntl.flock(probe, fcntl.LOCK_UN)
    finally:
        probe.close()
    hold.stop()
    with lock.exclusive() as waited:
        assert waited < 1
