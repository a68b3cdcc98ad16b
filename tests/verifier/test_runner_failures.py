"""Exceptions a candidate raises are named by their cause, and the sandboxed judge does not
outlive the process that started it."""
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from verifier.core.runner_session import candidate_failure_name as _candidate_failure_name


@pytest.mark.parametrize("message, name", [
    ("MemoryError: ", "out_of_memory"),
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 64.00 GiB", "out_of_memory"),
    ("RuntimeError: CUDA error: an illegal memory access was encountered", "illegal_memory_access"),
    ("ValueError: shapes do not match", "runtime_error"),
])
def test_candidate_failures_are_named_by_cause(message, name):
    assert _candidate_failure_name(message) == name


def test_the_sandboxed_process_dies_with_the_process_that_started_it(tmp_path):
    pid_file = tmp_path / "child.pid"
    # A parent that starts a long sandboxed command, then is killed with SIGKILL.
    parent = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {os.getcwd()!r})
        from verifier.core.sandbox import run_harness_isolated
        run_harness_isolated([sys.executable, "-c",
            "import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(600)"],
            timeout_s=600)
    """)])
    deadline = time.monotonic() + 60
    while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
        time.sleep(0.1)
    child = int(pid_file.read_text())
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    for _ in range(100):
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    os.kill(child, signal.SIGKILL)
    pytest.fail("the sandboxed child outlived its parent")


def test_cuda_code_on_the_cpu_is_an_error_not_a_failed_kernel():
    import json
    from pathlib import Path

    suite = Path(__file__).resolve().parents[2] / "verifier" / "cheat_suite"
    # In a process of its own: the harness installs its own CPU allocator where it runs.
    done = subprocess.run([sys.executable, "-m", "verifier.core.judge", "--reference", str(suite / "tasks" / "relu.py"),
                           "--candidate", str(suite / "candidates" / "honest_relu.cu"), "--kind", "cuda_forward",
                           "--device", "cpu", "--no-timing"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    doc = json.loads(done.stdout[done.stdout.index("{"):])
    assert doc["verdict"] == "error" and "--device cuda" in doc["error"]
    assert not any(flag["name"] == "build_failed" for flag in doc["flags"])
